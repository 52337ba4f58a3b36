// Command costfit fits the NPU cost model's calibration (target.Calibration)
// on the public figures listed in figures.go and prints the calibration
// table of docs/LOWERING.md: every figure with its source, model, type,
// SKU, mode, the prediction and the residual, then the parameters.
//
//	go run ./scripts/costfit          # the table with the built-in calibration
//	go run ./scripts/costfit -write   # re-fit, rewrite target/calibration.go and both tables in docs/LOWERING.md
//	go run ./scripts/costfit -loo     # the hold-out table: each figure, and each source, left out of the fit
//
// The predictions are those of irtool compile's predicted_llamacpp: the
// program llama.cpp's CANN backend runs (compiler.ForecastProgram with
// --passes none) for each figure's published model shape, on the figure's
// SKU profile. A new public figure is one more entry in figures.go.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/target"
)

func main() {
	write := flag.Bool("write", false, "re-fit and rewrite target/calibration.go and docs/LOWERING.md's calibration table")
	loo := flag.Bool("loo", false, "print the hold-out table instead (each figure, and each source, left out of the fit)")
	flag.Parse()
	if *loo {
		table, err := HoldOutTable(target.Calibrated())
		if err == nil {
			_, err = io.WriteString(os.Stdout, table)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "costfit: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*write, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "costfit: %v\n", err)
		os.Exit(1)
	}
}

func run(write bool, w io.Writer) error {
	c := target.Calibrated()
	if write {
		var err error
		// Placement depends on the costs: fit, recompile, fit again,
		// from a fixed start so that a re-fit does not depend on the
		// calibration it replaces.
		c = start
		for range 2 {
			if c, err = fit(c); err != nil {
				return err
			}
		}
		if err := os.WriteFile("target/calibration.go", []byte(calibrationSource(c)), 0o644); err != nil {
			return err
		}
	}
	progs, err := compileAll(figures(), c)
	if err != nil {
		return err
	}
	table, err := tableOn(progs, c)
	if err != nil {
		return err
	}
	if write {
		if err := replaceTable("docs/LOWERING.md", table); err != nil {
			return err
		}
		held, err := holdOutOn(progs, c)
		if err != nil {
			return err
		}
		if err := replaceBetween("docs/LOWERING.md", looBegin, looEnd, held); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, table)
	return err
}

// program is one compiled program of a figure with its kernels' work, so
// that a calibration re-costs it without compiling again.
type program struct {
	prog  *cann.Program
	works map[int]target.Work // by segment*1e6 + kernel index
	prof  *target.Profile
	build build
}

// compiled holds a figure's forecast.
type compiled struct {
	fc              *compiler.Forecast
	decode, prefill *program
}

// compileFigure forecasts the llama.cpp program of a figure's model on its
// SKU under calibration c.
func compileFigure(f figure, c target.Calibration) (*compiled, error) {
	m, err := models.BuildHParams(f.shape.HP, f.shape.Lookup(f.dtype), models.Options{NCtx: max(decodeKV, f.prompt()), KVType: models.KVF16, KVWrite: models.KVSetRows})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.id, err)
	}
	rules, err := buildRules(f.build)
	if err != nil {
		return nil, err
	}
	p, err := target.Get(f.sku)
	if err != nil {
		return nil, err
	}
	p.Calibrate(f.build.calibration(c))
	p.Name = "fit-" + f.sku
	if err := rules.RegisterTarget(p); err != nil {
		return nil, err
	}
	opts := compiler.Options{Target: p.Name, Passes: f.build.passes(), Ctx: decodeKV, Rules: rules, LlamaCpp: true}
	fc, err := compiler.ForecastProgram(context.Background(), m.Graph, opts, f.prompt())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.id, err)
	}
	prof, err := rules.Profile(p.Name)
	if err != nil {
		return nil, err
	}
	prof = prof.LlamaCpp()
	out := &compiled{fc: fc}
	if out.decode, err = works(fc.Program, fc.Partitioned, fc.DecodeBindings, prof); err != nil {
		return nil, fmt.Errorf("%s: decode: %w", f.id, err)
	}
	if out.prefill, err = works(fc.PrefillProgram, fc.Partitioned, fc.PrefillBindings, prof); err != nil {
		return nil, fmt.Errorf("%s: prefill: %w", f.id, err)
	}
	out.decode.build, out.prefill.build = f.build, f.build
	return out, nil
}

