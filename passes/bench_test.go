package passes_test

import (
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/session"
)

// BenchmarkDefaultPipeline is the compile-time cost of the default
// pipeline on stories260K's symbolic graph.
func BenchmarkDefaultPipeline(b *testing.B) {
	_, m := testmodel.Build(b, testref.Testdata("stories260K.gguf"), models.Options{})
	p := passes.Default()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := passes.Run(m.Graph, p, passes.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode is one greedy decode step of a session (its compiled
// plan) with the graph as built (none) and after the default pipeline: the fused
// graph runs fewer, larger kernels and computes the RoPE table once.
func BenchmarkDecode(b *testing.B) {
	for _, model := range []string{"stories260K", "synth-llama-Q4_0"} {
		for _, c := range []struct{ name, pipe string }{
			{"none", "none"},
			{"default", "default"},
			// The default pipeline without fuse-attention: kernels.Attention
			// is slower on the CPU than the matmuls it replaces.
			{"no-attention", "noop,rope-cache,fold,cse,fuse-norm,fuse-matmul-bias,fuse-swiglu,fuse-softmax,fuse-rope-set-rows,dce"},
		} {
			pipe := c.pipe
			b.Run(model+"/"+c.name, func(b *testing.B) {
				f, m := testmodel.Build(b, testref.Testdata(model+".gguf"), models.Options{NCtx: 512})
				p, err := passes.Parse(pipe)
				if err != nil {
					b.Fatal(err)
				}
				var g *ir.Graph
				if g, _, err = passes.Run(m.Graph, p, passes.Options{}); err != nil {
					b.Fatal(err)
				}
				mm := *m
				mm.Graph = g
				newSession := func() *session.Session {
					s, err := session.NewSession(&mm, f, session.SessionOptions{})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Step([]int32{1, 403, 407, 261, 378}); err != nil {
						b.Fatal(err)
					}
					return s
				}
				s := newSession()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if s.Pos() == s.NCtx() {
						b.StopTimer()
						s = newSession()
						b.StartTimer()
					}
					if _, err := s.Step([]int32{432}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
