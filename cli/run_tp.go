package cli

import (
	"errors"
	"flag"
	"fmt"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
)

// This file holds the flags of run's tensor parallelism (--tp N) and
// pipeline parallelism (--pp M) and the split of the model: over N ranks
// by models.ShardTP (Megatron-LM's layout), into M stages by
// parallel.Stages; runtime/launch's Ranks runs them.

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

// opsText is the size of the compiled graphs the run steps, for its
// progress line: the optimised graph's op count, as compile reports it
// after the passes, or the ranks' (launch.Ranks.OpsText).
func (j *runJob) opsText() string {
	if j.tp == nil {
		return plural(j.m.Graph.NumOps(), "op")
	}
	return j.tp.OpsText()
}

// plural is "1 token", "2 tokens".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
