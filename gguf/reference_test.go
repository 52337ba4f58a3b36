package gguf

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/irtool/irtool/internal/testref"
)

// refFloat is a number of llama.cpp's reference JSON (NaN and infinities
// spelled as strings).
type refFloat = testref.Float

// refFile is llama.cpp's <model>.gguf.json (see the reference README).
type refFile struct {
	Version    uint32      `json:"version"`
	Alignment  uint64      `json:"alignment"`
	DataOffset int64       `json:"data_offset"`
	NKV        int         `json:"n_kv"`
	NTensors   int         `json:"n_tensors"`
	KV         []refKV     `json:"kv"`
	Tensors    []refTensor `json:"tensors"`
}

type refKV struct {
	Key     string            `json:"key"`
	Type    string            `json:"type"`
	Value   json.RawMessage   `json:"value"`
	ArrType string            `json:"arr_type"`
	ArrN    int               `json:"arr_n"`
	First8  []json.RawMessage `json:"first8"`
	Last2   []json.RawMessage `json:"last2"`
}

type refTensor struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	TypeID uint32   `json:"type_id"`
	Ne     [4]int64 `json:"ne"`
	Offset uint64   `json:"offset"`
	Size   uint64   `json:"size"`
	Stats  refStats `json:"dequant_stats"`
}

type refStats struct {
	N     int64      `json:"n"`
	Sum   refFloat   `json:"sum"`
	SumSq refFloat   `json:"sum_sq"`
	Min   refFloat   `json:"min"`
	Max   refFloat   `json:"max"`
	NNaN  int64      `json:"n_nan"`
	NInf  int64      `json:"n_inf"`
	Head  []refFloat `json:"head"`
}

// refModel is one reference model with llama.cpp's view of it.
type refModel struct {
	name string // e.g. "stories260K"
	path string
	ref  *refFile
}

// refModels lists every reference model (testref.Models) that has a
// llamacpp/<model>.gguf.json, skipping the test when the data is absent.
func refModels(t *testing.T) []refModel {
	t.Helper()
	var out []refModel
	for _, p := range testref.Models(t) {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		jp := filepath.Join(testref.Dir(), "llamacpp", name+".gguf.json")
		b, err := os.ReadFile(jp)
		if err != nil {
			t.Logf("no reference JSON for %s: %v", name, err)
			continue
		}
		var r refFile
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", jp, err)
		}
		out = append(out, refModel{name: name, path: p, ref: &r})
	}
	if len(out) == 0 {
		t.Skip("no reference models with llama.cpp JSON")
	}
	return out
}

