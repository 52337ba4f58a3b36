// Package testext holds the extension fixture the library's and the CLI's
// tests share: a context with a researcher's own op, kernel, CANN rule and
// rewrite pass, registered as values.
package testext

import (
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/target"
)

// MySiluContext is a context with the op my_silu (silu's kernel under
// another name, kept on the host: no CANN recipe) and the pass use-my-silu
// that rewrites silu(x) into my_silu(x). Its tokens are the built-in
// silu's.
func MySiluContext(t testing.TB) *irtool.Context {
	t.Helper()
	ctx := irtool.NewContext()
	err := ctx.RegisterOp(irtool.Op{
		Info: ir.OpInfo{Name: "my_silu", MinArgs: 1, ElementWise: true, Doc: "my_silu(x): x*sigmoid(x)",
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }},
		Kernel: func(_ *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
			return kernels.Silu(dst, args[0])
		},
		Rule: target.OpRule{CPUOnly: "my_silu: no CANN recipe",
			Traffic: func(*ir.Node, ir.Bindings) (float64, float64, error) { return 1, 1, nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	rule := &passes.Rule{Name: "silu-to-my-silu", Pattern: passes.Op(ir.OpSilu, passes.Any("x")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) { return b.Op("my_silu", nil, m.Get("x")) }}
	if err := ctx.Passes.Register(passes.RulePass("use-my-silu", "silu(x) -> my_silu(x)", rule)); err != nil {
		t.Fatal(err)
	}
	return ctx
}
