package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/irtool/irtool"
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

// This file holds run's tensor parallelism (--tp N): the model is split
// over N ranks by models.ShardTP (Megatron-LM's layout), each rank runs
// its own graph on its own device (a simulated Ascend device per rank with
// --backend sim, a CPU session per rank with --backend cpu), one goroutine
// per rank, and the ranks' collectives meet in one device.Group, the
// emulated HCCL communicator.

// tpFlags are the tensor-parallel flags of run and compile (and run's
// pipeline-parallel --pp).
type tpFlags struct {
	Ranks  int
	Exact  bool
	Stages int // run only
	// Rank and RootInfo (run --backend cann only): this process runs rank
	// Rank of --tp ranks, the others run in other processes, and they meet
	// through the HCCL root info in file RootInfo (written by rank 0).
	Rank     int
	RootInfo string
}

func (f *tpFlags) declare(fs *flag.FlagSet) {
	f.Stages = 1 // a command without --pp runs one stage
	fs.IntVar(&f.Ranks, "tp", 1, "split the model over `N` ranks by tensor parallelism (Megatron-LM's layout; n_head must be a multiple of N)")
	fs.BoolVar(&f.Exact, "tp-exact", false, "with --tp, keep every dot product whole (all-gathers instead of all-reduces), so the logits are one device's bit for bit")
}

// declarePP declares run's --pp.
func (f *tpFlags) declarePP(fs *flag.FlagSet) {
	fs.IntVar(&f.Stages, "pp", 1, "split the layers into `N` pipeline stages, one rank each, the hidden state sent from stage to stage (the logits are one device's bit for bit)")
}

// declareProc declares run's --rank and --root-info.
func (f *tpFlags) declareProc(fs *flag.FlagSet) {
	fs.IntVar(&f.Rank, "rank", 0, "cann, with --tp N and --root-info: the rank `R` (0..N-1) this process runs; rank 0 writes the root info, the others read it")
	fs.StringVar(&f.RootInfo, "root-info", "", "cann, with --tp N: run one rank per process; the ranks meet through the HCCL root info in `FILE` (written by rank 0, read by the others)")
}

// check validates the flags for backend ("" for compile).
func (f *tpFlags) check(backend string) error {
	switch {
	case f.Stages < 1 || f.Stages > 1024:
		return fmt.Errorf("--pp %d: want 1..1024 stages", f.Stages)
	case f.Stages > 1 && f.RootInfo != "":
		return errors.New("--root-info runs --tp ranks, not --pp stages")
	case f.Ranks < 1 || f.Ranks > 1024:
		return fmt.Errorf("--tp %d: want 1..1024 ranks", f.Ranks)
	case f.Exact && f.Ranks == 1:
		return errors.New("--tp-exact needs --tp N with N > 1")
	case f.RootInfo != "" && (backend != "cann" || f.Ranks < 2):
		return errors.New("--root-info needs --backend cann and --tp N with N > 1")
	case f.RootInfo == "" && f.Rank != 0:
		return errors.New("--rank needs --root-info")
	case f.Rank < 0 || f.Rank >= max(f.Ranks, 1):
		return fmt.Errorf("--rank %d: want 0..%d", f.Rank, f.Ranks-1)
	}
	return nil
}

// shardTP splits the model file's graph over the ranks and applies the
// pass pipeline list to each rank's graph.
func shardTP(src *modelSource, opts models.Options, f *tpFlags, list string) (*models.TP, error) {
	if src.IsIR() {
		if err := src.CheckAsBuilt(opts); err != nil {
			return nil, fmt.Errorf("--tp %d: %w", f.Ranks, err)
		}
	}
	tp, err := models.ShardTPFile(src.File, opts, models.TPOptions{Ranks: f.Ranks, Exact: f.Exact})
	if err != nil {
		return nil, err
	}
	for _, r := range tp.Ranks {
		if r.Model, err = optimiseModel(src.reg, r.Model, list); err != nil {
			return nil, fmt.Errorf("rank %d: %w", r.Rank, err)
		}
	}
	return tp, nil
}

// shardPP splits the model's graph into pipeline stages (parallel.Stages)
// and applies the pass pipeline to each stage's graph.
func shardPP(reg *irtool.Context, m *models.Model, stages int, list string) ([]*models.Model, error) {
	out, err := parallel.Stages(m, stages)
	if err != nil {
		return nil, err
	}
	for k, sm := range out {
		if out[k], err = optimiseModel(reg, sm, list); err != nil {
			return nil, fmt.Errorf("stage %d: %w", k, err)
		}
	}
	return out, nil
}