// buildRules are the target rules of a figure's llama.cpp build: the
// default ones, and for buildFA the fused attention as ggml-cann's
// FLASH_ATTN_EXT launches it (aclnnCast of Q to f16,
// aclnnFusedInferAttentionScoreV2, aclnnCast of its f16 output to f32).
func buildRules(b build) (*target.Rules, error) {
	rules := target.NewRules()
	if b != buildFA && b != buildFAEarly {
		return rules, nil
	}
	def, ok := rules.Lookup(ir.OpAttention)
	if !ok {
		return nil, fmt.Errorf("no attention rule")
	}
	fa := def
	fa.NPU = func(n *ir.Node) target.Support {
		s := def.NPU(n)
		if !s.OK {
			return s
		}
		s.Kernel, s.Calls = "aclnnFusedInferAttentionScoreV2", []string{"aclnnCast", "aclnnFusedInferAttentionScoreV2", "aclnnCast"}
		return s
	}
	if err := rules.Override(ir.OpAttention, fa); err != nil {
		return nil, err
	}
	return rules, nil
}

// decodeKV is the cache cells of the decode figures (llama-bench's tg128
// runs over a cache of up to 128 cells; llama-cli's over a short prompt).
const decodeKV = 256

func works(prog *cann.Program, g *ir.Graph, b ir.Bindings, prof *target.Profile) (*program, error) {
	sg, err := g.Specialize(b)
	if err != nil {
		return nil, err
	}
	p := &program{prog: prog, works: map[int]target.Work{}, prof: prof}
	for si, s := range prog.Segments {
		if s.Device != string(target.NPU) {
			continue
		}
		for ki, k := range s.Kernels {
			if k.Node < 0 || k.Node >= len(sg.Nodes) {
				return nil, fmt.Errorf("kernel %s names node %d of %d", k.Name, k.Node, len(sg.Nodes))
			}
			w, err := prof.Work(sg.Nodes[k.Node], nil)
			if err != nil {
				return nil, err
			}
			p.works[si*1_000_000+ki] = w
		}
	}
	return p, nil
}

// predict re-costs the program's NPU kernels under c and runs the
// schedule (cann.Predict).
func (p *program) predict(c target.Calibration) (cann.Prediction, error) {
	prof := *p.prof
	prof.Calibrate(p.build.calibration(c))
	cp := *p.prog
	cp.Segments = make([]cann.Segment, len(p.prog.Segments))
	for si, s := range p.prog.Segments {
		s.Kernels = append([]cann.Kernel(nil), s.Kernels...)
		if s.Device == string(target.NPU) {
			for ki := range s.Kernels {
				s.Kernels[ki].DeviceUS, s.Kernels[ki].LaunchUS = prof.KernelCost(p.works[si*1_000_000+ki])
			}
		}
		cp.Segments[si] = s
	}
	return cann.Predict(&cp, &prof)
}

// matmulTFLOPS is the predicted throughput of a loop of n×n×n f16 aclnnMm
// calls issued eagerly: each iteration costs the larger of its host launch
// and its device time.
func matmulTFLOPS(sku string, n float64, c target.Calibration) (float64, error) {
	p, err := target.Get(sku)
	if err != nil {
		return 0, err
	}
	p.Calibrate(c)
	w := target.Work{Class: target.ClassMatmul, Kernel: "aclnnMm", Calls: 1, FLOPs: 2 * n * n * n, Bytes: 3 * 2 * n * n, Rows: n}
	dev, host := p.KernelCost(w)
	return w.FLOPs / (max(dev, host) * 1e-6) / 1e12, nil
}

