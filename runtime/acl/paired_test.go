//go:build cann

package acl

import (
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
)

// pairedSessions opens a program session of m on d and the CPU reference
// session of the same model, with the program's CPU kernel options
// (opts.Kernels: the llama.cpp build whose arithmetic they reproduce);
// both are closed when the test ends.
func pairedSessions(t *testing.T, m *models.Model, f *gguf.File, d *Device, opts program.Options) (*program.Runner, *session.Session) {
	t.Helper()
	s, err := program.NewRunner(m, f, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ref, err := session.NewSession(m, f, session.SessionOptions{Exec: eval.ExecOptions{Kernels: opts.Kernels}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	return s, ref
}

// stepBoth feeds toks to both sessions and returns the two sessions' last
// rows of logits (the device's first).
func stepBoth(t *testing.T, step int, s *program.Runner, ref *session.Session, toks []int32) (got, want []float32) {
	t.Helper()
	g, err := s.Step(toks)
	if err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	w, err := ref.Step(toks)
	if err != nil {
		t.Fatal(err)
	}
	return g.Logits[len(g.Logits)-1], w.Logits[len(w.Logits)-1]
}
