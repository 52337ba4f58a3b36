package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
)

// nanModel writes the embedded model with a NaN in output_norm.weight (the
// weight of the last norm before the output projection).
func nanModel(t *testing.T) string {
	t.Helper()
	f, err := gguf.Parse(irtool.EmbeddedModel, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		w.SetKV(kv.Key, kv.Value)
	}
	found := false
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if ti.Name == "output_norm.weight" {
			if ti.Type != gguf.TypeF32 {
				t.Fatalf("output_norm.weight is %s", ti.Type)
			}
			data = append([]byte(nil), data...)
			binary.LittleEndian.PutUint32(data[4*3:], math.Float32bits(float32(math.NaN())))
			found = true
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape(), data); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatal("no output_norm.weight")
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "nan.gguf")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunNaNModel: non-finite logits fail the run, naming the first op
// whose output is not finite (found by a checked re-run, or directly with
// --check-numerics), and --json still prints one valid JSON document with
// an error field.
func TestRunNaNModel(t *testing.T) {
	p := nanModel(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"text", []string{"run", p, "-p", "Once upon a time", "-n", "4"}},
		{"check-numerics", []string{"run", p, "--tokens", "1,403", "-n", "4", "--check-numerics"}},
		{"unfused", []string{"run", p, "--tokens", "1,403", "-n", "4", "--passes", "none"}},
		{"json", []string{"run", p, "-p", "Once", "-n", "4", "--json", "--logits"}},
		{"sim", []string{"run", p, "--tokens", "1,403", "-n", "2", "--backend", "sim", "--json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 1 {
				t.Fatalf("exit %d; stderr %q", code, stderr)
			}
			if !strings.Contains(stderr, "is the first op whose output is not finite") || !strings.Contains(stderr, `"output_norm.weight" not finite`) {
				t.Errorf("stderr does not name the op and its non-finite operand: %q", stderr)
			}
			if strings.Contains(strings.Join(c.args, " "), "--json") {
				var doc map[string]any
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
				}
				if e, _ := doc["error"].(string); !strings.Contains(e, "not finite") {
					t.Errorf("JSON error field %q", e)
				}
			}
		})
	}
}

// TestRunChunkedPrefill: a prompt prefilled in small ubatch steps gives the
// tokens and logits of a single prefill step, on the reference executor
// and on the simulated device.
func TestRunChunkedPrefill(t *testing.T) {
	prompt := "Once upon a time, there was a little girl named Lily. She loved to play outside."
	for _, backend := range []string{"cpu", "sim"} {
		whole := runJSONCmd(t, "-p", prompt, "-n", "4", "--json", "--logits", "--backend", backend, "--ubatch", "512")
		for _, ub := range []string{"1", "2", "7", "16"} {
			got := runJSONCmd(t, "-p", prompt, "-n", "4", "--json", "--logits", "--backend", backend, "--ubatch", ub)
			if !eqIDs(got.Tokens, whole.Tokens) {
				t.Errorf("%s --ubatch %s: tokens %v, want %v", backend, ub, got.Tokens, whole.Tokens)
			}
			// A one-token step takes the decode kernels (as in ggml), so a
			// chunking that leaves one-token steps agrees closely, not
			// bitwise; larger chunks here give the same bits.
			worst := 0.0
			for i := range whole.Logits {
				for j := range whole.Logits[i] {
					worst = max(worst, math.Abs(float64(got.Logits[i][j]-whole.Logits[i][j])))
				}
			}
			if worst > 5e-3 {
				t.Errorf("%s --ubatch %s: logits differ by up to %g", backend, ub, worst)
			}
			t.Logf("%s --ubatch %s: logits within %g", backend, ub, worst)
		}
	}
}