// predictions evaluates every figure under c (figures' programs compiled).
func predictions(figs []figure, progs map[string]*compiled, c target.Calibration) ([]float64, error) {
	out := make([]float64, len(figs))
	for i, f := range figs {
		var v float64
		switch f.mode {
		case modeMatmul:
			var err error
			if v, err = matmulTFLOPS(f.sku, f.n, c); err != nil {
				return nil, err
			}
		default:
			cp := progs[f.key()]
			switch f.mode {
			case modeEager, modeGraph:
				pr, err := cp.decode.predict(c)
				if err != nil {
					return nil, err
				}
				us := pr.EagerUS
				if f.mode == modeGraph {
					us = pr.GraphUS
				}
				v = 1e6 / us
			case modePrefill:
				pr, err := cp.prefill.predict(c)
				if err != nil {
					return nil, err
				}
				v = float64(f.prompt()) * 1e6 / pr.EagerUS
			}
		}
		out[i] = v
	}
	return out, nil
}

// compileAll compiles every distinct model/type/SKU of figs.
func compileAll(figs []figure, c target.Calibration) (map[string]*compiled, error) {
	progs := map[string]*compiled{}
	for _, f := range figs {
		if f.mode == modeMatmul {
			continue
		}
		if _, ok := progs[f.key()]; ok {
			continue
		}
		cp, err := compileFigure(f, c)
		if err != nil {
			return nil, err
		}
		progs[f.key()] = cp
	}
	return progs, nil
}

// loss is the sum of squared log residuals of the fitted figures.
func loss(figs []figure, pred []float64) float64 {
	s := 0.0
	for i, f := range figs {
		if f.heldOut != "" {
			continue
		}
		r := math.Log(pred[i] / f.value)
		s += r * r
	}
	return s
}

// param is one fitted parameter: its name and where it lives.
type param struct {
	name   string
	ptr    func(c *target.Calibration) *float64
	lo, hi float64
}

var fitted = []param{
	{"launch_us", func(c *target.Calibration) *float64 { return &c.LaunchUS }, 1, 100},
	{"early_launch_us", func(c *target.Calibration) *float64 { return &c.EarlyLaunchUS }, 1, 100},
	{"wq_launch_us", func(c *target.Calibration) *float64 { return &c.WQLaunchUS }, 0.1, 300},
	{"task_us", func(c *target.Calibration) *float64 { return &c.TaskUS }, 0.5, 50},
	{"costs.antiquant_gelem_s", func(c *target.Calibration) *float64 { return &c.Costs.AntiquantGElemS }, 1, 10000},
	{"costs.cube_eff", func(c *target.Calibration) *float64 { return &c.Costs.CubeEff }, 0.1, 1},
	{"costs.cube_half_gflop", func(c *target.Calibration) *float64 { return &c.Costs.CubeHalfGFLOP }, 0.01, 1000},
	{"costs.wq_cube_eff", func(c *target.Calibration) *float64 { return &c.Costs.WQCubeEff }, 0.005, 1},
	{"costs.wq_matmul_gelem_s", func(c *target.Calibration) *float64 { return &c.Costs.WQMatmulGElemS }, 1, 10000},
	{"mem_eff_310p", func(c *target.Calibration) *float64 { return &c.MemEff310P }, 0.05, 1.5},
}

// start is where the fit begins: round values, the assumptions at their
// assumed values.
var start = target.Calibration{LaunchUS: 10, EarlyLaunchUS: 10, WQLaunchUS: 10, TaskUS: 4, GraphLaunchUS: 30, MemEff310P: 1,
	Costs: target.Costs{StreamEff: 0.7, VectorEff: 0.5, CubeEff: 0.9, CubeHalfGFLOP: 5, WQCubeEff: 0.1, AntiquantGElemS: 200, WQMatmulGElemS: 50}}

// fit minimises the loss over the fitted parameters by coordinate descent
// on their logarithms, from c: deterministic, no randomness.
func fit(c target.Calibration) (target.Calibration, error) {
	figs := figures()
	progs, err := compileAll(figs, c)
	if err != nil {
		return c, err
	}
	return fitOn(figs, progs, c)
}

// fitOn fits the figures' fitted rows on their compiled programs from c.
func fitOn(figs []figure, progs map[string]*compiled, c target.Calibration) (target.Calibration, error) {
	// Only the fitted rows enter the loss.
	var rows []figure
	for _, f := range figs {
		if f.heldOut == "" {
			rows = append(rows, f)
		}
	}
	eval := func(c target.Calibration) (float64, error) {
		pred, err := predictions(rows, progs, c)
		if err != nil {
			return 0, err
		}
		return loss(rows, pred), nil
	}
	best, err := eval(c)
	if err != nil {
		return c, err
	}
	for step := 1.0; step > 1e-3; step /= 2 {
		for improved := true; improved; {
			improved = false
			for _, p := range fitted {
				for _, dir := range []float64{1, -1} {
					t := c
					v := p.ptr(&t)
					*v = math.Min(p.hi, math.Max(p.lo, *v*math.Exp(dir*step)))
					l, err := eval(t)
					if err != nil {
						return c, err
					}
					if l < best-1e-12 {
						best, c, improved = l, t, true
					}
				}
			}
		}
	}
	return c, nil
}