// tpBackend runs the ranks together: the tensor-parallel split tp, or
// the pipeline stages.
type tpBackend struct {
	tp     *models.TP
	stages []*models.Model // rank 0's pipeline stages (--pp)
	*session.Ranks
	sims  []*simBackend
	cpus  []*session.Session
	canns []*cannRank // run_tp_cann.go
	first int         // the rank of canns[0] (--rank in a process of its own)
	proc  bool        // one rank per process (--root-info)
	// procStep steps that one rank (run_tp_cann.go).
	procStep func(tokens []int32) (*session.StepResult, error)
}

// Step runs one step on every rank of this process.
func (b *tpBackend) Step(tokens []int32) (*session.StepResult, error) {
	if b.procStep != nil {
		return b.procStep(tokens)
	}
	return b.Ranks.Step(tokens)
}

func newTPBackend(tp *models.TP, f *gguf.File, backend string, flags *simFlags, cf *cannFlags, fs *flag.FlagSet, threads int, check bool) (*tpBackend, error) {
	ms := make([]*models.Model, len(tp.Ranks))
	ws := make([]eval.WeightSource, len(tp.Ranks))
	for i, r := range tp.Ranks {
		ms[i], ws[i] = r.Model, r.Weights(f)
	}
	b := &tpBackend{tp: tp}
	if backend == "cann" {
		return b, b.startCann(models.TPGroup, ms, ws, f, flags, cf, fs)
	}
	return b, b.startGroups(models.TPGroup, ms, ws, f, backend, flags, fs, threads, check)
}

// newTPPPBackend runs the pipeline stages of every tensor-parallel rank:
// stages[t][s] is stage s of rank t, in tensor-parallel group s (with the
// other ranks' stage s) and pipeline group t (with its own stages).
// With --backend cann, rank t×M+s runs on device --device + t×M+s and
// joins two HCCL communicators, tp (its stage's ranks) and pp (its own
// stages).
func newTPPPBackend(tp *models.TP, stages [][]*models.Model, f *gguf.File, backend string, flags *simFlags, cf *cannFlags, fs *flag.FlagSet, threads int, check bool) (*tpBackend, error) {
	n, m := len(stages), len(stages[0])
	if backend == "cann" {
		b := &tpBackend{tp: tp, stages: stages[0]}
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
		return b, b.startCannGroups(groups, ms, ws, f, flags, cf, fs)
	}
	grid, err := device.NewGrid(models.TPGroup, passes.PPGroup, n, m, device.DefaultCollectiveTimeout)
	if err != nil {
		return nil, err
	}
	b := &tpBackend{tp: tp, stages: stages[0]}
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
	return b, b.start(ms, ws, comms, grid.Fail, f, backend, flags, fs, threads, check)
}

func newPPBackend(stages []*models.Model, f *gguf.File, backend string, flags *simFlags, cf *cannFlags, fs *flag.FlagSet, threads int, check bool) (*tpBackend, error) {
	ws := make([]eval.WeightSource, len(stages))
	for i := range ws {
		ws[i] = f
	}
	b := &tpBackend{stages: stages}
	if backend == "cann" {
		return b, b.startCann(passes.PPGroup, stages, ws, f, flags, cf, fs)
	}
	return b, b.startGroups(passes.PPGroup, stages, ws, f, backend, flags, fs, threads, check)
}

// startGroups starts the ranks with their collectives in one group.
func (b *tpBackend) startGroups(group string, ms []*models.Model, ws []eval.WeightSource, f *gguf.File, backend string, flags *simFlags, fs *flag.FlagSet, threads int, check bool) error {
	grp, err := device.NewGroup(group, len(ms), device.DefaultCollectiveTimeout)
	if err != nil {
		return err
	}
	comms, err := grp.Comms()
	if err != nil {
		return err
	}
	return b.start(ms, ws, comms, grp.Fail, f, backend, flags, fs, threads, check)
}

