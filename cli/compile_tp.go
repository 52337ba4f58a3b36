package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// This file holds compile --tp N and --pp M: after the whole model's
// stages, the model is split over N tensor-parallel ranks
// (passes.ShardTP) and/or M pipeline stages (passes.ShardPP), and each
// rank's graph goes through the same stages (its own pass pipeline,
// memory plans in its own arena, partition, lowering); --json adds "tp",
// "pp", a "ranks" array and "parallel", the link model's prediction of
// the decode step (target.Profile.EstimateStep). Every rank's device
// memory (weights, KV cache, worst-case arena and 2 × HCCL_BUFFSIZE per
// communicator, CANN's HCCL_BUFFSIZE documentation) is checked against
// the target's device memory.

// defaultHCCLBuffMB is HCCL_BUFFSIZE's default in MB (CANN environment
// variable reference, HCCL_BUFFSIZE).
const defaultHCCLBuffMB = 200

// rankJSON is one rank's part of compile --json with --tp or --pp.
type rankJSON struct {
	Rank int `json:"rank"`
	// TPRank and Stage place the rank: its tensor-parallel rank and its
	// pipeline stage (0 without --tp or --pp).
	TPRank       int            `json:"tp_rank"`
	Stage        int            `json:"stage"`
	Nodes        int            `json:"nodes"`
	Ops          map[string]int `json:"ops"`
	Collectives  []string       `json:"collectives"`
	Memory       any            `json:"memory,omitempty"`
	MemoryDecode any            `json:"memory_decode,omitempty"`
	Partition    any            `json:"partition,omitempty"`
	Program      any            `json:"program,omitempty"`
	// Predicted is the cost model's decode step of the rank's lowered
	// program (the "predicted" object of the whole model, cann.Predict).
	Predicted any `json:"predicted,omitempty"`
	// CollectiveBuffers are the collectives' operands and results in the
	// rank's decode arena: planned like any tensor, at fixed offsets.
	CollectiveBuffers collectiveBuffersJSON `json:"collective_buffers"`
	// CollectiveBytes is CollectiveBuffers.Bytes.
	CollectiveBytes int64             `json:"collective_bytes"`
	DeviceMemory    *deviceMemoryJSON `json:"device_memory,omitempty"`
	// Step is the link model's decode step of the rank.
	Step *target.StepEstimate `json:"step,omitempty"`
}

// collectiveBuffersJSON counts the planned buffers of the collectives.
type collectiveBuffersJSON struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// deviceMemoryJSON is one rank's device memory: what it holds and the
// device it must fit in.
type deviceMemoryJSON struct {
	WeightBytes int64 `json:"weight_bytes"`
	KVBytes     int64 `json:"kv_bytes"`
	// ArenaBytes is the worst-case plan's arena (the runtime reserves it).
	ArenaBytes int64 `json:"arena_bytes"`
	OtherBytes int64 `json:"other_bytes"` // constants, inputs, outputs
	// HCCLBufferBytes is 2 × HCCL_BUFFSIZE per communicator the rank
	// joins (send and receive buffers, CANN's HCCL_BUFFSIZE reference).
	HCCLBufferBytes int64 `json:"hccl_buffer_bytes"`
	Communicators   int   `json:"communicators"`
	TotalBytes      int64 `json:"total_bytes"`
	CapacityBytes   int64 `json:"capacity_bytes"`
	Fits            bool  `json:"fits"`
}

// parallelJSON is the prediction of a split model's decode step.
type parallelJSON struct {
	TP, PP int `json:"-"`
	// StepUS: the tensor-parallel ranks of a stage run together (the
	// slowest sets the pace) and the stages one after the other.
	StepUS        float64 `json:"predicted_step_us"`
	PredictedTokS float64 `json:"predicted_tok_s"`
	ComputeUS     float64 `json:"compute_us"`
	CollectiveUS  float64 `json:"collective_us"`
	// Collectives per step over every rank's first stage path: count and
	// bytes by op and group (one rank's view; each rank issues the same).
	Collectives  []target.CollectiveCost `json:"collectives_per_step"`
	Interconnect string                  `json:"interconnect"`
	Algorithm    string                  `json:"algorithm"`
	HCCLBuffMB   int64                   `json:"hccl_buffsize_mb"`
}