// Table is docs/LOWERING.md's calibration table under c.
func Table(c target.Calibration) (string, error) {
	progs, err := compileAll(figures(), c)
	if err != nil {
		return "", err
	}
	return tableOn(progs, c)
}

// tableOn is Table on the figures' programs compiled under c.
func tableOn(progs map[string]*compiled, c target.Calibration) (string, error) {
	figs := figures()
	pred, err := predictions(figs, progs, c)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| # | source | model | type | SKU | mode | public figure | predicted | residual | fit |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | --- |\n")
	for i, f := range figs {
		use := "fitted"
		if f.heldOut != "" {
			use = "held out: " + f.heldOut
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s %s | %.4g | %+.0f %% | %s |\n", i+1, f.source, f.model(), f.typ(), f.skuText(), f.modeText(),
			fmtValue(f.value), f.unit(), pred[i], 100*(pred[i]/f.value-1), use)
	}
	fmt.Fprintf(&b, "\nFit: sum of squared log residuals of the fitted rows %.4f (RMS %.0f %%).\n\n", loss(figs, pred), 100*math.Sqrt(loss(figs, pred)/float64(countFitted(figs))))
	fmt.Fprintf(&b, "| parameter | value | pinned by |\n| --- | ---: | --- |\n")
	for _, p := range fitted {
		cc := c
		fmt.Fprintf(&b, "| %s | %.4g | fitted |\n", p.name, *p.ptr(&cc))
	}
	for _, a := range assumed(c) {
		fmt.Fprintf(&b, "| %s | %.4g | assumption: %s |\n", a.name, a.value, a.why)
	}
	return b.String(), nil
}

func countFitted(figs []figure) int {
	n := 0
	for _, f := range figs {
		if f.heldOut == "" {
			n++
		}
	}
	return n
}

func fmtValue(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

type assumption struct {
	name  string
	value float64
	why   string
}

func assumed(c target.Calibration) []assumption {
	return []assumption{
		{"graph_launch_us", c.GraphLaunchUS, "one aclmdlRIExecuteAsync per step; no public figure separates it from the replayed tasks"},
		{"costs.vector_eff", c.Costs.VectorEff, "no public per-kernel figure for the vector operators"},
		{"costs.stream_eff", c.Costs.StreamEff, "the fraction of the A2 parts' peak HBM bandwidth a matmul's weight stream sustains; the A2 decode figures found are host-, launch- or antiquant-bound and pin it only weakly (fitting it drives it to its bound of 1)"},
	}
}

const (
	beginMark = "<!-- costfit:begin (go run ./scripts/costfit -write) -->\n"
	endMark   = "<!-- costfit:end -->\n"
)

// DocTable returns the table between the markers of a document.
func DocTable(doc string) (string, error) {
	i := strings.Index(doc, beginMark)
	j := strings.Index(doc, endMark)
	if i < 0 || j < i {
		return "", fmt.Errorf("no costfit markers")
	}
	return doc[i+len(beginMark) : j], nil
}

func replaceTable(path, table string) error { return replaceBetween(path, beginMark, endMark, table) }

func replaceBetween(path, begin, end, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q markers", path, strings.TrimSpace(begin))
	}
	doc = doc[:i+len(begin)] + table + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}

const (
	looBegin = "<!-- costfit-holdout:begin (go run ./scripts/costfit -write) -->\n"
	looEnd   = "<!-- costfit-holdout:end -->\n"
)

