package models

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// withKV returns the embedded model with key set to v (nil: removed).
func withKV(t *testing.T, key string, v *gguf.Value) *gguf.File {
	t.Helper()
	// The embedded model's file (the root package, which embeds it, sits
	// above models: an internal test cannot import it).
	data, err := os.ReadFile("../testdata/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(data, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key == key {
			continue
		}
		w.SetKV(kv.Key, kv.Value)
	}
	if v != nil {
		w.SetKV(key, *v)
	}
	for _, ti := range f.Tensors {
		d, _ := f.TensorData(ti.Name)
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape(), d); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Parse(buf.Bytes(), "edited")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestHParamKeyTypes: a hyper-parameter key stored with the wrong type is
// reported as such, naming the key and the type, not as missing or
// silently replaced by a default.
func TestHParamKeyTypes(t *testing.T) {
	val := func(v gguf.Value) *gguf.Value { return &v }
	for _, c := range []struct {
		key  string
		v    *gguf.Value
		want string
	}{
		{"llama.block_count", val(gguf.Str("five")), `"llama.block_count" has type str, want an integer`},
		{"llama.block_count", nil, `missing metadata key "llama.block_count"`},
		{"llama.embedding_length", val(gguf.F32(64)), `"llama.embedding_length" has type f32, want an integer`},
		{"llama.context_length", val(gguf.I32(-8)), `"llama.context_length" = -8 is negative`},
		{"llama.rope.freq_base", val(gguf.U32(10000)), `"llama.rope.freq_base" has type u32, want f32 or f64`},
		{"llama.attention.layer_norm_rms_epsilon", val(gguf.F32(float32(math.NaN()))), "is not finite"},
		{"llama.rope.scaling.type", val(gguf.U8(1)), `"llama.rope.scaling.type" has type u8, want a string`},
		{"general.architecture", val(gguf.U32(1)), `"general.architecture" has type u32`},
	} {
		_, err := ReadHParams(withKV(t, c.key, c.v))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: err %v, want %q", c.key, c.v, err, c.want)
		}
	}
}