// rankModel is one rank's model before compiling.
type rankModel struct {
	tpRank, stage int
	model         *models.Model
	comms         int
}

// compileParallel splits the job's model (--tp, --pp or both) and
// compiles every rank's graph with opts; files the flags name (--out,
// --report, --dump-dir, --export-buffers) are the whole model's only.
func compileParallel(j *compileJob, opts compiler.Options) error {
	f := &j.Flags.TP
	rms := j.Split
	if rms == nil {
		var err error
		if rms, err = splitModel(j, f); err != nil {
			return err
		}
	}
	prof, err := linkProfile(j.Flags)
	if err != nil {
		return err
	}
	buffMB, err := hcclBuffMB(j.Flags.HCCLBuffMB)
	if err != nil {
		return err
	}
	rules, err := rankRules()
	if err != nil {
		return err
	}
	j.Out.Ranks = []rankJSON{}
	stageUS := make([]float64, max(f.Stages, 1))
	var par parallelJSON
	for i, rm := range rms {
		rj := *j
		rj.Flags.Out, rj.Flags.Report, rj.Flags.DumpDir, rj.Flags.ExportBuffers = "", "", "", ""
		rj.Flags.PassFlags = passFlags{} // the IR dumps and checks are the whole model's
		rj.Model, rj.Input, rj.R, rj.forecast, rj.Forecast, rj.LlamaCpp = rm.model, rm.model.Graph, nil, false, nil, nil
		rj.Out = compileJSON{}
		fmt.Fprintf(j.Text, "\nrank %d of %d (%s):\n", i, len(rms), rankLabel(f, rm))
		o := opts
		o.PassOptions.DumpDir, o.PassOptions.PrintAfter, o.Progress = "", nil, nil
		o.Rules = rules
		if err := rj.compile(o); err != nil {
			return fmt.Errorf("rank %d: %w", i, err)
		}
		for _, s := range []struct {
			stage compiler.Stage
			out   func(*compileJob) error
		}{{compiler.StageMemory, outMemory}, {compiler.StagePartition, outPartition}, {compiler.StageLower, outLower}} {
			if err := s.out(&rj); err != nil {
				return fmt.Errorf("rank %d: %s: %w", i, s.stage, err)
			}
		}
		g := rj.Graph()
		var colls []string
		for _, c := range ir.Collectives(g) {
			colls = append(colls, c.String())
		}
		fmt.Fprintf(j.Text, "  %d ops, %d collectives per step\n", g.NumOps(), len(colls))
		out := rankJSON{Rank: i, TPRank: rm.tpRank, Stage: rm.stage, Nodes: g.NumOps(), Ops: opCounts(g), Collectives: colls,
			Memory: rj.Out.Memory, MemoryDecode: rj.Out.MemoryDecode, Partition: rj.Out.Partition, Program: rj.Out.Program, Predicted: rj.Out.Predicted}
		if out.CollectiveBuffers, err = collectiveBuffers(&rj); err != nil {
			return fmt.Errorf("rank %d: %w", i, err)
		}
		out.CollectiveBytes = out.CollectiveBuffers.Bytes
		fmt.Fprintf(j.Text, "  collective buffers: %d planned in the decode arena, %d B at fixed offsets\n", out.CollectiveBuffers.Count, out.CollectiveBytes)
		if mem := deviceMemory(&rj, prof, rm.comms, buffMB); mem != nil {
			out.DeviceMemory = mem
			fmt.Fprintf(j.Text, "  device memory: %d B = weights %d + KV %d + arena %d + other %d + HCCL buffers %d (%d communicator(s) x 2 x %d MB) of %d B\n",
				mem.TotalBytes, mem.WeightBytes, mem.KVBytes, mem.ArenaBytes, mem.OtherBytes, mem.HCCLBufferBytes, mem.Communicators, buffMB, mem.CapacityBytes)
			if !mem.Fits {
				return fmt.Errorf("rank %d (tp rank %d, stage %d): needs %d B of device memory (weights %d, KV cache %d, arena %d, other %d, HCCL buffers %d = %d communicator(s) x 2 x HCCL_BUFFSIZE %d MB), more than the %s's %d B",
					i, rm.tpRank, rm.stage, mem.TotalBytes, mem.WeightBytes, mem.KVBytes, mem.ArenaBytes, mem.OtherBytes, mem.HCCLBufferBytes, mem.Communicators, buffMB, prof.NPU.Name, mem.CapacityBytes)
			}
		}
		if prof.Interconnect != nil && rj.R.MemoryDecode != nil {
			st, err := prof.EstimateStep(rj.R.Optimised, rj.R.DecodeBindings())
			if err != nil {
				return fmt.Errorf("rank %d: link model: %w", i, err)
			}
			out.Step = &st
			stageUS[rm.stage] = max(stageUS[rm.stage], st.StepUS)
			fmt.Fprintf(j.Text, "  link model: decode step %.0f us = compute %.0f + collectives %.0f + launch and copies %.0f\n",
				st.StepUS, st.ComputeUS, st.CollectiveUS, st.LaunchUS)
			if rm.tpRank == 0 {
				par.Collectives = mergeCosts(par.Collectives, st.Collectives)
				par.ComputeUS += st.ComputeUS
				par.CollectiveUS += st.CollectiveUS
			}
		}
		j.Out.Ranks = append(j.Out.Ranks, out)
	}
	if prof.Interconnect != nil {
		for _, us := range stageUS {
			par.StepUS += us
		}
		par.PredictedTokS = perSecond(par.StepUS)
		par.Interconnect, par.Algorithm, par.HCCLBuffMB = prof.Interconnect.Name, string(prof.Interconnect.Algorithm), buffMB
		j.Out.Parallel = &par
		fmt.Fprintf(j.Text, "\npredicted decode over %d rank(s) (%s, link model): %.0f us per token, %.1f tok/s\n",
			len(rms), prof.Interconnect.Name, par.StepUS, par.PredictedTokS)
	}
	return nil
}