// HoldOutTable is how far the model predicts figures it was not fitted
// on, two ways: each fitted figure left out of the fit alone, and each
// source (one PR, one issue) left out whole, every figure of it predicted
// by a fit on the others. Every refit starts from the fixed start, so a
// parameter only the left-out figures pinned falls back to its start
// value, as it would for a new figure of an unseen kind.
func HoldOutTable(c target.Calibration) (string, error) {
	progs, err := compileAll(figures(), c)
	if err != nil {
		return "", err
	}
	return holdOutOn(progs, c)
}

// holdOutOn is HoldOutTable on the figures' programs compiled under c.
func holdOutOn(progs map[string]*compiled, c target.Calibration) (string, error) {
	figs := figures()
	full, err := predictions(figs, progs, c)
	if err != nil {
		return "", err
	}
	refit := func(out func(f figure) bool) ([]float64, error) {
		sub := append([]figure(nil), figs...)
		for i := range sub {
			if out(sub[i]) && sub[i].heldOut == "" {
				sub[i].heldOut = "left out"
			}
		}
		ci, err := fitOn(sub, progs, start)
		if err != nil {
			return nil, err
		}
		return predictions(figs, progs, ci)
	}
	loo := make([]float64, len(figs))
	for i, f := range figs {
		if f.heldOut != "" {
			continue
		}
		pred, err := refit(func(g figure) bool { return g.id == f.id })
		if err != nil {
			return "", err
		}
		loo[i] = pred[i]
	}
	bySource := make([]float64, len(figs))
	done := map[string]bool{}
	for _, f := range figs {
		if done[f.group] {
			continue
		}
		done[f.group] = true
		pred, err := refit(func(g figure) bool { return g.group == f.group })
		if err != nil {
			return "", err
		}
		for i, g := range figs {
			if g.group == f.group {
				bySource[i] = pred[i]
			}
		}
	}
	res := func(p, v float64) float64 { return p/v - 1 }
	var b strings.Builder
	fmt.Fprintf(&b, "| # | source | model, mode | public | fitted on all | figure left out | its source left out |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n")
	var worstFit, worstLOO, worstSrc, worstHeld float64
	for i, f := range figs {
		l := "not fitted"
		if f.heldOut == "" {
			l = fmt.Sprintf("%+.0f %%", 100*res(loo[i], f.value))
			worstLOO = math.Max(worstLOO, math.Abs(res(loo[i], f.value)))
			worstFit = math.Max(worstFit, math.Abs(res(full[i], f.value)))
		} else {
			worstHeld = math.Max(worstHeld, math.Abs(res(full[i], f.value)))
		}
		worstSrc = math.Max(worstSrc, math.Abs(res(bySource[i], f.value)))
		fmt.Fprintf(&b, "| %d | %s | %s, %s | %s %s | %+.0f %% | %s | %+.0f %% |\n", i+1, f.group, f.model(), f.modeText(), fmtValue(f.value), f.unit(),
			100*res(full[i], f.value), l, 100*res(bySource[i], f.value))
	}
	fmt.Fprintf(&b, "\n%d figures, %d fitted. Largest |residual|: fitted on all %.0f %% (the figures not fitted %.0f %%), figure left out %.0f %%, source left out %.0f %%.\n",
		len(figs), countFitted(figs), 100*worstFit, 100*worstHeld, 100*worstLOO, 100*worstSrc)
	return b.String(), nil
}

func calibrationSource(c target.Calibration) string {
	k := c.Costs
	return fmt.Sprintf(`// Code generated by go run ./scripts/costfit -write; DO NOT EDIT.

package target

// calibrated is the cost model's fit on the public figures of
// docs/LOWERING.md's calibration table.
var calibrated = Calibration{
	LaunchUS: %v, EarlyLaunchUS: %v, WQLaunchUS: %v, TaskUS: %v, GraphLaunchUS: %v, MemEff310P: %v,
	Costs: Costs{StreamEff: %v, VectorEff: %v, CubeEff: %v, CubeHalfGFLOP: %v, WQCubeEff: %v, AntiquantGElemS: %v, WQMatmulGElemS: %v},
}
`, c.LaunchUS, c.EarlyLaunchUS, c.WQLaunchUS, c.TaskUS, c.GraphLaunchUS, c.MemEff310P, k.StreamEff, k.VectorEff, k.CubeEff, k.CubeHalfGFLOP, k.WQCubeEff, k.AntiquantGElemS, k.WQMatmulGElemS)
}
