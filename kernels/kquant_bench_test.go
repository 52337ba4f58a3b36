package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// BenchmarkKQuant times the K-quant kernels (kquant.go) on a
// Llama-3.2-1B FFN shape, 8192 rows × 2048 (one op = the whole matrix
// times one activation row; /x4: times four rows, as the prefill tiles
// do), assembly against the pure-Go twin and against the unpack-then-dot
// path the kernels replaced: go test ./kernels -run '^$' -bench KQuant.
// cpu-ns/op is the thread's CPU time (see benchCPU).
func BenchmarkKQuant(b *testing.B) {
	const k, m = 2048, 8192
	nsb := k / 256
	r := rand.New(rand.NewPCG(3, 4))
	var sink float32
	for _, ty := range []gguf.GGMLType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		ts := ty.TypeSize()
		w := make([]byte, 0, m*nsb*ts)
		for _, row := range kWeights(r, ty, 64, nsb) {
			w = append(w, row...)
		}
		for len(w) < m*nsb*ts {
			w = append(w, w[:min(len(w), m*nsb*ts-len(w))]...)
		}
		var pk []byte
		if ty == gguf.TypeQ4_K {
			pk = make([]byte, m/8*nsb*q4kx8Block)
			repackQ4Kx8i(pk, w, nsb*ts, m, nsb)
		}
		cols := make([]q8Row, 4)
		for i := range cols {
			qs, d, bs := make([]int8, k), make([]float32, nsb), make([]int32, k/16)
			quantizeQ8_K(randF32(r, k, 1), qs, d, bs)
			cols[i] = q8KRow(qs, d)
		}
		out := make([]float32, m)
		kernel := func(c q8Row, twin bool) {
			switch {
			case ty == gguf.TypeQ4_K && twin:
				dotQ4Kx8iGo(pk, m/8, c, false, out)
			case ty == gguf.TypeQ4_K:
				dotQ4Kx8i(pk, m/8, c, false, out)
			case twin && ty == gguf.TypeQ5_K:
				dotQ5KRowsGo(w, nsb*ts, c, out)
			case twin:
				dotQ6KRowsGo(w, nsb*ts, c, out)
			default:
				dotKRows(ty, w, nsb*ts, c, out)
			}
			sink += out[0]
		}
		if pk != nil {
			b.Run("q4_K/repack", func(b *testing.B) {
				benchCPU(b, func() { repackQ4Kx8i(pk, w, nsb*ts, m, nsb) })
				b.SetBytes(int64(len(w)))
			})
		}
		if useAVX2 {
			b.Run(ty.String()+"/asm", func(b *testing.B) { benchCPU(b, func() { kernel(cols[0], false) }) })
			b.Run(ty.String()+"/asm-x4", func(b *testing.B) {
				benchCPU(b, func() {
					if ty == gguf.TypeQ4_K {
						// The GEMM kernel: four columns per pass.
						c4 := (*[4]q8Row)(cols)
						var o [4][8]float32
						for g := range m / 8 {
							dotQ4Kx8x4i(pk[g*nsb*q4kx8Block:], c4, &o)
						}
						sink += o[0][0]
						return
					}
					if ty == gguf.TypeQ6_K {
						o := [4][]float32{out, make([]float32, m), make([]float32, m), make([]float32, m)}
						dotQ6Kx4Rows(w, nsb*ts, (*[4]q8Row)(cols), &o)
						return
					}
					for _, c := range cols {
						kernel(c, false)
					}
				})
			})
		}
		b.Run(ty.String()+"/go", func(b *testing.B) { benchCPU(b, func() { kernel(cols[0], true) }) })
		b.Run(ty.String()+"/unpacked", func(b *testing.B) {
			row := newQKRow(k)
			o := Options{}
			a := Tensor{Type: ty, Ne: [4]int64{k, m, 1, 1}}
			bt := Tensor{Type: gguf.TypeF32, Ne: [4]int64{k, 1, 1, 1}}
			dot := qkDot(o, a, bt)
			benchCPU(b, func() {
				for i := range m {
					unpackQK(ty, w[i*nsb*ts:], row)
					sink += dot(row, cols[0])
				}
			})
		})
	}
	_ = sink
}
