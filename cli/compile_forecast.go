package cli

import (
	"context"
	"github.com/irtool/irtool/models/modelfile"
	"strconv"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// The forecasts of irtool compile: the prefill of irtool's program and the
// program llama.cpp's CANN backend runs for the same file (the graph as
// built, compiled with --passes none: ggml-cann's aclnn calls per node,
// the whole graph captured in ACL graph mode), decode and prefill, and the
// kernels where the two differ most (docs/LOWERING.md, "Calibration").

// forecast fills the prefill figures of irtool's prediction and
// predicted_llamacpp, from a graph of the same model whose cache holds the
// prompt (--prompt-tokens, capped at the cache of an IR file).
func forecast(j *compileJob) error {
	f := j.Flags
	prompt := f.PromptTokens
	mo, err := models.ParseOptions(max(f.Ctx, prompt), f.KVType, f.KVWrite)
	if err != nil {
		return err
	}
	g := j.Input
	if !j.Source.IsIR() || j.File != nil {
		// A GGUF file, or IR text naming its weights: the model built
		// again with a cache that holds the prompt.
		build := models.Build
		if f.reg != nil {
			build = f.reg.BuildModel
		}
		m, err := build(j.File, mo)
		if err != nil {
			return err
		}
		g = m.Graph
	} else if n, err := strconv.ParseInt(g.Meta[modelfile.MetaNCtx], 10, 64); err == nil && n > 0 && n < prompt {
		prompt = n // the IR's cache is part of its graph
	}
	opts, err := f.options(0)
	if err != nil {
		return err
	}
	opts.Rules, opts.PassOptions = j.R.Options.Rules, passes.Options{}
	if f.reg != nil {
		opts = f.reg.CompileOptions(opts)
	}
	if opts.Requant != 0 {
		opts.Weights = j.File
	}
	ours, ref, err := compiler.ForecastPrograms(context.Background(), g, opts, prompt)
	if err != nil {
		return err
	}
	j.Forecast, j.LlamaCpp = ours, ref
	return nil
}
