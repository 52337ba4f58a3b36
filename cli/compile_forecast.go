package cli

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/target"
)

// The forecasts of irtool compile: the prefill of irtool's program and the
// program llama.cpp's CANN backend runs for the same file (the graph as
// built, compiled with --passes none: ggml-cann's aclnn calls per node,
// the whole graph captured in ACL graph mode), decode and prefill, and the
// kernels where the two differ most (docs/LOWERING.md, "Calibration").

// kernelDiffJSON is one aclnn operator's share of the eager decode step
// (device plus host launch time) in irtool's program and llama.cpp's.
type kernelDiffJSON struct {
	Kernel        string  `json:"kernel"`
	IrtoolUS      float64 `json:"irtool_us"`
	LlamaCppUS    float64 `json:"llamacpp_us"`
	DiffUS        float64 `json:"diff_us"`
	IrtoolCalls   int     `json:"irtool_calls"`
	LlamaCppCalls int     `json:"llamacpp_calls"`
}

// maxKernelDiffs is how many operators vs_llamacpp lists.
const maxKernelDiffs = 8

// forecast fills the prefill figures of irtool's prediction and
// predicted_llamacpp, from a graph of the same model whose cache holds the
// prompt (--prompt-tokens, capped at the cache of an IR file).
func forecast(j *compileJob) error {
	f := j.Flags
	prompt := f.PromptTokens
	mo, err := modelOptions(max(f.Ctx, prompt), f.KVType, f.KVWrite)
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
	} else if n, err := strconv.ParseInt(g.Meta[metaNCtx], 10, 64); err == nil && n > 0 && n < prompt {
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
	ours, err := compiler.ForecastProgram(context.Background(), g, opts, prompt)
	if err != nil {
		return fmt.Errorf("prefill forecast: %w", err)
	}
	opts.Passes, opts.MergeQKV = "none", false
	ref, err := compiler.ForecastProgram(context.Background(), g, opts, prompt)
	if err != nil {
		return fmt.Errorf("llama.cpp's program: %w", err)
	}
	j.Forecast, j.LlamaCpp = ours, ref
	return nil
}

// predictedOf is the "predicted" object of a decode prediction and a
// forecast's prefill (nil: none).
func predictedOf(pr cann.Prediction, fc *compiler.Forecast) predictedJSON {
	speedup := 0.0
	if pr.GraphUS > 0 {
		speedup = pr.EagerUS / pr.GraphUS
	}
	p := predictedJSON{EagerUSPerToken: pr.EagerUS, GraphUSPerToken: pr.GraphUS, Speedup: speedup,
		EagerTokPerS: perSecond(pr.EagerUS), GraphTokPerS: perSecond(pr.GraphUS), Launches: pr.Launches,
		GraphLaunches: pr.GraphLaunches, DeviceUS: pr.DeviceUS, HostLaunchUS: pr.HostLaunchUS, CopyUS: pr.CopyUS, CPUUS: pr.CPUUS}
	if fc != nil {
		p.PromptTokens, p.PrefillUS, p.PrefillTokPerS = fc.PromptTokens, fc.Prefill.EagerUS, fc.PrefillTokPerS()
	}
	return p
}

// kernelDiffs lists the aclnn operators whose eager decode time differs
// most between irtool's program and llama.cpp's.
func kernelDiffs(ours, ref *cann.Program) []kernelDiffJSON {
	m := map[string]*kernelDiffJSON{}
	add := func(p *cann.Program, mine bool) {
		for _, s := range p.Segments {
			if s.Device != string(target.NPU) {
				continue
			}
			for _, k := range s.Kernels {
				d := m[k.Name]
				if d == nil {
					d = &kernelDiffJSON{Kernel: k.Name}
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
	out := make([]kernelDiffJSON, 0, len(m))
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
	if len(out) > maxKernelDiffs {
		out = out[:maxKernelDiffs]
	}
	return out
}
