package cli

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/viz"
)

// The report runs last: with --report FILE.html it gathers what the
// driver's stages produced (the graph after every pass, the memory
// plans, the partition, the lowered program) into one self-contained HTML
// page (viz.Report). Parts whose stage did not run are left out.

func outReport(j *compileJob) error {
	if j.Flags.Report == "" {
		return nil
	}
	r, err := buildReport(j)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		return err
	}
	if err := safeio.WriteFile(j.Flags.Report, buf.Bytes()); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	fmt.Fprintf(j.Stderr, "irtool compile: wrote %s (%s; %d columns, %d charts)\n", j.Flags.Report, viz.HumanBytes(int64(buf.Len())), len(r.Columns), len(r.Charts))
	return nil
}

// buildReport assembles the report from the job.
func buildReport(j *compileJob) (*viz.Report, error) {
	r := &viz.Report{Title: "irtool compile " + j.Out.Model}
	r.Summary = [][2]string{
		{"model", j.Out.Model},
		{"architecture", j.Out.Arch},
		{"target", j.Flags.Target},
		{"shapes", fmt.Sprintf("ctx %d, ubatch %d, KV %s written by %s", j.Flags.Ctx, j.Flags.UBatch, j.Flags.KVType, j.Flags.KVWrite)},
		{"passes", j.Flags.Passes},
		{"ops", fmt.Sprintf("%d as built, %d after compiling", j.Input.NumOps(), j.Graph().NumOps())},
	}
	r.Columns = passColumns(j)
	var worst, decode *planner.MemoryPlan
	if j.R.Memory != nil {
		worst, decode = j.R.Memory.Plan, j.R.MemoryDecode.Plan
	}
	for _, p := range []struct {
		gp   *planner.MemoryPlan
		what string
	}{{worst, "worst case"}, {decode, "decode"}, {j.R.ProgramPlan, "lowered decode step"}} {
		gp := p.gp
		if gp == nil {
			continue
		}
		chart, err := viz.ChartFromPlan(gp)
		if err != nil {
			return nil, fmt.Errorf("memory chart (%s): %w", p.what, err)
		}
		line := fmt.Sprintf("%s plan, arena %s, %.3f × lower bound", gp.Strategy, viz.HumanBytes(gp.ArenaBytes), gp.Ratio())
		chart.Title = p.what + ": " + line
		r.Charts = append(r.Charts, viz.ReportChart{Chart: chart, Graph: gp.Graph, Interference: p.what == "decode"})
		r.Summary = append(r.Summary, [2]string{"memory (" + p.what + ")", line})
	}
	if res := j.R.Partition; res != nil {
		part, err := partitionPlacement(res, j.Graph(), true)
		if err != nil {
			return nil, err
		}
		r.Partition = &viz.ReportPartition{Graph: j.Graph(), Partition: part, Notes: []string{
			fmt.Sprintf("%d nodes on the NPU, %d on the CPU, %d segments, %d copies moving %s per step; predicted step %.1f µs.",
				res.NPUNodes, res.CPUNodes, len(res.Segments), len(res.Copies), viz.HumanBytes(res.CopyBytes), res.PredictedUS),
		}}
		for _, f := range res.Fallbacks {
			r.Partition.Notes = append(r.Partition.Notes, fmt.Sprintf("%%%d %s %q runs on the CPU: %s", f.Node, f.Op, f.Name, f.Reason))
		}
	}
	if prog := j.R.Program; prog != nil {
		r.Program = programView(prog, j.Graph())
	}
	return r, nil
}

