// Package summary turns the compile driver's result (compiler.Result) into
// the records irtool compile --json prints (Memory, Partition, Program,
// Predicted, KernelDiff) and the pictures irtool compile --report and
// --out and irtool viz draw (Report, PartitionView, SegmentPlacement,
// ProgramView), so that a library user gets the same figures as the
// command. docs/CLI.md documents the JSON fields.
package summary

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
	"github.com/irtool/irtool/viz"
)

// Memory is the "memory" / "memory_decode" object of compile --json.
type Memory struct {
	ArenaBytes      int64            `json:"arena_bytes"`
	LowerBoundBytes int64            `json:"lower_bound_bytes"`
	NaiveBytes      int64            `json:"naive_bytes"`
	Strategy        string           `json:"strategy"`
	Strategies      map[string]int64 `json:"strategies"`
	OrderChanged    bool             `json:"order_changed"`
	Requested       string           `json:"requested"`
	Ratio           float64          `json:"ratio"`
	Bindings        string           `json:"bindings"`
	Align           int64            `json:"align"`
	Policy          string           `json:"policy"`
	Buffers         int              `json:"buffers"`
	InPlace         int              `json:"inplace"`
	WorkspaceBytes  int64            `json:"workspace_bytes"`
	GgmlCPUBytes    int64            `json:"ggml_cpu_bytes"`
	Compare         compiler.Compare `json:"compare"`
	BudgetExhausted bool             `json:"budget_exhausted"`
	MS              float64          `json:"time_ms"`
}

func MemoryOf(p *planner.MemoryPlan, bindings string) Memory {
	out := Memory{
		ArenaBytes: p.ArenaBytes, LowerBoundBytes: p.LowerBound, NaiveBytes: p.NaiveBytes,
		Strategy: p.Strategy, Strategies: p.Strategies, OrderChanged: p.OrderChanged,
		Requested: p.Requested, Ratio: p.Ratio(), Bindings: bindings, Align: p.Align, Policy: p.Policy,
		Buffers: len(p.Problem.Buffers), InPlace: p.InPlace, BudgetExhausted: p.BudgetExhausted, MS: p.MS,
	}
	for _, w := range p.Workspaces {
		out.WorkspaceBytes += w.Bytes
	}
	return out
}

// Partition is the "partition" object of compile --json.
type Partition struct {
	Target      string  `json:"target"`
	Bindings    string  `json:"bindings"`
	Segments    int     `json:"segments"`
	Copies      int     `json:"copies"`
	CopyBytes   int64   `json:"copy_bytes"`
	CPUNodes    int     `json:"cpu_nodes"`
	NPUNodes    int     `json:"npu_nodes"`
	Moved       int     `json:"moved"`
	PredictedUS float64 `json:"predicted_us"`
	// DeviceWeightBytes = GGMLWeightBytes + ConvertedWeightBytes: the
	// NPU's weights region and the copies converted at load outside it
	// (partition.Result).
	DeviceWeightBytes    int64                    `json:"device_weight_bytes"`
	GGMLWeightBytes      int64                    `json:"ggml_weight_bytes"`
	ConvertedWeightBytes int64                    `json:"converted_weight_bytes"`
	Fallbacks            []partition.Fallback     `json:"fallbacks"`
	Requant              *partition.RequantReport `json:"requant,omitempty"`
}

// Program is the "program" object of compile --json.
type Program struct {
	Bucket             string         `json:"bucket"`
	Kernels            int            `json:"kernels"`
	Segments           int            `json:"segments"`
	CapturableSegments int            `json:"capturable_segments"`
	Copies             int            `json:"copies"`
	KernelsByName      map[string]int `json:"kernels_by_name"`
	SplitCalls         []Split        `json:"split_calls,omitempty"`
	Attention          []Attention    `json:"attention,omitempty"`
	Regions            []cann.Region  `json:"regions"`
	Blockers           []string       `json:"blockers,omitempty"`
}

