// Package testsession holds what the tests of the parallel rewrites
// (models' tensor parallelism, passes' pipeline stages) compare their ranks
// with: greedy generation on one CPU session.
package testsession

import (
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

// OneDevice builds f's model with default options and generates n tokens
// greedily after prompt on one CPU session of one thread, keeping the
// logits.
func OneDevice(t testing.TB, f *gguf.File, prompt []int32, n int) *session.GenerateResult {
	t.Helper()
	m, err := models.Build(f, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(m, f, session.SessionOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Generate(prompt, n, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
