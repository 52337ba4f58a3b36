package cli

import (
	"errors"
	"fmt"
	"github.com/irtool/irtool/models/modelfile"
	"strconv"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/target"
)

// This file holds compile --tp N and --pp M: after the whole model's
// stages, the model is split over N tensor-parallel ranks
// (models.ShardTP) and/or M pipeline stages (passes.ShardPP), and each
// rank's graph goes through the same stages (its own pass pipeline,
// memory plans in its own arena, partition, lowering); --json adds "tp",
// "pp", a "ranks" array and "parallel", the link model's prediction of
// the decode step (target.Profile.EstimateStep). Every rank's device
// memory is checked against the target's (parallel.AnalyzeRank).

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
	buffMB, err := parallel.HCCLBuffMB(j.Flags.HCCLBuffMB)
	if err != nil {
		return err
	}
	rules, err := parallel.Rules()
	if err != nil {
		return err
	}
	j.Out.Ranks = []parallel.Rank{}
	var par parallel.Prediction
	for i, rm := range rms {
		rj := *j
		rj.Flags.Out, rj.Flags.Report, rj.Flags.DumpDir, rj.Flags.ExportBuffers = "", "", "", ""
		rj.Flags.PassFlags = passFlags{} // the IR dumps and checks are the whole model's
		rj.Model, rj.Input, rj.R, rj.forecast, rj.Forecast, rj.LlamaCpp = rm.Model, rm.Model.Graph, nil, false, nil, nil
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
		out := parallel.Rank{Rank: i, Memory: rj.Out.Memory, MemoryDecode: rj.Out.MemoryDecode, Partition: rj.Out.Partition,
			Program: rj.Out.Program, Predicted: rj.Out.Predicted}
		if err := parallel.AnalyzeRank(&out, rj.R, rm, prof, buffMB, &par, j.Text); err != nil {
			return err
		}
		j.Out.Ranks = append(j.Out.Ranks, out)
	}
	if prof.Interconnect != nil {
		par.Finish(prof, buffMB)
		j.Out.Parallel = &par
		fmt.Fprintf(j.Text, "\npredicted decode over %d rank(s) (%s, link model): %.0f us per token, %.1f tok/s\n",
			len(rms), prof.Interconnect.Name, par.StepUS, par.PredictedTokS)
	}
	return nil
}

// linkProfile is the target's profile under the ranks' rules with
// --link-algo applied (parallel.LinkProfile).
func linkProfile(f compileFlags) (*target.Profile, error) {
	return parallel.LinkProfile(f.Target, f.LinkAlgo)
}

// rankLabel describes a rank's place in the split.
func rankLabel(f *tpFlags, rm parallel.RankModel) string {
	var parts []string
	if f.Ranks > 1 {
		s := fmt.Sprintf("tensor parallel rank %d of %d", rm.TPRank, f.Ranks)
		if f.Exact {
			s += ", exact"
		}
		parts = append(parts, s)
	}
	if f.Stages > 1 {
		parts = append(parts, fmt.Sprintf("pipeline stage %d of %d", rm.Stage, f.Stages))
	}
	return strings.Join(parts, ", ")
}

// splitModel splits the job's model by the flags (parallel.Split): rank
// t*stages+s is tensor-parallel rank t's pipeline stage s.
func splitModel(j *compileJob, f *tpFlags) ([]parallel.RankModel, error) {
	var tp *models.TP
	if f.Ranks > 1 {
		var err error
		if tp, err = shardTPJob(j, f); err != nil {
			return nil, err
		}
		info := parallel.DescribeTP(tp)
		j.Out.TP = &info
	}
	out, err := parallel.Split(j.Model, tp, f.Stages)
	if err != nil {
		if j.Source.IsIR() {
			return nil, fmt.Errorf("%w (the stages are cut by each node's layer=; an IR after passes that fuse ops across layers cannot be cut, the IR as built can: irtool ir MODEL.gguf -o FILE.ir)", err)
		}
		return nil, err
	}
	if f.Stages > 1 {
		var stages []*models.Model
		for _, rm := range out {
			if rm.TPRank == 0 {
				stages = append(stages, rm.Model)
			}
		}
		info := parallel.DescribePP(stages)
		j.Out.PP = &info
	}
	return out, nil
}

// shardTPJob splits a GGUF model, or IR text whose graph is the one its
// weights file builds, over the tensor-parallel ranks.
func shardTPJob(j *compileJob, f *tpFlags) (*models.TP, error) {
	if j.File == nil {
		return nil, fmt.Errorf("--tp %d: %w: the tensor-parallel split is keyed on the weights' roles and shapes", f.Ranks, modelfile.ErrNoWeights)
	}
	if j.Source.IsIR() {
		if err := checkAsBuilt(j); err != nil {
			return nil, fmt.Errorf("--tp %d: %w", f.Ranks, err)
		}
	}
	return models.ShardTPFile(j.File, j.Model.Options, models.TPOptions{Ranks: f.Ranks, Exact: f.Exact})
}

// checkAsBuilt checks that the job's IR text is the graph its weights
// file builds (modelfile.Source.CheckAsBuilt).
func checkAsBuilt(j *compileJob) error {
	return j.Source.CheckAsBuilt(j.Model.Options)
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
		return fmt.Errorf("--tp-sweep: %w: the split is keyed on the weights' roles and shapes", modelfile.ErrNoWeights)
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
	rows, err := parallel.Sweep(hp, lookup, j.Model.Options, opts, prof, degrees, j.Flags.TP.Exact)
	j.Out.TPSweep = rows
	fmt.Fprintf(j.Text, "\ntensor-parallel sweep on %s (%s, %s algorithm; decode at n_kv=%d):\n", prof.Name, prof.Interconnect.Name, prof.Interconnect.Algorithm, j.Flags.Ctx)
	parallel.WriteSweep(j.Text, rows)
	return err
}
