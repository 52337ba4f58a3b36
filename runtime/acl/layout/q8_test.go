package layout

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// TestQ8ValuesMatchDequantize: the converted copy Q8Values makes of random
// q4_0, q5_0, q8_0, q4_1 and q5_1 rows (the integers q, natural order, the
// f16 scales d and mins m) gives ggml's dequantised values
// (gguf.Dequantize), d·q (+ m), bit for bit, and Q8Scalar picks the
// repacked q4_0 order for a multiple of 8 rows only; a wrong byte count
// is an error.
func TestQ8ValuesMatchDequantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tt := range []struct {
		t     ir.DType
		f16At []int
	}{{ir.Q4_0, []int{0}}, {ir.Q5_0, []int{0}}, {ir.Q8_0, []int{0}}, {ir.Q4_1, []int{0, 2}}, {ir.Q5_1, []int{0, 2}}} {
		const K, N = 128, 3
		size := int(tt.t.TypeSize())
		nb := N * K / 32
		blocks := make([]byte, nb*size)
		for i := range blocks {
			blocks[i] = byte(rng.IntN(256))
		}
		for b := range nb {
			for _, o := range tt.f16At {
				binary.LittleEndian.PutUint16(blocks[b*size+o:], gguf.F32ToF16(float32(0.001+0.01*rng.Float64())))
			}
		}
		want := make([]float32, N*K)
		if err := gguf.Dequantize(gguf.GGMLType(tt.t), blocks, want); err != nil {
			t.Fatal(err)
		}
		l := NewQ8(tt.t, K, N)
		vals, err := Q8Values(l, blocks)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			b := int64(i / 32)
			x := float32(vals[l.D+b] * vals[l.W+int64(i)]) // no fused multiply-add
			if l.M >= 0 {
				x += vals[l.M+b]
			}
			if q := vals[l.W+int64(i)]; q != float32(math.Trunc(float64(q))) || math.Abs(float64(q)) > 128 {
				t.Fatalf("%s value %d: q = %g is not a quant", tt.t, i, q)
			}
			if math.Float32bits(x) != math.Float32bits(want[i]) {
				t.Fatalf("%s value %d: d·q (+ m) = %g, gguf.Dequantize %g", tt.t, i, x, want[i])
			}
		}
		if _, err := Q8Values(l, blocks[1:]); err == nil {
			t.Errorf("%s: a short matrix converted without an error", tt.t)
		}
	}
	if !Q8Scalar(ir.Q4_0, 16) || Q8Scalar(ir.Q4_0, 12) || Q8Scalar(ir.Q8_0, 16) {
		t.Error("Q8Scalar does not follow kernels' q4_0_8x8 repacking (q4_0, rows a multiple of 8)")
	}
}
