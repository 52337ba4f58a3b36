//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// BenchmarkPrefillTile times Qwen2.5-0.5B's FFN products (896→4864 and
// 4864→896) with 64 and 512 activation columns (prefill steps) on one thread, in
// CPU time (benchCPU), for the F16, Q8_0 and Q5_0 weights (random Q5_0 blocks:
// llama-quantize's fallback for the 896-wide rows): "tile" is the
// register tile the products take, "base" the kernel they took before it
// (same bits); "avx2" is the register tile without the AVX-512 tiles
// (avx512_amd64.s), on CPUs that have them.
//
//	go test ./kernels -run '^$' -bench PrefillTile -benchtime 20x
func BenchmarkPrefillTile(b *testing.B) {
	if !useAVX2 {
		b.Skip("no assembly kernels in this build")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int64{64, 512} {
		for _, ty := range []gguf.GGMLType{gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ5_0} {
			for _, shape := range [][2]int64{{896, 4864}, {4864, 896}} {
				k, rows := shape[0], shape[1]
				wv := randF32(r, int(k*rows), 0.1)
				var a Tensor
				var err error
				switch ty {
				case gguf.TypeF16:
					a, err = FromF16(wv, k, rows)
				case gguf.TypeQ5_0:
					a, err = FromBytes(ty, randLegacyWeights(r, ty, int(k/32*rows), false), k, rows)
				default:
					var q []byte
					if q, err = gguf.QuantizeQ8_0(wv); err == nil {
						a, err = FromBytes(ty, q, k, rows)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				x, _ := FromF32(randF32(r, int(k*n), 1), k, n)
				dst, _ := NewTensor(gguf.TypeF32, rows, n)
				o := Options{Threads: 1}
				for _, v := range []string{"tile", "avx2", "base"} {
					name := fmt.Sprintf("n%d/%s/%dx%d/%s", n, ty, k, rows, v)
					b.Run(name, func(b *testing.B) {
						if v == "avx2" {
							if !useAVX512 {
								b.Skip("no AVX-512 tiles on this CPU")
							}
							defer func(z bool) { useAVX512 = z }(useAVX512)
							useAVX512 = false
						}
						m := newMatmul(o, a, x)
						m.convert(0, m.cols)
						setTiled(m, v != "base")
						benchCPU(b, func() { m.run(o, dst) })
					})
				}
			}
		}
	}
}

// setTiled switches a product between its register tile and the kernel
// it took before.
func setTiled(m *matmul, on bool) {
	if !on {
		m.wide, m.q8x, m.q50x = false, false, false
	}
}
