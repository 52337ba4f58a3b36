// Package parallel is the per-rank driver of a model split over devices:
// tensor parallelism (models.ShardTP, Megatron-LM's layout) and/or
// pipeline stages (passes.ShardPP). It lays out the ranks (Split), gives
// the rules every rank is partitioned and lowered with (Rules: the
// collectives as HCCL calls, target.HCCLRules), and, from each rank's
// compile driver Result (package compiler), finds the collectives'
// planned buffers (CollectiveBuffersOf), sums the rank's device memory
// with its HCCL buffers (MemoryOf) and adds the link model's decode step
// (target.Profile.EstimateStep) into the whole model's Prediction. Sweep
// predicts the decode step at several tensor-parallel degrees.
//
// irtool compile --tp/--pp/--tp-sweep, viz --rank and run --tp/--pp call
// it and print what it returns. The package sits beside compiler, above
// the compiler stages and below the runtime and cmd.
package parallel

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// DefaultHCCLBuffMB is HCCL_BUFFSIZE's default in MB (CANN environment
// variable reference, HCCL_BUFFSIZE).
const DefaultHCCLBuffMB = 200

// MaxHCCLBuffMB bounds HCCL_BUFFSIZE.
const MaxHCCLBuffMB = 1 << 20

// Rules is the rule set every rank of a split model is partitioned and
// lowered with: target.HCCLRules, under which the NPU runs each
// collective HCCL can compute (HcclAllReduce, HcclAllGather,
// HcclReduceScatter, HcclSend, HcclRecv on the segment's stream, captured
// with its kernels) and the rest stay host collectives with their reason.
// On a target without an NPU every node is the host's under any rules.
// Simulated devices have no HCCL: their ranks use the default rules (host
// collectives over the simulated group).
func Rules() (*target.Rules, error) { return target.HCCLRules() }

// Profile is the profile of target name under Rules: the link model
// (EstimateStep) sees the collectives where the lowering puts them.
func Profile(name string) (*target.Profile, error) {
	rules, err := Rules()
	if err != nil {
		return nil, err
	}
	return rules.Profile(name)
}