// Attention is how the attention kernels of the program lower, one entry
// per distinct lowering: the aclnn operator, the calls of an eager launch,
// the target rule's reason (target/attention.go: FIA on Atlas A2, the
// unfused calls where the part or the views do not allow it) and how many
// kernels lower so.
type Attention struct {
	Kernel  string   `json:"kernel"`
	Calls   []string `json:"calls"`
	Reason  string   `json:"reason"`
	Kernels int      `json:"kernels"`
}

// AttentionLowering groups the NPU attention kernels of prog by kernel,
// calls and reason, in program order of first appearance.
func AttentionLowering(prog *cann.Program) []Attention {
	var out []Attention
	for _, s := range prog.Segments {
		for _, k := range s.Kernels {
			if k.Op != ir.OpAttention || strings.HasPrefix(k.Name, "cpu.") {
				continue
			}
			i := slices.IndexFunc(out, func(a Attention) bool {
				return a.Kernel == k.Name && a.Reason == k.Note && slices.Equal(a.Calls, k.Calls)
			})
			if i < 0 {
				out = append(out, Attention{Kernel: k.Name, Calls: k.Calls, Reason: k.Note})
				i = len(out) - 1
			}
			out[i].Kernels++
		}
	}
	return out
}

// PartitionOf is the "partition" record of r's partition stage.
func PartitionOf(r *compiler.Result) Partition {
	res, prof, used := r.Partition, r.Profile, r.PartitionBindings
	return Partition{Target: prof.Name, Bindings: used.String(), Segments: len(res.Segments), Copies: len(res.Copies),
		CopyBytes: res.CopyBytes, CPUNodes: res.CPUNodes, NPUNodes: res.NPUNodes, Moved: res.Moved,
		PredictedUS: res.PredictedUS, Fallbacks: res.Fallbacks, Requant: r.Requant,
		DeviceWeightBytes: res.DeviceWeightBytes, GGMLWeightBytes: res.GGMLWeightBytes, ConvertedWeightBytes: res.ConvertedWeightBytes}
}

// ProgramOf is the "program" record of a lowered program: its kernels and
// segments, the capturable ones, the copies between devices, the split
// operator calls and why the other NPU segments are not captured.
func ProgramOf(prog *cann.Program) Program {
	out := Program{Bucket: prog.Bucket, Kernels: prog.Kernels(), Segments: len(prog.Segments),
		KernelsByName: prog.KernelsByName(), SplitCalls: SplitCalls(prog), Attention: AttentionLowering(prog), Regions: prog.Regions}
	blockers := map[string]bool{}
	for _, s := range prog.Segments {
		if s.Capturable {
			out.CapturableSegments++
		} else if s.Device == string(target.NPU) {
			blockers[s.Blocker] = true
		}
	}
	for _, st := range prog.Steps {
		if st.Kind == cann.StepCopy {
			out.Copies++
		}
	}
	for b := range blockers {
		out.Blockers = append(out.Blockers, b)
	}
	sort.Strings(out.Blockers)
	return out
}

// Split is one kernel whose operator is called more than once in an
// eager launch because one call would break the operator's limits
// (docs/CANN-CONSTRAINTS.md): Qwen's vocabulary projection makes three
// aclnnWeightQuantBatchMatmulV2 calls.
type Split struct {
	Node   int      `json:"node"`
	Name   string   `json:"name"`
	Kernel string   `json:"kernel"`
	Count  int      `json:"count"`
	Calls  []string `json:"calls"`
}

// SplitCalls lists the kernels of prog whose calls split their operator
// (target.WQBMMChunks), in program order.
func SplitCalls(prog *cann.Program) []Split {
	var out []Split
	for _, s := range prog.Segments {
		for _, k := range s.Kernels {
			if k.Name != "aclnnWeightQuantBatchMatmulV2" || k.Op != ir.OpMulMat && k.Op != ir.OpMulMatAdd {
				continue
			}
			n := 0
			for _, c := range k.Calls {
				if c == k.Name {
					n++
				}
			}
			if n > 1 {
				out = append(out, Split{Node: k.Node, Name: k.NodeName, Kernel: k.Name, Count: n, Calls: k.Calls})
			}
		}
	}
	return out
}

