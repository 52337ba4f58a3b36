package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/internal/testref"
)

// runCLI runs the CLI in-process.
func runCLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// llamaJSON is llama.cpp's <model>.gguf.json (the fields inspect shares).
type llamaJSON struct {
	Version    uint32 `json:"version"`
	Alignment  uint64 `json:"alignment"`
	DataOffset int64  `json:"data_offset"`
	NKV        int    `json:"n_kv"`
	NTensors   int    `json:"n_tensors"`
	KV         []struct {
		Key     string          `json:"key"`
		Type    string          `json:"type"`
		Value   json.RawMessage `json:"value"`
		ArrType string          `json:"arr_type"`
		ArrN    int             `json:"arr_n"`
		First8  []any           `json:"first8"`
	} `json:"kv"`
	Tensors []gguf.TensorDescription `json:"tensors"`
}

// inspectOut is what inspect --json prints, decoded.
type inspectOut struct {
	Version    uint32 `json:"version"`
	Alignment  uint64 `json:"alignment"`
	DataOffset int64  `json:"data_offset"`
	NKV        int    `json:"n_kv"`
	NTensors   int    `json:"n_tensors"`
	KV         []struct {
		Key     string          `json:"key"`
		Type    string          `json:"type"`
		Value   json.RawMessage `json:"value"`
		ArrType string          `json:"arr_type"`
		ArrN    *int            `json:"arr_n"`
	} `json:"kv"`
	Tensors []gguf.TensorDescription `json:"tensors"`
}

func inspectJSONOf(t *testing.T, args ...string) (inspectOut, string) {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"inspect"}, args...)...)
	if code != 0 {
		t.Fatalf("inspect %v: exit %d: %s", args, code, errs)
	}
	var doc inspectOut
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("inspect %v: bad JSON: %v", args, err)
	}
	return doc, out
}

// TestInspectMatchesLlamaCpp checks inspect --json against the structure
// llama.cpp's own GGUF reader recorded for every reference model: version,
// alignment, data offset, the number of keys, every key's name and type
// (and array element type and length, and scalar values), and every
// tensor's name, type, ne, offset and size. Flags come before and after the
// model path alternately.
func TestInspectMatchesLlamaCpp(t *testing.T) {
	models := testref.Models(t)
	for i, p := range models {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(testref.Dir(), "llamacpp", name+".gguf.json"))
			if err != nil {
				t.Skip(err)
			}
			var ref llamaJSON
			if err := json.Unmarshal(b, &ref); err != nil {
				t.Fatal(err)
			}
			args := []string{p, "--json"}
			if i%2 == 1 {
				args = []string{"--json", p}
			}
			got, _ := inspectJSONOf(t, args...)
			if got.Version != ref.Version || got.Alignment != ref.Alignment || got.DataOffset != ref.DataOffset ||
				got.NKV != ref.NKV || got.NTensors != ref.NTensors {
				t.Errorf("header: got v%d align %d data %d keys %d tensors %d; llama.cpp v%d %d %d %d %d",
					got.Version, got.Alignment, got.DataOffset, got.NKV, got.NTensors,
					ref.Version, ref.Alignment, ref.DataOffset, ref.NKV, ref.NTensors)
			}
			if len(got.KV) != len(ref.KV) {
				t.Fatalf("%d keys, llama.cpp %d", len(got.KV), len(ref.KV))
			}
			for j, rk := range ref.KV {
				g := got.KV[j]
				if g.Key != rk.Key || g.Type != rk.Type {
					t.Errorf("key %d: %s (%s), llama.cpp %s (%s)", j, g.Key, g.Type, rk.Key, rk.Type)
					continue
				}
				if rk.Type == "arr" {
					if g.ArrType != rk.ArrType || g.ArrN == nil || *g.ArrN != rk.ArrN {
						t.Errorf("%s: array %s × %v, llama.cpp %s × %d", g.Key, g.ArrType, g.ArrN, rk.ArrType, rk.ArrN)
					}
					if (rk.ArrN <= 16) != (g.Value != nil) {
						t.Errorf("%s: value present = %v for %d elements", g.Key, g.Value != nil, rk.ArrN)
					}
					continue
				}
				if !sameJSONScalar(rk.Type, g.Value, rk.Value) {
					t.Errorf("%s = %s, llama.cpp %s", g.Key, g.Value, rk.Value)
				}
			}
			if d := cmp.Diff(ref.Tensors, got.Tensors); d != "" {
				t.Errorf("tensors (-llama.cpp +inspect):\n%s", d)
			}
		})
	}
}

// sameJSONScalar compares two JSON scalars; f32 values are compared after
// rounding to float32 (llama.cpp prints 9 digits, inspect the shortest form).
func sameJSONScalar(typ string, a, b json.RawMessage) bool {
	if typ == "f32" || typ == "f64" {
		var x, y float64
		if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
			return string(a) == string(b) // "NaN", "+Inf", "-Inf"
		}
		if typ == "f32" {
			return float32(x) == float32(y)
		}
		return x == y || math.Abs(x-y) <= 1e-9*math.Abs(y)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}