// linkProfile is the target's profile under rankRules with --link-algo
// applied.
func linkProfile(f compileFlags) (*target.Profile, error) {
	prof, err := rankProfile(f.Target)
	if err != nil {
		return nil, err
	}
	if f.LinkAlgo != "" {
		if prof.Interconnect == nil {
			return nil, fmt.Errorf("--link-algo %s: target %s has no NPU interconnect", f.LinkAlgo, prof.Name)
		}
		ic := *prof.Interconnect
		ic.Algorithm = target.Algorithm(f.LinkAlgo)
		prof.Interconnect = &ic
	}
	return prof, nil
}

// rankLabel describes a rank's place in the split.
func rankLabel(f *tpFlags, rm rankModel) string {
	var parts []string
	if f.Ranks > 1 {
		s := fmt.Sprintf("tensor parallel rank %d of %d", rm.tpRank, f.Ranks)
		if f.Exact {
			s += ", exact"
		}
		parts = append(parts, s)
	}
	if f.Stages > 1 {
		parts = append(parts, fmt.Sprintf("pipeline stage %d of %d", rm.stage, f.Stages))
	}
	return strings.Join(parts, ", ")
}

// splitModel splits the job's model by the flags: rank t*stages+s is
// tensor-parallel rank t's pipeline stage s.
func splitModel(j *compileJob, f *tpFlags) ([]rankModel, error) {
	tpModels := []*models.Model{j.Model}
	if f.Ranks > 1 {
		tp, err := shardTPJob(j, f)
		if err != nil {
			return nil, err
		}
		info := tpInfo(tp)
		j.Out.TP = &info
		tpModels = tpModels[:0]
		for _, r := range tp.Ranks {
			tpModels = append(tpModels, r.Model)
		}
	}
	comms := 0
	if f.Ranks > 1 {
		comms++
	}
	if f.Stages > 1 {
		comms++
	}
	var out []rankModel
	for t, m := range tpModels {
		if f.Stages <= 1 {
			out = append(out, rankModel{tpRank: t, model: m, comms: comms})
			continue
		}
		graphs, err := passes.ShardPP(m.Graph, f.Stages)
		if err != nil {
			if j.Source.IsIR() {
				return nil, fmt.Errorf("%w (the stages are cut by each node's layer=; an IR after passes that fuse ops across layers cannot be cut, the IR as built can: irtool ir MODEL.gguf -o FILE.ir)", err)
			}
			return nil, err
		}
		stages := make([]*models.Model, len(graphs))
		for s, g := range graphs {
			sm := *m
			sm.Graph = g
			stages[s] = &sm
			out = append(out, rankModel{tpRank: t, stage: s, model: &sm, comms: comms})
		}
		if t == 0 {
			info := ppInfo(stages)
			j.Out.PP = &info
		}
	}
	return out, nil
}