// Predicted is the "predicted" object of compile --json: the cost
// model's decode step, all eager and with capturable segments replayed.
type Predicted struct {
	EagerUSPerToken float64 `json:"eager_us_per_token"`
	GraphUSPerToken float64 `json:"graph_us_per_token"`
	Speedup         float64 `json:"speedup"`
	EagerTokPerS    float64 `json:"eager_tok_per_s"`
	GraphTokPerS    float64 `json:"graph_tok_per_s"`
	Launches        int     `json:"launches"`
	GraphLaunches   int     `json:"graph_launches"`
	DeviceUS        float64 `json:"device_us"`
	HostLaunchUS    float64 `json:"host_launch_us"`
	CopyUS          float64 `json:"copy_us"`
	CPUUS           float64 `json:"cpu_us"`
	// PromptTokens, PrefillUS and PrefillTokPerS are the eager prefill of
	// a prompt of --prompt-tokens tokens over an empty cache.
	PromptTokens   int64   `json:"prompt_tokens,omitempty"`
	PrefillUS      float64 `json:"prefill_us,omitempty"`
	PrefillTokPerS float64 `json:"prefill_tok_per_s,omitempty"`
}

// SummariseFallbacks groups fallbacks by op and reason: "rope x10: ...".
func SummariseFallbacks(fs []partition.Fallback) []string {
	count := map[string]int{}
	for _, f := range fs {
		count[string(f.Op)+"\x00"+f.Reason]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		op, reason, _ := strings.Cut(k, "\x00")
		out[i] = fmt.Sprintf("%s x%d: %s", op, count[k], reason)
	}
	return out
}

func PerSecond(us float64) float64 {
	if us <= 0 {
		return 0
	}
	return 1e6 / us
}

