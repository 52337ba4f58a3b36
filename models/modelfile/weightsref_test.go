package modelfile_test

import (
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/models/modelfile"
)

// WeightsRef: relative to the output's directory, absolute for stdout,
// the embedded model by name.
func TestWeightsRef(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "models", "m.gguf")
	abs, err := filepath.Abs(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ model, out, want string }{
		{"", filepath.Join(dir, "x.ir"), modelfile.EmbeddedWeights},
		{model, filepath.Join(dir, "x.ir"), "models/m.gguf"},
		{model, filepath.Join(dir, "out", "deep", "x.ir"), "../../models/m.gguf"},
		{model, "", filepath.ToSlash(abs)},
		{model, "-", filepath.ToSlash(abs)},
	} {
		got, err := modelfile.WeightsRef(c.model, c.out)
		if err != nil || got != c.want {
			t.Errorf("WeightsRef(%q, %q) = %q, %v; want %q", c.model, c.out, got, err, c.want)
		}
	}
}
