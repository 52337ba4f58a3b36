//go:build cann

package acl

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
)

// kqBlocks returns n random blocks of K-quant type t with finite f16
// scales around 1e-3 (the scale bytes at f16At).
func kqBlocks(rng *rand.Rand, t gguf.GGMLType, n int) []byte {
	at := map[gguf.GGMLType][]int{gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108}, gguf.TypeQ4_K: {0, 2},
		gguf.TypeQ5_K: {0, 2}, gguf.TypeQ6_K: {208}}[t]
	size := t.TypeSize()
	blocks := make([]byte, n*size)
	for i := range blocks {
		blocks[i] = byte(rng.IntN(256))
	}
	for b := range n {
		for _, o := range at {
			binary.LittleEndian.PutUint16(blocks[b*size+o:], gguf.F32ToF16(float32(0.0002+0.002*rng.Float64())))
		}
	}
	return blocks
}

// runKQ runs one mul_mat of the K-quant weight (blocks, N rows of K) by
// the f32 activations x (M columns) through the "ggml" mode's recipe on d
// and returns the output's bits.
func runKQ(t *testing.T, d *Device, node int, wt ir.DType, blocks []byte, x []float32, K, N, M int64) []uint32 {
	t.Helper()
	size := int64(wt.TypeSize())
	w := malloc(t, d, int64(len(blocks)))
	xb := malloc(t, d, 4*M*K)
	ob := malloc(t, d, 4*M*N)
	if err := d.MemcpyH2D(w, blocks); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	if err := d.MemcpyH2D(xb, raw); err != nil {
		t.Fatal(err)
	}
	row := K / wt.BlockSize() * size
	k := &device.KernelLaunch{Name: "aclnnMm", Op: ir.OpMulMat, Node: node,
		Inputs: []device.TensorDesc{{DType: wt, Ne: [4]int64{K, N, 1, 1}, Nb: [4]int64{size, row, N * row, N * row}, Addr: w}, f32(xb, K, M)},
		Output: f32(ob, N, M)}
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatalf("%s K=%d N=%d M=%d: %v", wt, K, N, M, err)
	}
	if err := d.SynchronizeStream(device.DefaultStream); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4*M*N)
	if err := d.MemcpyD2H(got, ob); err != nil {
		t.Fatal(err)
	}
	bits := make([]uint32, M*N)
	for i := range bits {
		bits[i] = binary.LittleEndian.Uint32(got[4*i:])
	}
	return bits
}

// TestKQuantMatmulMatchesKernelsBitForBit runs K-quant mul_mats (q2_K …
// q6_K, random blocks, K = 256, 512 and 2048, M = 1, 3, 4 and 7 activation
// columns) through the "ggml" QuantMatmul recipe (quantMulMatK) on the
// emulator with ggml's arithmetic, for both llama.cpp builds kernels
// knows, and requires kernels.MulMat's result of the same build bit for
// bit: the integer lanes, the FMA chains, the horizontal sums, the
// repacked q4_K's GEMV and GEMM orders (16 rows) and its vec_dot order
// (12 rows, not repacked), q6_K's block-sum lanes (3f545bec).
func TestKQuantMatmulMatchesKernelsBitForBit(t *testing.T) {
	types := []struct {
		ir ir.DType
		gg gguf.GGMLType
	}{{ir.Q2_K, gguf.TypeQ2_K}, {ir.Q3_K, gguf.TypeQ3_K}, {ir.Q4_K, gguf.TypeQ4_K}, {ir.Q5_K, gguf.TypeQ5_K}, {ir.Q6_K, gguf.TypeQ6_K}}
	for _, lb := range []kernels.LlamaBuild{kernels.LlamaCurrent, kernels.LlamaC392e50} {
		for _, ty := range types {
			t.Run(fmt.Sprintf("%s/%s", lb, ty.gg), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ty.gg), uint64(lb)+7))
				d := newDevice(t, Options{QuantMatmul: QuantMatmulGGML, LlamaBuild: lb, PoolBytes: 128 << 20})
				node := 1
				check := func(K, N, M int64, blocks []byte, x []float32) {
					t.Helper()
					a, _ := kernels.NewTensor(ty.gg, K, N)
					copy(a.Data, blocks)
					xb, _ := kernels.NewTensor(gguf.TypeF32, K, M)
					for i, v := range x {
						binary.LittleEndian.PutUint32(xb.Data[4*i:], math.Float32bits(v))
					}
					want, _ := kernels.NewTensor(gguf.TypeF32, N, M)
					if err := (kernels.Options{LlamaBuild: lb}).MulMat(want, a, xb); err != nil {
						t.Fatal(err)
					}
					got := runKQ(t, d, node, ty.ir, blocks, x, K, N, M)
					node++
					diff := 0
					for i, g := range got {
						if w := binary.LittleEndian.Uint32(want.Data[4*i:]); g != w {
							if diff == 0 {
								t.Errorf("K=%d N=%d M=%d: out[%d] = %g (%#08x), kernels %g (%#08x)", K, N, M, i,
									math.Float32frombits(g), g, math.Float32frombits(w), w)
							}
							diff++
						}
					}
					if diff > 0 {
						t.Errorf("K=%d N=%d M=%d: %d of %d outputs differ", K, N, M, diff, len(got))
					}
				}
				// The largest integer sums: every quant and scale at its
				// extreme (all bits set; q6_K's scales -128), activations
				// of one sign per column (every q8 value ±127), so that the
				// q6_K block-sum lanes and the q4_K super-block sums pass
				// 2^24 and the lane sums reach their bounds.
				{
					const K, N, M = 512, 16, 4
					blocks := kqBlocks(rng, ty.gg, N*K/256)
					size := ty.gg.TypeSize()
					for b := 0; b < N*K/256; b++ {
						blk := blocks[b*size : (b+1)*size]
						keep := append([]byte(nil), blk...)
						for i := range blk {
							blk[i] = 0xff
						}
						switch ty.gg {
						case gguf.TypeQ2_K:
							copy(blk[80:84], keep[80:84])
						case gguf.TypeQ3_K:
							copy(blk[108:110], keep[108:110])
						case gguf.TypeQ4_K, gguf.TypeQ5_K:
							copy(blk[0:4], keep[0:4])
						case gguf.TypeQ6_K:
							for g := range 16 {
								blk[192+g] = 0x80
							}
							copy(blk[208:210], keep[208:210])
						}
					}
					x := make([]float32, M*K)
					for i := range x {
						x[i] = float32(1 - 2*(i/K%2))
					}
					check(K, N, M, blocks, x)
					check(K, N, 1, blocks, x[K:2*K])
				}
				for _, K := range []int64{256, 512, 2048} {
					rows := []int64{16}
					if ty.ir == ir.Q4_K {
						rows = append(rows, 12)
					}
					for _, N := range rows {
						blocks := kqBlocks(rng, ty.gg, int(N*K/256))
						for _, M := range []int64{1, 3, 4, 7} {
							x := make([]float32, M*K)
							for i := range x {
								x[i] = float32(rng.NormFloat64())
							}
							if M > 2 {
								for j := range int64(256) { // a block of zeros
									x[K+j] = 0
								}
							}
							check(K, N, M, blocks, x)
						}
					}
				}
			})
		}
	}
}