func KernelSummary(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// SegmentPlacement maps every kernel of the program to its lowered segment
// (node IDs of the program are those of the partitioned graph, which
// specialisation keeps), captioned with the segment's key or why it is not
// captured; other nodes keep their device outside any segment.
func SegmentPlacement(res *partition.Result, prog *cann.Program, g *ir.Graph) (*viz.Partition, error) {
	p, err := PartitionPlacement(res, g, false)
	if err != nil {
		return nil, err
	}
	p.Segments = map[int]string{}
	for _, s := range prog.Segments {
		for _, k := range s.Kernels {
			if k.Node < 0 || k.Node >= len(g.Nodes) {
				return nil, fmt.Errorf("lower: segment %d names node %d, outside graph %q", s.ID, k.Node, g.Name)
			}
			p.Nodes[k.Node] = viz.Placement{Device: s.Device, Segment: s.ID}
		}
		caption := "captured, key " + s.Key
		if !s.Capturable {
			caption = "eager: " + s.Blocker
		}
		p.Segments[s.ID] = fmt.Sprintf("%d kernels, %s", len(s.Kernels), caption)
	}
	return p, nil
}

// KernelDiff is one aclnn operator's share of the eager decode step
// (device plus host launch time) in irtool's program and llama.cpp's.
type KernelDiff struct {
	Kernel        string  `json:"kernel"`
	IrtoolUS      float64 `json:"irtool_us"`
	LlamaCppUS    float64 `json:"llamacpp_us"`
	DiffUS        float64 `json:"diff_us"`
	IrtoolCalls   int     `json:"irtool_calls"`
	LlamaCppCalls int     `json:"llamacpp_calls"`
}

// MaxKernelDiffs is how many operators vs_llamacpp lists.
const MaxKernelDiffs = 8

// PredictedOf is the "predicted" object of a decode prediction and a
// forecast's prefill (nil: none).
func PredictedOf(pr cann.Prediction, fc *compiler.Forecast) Predicted {
	speedup := 0.0
	if pr.GraphUS > 0 {
		speedup = pr.EagerUS / pr.GraphUS
	}
	p := Predicted{EagerUSPerToken: pr.EagerUS, GraphUSPerToken: pr.GraphUS, Speedup: speedup,
		EagerTokPerS: PerSecond(pr.EagerUS), GraphTokPerS: PerSecond(pr.GraphUS), Launches: pr.Launches,
		GraphLaunches: pr.GraphLaunches, DeviceUS: pr.DeviceUS, HostLaunchUS: pr.HostLaunchUS, CopyUS: pr.CopyUS, CPUUS: pr.CPUUS}
	if fc != nil {
		p.PromptTokens, p.PrefillUS, p.PrefillTokPerS = fc.PromptTokens, fc.Prefill.EagerUS, fc.PrefillTokPerS()
	}
	return p
}

// KernelDiffs lists the aclnn operators whose eager decode time differs
// most between irtool's program and llama.cpp's.
func KernelDiffs(ours, ref *cann.Program) []KernelDiff {
	m := map[string]*KernelDiff{}
	add := func(p *cann.Program, mine bool) {
		for _, s := range p.Segments {
			if s.Device != string(target.NPU) {
				continue
			}
			for _, k := range s.Kernels {
				d := m[k.Name]
				if d == nil {
					d = &KernelDiff{Kernel: k.Name}
					m[k.Name] = d
				}
				if mine {
					d.IrtoolUS += k.DeviceUS + k.LaunchUS
					d.IrtoolCalls += len(k.Calls)
				} else {
					d.LlamaCppUS += k.DeviceUS + k.LaunchUS
					d.LlamaCppCalls += len(k.Calls)
				}
			}
		}
	}
	add(ours, true)
	add(ref, false)
	out := make([]KernelDiff, 0, len(m))
	for _, d := range m {
		d.DiffUS = d.IrtoolUS - d.LlamaCppUS
		out = append(out, *d)
	}
	sort.Slice(out, func(a, b int) bool {
		if da, db := math.Abs(out[a].DiffUS), math.Abs(out[b].DiffUS); da != db {
			return da > db
		}
		return out[a].Kernel < out[b].Kernel
	})
	if len(out) > MaxKernelDiffs {
		out = out[:MaxKernelDiffs]
	}
	return out
}

// ProgramView turns a lowered program into the report's tables. Kernel
// node IDs are those of the partitioned graph g.
func ProgramView(prog *cann.Program, g *ir.Graph) *viz.Program {
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

// PassColumns returns the graphs of the report's side-by-side view: the
// graph as built, the graph after each pass (when the pass stage kept
// snapshots), and the final graph when a later stage changed it.
func PassColumns(input *ir.Graph, r *compiler.Result) []viz.Column {
	cols := snapshotColumns(input, r)
	last := cols[len(cols)-1].Graph
	final := input
	if r != nil {
		final = r.Graph()
	}
	if final != nil && final != last && final.String() != last.String() {
		cols = append(cols, viz.Column{Name: "final", Note: opsDelta(last, final), Graph: final})
	}
	return cols
}

// snapshotColumns returns the graph as built and the graph after each pass.
func snapshotColumns(input *ir.Graph, r *compiler.Result) []viz.Column {
	cols := []viz.Column{{Name: "as built", Graph: input}}
	var snaps []passes.Snapshot
	if r != nil && r.PassResult != nil {
		snaps = r.PassResult.Snapshots
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

// PartitionPlacement turns a partition result into the mapping viz draws:
// every node with a device, and with segments the segment of each kernel.
func PartitionPlacement(res *partition.Result, g *ir.Graph, segments bool) (*viz.Partition, error) {
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

// PartitionView returns the graph and mapping of the partition or segment
// view (irtool viz --what partition|segments) of r, compiled for the target
// named targetName.
func PartitionView(r *compiler.Result, targetName string, segments bool) (*ir.Graph, *viz.Partition, error) {
	res := r.Partition
	if res == nil {
		return nil, nil, fmt.Errorf("the partition views need the partition stage of irtool compile, which did not run (target %q)", targetName)
	}
	g := r.Graph()
	if !segments {
		p, err := PartitionPlacement(res, g, false)
		return g, p, err
	}
	if prog := r.Program; prog != nil {
		p, err := SegmentPlacement(res, prog, g)
		return g, p, err
	}
	p, err := PartitionPlacement(res, g, true)
	return g, p, err
}

// ReportInfo is what the HTML report's summary says about the run
// besides the compiler's result: the model's name and architecture and the
// options it was compiled with.
type ReportInfo struct {
	Model, Arch, Target, Passes string
	Ctx, UBatch                 int64
	KVType, KVWrite             string
}

// Report assembles the HTML report of irtool compile --report (viz.Report)
// from the graph as built and the driver's result res: the graph after
// every pass, the memory plans, the partition and the lowered program.
// Parts whose stage did not run are left out.
func Report(info ReportInfo, input *ir.Graph, res *compiler.Result) (*viz.Report, error) {
	g := res.Graph()
	r := &viz.Report{Title: "irtool compile " + info.Model}
	r.Summary = [][2]string{
		{"model", info.Model},
		{"architecture", info.Arch},
		{"target", info.Target},
		{"shapes", fmt.Sprintf("ctx %d, ubatch %d, KV %s written by %s", info.Ctx, info.UBatch, info.KVType, info.KVWrite)},
		{"passes", info.Passes},
		{"ops", fmt.Sprintf("%d as built, %d after compiling", input.NumOps(), g.NumOps())},
	}
	r.Columns = PassColumns(input, res)
	var worst, decode *planner.MemoryPlan
	if res.Memory != nil {
		worst, decode = res.Memory.Plan, res.MemoryDecode.Plan
	}
	for _, p := range []struct {
		gp   *planner.MemoryPlan
		what string
	}{{worst, "worst case"}, {decode, "decode"}, {res.ProgramPlan, "lowered decode step"}} {
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
	if pr := res.Partition; pr != nil {
		part, err := PartitionPlacement(pr, g, true)
		if err != nil {
			return nil, err
		}
		r.Partition = &viz.ReportPartition{Graph: g, Partition: part, Notes: []string{
			fmt.Sprintf("%d nodes on the NPU, %d on the CPU, %d segments, %d copies moving %s per step; predicted step %.1f µs.",
				pr.NPUNodes, pr.CPUNodes, len(pr.Segments), len(pr.Copies), viz.HumanBytes(pr.CopyBytes), pr.PredictedUS),
		}}
		for _, f := range pr.Fallbacks {
			r.Partition.Notes = append(r.Partition.Notes, fmt.Sprintf("%%%d %s %q runs on the CPU: %s", f.Node, f.Op, f.Name, f.Reason))
		}
	}
	if prog := res.Program; prog != nil {
		r.Program = ProgramView(prog, g)
	}
	return r, nil
}

// Pass is one entry of compile --json's "passes" list.
type Pass struct {
	Name       string         `json:"name"`
	Changed    bool           `json:"changed"`
	MS         float64        `json:"time_ms"`
	RuleHits   map[string]int `json:"rule_hits"`
	Stats      map[string]int `json:"stats,omitempty"`
	NodesAfter int            `json:"nodes_after"`
	// Check is the pass's translation validation (--check).
	Check *Check `json:"check,omitempty"`
}

// Check is one pass's --check comparison.
type Check struct {
	Unchanged bool    `json:"unchanged"`
	Identical bool    `json:"bit_identical"`
	MaxAbs    float64 `json:"max_abs_diff"`
	Where     string  `json:"where,omitempty"`
	Steps     int     `json:"steps"`
}

// PassesOf is the "passes" list of compile --json, one record per pass
// the pass stage ran (its --check comparison with translation
// validation), and the stage's total milliseconds.
func PassesOf(res *passes.Result) ([]Pass, float64) {
	out := make([]Pass, len(res.Passes))
	var total float64
	for i, st := range res.Passes {
		ms := float64(st.Duration.Microseconds()) / 1000
		total += ms
		hits := st.RuleHits
		if hits == nil {
			hits = map[string]int{}
		}
		var stats map[string]int
		if len(st.Stats) > 0 {
			stats = st.Stats
		}
		out[i] = Pass{Name: st.Name, Changed: st.Changed, MS: ms, RuleHits: hits, Stats: stats, NodesAfter: st.NodesAfter}
		if i < len(res.Checks) {
			c := res.Checks[i]
			max := c.MaxAbs
			if math.IsInf(max, 0) {
				max = -1 // JSON has no infinity
			}
			out[i].Check = &Check{Unchanged: c.Unchanged, Identical: c.Identical, MaxAbs: max, Where: c.Where, Steps: c.Steps}
		}
	}
	return out, total
}
