package passes_test

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// TestCheckDefaultPipeline: translation validation of the default pipeline
// on stories260K (a prompt of 4 tokens and 3 decode steps, the model's
// weights) finds every pass bit-identical, in both KV write modes.
func TestCheckDefaultPipeline(t *testing.T) {
	for _, kv := range []models.KVWrite{models.KVSetRows, models.KVCpy} {
		f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64, KVWrite: kv})
		var seen []string
		opts := passes.Options{Check: &passes.CheckOptions{Step: modelStep, Weights: f, Prompt: []int32{1, 403, 407, 261}, Decode: 3, NCtx: 64,
			Report: func(s passes.CheckStat) { seen = append(seen, s.String()) }}}
		_, res, err := passes.Run(m.Graph, passes.Default(), opts)
		if err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
		if len(res.Checks) != len(passes.Default()) || len(seen) != len(res.Checks) {
			t.Fatalf("%s: %d checks, %d reported, want %d", kv, len(res.Checks), len(seen), len(passes.Default()))
		}
		for _, c := range res.Checks {
			if !c.Identical || c.Steps != 4 {
				t.Errorf("%s: %s", kv, c)
			}
		}
		t.Logf("%s:\n%s", kv, strings.Join(seen, "\n"))
	}
}

// TestCheckWrongRule: a rule that types correctly but computes wrongly
// (silu(x) -> x) passes the verifier; translation validation stops the
// run at that pass and names it.
func TestCheckWrongRule(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	reg := passes.NewRegistry()
	wrong := &passes.Rule{Name: "wrong-silu", Pattern: passes.Op(ir.OpSilu, passes.Any("x")),
		Build: func(_ *passes.Builder, mt *passes.Match) (*ir.Node, error) { return mt.Get("x"), nil }}
	if err := reg.Register(passes.RulePass("wrong-silu", "silu(x) -> x (wrong)", wrong)); err != nil {
		t.Fatal(err)
	}
	p, err := reg.Parse("noop,wrong-silu,default")
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := passes.Run(m.Graph, p, passes.Options{Check: &passes.CheckOptions{Step: modelStep, Weights: f, Decode: 2, NCtx: 64}})
	if err == nil || !strings.Contains(err.Error(), "pass wrong-silu (after [noop]): check: results differ from the graph before it: max|Δ|") {
		t.Fatalf("err = %v, want the check to name wrong-silu", err)
	}
	if len(res.Checks) != 2 || !res.Checks[0].Identical || res.Checks[1].Identical || res.Checks[1].MaxAbs == 0 {
		t.Fatalf("checks %v", res.Checks)
	}
	t.Log(err)
	// With a tolerance above the difference the run goes on.
	_, _, err = passes.Run(m.Graph, p, passes.Options{Check: &passes.CheckOptions{Step: modelStep, Weights: f, Decode: 2, NCtx: 64, Tol: 1e6}})
	if err != nil {
		t.Fatal(err)
	}
}

// modelStep runs model step graphs in the checks, as the CLI's --check does.
var modelStep = &passes.ModelStep{IsStep: models.IsStepGraph, Bind: models.StepBindings, Inputs: models.Inputs}