func openT(t testing.TB, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestReferenceStructure checks that the reader sees every reference model
// exactly as ggml's gguf_init_from_file does.
func TestReferenceStructure(t *testing.T) {
	for _, m := range refModels(t) {
		t.Run(m.name, func(t *testing.T) {
			f := openT(t, m.path)
			r := m.ref
			if f.Version != r.Version || f.Alignment != r.Alignment || f.DataOffset != r.DataOffset {
				t.Errorf("header: version %d alignment %d data_offset %d, llama.cpp %d %d %d",
					f.Version, f.Alignment, f.DataOffset, r.Version, r.Alignment, r.DataOffset)
			}
			if len(f.KV) != r.NKV || len(r.KV) != r.NKV {
				t.Fatalf("%d keys, llama.cpp %d", len(f.KV), r.NKV)
			}
			for i, rk := range r.KV {
				checkKV(t, f.KV[i], rk)
			}
			if len(f.Tensors) != r.NTensors || len(r.Tensors) != r.NTensors {
				t.Fatalf("%d tensors, llama.cpp %d", len(f.Tensors), r.NTensors)
			}
			for i, rt := range r.Tensors {
				ti := f.Tensors[i]
				if ti.Name != rt.Name || ti.Type.String() != rt.Type || uint32(ti.Type) != rt.TypeID ||
					ti.Ne != rt.Ne || ti.Offset != rt.Offset || ti.Size != rt.Size {
					t.Errorf("tensor %d: got %s %s(%d) %v off %d size %d, llama.cpp %s %s(%d) %v off %d size %d",
						i, ti.Name, ti.Type, uint32(ti.Type), ti.Ne, ti.Offset, ti.Size,
						rt.Name, rt.Type, rt.TypeID, rt.Ne, rt.Offset, rt.Size)
				}
				if got, ok := f.Tensor(rt.Name); !ok || got != &f.Tensors[i] {
					t.Errorf("Tensor(%q) lookup failed", rt.Name)
				}
				data, err := f.TensorData(rt.Name)
				if err != nil || uint64(len(data)) != rt.Size {
					t.Errorf("TensorData(%q): %d bytes, %v", rt.Name, len(data), err)
				}
			}
		})
	}
}

func checkKV(t *testing.T, kv KV, rk refKV) {
	t.Helper()
	v := kv.Value
	if kv.Key != rk.Key || v.Type().String() != rk.Type {
		t.Errorf("key %q (%s), llama.cpp %q (%s)", kv.Key, v.Type(), rk.Key, rk.Type)
		return
	}
	if v.Type() != ValArray {
		checkScalar(t, kv.Key, v, rk.Value)
		return
	}
	if v.ElemType().String() != rk.ArrType || v.Len() != rk.ArrN {
		t.Errorf("key %q: array of %d %s, llama.cpp %d %s", kv.Key, v.Len(), v.ElemType(), rk.ArrN, rk.ArrType)
		return
	}
	for i, raw := range rk.First8 {
		checkScalar(t, fmt.Sprintf("%s[%d]", kv.Key, i), v.Index(i), raw)
	}
	for i, raw := range rk.Last2 {
		j := v.Len() - len(rk.Last2) + i
		checkScalar(t, fmt.Sprintf("%s[%d]", kv.Key, j), v.Index(j), raw)
	}
}

// checkScalar compares a scalar with its JSON rendering by llama.cpp.
func checkScalar(t *testing.T, what string, v Value, raw json.RawMessage) {
	t.Helper()
	switch v.Type() {
	case ValString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		got, _ := v.Str()
		if utf8.ValidString(got) && got != s {
			t.Errorf("%s = %q, llama.cpp %q", what, got, s)
		}
	case ValBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if got, _ := v.Bool(); got != b {
			t.Errorf("%s = %v, llama.cpp %v", what, got, b)
		}
	case ValFloat32, ValFloat64:
		var f refFloat
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		got, _ := v.Float()
		want := float64(f)
		if v.Type() == ValFloat32 {
			want = float64(float32(want)) // 9 significant digits round-trip a float32
		}
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("%s = %v, llama.cpp %v", what, got, want)
		}
	default:
		want := strings.TrimSpace(string(raw))
		var got string
		if v.Type().isSigned() {
			x, _ := v.Int()
			got = strconv.FormatInt(x, 10)
		} else {
			x, _ := v.Uint()
			got = strconv.FormatUint(x, 10)
		}
		if got != want {
			t.Errorf("%s = %s, llama.cpp %s", what, got, want)
		}
	}
}

// relErr is |a-b| relative to the larger magnitude (0 when both are 0).
func relErr(a, b float64) float64 {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// TestReferenceDequantStats dequantises every tensor of every reference
// model and compares n, sum, sum of squares, min, max, NaN/Inf counts and
// the first 8 values with the statistics llama.cpp computed with ggml's own
// to_float, within 1e-6 relative.
func TestReferenceDequantStats(t *testing.T) {
	const tol = 1e-6
	worst := 0.0
	types := map[GGMLType]int{}
	for _, m := range refModels(t) {
		t.Run(m.name, func(t *testing.T) {
			f := openT(t, m.path)
			for _, rt := range m.ref.Tensors {
				x, err := f.TensorFloat32(rt.Name)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				ti, _ := f.Tensor(rt.Name)
				types[ti.Type]++
				s := rt.Stats
				var sum, sumSq float64
				var nNaN, nInf int64
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, v := range x {
					fv := float64(v)
					switch {
					case math.IsNaN(fv):
						nNaN++
						continue
					case math.IsInf(fv, 0):
						nInf++
					}
					sum += fv
					sumSq += fv * fv
					lo, hi = math.Min(lo, fv), math.Max(hi, fv)
				}
				if int64(len(x)) != s.N || nNaN != s.NNaN || nInf != s.NInf {
					t.Errorf("%s: n %d nan %d inf %d, llama.cpp %d %d %d", rt.Name, len(x), nNaN, nInf, s.N, s.NNaN, s.NInf)
				}
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"sum", sum, float64(s.Sum)}, {"sum_sq", sumSq, float64(s.SumSq)}, {"min", lo, float64(s.Min)}, {"max", hi, float64(s.Max)}} {
					e := relErr(c.got, c.want)
					worst = math.Max(worst, e)
					if e > tol {
						t.Errorf("%s (%s): %s = %.9g, llama.cpp %.9g (rel err %.2g)", rt.Name, rt.Type, c.what, c.got, c.want, e)
					}
				}
				for i, h := range s.Head {
					e := relErr(float64(x[i]), float64(h))
					worst = math.Max(worst, e)
					if e > tol {
						t.Errorf("%s (%s): head[%d] = %.9g, llama.cpp %.9g", rt.Name, rt.Type, i, x[i], float64(h))
					}
				}
			}
		})
	}
	t.Logf("tensors per type: %v; worst relative error %.3g", types, worst)
}