// programView turns a lowered program into the report's tables. Kernel
// node IDs are those of the partitioned graph g.
func programView(prog *cann.Program, g *ir.Graph) *viz.Program {
	v := &viz.Program{Graph: g, Notes: []string{fmt.Sprintf("Lowered for %s (bucket %s), %d kernels in %d segments.",
		prog.Target, prog.Bucket, prog.Kernels(), len(prog.Segments))}}
	for _, r := range prog.Regions {
		v.Regions = append(v.Regions, viz.Region{Name: r.Name, Device: r.Device, Bytes: r.Bytes})
	}
	for _, s := range prog.Segments {
		vs := viz.Segment{ID: s.ID, Device: s.Device, Capturable: s.Capturable, Blocker: s.Blocker, Key: s.Key}
		for _, k := range s.Kernels {
			vs.Kernels = append(vs.Kernels, viz.Kernel{Name: k.Name, Op: string(k.Op), Node: k.Node,
				Output: fmt.Sprintf("%s%v @ %s", k.Output.DType, k.Output.Shape, k.Output.Addr), Workspace: k.WorkspaceBytes})
		}
		v.Segments = append(v.Segments, vs)
	}
	for _, st := range prog.Steps {
		line := st.Kind
		switch st.Kind {
		case cann.StepSegment:
			line = fmt.Sprintf("segment %d", st.Segment)
		case cann.StepUpload:
			line = "upload " + st.Input
		case cann.StepDownload:
			line = fmt.Sprintf("download output %d", st.Output)
		case cann.StepCopy:
			if st.Copy != nil {
				line = fmt.Sprintf("copy %%%d %s (%s)", st.Copy.Node, st.Copy.NodeName, st.Copy.Name)
			}
		}
		v.Steps = append(v.Steps, line)
	}
	return v
}

// passColumns returns the graphs of the report's side-by-side view: the
// graph as built, the graph after each pass (when the pass stage kept
// snapshots), and the final graph when a later stage changed it.
func passColumns(j *compileJob) []viz.Column {
	cols := snapshotColumns(j)
	last := cols[len(cols)-1].Graph
	if j.Graph() != nil && j.Graph() != last && j.Graph().String() != last.String() {
		cols = append(cols, viz.Column{Name: "final", Note: opsDelta(last, j.Graph()), Graph: j.Graph()})
	}
	return cols
}

// snapshotColumns returns the graph as built and the graph after each pass.
func snapshotColumns(j *compileJob) []viz.Column {
	cols := []viz.Column{{Name: "as built", Graph: j.Input}}
	var snaps []passes.Snapshot
	if j.R != nil && j.R.PassResult != nil {
		snaps = j.R.PassResult.Snapshots
	}
	for _, s := range snaps {
		if s.Graph == nil {
			continue
		}
		cols = append(cols, viz.Column{Name: s.Pass, Note: opsDelta(cols[len(cols)-1].Graph, s.Graph), Graph: s.Graph})
	}
	return cols
}

// opsDelta describes the change in op count from a to b ("−12 ops").
func opsDelta(a, b *ir.Graph) string {
	switch d := b.NumOps() - a.NumOps(); {
	case d > 0:
		return "+" + strconv.Itoa(d) + " ops"
	case d < 0:
		return "−" + strconv.Itoa(-d) + " ops"
	}
	return ""
}

// partitionPlacement turns a partition result into the mapping viz draws:
// every node with a device, and with segments the segment of each kernel.
func partitionPlacement(res *partition.Result, g *ir.Graph, segments bool) (*viz.Partition, error) {
	if len(res.Device) != len(g.Nodes) {
		return nil, fmt.Errorf("partition: the result places %d nodes, the graph %q has %d", len(res.Device), g.Name, len(g.Nodes))
	}
	p := &viz.Partition{Nodes: map[int]viz.Placement{}}
	for id, dev := range res.Device {
		if dev != "" {
			p.Nodes[id] = viz.Placement{Device: string(dev), Segment: -1}
		}
	}
	if !segments {
		return p, nil
	}
	p.Segments = map[int]string{}
	for _, s := range res.Segments {
		for _, id := range s.Nodes {
			if id < 0 || id >= len(g.Nodes) {
				return nil, fmt.Errorf("partition: segment %d names node %d, outside graph %q", s.ID, id, g.Name)
			}
			p.Nodes[id] = viz.Placement{Device: string(s.Device), Segment: s.ID}
		}
		p.Segments[s.ID] = fmt.Sprintf("%d nodes", len(s.Nodes))
	}
	return p, nil
}

// partitionView returns the graph and mapping of the partition or segment
// view.
func partitionView(j *compileJob, segments bool) (*ir.Graph, *viz.Partition, error) {
	res := j.R.Partition
	if res == nil {
		return nil, nil, fmt.Errorf("the partition views need the partition stage of irtool compile, which did not run (target %q)", j.Flags.Target)
	}
	if !segments {
		p, err := partitionPlacement(res, j.Graph(), false)
		return j.Graph(), p, err
	}
	if prog := j.R.Program; prog != nil {
		p, err := segmentPlacement(res, prog, j.Graph())
		return j.Graph(), p, err
	}
	p, err := partitionPlacement(res, j.Graph(), true)
	return j.Graph(), p, err
}
