package kernels

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSIMD times each assembly kernel against its pure-Go twin on
// Qwen2.5-0.5B shapes (one op = the product of a 4864×896 weight with one
// activation row, or with four for the x4 kernels; the quantisation of a
// 4864-value row): go test ./kernels -run '^$' -bench SIMD.
func BenchmarkSIMD(b *testing.B) {
	if !useAVX2 {
		b.Skip("no assembly kernels in this build")
	}
	const k, m = 896, 4864
	nb := k / 32
	r := rand.New(rand.NewPCG(1, 2))
	q8w := randQ8Weights(r, nb*m, false)
	q4w := randQ4Weights(r, nb*m, false)
	f16 := make([]byte, 2*k*m)
	for i := range f16 {
		f16[i] = byte(r.IntN(256)) & 0x3f // finite halves
	}
	cols := make([]q8Row, 4)
	for i := range cols {
		x := randF32(r, k, 1)
		cols[i] = q8Row{qs: make([]int8, k), d: make([]float32, nb), sum: make([]int32, nb)}
		quantizeQ8_0Go(x, cols[i].qs, cols[i].d)
		blockSums32(cols[i].qs, cols[i].sum)
	}
	c4 := (*[4]q8Row)(cols)
	act := randF16Row(r, k)
	var sink float32
	run := func(name string, f func()) {
		b.Run(name, func(b *testing.B) { benchCPU(b, f) })
	}
	run("Q8_0/asm", func() {
		for i := range m {
			sink += dotQ8_0RawAVX2(&q8w[i*nb*34], &cols[0].qs[0], &cols[0].d[0], nb)
		}
	})
	run("Q8_0/go", func() {
		for i := range m {
			sink += dotQ8_0RawGo(q8w[i*nb*34:], cols[0].qs, cols[0].d, false)
		}
	})
	run("Q8_0x4/asm", func() {
		var o [4]float32
		for i := range m {
			dotQ8_0Rawx4(q8w[i*nb*34:], c4, &o)
		}
		sink += o[0]
	})
	run("Q8_0x4/go", func() {
		for i := range m {
			for c := range c4 {
				sink += dotQ8_0RawGo(q8w[i*nb*34:], c4[c].qs, c4[c].d, false)
			}
		}
	})
	run("Q4_0/asm", func() {
		for i := range m {
			sink += dotQ4_0RawAVX2(&q4w[i*nb*18], &cols[0].qs[0], &cols[0].d[0], nb)
		}
	})
	run("Q4_0/go", func() {
		for i := range m {
			sink += dotQ4_0RawGo(q4w[i*nb*18:], cols[0].qs, cols[0].d, false)
		}
	})
	run("Q4_0x8/asm", func() {
		var o [8]float32
		for i := 0; i < m; i += 8 {
			dotQ4_0x8(q4w[i*nb*18:], nb*18, cols[0], &o)
		}
		sink += o[0]
	})
	run("Q4_0x8/go", func() {
		var o [8]float32
		for i := 0; i < m; i += 8 {
			dotQ4_0x8Go(q4w[i*nb*18:], nb*18, cols[0].qs, cols[0].d, false, &o)
		}
		sink += o[0]
	})
	run("Q4_0x8x4/asm", func() {
		var o [4][8]float32
		for i := 0; i < m; i += 8 {
			dotQ4_0x8x4(q4w[i*nb*18:], nb*18, c4, &o)
		}
		sink += o[0][0]
	})
	run("Q4_0x8x4/go", func() {
		var o [8]float32
		for i := 0; i < m; i += 8 {
			for c := range c4 {
				dotQ4_0x8Go(q4w[i*nb*18:], nb*18, c4[c].qs, c4[c].d, false, &o)
			}
		}
		sink += o[0]
	})
	q4i := make([]byte, m/8*nb*q4x8iBlock)
	repackQ4_0x8i(q4i, q4w, nb*18, m, nb)
	q4iOut := make([]float32, m)
	run("Q4_0x8i/asm", func() {
		dotQ4_0x8i(q4i, m/8, cols[0], q4iOut)
		sink += q4iOut[0]
	})
	run("Q4_0x8i/go", func() {
		dotQ4_0x8iGo(q4i, m/8, cols[0].qs, cols[0].d, false, q4iOut)
		sink += q4iOut[0]
	})
	packed := make([]byte, m/8*nb*packedQ4Block)
	run("Q4_0pack/asm", func() {
		for i := 0; i < m; i += 8 {
			packQ4_0x8(packed[i/8*nb*packedQ4Block:], q4w[i*nb*18:], nb*18, nb)
		}
	})
	run("Q4_0x8x4packed/asm", func() {
		var o [4][8]float32
		for i := 0; i < m; i += 8 {
			gemmQ4_0x8Packed(packed[i/8*nb*packedQ4Block:], c4, &o)
		}
		sink += o[0][0]
	})
	run("F16vec/asm", func() {
		for i := range m {
			sink += dotVecF16Raw(f16[i*2*k:], act)
		}
	})
	run("F16vec/go", func() {
		for i := range m {
			sink += dotVecF16RawGo(f16[i*2*k:], act)
		}
	})
	f32w := randF32(r, k*m, 1)
	f32a := randF32(r, k, 1)
	run("F32vec/asm", func() {
		for i := range m {
			sink += dotVec(f32w[i*k:(i+1)*k], f32a, false)
		}
	})
	run("F32vec/go", func() {
		for i := range m {
			sink += dotVecGo(f32w[i*k:(i+1)*k], f32a, false)
		}
	})
	f32c := [4][]float32{f32a, randF32(r, k, 1), randF32(r, k, 1), randF32(r, k, 1)}
	run("F32x4FMA/asm", func() {
		for i := range m {
			v, _, _, _ := dotF32x4FMA(f32w[i*k:(i+1)*k], f32c[0], f32c[1], f32c[2], f32c[3])
			sink += v
		}
	})
	run("F32x4FMA/go", func() {
		for i := range m {
			v, _, _, _ := dotF32x4FMAGo(f32w[i*k:(i+1)*k], f32c[0], f32c[1], f32c[2], f32c[3])
			sink += v
		}
	})
	x := randF32(r, m, 1)
	qs, d := make([]int8, m), make([]float32, m/32)
	run("quantizeQ8_0/asm", func() { quantizeQ8_0AVX2(&x[0], &qs[0], &d[0], m/32) })
	run("quantizeQ8_0/go", func() { quantizeQ8_0Go(x, qs, d) })
	_ = sink
}