// shardTPJob splits a GGUF model, or IR text whose graph is the one its
// weights file builds, over the tensor-parallel ranks.
func shardTPJob(j *compileJob, f *tpFlags) (*passes.TP, error) {
	if j.File == nil {
		return nil, fmt.Errorf("--tp %d: %w: the tensor-parallel split is keyed on the weights' roles and shapes", f.Ranks, errNoWeights)
	}
	if j.Source.IsIR() {
		if err := checkAsBuilt(j); err != nil {
			return nil, fmt.Errorf("--tp %d: %w", f.Ranks, err)
		}
	}
	return passes.ShardTPFile(j.File, j.Model.Options, passes.TPOptions{Ranks: f.Ranks, Exact: f.Exact})
}

// checkAsBuilt checks that the job's IR text is the graph its weights
// file builds (checkIRAsBuilt).
func checkAsBuilt(j *compileJob) error {
	return checkIRAsBuilt(j.Source, j.Model.Options)
}

// checkIRAsBuilt checks that IR text holds the graph its weights file
// builds with opts (the IR's cache options). passes.ShardTP rebuilds
// every rank's graph from the hyper-parameters with the rank's share of
// the heads and the FFN (so that every reshape, view and KV-cache shape
// follows), so it can stand for IR text only when the text is that
// graph; any other IR is an error saying so and naming its first
// differing line.
func checkIRAsBuilt(src *modelSource, opts models.Options) error {
	if src.File == nil {
		return fmt.Errorf("%w: the tensor-parallel split is keyed on the weights' roles and shapes", errNoWeights)
	}
	m, err := src.reg.BuildModel(src.File, opts)
	if err != nil {
		return err
	}
	want, got := m.Graph.Clone(), src.Graph.Clone()
	want.Meta, got.Meta = nil, nil
	ws, gs := want.String(), got.String()
	if ws == gs {
		return nil
	}
	wl, gl := strings.Split(ws, "\n"), strings.Split(gs, "\n")
	line := 0
	for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
		line++
	}
	first := "(end of graph)"
	if line < len(gl) {
		first = strings.TrimSpace(gl[line])
		if len(first) > 120 {
			first = first[:120] + "..."
		}
	}
	return fmt.Errorf("the tensor-parallel split rebuilds each rank's graph from the weights' hyper-parameters, so IR text must be the graph as built (irtool ir MODEL.gguf -o FILE.ir); %s is not: its node %q differs from the graph its weights build",
		src.Path, first)
}

