package session_test

import (
	"fmt"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

// A session runs the model on the CPU (its compiled plan): prefill on the
// prompt, then greedy decode over its KV cache.
func ExampleNewSession() {
	// The model embedded in the module; gguf.Open("model.gguf") reads a file.
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	m, _ := models.Build(f, models.Options{NCtx: 64})
	s, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := s.Generate([]int32{1, 403, 407, 261, 378}, 8, false, nil)
	fmt.Println(res.Tokens, s.Pos())
	// Output:
	// [432 383 286 261 376 298 315 421] 12
}

// A Sampler draws each token through llama.cpp's sampler chain (repeat
// penalty, top-k, top-p, min-p, temperature, then a seeded draw) instead
// of taking the argmax; the same seed gives the same tokens on every
// backend.
func ExampleNewSampler() {
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	m, _ := models.Build(f, models.Options{NCtx: 64})
	s, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	o := session.DefaultSamplerOptions() // llama.cpp's: temp 0.8, top-k 40, top-p 0.95, min-p 0.05
	o.Seed = 42
	smp, err := session.NewSampler(o)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := session.GenerateWith(s, []int32{1, 403, 407, 261, 378}, 8, session.GenerateOptions{Sampler: smp})
	fmt.Println(res.Tokens)
	// Output:
	// [432 383 286 261 376 268 414 422]
}
