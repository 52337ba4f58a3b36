package launch

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
)

// This file holds the ranks of run --tp N and --pp M: the model is split
// over N ranks by models.ShardTP (Megatron-LM's layout) or into M stages
// by parallel.Stages, each rank runs its own graph on its own device (a
// simulated Ascend device per rank with backend sim, a CPU session per
// rank with backend cpu, an NPU with cann), one goroutine per rank, and
// the ranks' collectives meet in one device.Group, the emulated HCCL
// communicator (or a device.Grid with both splits).

// Ranks runs the ranks together: the tensor-parallel split TP, or the
// pipeline stages.
type Ranks struct {
	// TP is the tensor-parallel split (nil with --pp alone); Stages rank
	// 0's pipeline stages (nil without --pp).
	TP     *models.TP
	Stages []*models.Model
	*session.Ranks
	sims  []*Sim
	cpus  []*session.Session
	canns []*cannRank // ranks_cann.go
	first int         // the rank of canns[0] (one rank per process)
	proc  bool        // one rank per process (RootInfo)
	// procStep steps that one rank (ranks_cann.go).
	procStep func(tokens []int32) (*session.StepResult, error)
}

// Step runs one step on every rank of this process.
func (b *Ranks) Step(tokens []int32) (*session.StepResult, error) {
	if b.procStep != nil {
		return b.procStep(tokens)
	}
	return b.Ranks.Step(tokens)
}

// NewTP starts the ranks of the tensor-parallel split tp of the model in
// file f, as goroutines of this process.
func NewTP(tp *models.TP, f *gguf.File, o Options) (*Ranks, error) {
	ms := make([]*models.Model, len(tp.Ranks))
	ws := make([]eval.WeightSource, len(tp.Ranks))
	for i, r := range tp.Ranks {
		ms[i], ws[i] = r.Model, r.Weights(f)
	}
	b := &Ranks{TP: tp}
	if o.Backend == "cann" {
		return b, b.startCann(models.TPGroup, ms, ws, f, o)
	}
	return b, b.startGroups(models.TPGroup, ms, ws, f, o)
}

// NewTPPP runs the pipeline stages of every tensor-parallel rank:
// stages[t][s] is stage s of rank t, in tensor-parallel group s (with the
// other ranks' stage s) and pipeline group t (with its own stages).
// With backend cann, rank t×M+s runs on device Cann.Device + t×M+s and
// joins two HCCL communicators, tp (its stage's ranks) and pp (its own
// stages).
func NewTPPP(tp *models.TP, stages [][]*models.Model, f *gguf.File, o Options) (*Ranks, error) {
	n, m := len(stages), len(stages[0])
	if o.Backend == "cann" {
		b := &Ranks{TP: tp, Stages: stages[0]}
		var ms []*models.Model
		var ws []eval.WeightSource
		for t := range n {
			for s := range m {
				ms = append(ms, stages[t][s])
				ws = append(ws, tp.Ranks[t].Weights(f))
			}
		}
		var groups []cannGroup
		for s := range m {
			g := cannGroup{name: models.TPGroup}
			for t := range n {
				g.members = append(g.members, t*m+s)
			}
			groups = append(groups, g)
		}
		for t := range n {
			g := cannGroup{name: passes.PPGroup}
			for s := range m {
				g.members = append(g.members, t*m+s)
			}
			groups = append(groups, g)
		}
		return b, b.startCannGroups(groups, ms, ws, f, o)
	}
	grid, err := device.NewGrid(models.TPGroup, passes.PPGroup, n, m, device.DefaultCollectiveTimeout)
	if err != nil {
		return nil, err
	}
	b := &Ranks{TP: tp, Stages: stages[0]}
	var ms []*models.Model
	var ws []eval.WeightSource
	var comms [][]eval.Communicator
	for t := range n {
		for s := range m {
			c, err := grid.Comms(t*m + s)
			if err != nil {
				return nil, err
			}
			ms = append(ms, stages[t][s])
			ws = append(ws, tp.Ranks[t].Weights(f))
			comms = append(comms, c)
		}
	}
	return b, b.start(ms, ws, comms, grid.Fail, f, o)
}

// NewPP starts the pipeline stages of the model in file f, one rank each.
func NewPP(stages []*models.Model, f *gguf.File, o Options) (*Ranks, error) {
	ws := make([]eval.WeightSource, len(stages))
	for i := range ws {
		ws[i] = f
	}
	b := &Ranks{Stages: stages}
	if o.Backend == "cann" {
		return b, b.startCann(passes.PPGroup, stages, ws, f, o)
	}
	return b, b.startGroups(passes.PPGroup, stages, ws, f, o)
}

// startGroups starts the ranks with their collectives in one group.
func (b *Ranks) startGroups(group string, ms []*models.Model, ws []eval.WeightSource, f *gguf.File, o Options) error {
	grp, err := device.NewGroup(group, len(ms), device.DefaultCollectiveTimeout)
	if err != nil {
		return err
	}
	comms, err := grp.Comms()
	if err != nil {
		return err
	}
	return b.start(ms, ws, comms, grp.Fail, f, o)
}

