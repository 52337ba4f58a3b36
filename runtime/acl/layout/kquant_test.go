package layout

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// TestKQuantUnpackMatchesDequantize: the integers unpackKQ reads from
// random q2_K..q6_K blocks give ggml's dequantised values
// (gguf.Dequantize), d·sc·q − dmin·m, to float32 rounding; and KQValues
// puts value c·32 + 4k + j of a super-block at k·32 + c·4 + j (lane
// order), except for the repacked q4_K (natural order).
func TestKQuantUnpackMatchesDequantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tt := range []struct {
		t     ir.DType
		f16At []int
	}{{ir.Q2_K, []int{80, 82}}, {ir.Q3_K, []int{108}}, {ir.Q4_K, []int{0, 2}}, {ir.Q5_K, []int{0, 2}}, {ir.Q6_K, []int{208}}} {
		size := int(tt.t.TypeSize())
		const nb = 8
		blocks := make([]byte, nb*size)
		for i := range blocks {
			blocks[i] = byte(rng.IntN(256))
		}
		for b := range nb {
			for _, o := range tt.f16At {
				binary.LittleEndian.PutUint16(blocks[b*size+o:], gguf.F32ToF16(float32(0.001+0.01*rng.Float64())))
			}
		}
		want := make([]float32, nb*256)
		if err := gguf.Dequantize(gguf.GGMLType(tt.t), blocks, want); err != nil {
			t.Fatal(err)
		}
		var s kqSuper
		for b := range nb {
			unpackKQ(tt.t, blocks[b*size:(b+1)*size], &s)
			for v := range 256 {
				x := float64(s.d)*float64(s.sc[v/16])*float64(s.q[v]) - float64(s.dmin)*float64(s.m[v/16])
				w := float64(want[b*256+v])
				bound := 4e-7 * (math.Abs(float64(s.d)*float64(s.sc[v/16])*float64(s.q[v])) + math.Abs(float64(s.dmin)*float64(s.m[v/16])))
				if math.Abs(x-w) > bound {
					t.Fatalf("%s block %d value %d: d·sc·q − dmin·m = %g (sc %d q %d m %d), gguf.Dequantize %g",
						tt.t, b, v, x, s.sc[v/16], s.q[v], s.m[v/16], w)
				}
			}
		}
		// Two rows of four super-blocks, in both orders.
		for _, v := range []KQVariant{KQLanes, KQX8} {
			if v == KQX8 && tt.t != ir.Q4_K {
				continue
			}
			l := NewKQ(tt.t, 1024, 2, v)
			vals, err := KQValues(l, blocks)
			if err != nil {
				t.Fatal(err)
			}
			unpackKQ(tt.t, blocks[5*size:6*size], &s) // row 1, super-block 1
			for val := range 256 {
				p := val
				if v == KQLanes {
					p = val%32/4*32 + val/32*4 + val%4
				}
				if got, w := vals[l.W+1024+256+int64(p)], float32(s.sc[val/16]*s.q[val]); got != w {
					t.Fatalf("%s variant %d: value %d at %d is %g, want sc·q = %g", tt.t, v, val, p, got, w)
				}
			}
			if got := vals[l.D+5]; got != s.d {
				t.Fatalf("%s: d of row 1 super-block 1 is %g, want %g", tt.t, got, s.d)
			}
		}
	}
	if KQVariantOf(ir.Q4_K, 16, kernels.LlamaCurrent) != KQX8 || KQVariantOf(ir.Q4_K, 12, kernels.LlamaCurrent) != KQLanes ||
		KQVariantOf(ir.Q6_K, 16, kernels.LlamaCurrent) != KQQ6Bsums || KQVariantOf(ir.Q6_K, 16, kernels.LlamaC392e50) != KQLanes ||
		KQVariantOf(ir.Q4_K, 16, kernels.LlamaC392e50) != KQLanes {
		t.Error("KQVariantOf does not follow kernels' qkDot choices")
	}
}
