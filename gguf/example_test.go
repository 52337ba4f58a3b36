package gguf_test

import (
	"bytes"
	"fmt"
	"log"

	"github.com/irtool/irtool/gguf"
)

// Build a tiny model with the Writer, then read it back with Parse.
func ExampleParse() {
	w := gguf.NewWriter()
	w.SetKV("general.architecture", gguf.Str("llama"))
	w.SetKV("llama.block_count", gguf.U32(2))
	w.SetKV("tokenizer.ggml.tokens", gguf.Strs([]string{"<unk>", "<s>", "</s>"}))
	if err := w.AddTensor("output_norm.weight", gguf.TypeF32, []int64{4}, make([]byte, 16)); err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		log.Fatal(err)
	}

	f, err := gguf.Parse(buf.Bytes(), "tiny.gguf")
	if err != nil {
		log.Fatal(err)
	}
	n, _ := f.GetUint("llama.block_count")
	toks, _ := f.GetStrings("tokenizer.ggml.tokens")
	t, _ := f.Tensor("output_norm.weight")
	fmt.Println(f.Arch(), n, len(toks), f.DataOffset)
	fmt.Println(t.Name, t.Type, t.Ne, t.Size)
	// Output:
	// llama 2 3 256
	// output_norm.weight f32 [4 1 1 1] 16
}

// Quantise 32 values to Q8_0 and expand them again.
func ExampleDequantize() {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i-16) / 8
	}
	q, err := gguf.QuantizeQ8_0(x)
	if err != nil {
		log.Fatal(err)
	}
	y := make([]float32, 32)
	if err := gguf.Dequantize(gguf.TypeQ8_0, q, y); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(q), y[0], y[17], y[31])
	// Output: 34 -1.9998779 0.12597656 1.8739014
}

// Half-precision conversion rounds to nearest even, as F16C does.
func ExampleF32ToF16() {
	h := gguf.F32ToF16(0.1)
	fmt.Printf("%#04x %v\n", h, gguf.F16ToF32(h))
	// Output: 0x2e66 0.099975586
}

// The type table knows every ggml type, including those this package cannot
// dequantise.
func ExampleGGMLType() {
	for _, t := range []gguf.GGMLType{gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeIQ2_XXS} {
		row, _ := gguf.RowBytes(t, 4096)
		fmt.Println(t, t.BlockSize(), t.TypeSize(), row, gguf.CanDequantize(t))
	}
	// Output:
	// q4_0 32 18 2304 true
	// q4_K 256 144 2304 true
	// iq2_xxs 256 66 1056 false
}
