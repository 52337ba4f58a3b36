package gguf_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// tinyFile writes a two-tensor model with a tokenizer and an arch key.
func tinyFile(t testing.TB) *gguf.File {
	w := gguf.NewWriter()
	w.SetKV("general.architecture", gguf.Str("llama"))
	w.SetKV("general.name", gguf.Str("tiny"))
	w.SetKV("llama.block_count", gguf.U32(2))
	w.SetKV("tokenizer.ggml.model", gguf.Str("llama"))
	w.SetKV("tokenizer.ggml.tokens", gguf.Strs([]string{"<unk>", "<s>", "</s>"}))
	w.SetKV("tokenizer.ggml.bos_token_id", gguf.U32(1))
	if err := w.AddTensor("output_norm.weight", gguf.TypeF32, []int64{4}, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("token_embd.weight", gguf.TypeF32, []int64{4, 3}, make([]byte, 48)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes(), "tiny.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDescribe(t *testing.T) {
	f := tinyFile(t)
	d := gguf.Describe(f)
	if d.NKV != len(f.KV) || d.NTensors != 2 || len(d.KV) != len(f.KV) || len(d.Tensors) != 2 {
		t.Fatalf("counts: %+v", d)
	}
	if got := d.Tensors[1]; got.Name != "token_embd.weight" || got.Type != "f32" || got.Ne != [4]int64{4, 3, 1, 1} || got.Size != 48 {
		t.Errorf("tensor 1 = %+v", got)
	}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"key":"general.architecture","type":"str","value":"llama"`, `"type":"arr","arr_type":"str","arr_n":3`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("JSON lacks %s:\n%s", want, out)
		}
	}
}

func TestWriteSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := gguf.WriteSummary(&buf, tinyFile(t)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hyper-parameters (llama.*)", "block_count", "tokenizer: llama (SentencePiece", "3 tokens", "bos 1", "token_embd.weight", "4 × 3", "by type: f32 2 (64 B)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}