// collectiveBuffers checks, in both memory plans (worst case and
// decode), that every collective's operand and result that is not a leaf
// has a fixed place: an offset in the arena, or the outputs region for a
// graph output; it sums the decode plan's bytes of them.
func collectiveBuffers(j *compileJob) (collectiveBuffersJSON, error) {
	var out collectiveBuffersJSON
	if j.R == nil || j.R.MemoryDecode == nil || j.R.Memory == nil {
		return out, nil
	}
	if _, err := planCollectives(j.R.Memory.Plan, j.R.Memory.Bindings, "worst-case"); err != nil {
		return out, err
	}
	return planCollectives(j.R.MemoryDecode.Plan, j.R.MemoryDecode.Bindings, "decode")
}

// planCollectives checks and sums the collectives' buffers of one plan.
func planCollectives(p *planner.MemoryPlan, b ir.Bindings, what string) (collectiveBuffersJSON, error) {
	var out collectiveBuffersJSON
	seen := map[int]bool{}
	isOutput := map[int]bool{}
	for _, o := range p.Graph.Outputs {
		isOutput[o.ID] = true
	}
	for _, c := range ir.Collectives(p.Graph) {
		nodes := []*ir.Node{c.Node}
		if c.Node.Op != ir.OpRecv {
			nodes = append(nodes, c.Node.Args...)
		}
		for _, n := range nodes {
			if seen[n.ID] {
				continue
			}
			seen[n.ID] = true
			if info, ok := n.Info(); ok && info.Kind == ir.KindLeaf {
				continue // inputs, weights and state live outside the arena
			}
			if _, ok := p.Offsets[n.ID]; !ok && isOutput[n.ID] {
				// A graph output lives in the program's outputs region,
				// at an address fixed at load like the arena's.
				bytes, err := typeBytes(n.Type, b)
				if err != nil {
					return out, err
				}
				out.Count++
				out.Bytes += bytes
				continue
			} else if !ok {
				return out, fmt.Errorf("memory: %s (%s %q), operand or result of %s, has no planned offset in the %s arena", n, n.Op, n.Name, c.Node, what)
			}
			bi, ok := p.BufferOf(n.ID)
			if !ok {
				continue // in place in an operand's buffer, counted there
			}
			out.Count++
			out.Bytes += p.Problem.AlignedSize(bi)
		}
	}
	return out, nil
}

// typeBytes is the storage of a value of type t under b.
func typeBytes(t ir.Type, b ir.Bindings) (int64, error) {
	s, err := t.Shape.Eval(b)
	if err != nil {
		return 0, err
	}
	n := int64(1)
	for _, d := range s {
		n *= d.Val
	}
	return n * int64(t.DType.TypeSize()) / int64(t.DType.BlockSize()), nil
}

// deviceMemory sums a rank's device memory (nil for a target without an
// NPU or without a modelled capacity).
func deviceMemory(j *compileJob, prof *target.Profile, comms int, buffMB int64) *deviceMemoryJSON {
	if prof.NPU == nil || j.R == nil || j.R.Program == nil || j.R.Partition == nil {
		return nil
	}
	m := &deviceMemoryJSON{WeightBytes: j.R.Partition.DeviceWeightBytes, Communicators: comms,
		HCCLBufferBytes: int64(comms) * 2 * buffMB << 20, CapacityBytes: prof.NPU.MemBytes}
	if j.R.Memory != nil {
		m.ArenaBytes = j.R.Memory.Plan.ArenaBytes
	}
	for _, r := range j.R.Program.Regions {
		if r.Device != string(target.NPU) {
			continue
		}
		switch r.Name {
		case "kv":
			m.KVBytes += r.Bytes
		case "arena":
			m.ArenaBytes = max(m.ArenaBytes, r.Bytes)
		case "weights":
		default:
			m.OtherBytes += r.Bytes
		}
	}
	m.TotalBytes = m.WeightBytes + m.KVBytes + m.ArenaBytes + m.OtherBytes + m.HCCLBufferBytes
	m.Fits = m.CapacityBytes == 0 || m.TotalBytes <= m.CapacityBytes
	return m
}