// TestInspectVocabOnly inspects llama.cpp's vocab-only file: 22 keys,
// 32000-entry arrays without values, and an empty (not null) tensor list.
func TestInspectVocabOnly(t *testing.T) {
	p := testref.Shared(t, "vocab/ggml-vocab-llama-spm.gguf")
	doc, out := inspectJSONOf(t, p, "--json")
	if doc.NKV != 22 || len(doc.KV) != 22 || doc.NTensors != 0 || doc.Tensors == nil || len(doc.Tensors) != 0 {
		t.Errorf("keys %d/%d tensors %d %v", doc.NKV, len(doc.KV), doc.NTensors, doc.Tensors)
	}
	if !strings.Contains(out, `"tensors": []`) {
		t.Error(`no "tensors": [] in the output`)
	}
	if st, _ := os.Stat(p); doc.DataOffset != st.Size() {
		t.Errorf("data_offset %d, file size %d", doc.DataOffset, st.Size())
	}
	found := 0
	for _, kv := range doc.KV {
		if kv.Type == "arr" {
			if kv.ArrN == nil || *kv.ArrN != 32000 || kv.Value != nil {
				t.Errorf("%s: arr_n %v, value %s", kv.Key, kv.ArrN, kv.Value)
			}
			found++
		}
	}
	if found != 3 {
		t.Errorf("%d arrays, want 3 (tokens, scores, token_type)", found)
	}
	if code, out, errs := runCLI(t, "inspect", p); code != 0 || !strings.Contains(out, "32000 tokens") || !strings.Contains(out, "no tensors") {
		t.Errorf("text inspect: exit %d, %q, %q", code, out, errs)
	}
}

// TestInspectRewritten checks that a model rewritten with gguf.Writer
// inspects exactly like the original, and is the same bytes.
func TestInspectRewritten(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "synth-llama-Q4_0.gguf"} {
		p := testref.Testdata(name)
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		w := gguf.NewWriter()
		for _, kv := range f.KV {
			w.SetKV(kv.Key, kv.Value)
		}
		for _, ti := range f.Tensors {
			d, _ := f.TensorData(ti.Name)
			if err := w.AddTensor(ti.Name, ti.Type, ti.Ne[:ti.NDims], d); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		f.Close()
		q := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(q, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, a := inspectJSONOf(t, p, "--json")
		_, b := inspectJSONOf(t, q, "--json")
		if d := cmp.Diff(a, b); d != "" {
			t.Errorf("%s: inspect differs after rewrite:\n%s", name, d)
		}
		orig, _ := os.ReadFile(p)
		if !bytes.Equal(orig, buf.Bytes()) {
			t.Errorf("%s: rewritten bytes differ from the original", name)
		}
	}
}

// TestInspectGolden pins the text and JSON output for the embedded model
// and a quantised model. Run with -update after an intended change.
func TestInspectGolden(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"inspect-embedded.txt", []string{"inspect"}},
		{"inspect-embedded.json", []string{"inspect", "--json"}},
		{"inspect-q4_0.txt", []string{"inspect", testref.Testdata("synth-llama-Q4_0.gguf")}},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		out = strings.ReplaceAll(out, testref.Testdata("")+string(os.PathSeparator), "testdata/")
		golden.Check(t, filepath.Join("testdata", c.golden), []byte(out))
	}
}

// TestInspectEmbeddedFacts checks the embedded model's JSON against facts
// the reference README states, independent of the golden file.
func TestInspectEmbeddedFacts(t *testing.T) {
	doc, _ := inspectJSONOf(t, "--json")
	if doc.Version != 3 || doc.NKV != 19 || doc.NTensors != 48 || doc.DataOffset != 14176 {
		t.Errorf("embedded: v%d %d keys %d tensors data at %d", doc.Version, doc.NKV, doc.NTensors, doc.DataOffset)
	}
	want := map[string]string{"llama.embedding_length": "64", "llama.block_count": "5", "llama.attention.head_count": "8",
		"llama.attention.head_count_kv": "4", "llama.feed_forward_length": "172", "llama.rope.dimension_count": "8",
		"llama.context_length": "2048", "llama.attention.layer_norm_rms_epsilon": "0.00001", "general.architecture": `"llama"`}
	for _, kv := range doc.KV {
		if w, ok := want[kv.Key]; ok {
			if string(kv.Value) != w {
				t.Errorf("%s = %s, want %s", kv.Key, kv.Value, w)
			}
			delete(want, kv.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("keys missing: %v", want)
	}
}

// TestInspectErrors checks exit codes and messages for bad invocations.
func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.gguf")
	orig, _ := os.ReadFile(testref.Testdata("synth-llama-Q4_0.gguf"))
	os.WriteFile(corrupt, orig[:5000], 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"inspect", filepath.Join(dir, "missing.gguf")}, 1, "missing.gguf"},
		{[]string{"inspect", corrupt}, 1, "corrupt.gguf: truncated"},
		{[]string{"inspect", "a.gguf", "b.gguf"}, 2, "want at most one MODEL argument, got 2"},
		{[]string{"inspect", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"inspect", "-h"}, 0, "usage: irtool inspect [MODEL.gguf] [--json]"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", c.args, code, c.code, errs, c.msg)
		}
	}
}
