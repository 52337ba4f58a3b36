package kernels

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkTmpBigQ4i(b *testing.B) {
	const k, m = 896, 151936
	nb := k / 32
	r := rand.New(rand.NewPCG(1, 2))
	q4w := randQ4Weights(r, nb*m, false)
	x := randF32(r, k, 1)
	c := q8Row{qs: make([]int8, k), d: make([]float32, nb), sum: make([]int32, nb)}
	quantizeQ8_0Go(x, c.qs, c.d)
	blockSums32(c.qs, c.sum)
	q4i := make([]byte, m/8*nb*q4x8iBlock)
	repackQ4_0x8i(q4i, q4w, nb*18, m, nb)
	out := make([]float32, m)
	b.Run("i", func(b *testing.B) {
		benchCPU(b, func() { dotQ4_0x8i(q4i, m/8, c, out) })
		b.SetBytes(int64(len(q4i)))
	})
	b.Run("raw", func(b *testing.B) {
		benchCPU(b, func() {
			var o [8]float32
			for i := 0; i < m; i += 8 {
				dotQ4_0x8(q4w[i*nb*18:], nb*18, c, &o)
			}
		})
		b.SetBytes(int64(len(q4i)))
	})
}