// hcclBuffMB is HCCL_BUFFSIZE in MB: the flag when given (> 0), else the
// environment's HCCL_BUFFSIZE, else CANN's default.
func hcclBuffMB(flag int64) (int64, error) {
	if flag > 0 {
		return flag, nil
	}
	v := strings.TrimSpace(os.Getenv("HCCL_BUFFSIZE"))
	if v == "" {
		return defaultHCCLBuffMB, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > maxHCCLBuffMB {
		return 0, fmt.Errorf("environment HCCL_BUFFSIZE=%q: want an integer number of MB in 1..%d", v, maxHCCLBuffMB)
	}
	return n, nil
}

const maxHCCLBuffMB = 1 << 20

// mergeCosts adds b's collectives into a (same op, group and ranks).
func mergeCosts(a, b []target.CollectiveCost) []target.CollectiveCost {
	for _, c := range b {
		found := false
		for i := range a {
			if a[i].Op == c.Op && a[i].Group == c.Group && a[i].Ranks == c.Ranks {
				a[i].Count += c.Count
				a[i].Bytes += c.Bytes
				a[i].US += c.US
				a[i].Host += c.Host
				found = true
				break
			}
		}
		if !found {
			a = append(a, c)
		}
	}
	return a
}

// parseSweep parses --tp-sweep's comma-separated degrees.
func parseSweep(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("--tp-sweep %q: want comma-separated degrees in 1..1024", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("--tp-sweep: empty list")
	}
	return out, nil
}

// sweepJSON is one degree of --tp-sweep.
type sweepJSON struct {
	TP int `json:"tp"`
	// Error says why the model cannot be split this way ("" when it can).
	Error         string                  `json:"error,omitempty"`
	StepUS        float64                 `json:"predicted_step_us,omitempty"`
	PredictedTokS float64                 `json:"predicted_tok_s,omitempty"`
	ComputeUS     float64                 `json:"compute_us,omitempty"`
	CollectiveUS  float64                 `json:"collective_us,omitempty"`
	Collectives   []target.CollectiveCost `json:"collectives_per_step,omitempty"`
	// WeightBytes is the most weight bytes a rank holds (ggml's blocks).
	WeightBytes int64 `json:"rank_weight_bytes,omitempty"`
}

// compileSweep predicts the decode step at each degree of --tp-sweep
// (tpSweep) for the job's model: a GGUF file, or IR text whose graph is
// the one its weights build.
func compileSweep(j *compileJob, opts compiler.Options) error {
	degrees, err := parseSweep(j.Flags.TPSweep)
	if err != nil {
		return err
	}
	prof, err := linkProfile(j.Flags)
	if err != nil {
		return err
	}
	if j.File == nil {
		return fmt.Errorf("--tp-sweep: %w: the split is keyed on the weights' roles and shapes", errNoWeights)
	}
	if j.Source.IsIR() {
		if err := checkAsBuilt(j); err != nil {
			return fmt.Errorf("--tp-sweep: %w", err)
		}
	}
	hp, err := models.ReadHParams(j.File)
	if err != nil {
		return err
	}
	lookup := func(name string) (models.Weight, bool) {
		ti, ok := j.File.Tensor(name)
		if !ok {
			return models.Weight{}, false
		}
		return models.Weight{Type: ir.DType(ti.Type), Ne: ti.Ne}, true
	}
	rows, err := tpSweep(hp, lookup, j.Model.Options, opts, prof, degrees, j.Flags.TP.Exact)
	j.Out.TPSweep = rows
	fmt.Fprintf(j.Text, "\ntensor-parallel sweep on %s (%s, %s algorithm; decode at n_kv=%d):\n", prof.Name, prof.Interconnect.Name, prof.Interconnect.Algorithm, j.Flags.Ctx)
	writeSweep(j.Text, rows)
	return err
}

// writeSweep prints the sweep's table.
func writeSweep(w io.Writer, rows []sweepJSON) {
	fmt.Fprintf(w, "  %-4s %10s %10s %11s %14s %10s  %s\n", "tp", "step us", "tok/s", "compute us", "collective us", "rank MB", "collectives per step (n summed)")
	for _, row := range rows {
		if row.Error != "" {
			fmt.Fprintf(w, "  %-4d refused: %s\n", row.TP, row.Error)
			continue
		}
		var cs []string
		for _, c := range row.Collectives {
			cs = append(cs, fmt.Sprintf("%s x%d %.1f KB", c.Op, c.Count, c.Bytes/1024))
		}
		if len(cs) == 0 {
			cs = []string{"none"}
		}
		fmt.Fprintf(w, "  %-4d %10.0f %10.1f %11.0f %14.0f %10.1f  %s\n", row.TP, row.StepUS, row.PredictedTokS, row.ComputeUS, row.CollectiveUS,
			float64(row.WeightBytes)/(1<<20), strings.Join(cs, ", "))
	}
}

// tpSweep predicts the decode step at each degree: the model split by
// passes.ShardTP (degree 1 too, so that every row is built alike), each
// rank's pass pipeline (opts, up to the passes), and the link model's
// step of each rank (target.Profile.EstimateStep); the slowest rank sets
// the pace. No memory plan, partition or lowering runs. A degree the
// model refuses is a row with Error set.
func tpSweep(hp models.HParams, lookup models.WeightLookup, mo models.Options, opts compiler.Options, prof *target.Profile, degrees []int, exact bool) ([]sweepJSON, error) {
	if prof.Interconnect == nil {
		return nil, fmt.Errorf("--tp-sweep: target %s has no NPU interconnect to model", prof.Name)
	}
	o := opts
	o.Until = compiler.StagePasses
	o.PassOptions.DumpDir, o.PassOptions.PrintAfter, o.PassOptions.Snapshots, o.Progress = "", nil, false, nil
	var rows []sweepJSON
	for _, d := range degrees {
		row := sweepJSON{TP: d}
		tp, err := passes.ShardTP(hp, lookup, mo, passes.TPOptions{Ranks: d, Exact: exact && d > 1})
		if err != nil {
			row.Error = err.Error()
			rows = append(rows, row)
			continue
		}
		for i, r := range tp.Ranks {
			res, err := compiler.Compile(context.Background(), r.Model.Graph, o)
			if err != nil {
				return rows, fmt.Errorf("--tp-sweep %d: rank %d: %w", d, i, err)
			}
			st, err := prof.EstimateStep(res.Optimised, res.DecodeBindings())
			if err != nil {
				return rows, fmt.Errorf("--tp-sweep %d: rank %d: %w", d, i, err)
			}
			if st.StepUS > row.StepUS {
				row.StepUS, row.ComputeUS, row.CollectiveUS = st.StepUS, st.ComputeUS, st.CollectiveUS
			}
			if i == 0 {
				row.Collectives = st.Collectives
			}
			row.WeightBytes = max(row.WeightBytes, rankWeightBytes(res.Optimised))
		}
		row.PredictedTokS = perSecond(row.StepUS)
		rows = append(rows, row)
	}
	return rows, nil
}

// rankWeightBytes sums the bytes of g's weights (ggml's blocks).
func rankWeightBytes(g *ir.Graph) int64 {
	var n int64
	for _, x := range g.Nodes {
		if x == nil || x.Op != ir.OpWeight {
			continue
		}
		ne, err := x.Type.Shape.Ne()
		if err != nil {
			continue
		}
		n += ne[0] * ne[1] * ne[2] * ne[3] * int64(x.Type.DType.TypeSize()) / int64(x.Type.DType.BlockSize())
	}
	return n
}
