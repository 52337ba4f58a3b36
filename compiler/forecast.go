package compiler

import (
	"context"
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
)

// DefaultPromptTokens is the prompt of a prefill forecast when none is
// given: llama-bench's pp512.
const DefaultPromptTokens = 512

// Forecast is the cost model's figures for one program of a model: its
// decode step (one token over DecodeKV cells, eager and with capturable
// segments replayed) and its prefill (PromptTokens tokens over an empty
// cache, logits of the last token only, as llama-bench's pp test runs it;
// eager).
type Forecast struct {
	Decode       cann.Prediction
	Prefill      cann.Prediction
	PromptTokens int64
	DecodeKV     int64
	// Program is the lowered decode step (its kernels by class).
	Program *cann.Program
	// PrefillProgram is the lowered prefill step.
	PrefillProgram *cann.Program
	// Partitioned is the placed graph both programs were lowered from
	// (their kernels' Node IDs are its nodes'), and DecodeBindings and
	// PrefillBindings the steps' symbol values: what a calibration fit
	// re-costs the kernels with (target.Profile.Work).
	Partitioned                     *ir.Graph
	DecodeBindings, PrefillBindings ir.Bindings
}

// PrefillTokPerS is the prefill's tokens per second.
func (f *Forecast) PrefillTokPerS() float64 {
	if f.Prefill.EagerUS <= 0 {
		return 0
	}
	return float64(f.PromptTokens) * 1e6 / f.Prefill.EagerUS
}

// prefillBindings are a prompt of n tokens over an empty cache with the
// last token's logits: llama-bench's pp test.
func prefillBindings(n int64) ir.Bindings {
	return ir.Bindings{models.SymTokens: n, models.SymKV: n, models.SymOutputs: 1, models.SymKVHead: 0}
}

// ForecastProgram compiles g with opts (no memory stage; opts.Ctx is the
// decode step's cache cells) and forecasts its decode step and a prompt of
// prompt tokens (0: DefaultPromptTokens). g's KV cache must hold the
// prompt. With opts.Passes "none" it is the program llama.cpp's CANN
// backend runs for the model: the graph as built, ggml-cann's aclnn calls
// per node (target rules), all of it captured in graph mode.
func ForecastProgram(ctx context.Context, g *ir.Graph, opts Options, prompt int64) (*Forecast, error) {
	if prompt == 0 {
		prompt = DefaultPromptTokens
	}
	if prompt < 1 {
		return nil, fmt.Errorf("compiler: forecast: prompt of %d tokens", prompt)
	}
	opts.NoMemory, opts.Until, opts.UBatch = true, StagePartition, 0
	r, err := Compile(ctx, g, opts)
	if err != nil {
		return nil, err
	}
	db, err := r.DecodeBindings().For(r.Partitioned)
	if err != nil {
		return nil, fmt.Errorf("forecast: decode: %w", err)
	}
	pb, err := prefillBindings(prompt).For(r.Partitioned)
	if err != nil {
		return nil, fmt.Errorf("forecast: prefill of %d tokens: %w", prompt, err)
	}
	f := &Forecast{PromptTokens: prompt, DecodeKV: r.Options.Ctx, Partitioned: r.Partitioned,
		DecodeBindings: db, PrefillBindings: pb}
	prog, _, err := r.Lower(r.DecodeBindings())
	if err != nil {
		return nil, fmt.Errorf("forecast: decode: %w", err)
	}
	if f.Decode, err = cann.Predict(prog, r.Profile); err != nil {
		return nil, err
	}
	f.Program = prog
	// The prefill's plan only sizes the arena the prediction reports: a
	// fast strategy, on a copy of the Result (Lower reads its Options).
	rp := *r
	rp.Options.Strategy = planner.StrategyGreedySize
	pp, _, err := rp.Lower(prefillBindings(prompt))
	if err != nil {
		return nil, fmt.Errorf("forecast: prefill of %d tokens: %w", prompt, err)
	}
	if f.Prefill, err = cann.Predict(pp, r.Profile); err != nil {
		return nil, err
	}
	f.PrefillProgram = pp
	return f, nil
}

// ForecastPrograms forecasts two programs of g for a prompt of prompt
// tokens (ForecastProgram): the one opts compiles, and llama.cpp's (the
// graph as built: opts with Passes "none", no MergeQKV, and the target as
// llama.cpp drives it, Options.LlamaCpp).
func ForecastPrograms(ctx context.Context, g *ir.Graph, opts Options, prompt int64) (ours, llamacpp *Forecast, err error) {
	if ours, err = ForecastProgram(ctx, g, opts, prompt); err != nil {
		return nil, nil, fmt.Errorf("prefill forecast: %w", err)
	}
	opts.Passes, opts.MergeQKV, opts.LlamaCpp = "none", false, true
	if llamacpp, err = ForecastProgram(ctx, g, opts, prompt); err != nil {
		return nil, nil, fmt.Errorf("llama.cpp's program: %w", err)
	}
	return ours, llamacpp, nil
}
