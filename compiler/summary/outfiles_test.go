package summary_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler/summary"
)

// OutFiles: the program as JSON and the two DOT drawings, titled with the
// model and the target.
func TestOutFiles(t *testing.T) {
	_, r := compileEmbedded(t, "ascend910b")
	files, err := summary.OutFiles("m.gguf", r)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Errorf("%d files, want 3", len(files))
	}
	if !json.Valid(files["program.json"]) {
		t.Errorf("program.json is not JSON")
	}
	for name, want := range map[string]string{"partition.dot": "m.gguf on ascend910b: partition (", "segments.dot": "m.gguf on ascend910b: segments of "} {
		d := string(files[name])
		if !strings.HasPrefix(d, "digraph") || !strings.Contains(d, want) {
			t.Errorf("%s: no %q in %.200s", name, want, d)
		}
	}
}