// start makes one session per rank, rank i's collectives through
// comms[i]; fail makes every rank's pending collective fail.
func (b *tpBackend) start(ms []*models.Model, ws []eval.WeightSource, comms [][]eval.Communicator, fail func(int, error), f *gguf.File, backend string, flags *simFlags, fs *flag.FlagSet, threads int, check bool) error {
	var err error
	var steppers []session.Stepper
	for i, m := range ms {
		ks := eval.NewCollectiveKernels(flags.reg.Kernels, comms[i]...)
		w := ws[i]
		if backend == "sim" {
			pol, err := flags.policy(fs)
			if err != nil {
				b.Close()
				return err
			}
			dev, err := flags.reg.NewSimDevice(device.SimOptions{MemoryBytes: simMemory(f), Kernels: flags.Kernels, KernelSet: ks})
			if err != nil {
				b.Close()
				return err
			}
			s, err := flags.reg.NewRunner(m, w, dev, program.Options{Policy: pol, Kernels: flags.Kernels, KernelSet: ks,
				Compile: compiler.Options{Target: flags.Target, Passes: "none"}})
			if err != nil {
				b.Close()
				return fmt.Errorf("rank %d: %w", i, err)
			}
			sb := &simBackend{Runner: s, dev: dev}
			b.sims = append(b.sims, sb)
			steppers = append(steppers, sb)
			continue
		}
		s, err := session.NewSession(m, w, session.SessionOptions{Threads: threads, Reference: check,
			Exec: eval.ExecOptions{Kernels: flags.Kernels, KernelSet: ks, CheckFinite: check}})
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
func (b *tpBackend) Close() {
	for _, s := range b.sims {
		s.Close()
	}
	for _, s := range b.cpus {
		s.Close()
	}
	closeCann(b.canns)
}

// opsText is the size of the compiled graphs the run steps, for its
// progress line: the optimised graph's op count, as compile reports it
// after the passes; with --tp each rank's, with --pp each stage's (rank
// 0's stages with both: the ranks' graphs differ only in shapes).
func (j *runJob) opsText() string {
	b := j.tp
	switch {
	case b == nil:
		return plural(j.m.Graph.NumOps(), "op")
	case b.stages != nil:
		counts := make([]string, len(b.stages))
		for i, m := range b.stages {
			counts[i] = strconv.Itoa(m.Graph.NumOps())
		}
		s := fmt.Sprintf("%d stages of %s ops", len(b.stages), strings.Join(counts, "+"))
		if b.tp != nil {
			s = fmt.Sprintf("%d ranks × %s", len(b.tp.Ranks), s)
		}
		return s
	}
	return fmt.Sprintf("%d ranks of %s", len(b.tp.Ranks), plural(b.tp.Ranks[0].Model.Graph.NumOps(), "op"))
}

// plural is "1 token", "2 tokens".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// tpStatsJSON is the "stats" object of run --json with --tp or --pp.
type tpStatsJSON struct {
	TP *parallel.TPInfo `json:"tp,omitempty"`
	PP *parallel.PPInfo `json:"pp,omitempty"`
	// Ranks holds each rank's device statistics (--backend sim and
	// cann; with --root-info, this process's rank only).
	Ranks []simStatsJSON `json:"ranks,omitempty"`
	// Rank is the rank of Ranks[0] with --root-info (one rank per
	// process), absent otherwise.
	Rank *int `json:"rank,omitempty"`
}

func (b *tpBackend) stats() tpStatsJSON {
	var st tpStatsJSON
	if b.tp != nil {
		in := parallel.DescribeTP(b.tp)
		st.TP = &in
	}
	if b.stages != nil {
		in := parallel.DescribePP(b.stages)
		st.PP = &in
	}
	for _, s := range b.sims {
		st.Ranks = append(st.Ranks, s.stats())
	}
	for _, r := range b.canns {
		st.Ranks = append(st.Ranks, r.stats())
	}
	if b.proc {
		st.Rank = &b.first
	}
	return st
}

// summary prints the split and each rank's phases to w.
func (b *tpBackend) summary(w io.Writer) {
	if b.stages != nil {
		fmt.Fprintf(w, "irtool run: pipeline of %d stages: %s\n", len(b.stages), parallel.DescribePP(b.stages).Describe())
	}
	if b.tp == nil {
		for i, s := range b.sims {
			printPhases(w, fmt.Sprintf("sim stage %d", i), s.stats())
		}
		return
	}
	in := parallel.DescribeTP(b.tp)
	fmt.Fprintf(w, "irtool run: tensor parallel over %d ranks (exact %v, KV heads replicated %v, vocabulary split %v, FFN shares %v); per step and rank %d all_reduce, %d all_gather\n",
		in.Ranks, in.Exact, in.KVReplicated, in.VocabSplit, in.FFNShares, in.Collectives["all_reduce"], in.Collectives["all_gather"])
	for i, s := range b.sims {
		name := fmt.Sprintf("sim rank %d", i)
		if m := len(b.stages); m > 0 {
			name = fmt.Sprintf("sim rank %d stage %d", i/m, i%m)
		}
		printPhases(w, name, s.stats())
	}
	for i, r := range b.canns {
		name := fmt.Sprintf("cann rank %d", b.first+i)
		if m := len(b.stages); m > 0 {
			name = fmt.Sprintf("cann rank %d stage %d", i/m, i%m)
		}
		printPhases(w, name, r.stats())
	}
}