// TestVocabOnlyFile reads llama.cpp's vocab-only file: 22 keys, 32000-entry
// arrays, no tensors, so the data section starts right after the header.
func TestVocabOnlyFile(t *testing.T) {
	p := testref.Shared(t, "vocab/ggml-vocab-llama-spm.gguf")
	f := openT(t, p)
	if len(f.KV) != 22 || len(f.Tensors) != 0 || f.Version != 3 {
		t.Fatalf("%d keys, %d tensors, v%d", len(f.KV), len(f.Tensors), f.Version)
	}
	if f.DataOffset != f.Size {
		t.Errorf("data offset %d, want the file size %d", f.DataOffset, f.Size)
	}
	toks, ok := f.GetStrings("tokenizer.ggml.tokens")
	if !ok || len(toks) != 32000 || toks[0] != "<unk>" || toks[1] != "<s>" || toks[2] != "</s>" {
		t.Fatalf("tokens: ok=%v n=%d", ok, len(toks))
	}
	scores, ok := f.GetFloat32s("tokenizer.ggml.scores")
	if !ok || len(scores) != 32000 {
		t.Fatalf("scores: ok=%v n=%d", ok, len(scores))
	}
	tt, ok := f.GetInt32s("tokenizer.ggml.token_type")
	if !ok || len(tt) != 32000 || tt[0] != 2 || tt[1] != 3 {
		t.Fatalf("token types: ok=%v %v", ok, tt[:3])
	}
	if m, _ := f.GetString("tokenizer.ggml.model"); m != "llama" {
		t.Errorf("tokenizer model %q", m)
	}
}

// TestGetters exercises the typed getters on stories260K's metadata, whose
// values the reference README states.
func TestGetters(t *testing.T) {
	f := openT(t, testref.Testdata("stories260K.gguf"))
	if f.Arch() != "llama" {
		t.Errorf("arch %q", f.Arch())
	}
	for key, want := range map[string]uint64{
		"llama.embedding_length": 64, "llama.block_count": 5, "llama.attention.head_count": 8,
		"llama.attention.head_count_kv": 4, "llama.feed_forward_length": 172, "llama.context_length": 2048,
		"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
	} {
		if got, ok := f.GetUint(key); !ok || got != want {
			t.Errorf("GetUint(%q) = %d, %v; want %d", key, got, ok, want)
		}
		if got, ok := f.GetInt(key); !ok || got != int64(want) {
			t.Errorf("GetInt(%q) = %d, %v; want %d", key, got, ok, want)
		}
	}
	if eps, ok := f.GetFloat("llama.attention.layer_norm_rms_epsilon"); !ok || float32(eps) != 1e-5 {
		t.Errorf("rms eps %v %v", eps, ok)
	}
	if _, ok := f.GetFloat("llama.rope.freq_base"); ok {
		t.Error("stories260K has no rope.freq_base key")
	}
	if _, ok := f.GetUint("general.architecture"); ok {
		t.Error("GetUint on a string succeeded")
	}
	if _, ok := f.GetString("llama.block_count"); ok {
		t.Error("GetString on a u32 succeeded")
	}
	if toks, ok := f.GetStrings("tokenizer.ggml.tokens"); !ok || len(toks) != 512 {
		t.Errorf("tokens: %d %v", len(toks), ok)
	}
	if _, ok := f.GetFloat32s("tokenizer.ggml.tokens"); ok {
		t.Error("GetFloat32s on strings succeeded")
	}
	if _, ok := f.GetBool("nope"); ok {
		t.Error("missing key found")
	}
}