// HCCLBuffMB is HCCL_BUFFSIZE in MB: mb when positive (a flag), else the
// environment's HCCL_BUFFSIZE, else CANN's default.
func HCCLBuffMB(mb int64) (int64, error) {
	if mb > 0 {
		return mb, nil
	}
	v := strings.TrimSpace(os.Getenv("HCCL_BUFFSIZE"))
	if v == "" {
		return DefaultHCCLBuffMB, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > MaxHCCLBuffMB {
		return 0, fmt.Errorf("environment HCCL_BUFFSIZE=%q: want an integer number of MB in 1..%d", v, MaxHCCLBuffMB)
	}
	return n, nil
}

// RankModel is one rank's model before compiling.
type RankModel struct {
	// TPRank and Stage place the rank: its tensor-parallel rank and its
	// pipeline stage.
	TPRank, Stage int
	Model         *models.Model
	// Comms is the number of communicators the rank joins.
	Comms int
}

// Stages cuts m's graph into pipeline stages (passes.ShardPP), one model
// each.
func Stages(m *models.Model, stages int) ([]*models.Model, error) {
	graphs, err := passes.ShardPP(m.Graph, stages)
	if err != nil {
		return nil, err
	}
	out := make([]*models.Model, len(graphs))
	for s, g := range graphs {
		sm := *m
		sm.Graph = g
		out[s] = &sm
	}
	return out, nil
}

// Split lays out the ranks of m split over tp's tensor-parallel ranks (nil:
// one) and stages pipeline stages (<= 1: none): rank t*stages+s is
// tensor-parallel rank t's pipeline stage s.
func Split(m *models.Model, tp *models.TP, stages int) ([]RankModel, error) {
	tpModels := []*models.Model{m}
	comms := 0
	if tp != nil && len(tp.Ranks) > 1 {
		tpModels = tpModels[:0]
		for _, r := range tp.Ranks {
			tpModels = append(tpModels, r.Model)
		}
		comms++
	}
	if stages > 1 {
		comms++
	}
	var out []RankModel
	for t, m := range tpModels {
		if stages <= 1 {
			out = append(out, RankModel{TPRank: t, Model: m, Comms: comms})
			continue
		}
		sms, err := Stages(m, stages)
		if err != nil {
			return nil, err
		}
		for s, sm := range sms {
			out = append(out, RankModel{TPRank: t, Stage: s, Model: sm, Comms: comms})
		}
	}
	return out, nil
}

// TPInfo describes a tensor-parallel split.
type TPInfo struct {
	Ranks        int     `json:"ranks"`
	Exact        bool    `json:"exact"`
	KVReplicated bool    `json:"kv_replicated"`
	VocabSplit   bool    `json:"vocab_split"`
	FFNShares    []int64 `json:"ffn_shares"`
	// Collectives counts each rank's collectives per step, by op.
	Collectives map[string]int `json:"collectives_per_step"`
}

// DescribeTP describes tp.
func DescribeTP(tp *models.TP) TPInfo {
	counts := map[string]int{}
	for _, c := range ir.Collectives(tp.Ranks[0].Model.Graph) {
		counts[string(c.Op)]++
	}
	return TPInfo{Ranks: len(tp.Ranks), Exact: tp.Options.Exact, KVReplicated: tp.KVReplicated, VocabSplit: tp.VocabSplit,
		FFNShares: tp.FFNShares, Collectives: counts}
}

// PPInfo describes a pipeline.
type PPInfo struct {
	Stages int `json:"stages"`
	// Layers is each stage's first layer and layer count.
	Layers [][2]int `json:"layers"`
	// Transfers counts each stage's collectives per step, by op (sends
	// and receives; with tensor parallelism, the stage's tensor-parallel
	// ones too).
	Transfers []map[string]int `json:"transfers_per_step"`
}

// DescribePP describes the pipeline of stages.
func DescribePP(stages []*models.Model) PPInfo {
	in := PPInfo{Stages: len(stages)}
	for _, m := range stages {
		lo, hi := -1, -1
		for _, n := range m.Graph.Nodes {
			if n.Layer >= 0 && (n.Op == ir.OpState) {
				if lo < 0 || n.Layer < lo {
					lo = n.Layer
				}
				hi = max(hi, n.Layer)
			}
		}
		in.Layers = append(in.Layers, [2]int{lo, hi - lo + 1})
		counts := map[string]int{}
		for _, c := range ir.Collectives(m.Graph) {
			counts[string(c.Op)]++
		}
		in.Transfers = append(in.Transfers, counts)
	}
	return in
}

// Describe is the pipeline in words, one clause per stage: its layers and
// its collectives per step, e.g. "stage 0: layers 0-2, 1 send per step;
// stage 1: layers 3-4, 1 recv per step".
func (in PPInfo) Describe() string {
	parts := make([]string, len(in.Layers))
	for s, l := range in.Layers {
		layers := "no layers"
		switch {
		case l[1] == 1:
			layers = fmt.Sprintf("layer %d", l[0])
		case l[1] > 1:
			layers = fmt.Sprintf("layers %d-%d", l[0], l[0]+l[1]-1)
		}
		var colls []string
		if s < len(in.Transfers) {
			for _, op := range slices.Sorted(maps.Keys(in.Transfers[s])) {
				colls = append(colls, fmt.Sprintf("%d %s", in.Transfers[s][op], op))
			}
		}
		c := "no collectives"
		if len(colls) > 0 {
			c = strings.Join(colls, ", ") + " per step"
		}
		parts[s] = fmt.Sprintf("stage %d: %s, %s", s, layers, c)
	}
	return strings.Join(parts, "; ")
}

// CollectiveBuffers counts the planned buffers of the collectives.
type CollectiveBuffers struct {
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
}

// CollectiveBuffersOf checks, in both memory plans of r (worst case and
// decode), that every collective's operand and result that is not a leaf
// has a fixed place: an offset in the arena, or the outputs region for a
// graph output; it sums the decode plan's bytes of them. Without the
// memory plans it is zero.
func CollectiveBuffersOf(r *compiler.Result) (CollectiveBuffers, error) {
	var out CollectiveBuffers
	if r == nil || r.MemoryDecode == nil || r.Memory == nil {
		return out, nil
	}
	if _, err := PlanCollectives(r.Memory.Plan, r.Memory.Bindings, "worst-case"); err != nil {
		return out, err
	}
	return PlanCollectives(r.MemoryDecode.Plan, r.MemoryDecode.Bindings, "decode")
}

// PlanCollectives checks and sums the collectives' buffers of one plan
// (what names it in errors).
func PlanCollectives(p *planner.MemoryPlan, b ir.Bindings, what string) (CollectiveBuffers, error) {
	var out CollectiveBuffers
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

// DeviceMemory is one rank's device memory: what it holds and the device
// it must fit in.
type DeviceMemory struct {
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

// MemoryOf sums a rank's device memory from its compile result r (nil for
// a target without an NPU or a result without a program): the partition's
// device weights, the program's NPU regions, the worst-case arena and 2 ×
// buffMB MB of HCCL buffers per communicator (comms).
func MemoryOf(r *compiler.Result, prof *target.Profile, comms int, buffMB int64) *DeviceMemory {
	if prof.NPU == nil || r == nil || r.Program == nil || r.Partition == nil {
		return nil
	}
	m := &DeviceMemory{WeightBytes: r.Partition.DeviceWeightBytes, Communicators: comms,
		HCCLBufferBytes: int64(comms) * 2 * buffMB << 20, CapacityBytes: prof.NPU.MemBytes}
	if r.Memory != nil {
		m.ArenaBytes = r.Memory.Plan.ArenaBytes
	}
	for _, r := range r.Program.Regions {
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

// Prediction is the link model's decode step of a split model.
type Prediction struct {
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

	stageUS []float64
}

// StepOf is the link model's decode step of a rank from its compile
// result r (nil without the interconnect or the decode plan).
func StepOf(r *compiler.Result, prof *target.Profile) (*target.StepEstimate, error) {
	if prof.Interconnect == nil || r == nil || r.MemoryDecode == nil {
		return nil, nil
	}
	st, err := prof.EstimateStep(r.Optimised, r.DecodeBindings())
	if err != nil {
		return nil, fmt.Errorf("link model: %w", err)
	}
	return &st, nil
}

// Add adds rank rm's decode step st: the stage's pace is its slowest
// rank's, and tensor-parallel rank 0's path counts the compute and the
// collectives.
func (p *Prediction) Add(rm RankModel, st *target.StepEstimate) {
	for len(p.stageUS) <= rm.Stage {
		p.stageUS = append(p.stageUS, 0)
	}
	p.stageUS[rm.Stage] = max(p.stageUS[rm.Stage], st.StepUS)
	if rm.TPRank == 0 {
		p.Collectives = MergeCosts(p.Collectives, st.Collectives)
		p.ComputeUS += st.ComputeUS
		p.CollectiveUS += st.CollectiveUS
	}
}

// Finish sums the stages' steps and records the link.
func (p *Prediction) Finish(prof *target.Profile, buffMB int64) {
	for _, us := range p.stageUS {
		p.StepUS += us
	}
	p.PredictedTokS = perSecond(p.StepUS)
	p.Interconnect, p.Algorithm, p.HCCLBuffMB = prof.Interconnect.Name, string(prof.Interconnect.Algorithm), buffMB
}

func perSecond(us float64) float64 {
	if us <= 0 {
		return 0
	}
	return 1e6 / us
}

// MergeCosts adds b's collectives into a (same op, group and ranks).
func MergeCosts(a, b []target.CollectiveCost) []target.CollectiveCost {
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

// SweepRow is one degree of Sweep.
type SweepRow struct {
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

// Sweep predicts the decode step at each degree: the model split by
// models.ShardTP (degree 1 too, so that every row is built alike), each
// rank's pass pipeline (opts, up to the passes), and the link model's
// step of each rank (target.Profile.EstimateStep); the slowest rank sets
// the pace. No memory plan, partition or lowering runs. A degree the
// model refuses is a row with Error set.
func Sweep(hp models.HParams, lookup models.WeightLookup, mo models.Options, opts compiler.Options, prof *target.Profile, degrees []int, exact bool) ([]SweepRow, error) {
	if prof.Interconnect == nil {
		return nil, fmt.Errorf("--tp-sweep: target %s has no NPU interconnect to model", prof.Name)
	}
	o := opts
	o.Until = compiler.StagePasses
	o.PassOptions.DumpDir, o.PassOptions.PrintAfter, o.PassOptions.Snapshots, o.Progress = "", nil, false, nil
	var rows []SweepRow
	for _, d := range degrees {
		row := SweepRow{TP: d}
		tp, err := models.ShardTP(hp, lookup, mo, models.TPOptions{Ranks: d, Exact: exact && d > 1})
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