// start makes one session per rank, rank i's collectives through
// comms[i]; fail makes every rank's pending collective fail.
func (b *Ranks) start(ms []*models.Model, ws []eval.WeightSource, comms [][]eval.Communicator, fail func(int, error), f *gguf.File, o Options) error {
	var err error
	var steppers []session.Stepper
	for i, m := range ms {
		ks := eval.NewCollectiveKernels(o.KernelSet, comms[i]...)
		w := ws[i]
		if o.Backend == "sim" {
			pol, err := o.Policy()
			if err != nil {
				b.Close()
				return err
			}
			dev, err := o.NewSimDevice(device.SimOptions{MemoryBytes: SimMemory(f), Kernels: o.Kernels, KernelSet: ks})
			if err != nil {
				b.Close()
				return err
			}
			s, err := o.NewRunner(m, w, dev, program.Options{Policy: pol, Kernels: o.Kernels, KernelSet: ks,
				Compile: compiler.Options{Target: o.Target, Passes: "none"}})
			if err != nil {
				b.Close()
				return fmt.Errorf("rank %d: %w", i, err)
			}
			sb := &Sim{Runner: s, dev: dev}
			b.sims = append(b.sims, sb)
			steppers = append(steppers, sb)
			continue
		}
		s, err := session.NewSession(m, w, session.SessionOptions{Threads: o.Threads, Reference: o.Check,
			Exec: eval.ExecOptions{Kernels: o.Kernels, KernelSet: ks, CheckFinite: o.Check}})
		if err != nil {
			b.Close()
			return fmt.Errorf("rank %d: %w", i, err)
		}
		b.cpus = append(b.cpus, s)
		steppers = append(steppers, s)
	}
	if b.Ranks, err = session.NewRanks(steppers, fail); err != nil {
		b.Close()
		return err
	}
	return nil
}

// Close releases every rank's session.
func (b *Ranks) Close() {
	for _, s := range b.sims {
		s.Close()
	}
	for _, s := range b.cpus {
		s.Close()
	}
	closeCann(b.canns)
}

// RanksStats is the "stats" object of run --json with --tp or --pp.
type RanksStats struct {
	TP *parallel.TPInfo `json:"tp,omitempty"`
	PP *parallel.PPInfo `json:"pp,omitempty"`
	// Ranks holds each rank's device statistics (backends sim and
	// cann; with RootInfo, this process's rank only).
	Ranks []Stats `json:"ranks,omitempty"`
	// Rank is the rank of Ranks[0] with RootInfo (one rank per
	// process), absent otherwise.
	Rank *int `json:"rank,omitempty"`
}

// Stats returns the split and each device rank's statistics.
func (b *Ranks) Stats() RanksStats {
	var st RanksStats
	if b.TP != nil {
		in := parallel.DescribeTP(b.TP)
		st.TP = &in
	}
	if b.Stages != nil {
		in := parallel.DescribePP(b.Stages)
		st.PP = &in
	}
	for _, s := range b.sims {
		st.Ranks = append(st.Ranks, s.Stats())
	}
	for _, r := range b.canns {
		st.Ranks = append(st.Ranks, r.stats())
	}
	if b.proc {
		st.Rank = &b.first
	}
	return st
}

// WriteSummary prints the split and each rank's phases to w.
func (b *Ranks) WriteSummary(w io.Writer) {
	if b.Stages != nil {
		fmt.Fprintf(w, "irtool run: pipeline of %d stages: %s\n", len(b.Stages), parallel.DescribePP(b.Stages).Describe())
	}
	if b.TP == nil {
		for i, s := range b.sims {
			WritePhases(w, fmt.Sprintf("sim stage %d", i), s.Stats())
		}
		return
	}
	in := parallel.DescribeTP(b.TP)
	fmt.Fprintf(w, "irtool run: tensor parallel over %d ranks (exact %v, KV heads replicated %v, vocabulary split %v, FFN shares %v); per step and rank %d all_reduce, %d all_gather\n",
		in.Ranks, in.Exact, in.KVReplicated, in.VocabSplit, in.FFNShares, in.Collectives["all_reduce"], in.Collectives["all_gather"])
	for i, s := range b.sims {
		name := fmt.Sprintf("sim rank %d", i)
		if m := len(b.Stages); m > 0 {
			name = fmt.Sprintf("sim rank %d stage %d", i/m, i%m)
		}
		WritePhases(w, name, s.Stats())
	}
	for i, r := range b.canns {
		name := fmt.Sprintf("cann rank %d", b.first+i)
		if m := len(b.Stages); m > 0 {
			name = fmt.Sprintf("cann rank %d stage %d", i/m, i%m)
		}
		WritePhases(w, name, r.stats())
	}
}

// OpsText is the size of the graphs the ranks step, for run's progress
// line: with --tp each rank's op count after the passes, with --pp each
// stage's (rank 0's stages with both: the ranks' graphs differ only in
// shapes).
func (b *Ranks) OpsText() string {
	if b.Stages != nil {
		counts := make([]string, len(b.Stages))
		for i, m := range b.Stages {
			counts[i] = strconv.Itoa(m.Graph.NumOps())
		}
		s := fmt.Sprintf("%d stages of %s ops", len(b.Stages), strings.Join(counts, "+"))
		if b.TP != nil {
			s = fmt.Sprintf("%d ranks × %s", len(b.TP.Ranks), s)
		}
		return s
	}
	ops := fmt.Sprintf("%d ops", b.TP.Ranks[0].Model.Graph.NumOps())
	if b.TP.Ranks[0].Model.Graph.NumOps() == 1 {
		ops = "1 op"
	}
	return fmt.Sprintf("%d ranks of %s", len(b.TP.Ranks), ops)
}
