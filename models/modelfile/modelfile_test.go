package modelfile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/models/modelfile"
)

var embedded = modelfile.Options{Embedded: irtool.EmbeddedModel, EmbeddedName: irtool.EmbeddedModelName}

// writeIR writes the embedded model's graph (n_ctx 64) as IR text naming
// weights, and returns its path.
func writeIR(t *testing.T, weights string, edit func(string) string) string {
	t.Helper()
	s, err := modelfile.Open("", embedded)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.Build(models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	if weights != "" {
		m.Graph.Meta[modelfile.MetaWeights] = weights
	}
	var buf bytes.Buffer
	if err := ir.Print(&buf, m.Graph); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if edit != nil {
		text = edit(text)
	}
	path := filepath.Join(t.TempDir(), "m.ir")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenGGUFAndIR(t *testing.T) {
	s, err := modelfile.Open("", embedded)
	if err != nil {
		t.Fatal(err)
	}
	if s.IsIR() || s.File == nil || s.WeightsHeld() != "embedded weights" {
		t.Errorf("embedded: IR %v, file %v, %s", s.IsIR(), s.File != nil, s.WeightsHeld())
	}
	if w, ok := s.WeightsModel(); !ok || w != "" {
		t.Errorf("embedded WeightsModel = %q, %v", w, ok)
	}
	s.Close()

	path := writeIR(t, modelfile.EmbeddedWeights, nil)
	if !modelfile.IsIRText(path) {
		t.Errorf("IsIRText(%s) = false", path)
	}
	s, err = modelfile.Open(path, embedded)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.IsIR() || s.File == nil || s.WeightsPath != modelfile.EmbeddedWeights {
		t.Fatalf("IR: IR %v, file %v, weights %q", s.IsIR(), s.File != nil, s.WeightsPath)
	}
	// The IR fixes its cache: a flag at its default takes the IR's value,
	// another value is refused.
	def := models.Options{NCtx: 4096, KVType: models.KVF16, KVWrite: models.KVSetRows}
	opts, err := s.Options(def, def)
	if err != nil || opts.NCtx != 64 {
		t.Errorf("Options(def) = %+v, %v", opts, err)
	}
	bad := def
	bad.NCtx = 128
	if _, err := s.Options(bad, def); err == nil || !strings.Contains(err.Error(), "n_ctx=64; --ctx 128 differs") {
		t.Errorf("Options(--ctx 128): %v", err)
	}
	m, err := s.Build(opts)
	if err != nil || m.Graph != s.Graph || m.HParams.Arch != "llama" || m.HParams.NLayer != 5 {
		t.Errorf("Build = %+v, %v", m.HParams, err)
	}
}

func TestOpenIRErrors(t *testing.T) {
	noWeights := writeIR(t, "", nil)
	s, err := modelfile.Open(noWeights, embedded)
	if err != nil {
		t.Fatal(err)
	}
	if s.File != nil {
		t.Errorf("IR naming no weights opened a file")
	}
	if _, ok := s.WeightsModel(); ok {
		t.Errorf("WeightsModel of IR without weights: ok")
	}
	s.Close()
	for _, c := range []struct {
		name, weights string
		edit          func(string) string
		want          string
	}{
		{"missing weights", "nope.gguf", nil, "the weights file of meta weights"},
		{"ill-typed meta", modelfile.EmbeddedWeights, func(s string) string {
			return strings.Replace(s, `meta n_ctx="64"`, `meta n_ctx="x"`, 1)
		}, `meta n_ctx="x": want a positive integer`},
		{"control character", "a\x01.gguf", nil, "a control character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeIR(t, c.weights, c.edit)
			_, err := modelfile.Open(path, embedded)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open: %v, want %q", err, c.want)
			}
		})
	}
	if !errors.Is(modelfile.ErrNoWeights, modelfile.ErrNoWeights) || modelfile.IsIRText(filepath.Join(t.TempDir(), "none.gguf")) {
		t.Errorf("IsIRText of a missing .gguf")
	}
	if _, err := modelfile.Open("", modelfile.Options{}); err == nil {
		t.Errorf("Open(\"\") with nothing embedded succeeded")
	}
}

// TestCheckAsBuilt: the IR the weights build passes; an IR differing from
// it is refused, naming its first differing node.
func TestCheckAsBuilt(t *testing.T) {
	def := models.Options{NCtx: 4096, KVType: models.KVF16, KVWrite: models.KVSetRows}
	for _, c := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"as built", nil, ""},
		{"renamed", func(s string) string { return strings.Replace(s, `"inp_embd"`, `"inp_embd2"`, 1) }, "inp_embd2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := modelfile.Open(writeIR(t, modelfile.EmbeddedWeights, c.edit), embedded)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			opts, err := s.Options(def, def)
			if err != nil {
				t.Fatal(err)
			}
			err = s.CheckAsBuilt(opts)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("CheckAsBuilt: %v, want %q", err, c.want)
			}
		})
	}
}
