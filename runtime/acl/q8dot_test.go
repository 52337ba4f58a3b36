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

// diffBits reports the outputs of got that differ from want's f32 data.
func diffBits(t *testing.T, what string, got []uint32, want []byte) {
	t.Helper()
	diff := 0
	for i, g := range got {
		if w := binary.LittleEndian.Uint32(want[4*i:]); g != w {
			if diff == 0 {
				t.Errorf("%s: out[%d] = %g (%#08x), kernels %g (%#08x)", what, i,
					math.Float32frombits(g), g, math.Float32frombits(w), w)
			}
			diff++
		}
	}
	if diff > 0 {
		t.Errorf("%s: %d of %d outputs differ", what, diff, len(got))
	}
}

// TestQ8MatmulMatchesKernelsBitForBit runs q4_0, q5_0, q8_0, q4_1 and
// q5_1 mul_mats (random blocks, K = 64, 256 and 2048, M = 1, 3, 4, 7 and
// 9 activation columns, 16 and 12 rows: q4_0 repacked and not) through
// the "ggml" QuantMatmul recipe (quantMulMatQ8) on the emulator with
// ggml's arithmetic, for both llama.cpp builds kernels knows, and
// requires kernels.MulMat's result of the same build bit for bit: the
// integer lanes, the FMA chains, the horizontal sum, q8_1's min chain,
// the repacked q4_0's single chain.
func TestQ8MatmulMatchesKernelsBitForBit(t *testing.T) {
	types := []ir.DType{ir.Q4_0, ir.Q5_0, ir.Q8_0, ir.Q4_1, ir.Q5_1}
	for _, lb := range []kernels.LlamaBuild{kernels.LlamaCurrent, kernels.LlamaC392e50} {
		for _, ty := range types {
			t.Run(fmt.Sprintf("%s/%s", lb, ty), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ty), uint64(lb)+11))
				d := newDevice(t, Options{QuantMatmul: QuantMatmulGGML, LlamaBuild: lb, PoolBytes: 128 << 20})
				node := 1
				for _, c := range []struct{ K, N, cap int64 }{{64, 16, 0}, {64, 12, 0}, {256, 16, 0}, {256, 12, 0}, {2048, 16, 0}, {2048, 12, 0},
					// Small scratch: columns in passes of 3 (eight lanes),
					// blocks in chunks of 1 to 8.
					{256, 16, 3 * 8 * 16}, {256, 12, 3 * 3 * 8 * 12}} {
					K, N := c.K, c.N
					if c.cap > 0 {
						old := q8ScratchCap
						q8ScratchCap = c.cap
						t.Cleanup(func() { q8ScratchCap = old })
					}
					{
						blocks := randomBlocks(rng, ty, N*K/32)
						for _, M := range []int64{1, 3, 4, 7, 9} {
							x := make([]float32, M*K)
							for i := range x {
								x[i] = float32(rng.NormFloat64())
							}
							if M > 2 {
								for j := range int64(32) { // a block of zeros
									x[K+j] = 0
								}
							}
							a, _ := kernels.NewTensor(gguf.GGMLType(ty), K, N)
							copy(a.Data, blocks)
							xb, _ := kernels.NewTensor(gguf.TypeF32, K, M)
							for i, v := range x {
								binary.LittleEndian.PutUint32(xb.Data[4*i:], math.Float32bits(v))
							}
							want, _ := kernels.NewTensor(gguf.TypeF32, N, M)
							if err := (kernels.Options{LlamaBuild: lb}).MulMat(want, a, xb); err != nil {
								t.Fatal(err)
							}
							got := runKQ(t, d, node, ty, blocks, x, K, N, M)
							node++
							diffBits(t, fmt.Sprintf("K=%d N=%d M=%d", K, N, M), got, want.Data)
						}
					}
				}
			})
		}
	}
}

// TestQuantExpertsMatchKernelsBitForBit runs mul_mat_id over four experts
// of every type of quantTypes (16 and 12 rows, three tokens, two slots
// each, the activations shared by the slots or one per slot) through the
// "ggml" recipes (mulMatIDQ8, mulMatIDK) for both llama.cpp builds and
// requires kernels.MulMatID's result of the same build bit for bit.
func TestQuantExpertsMatchKernelsBitForBit(t *testing.T) {
	const K, E, nUsed, T = 256, 4, 2, 3
	ids := []int32{2, 0, 1, 3, 3, 2}
	for _, ty := range quantTypes {
		for _, c := range []struct {
			N, ne11 int64
			lb      kernels.LlamaBuild
		}{{16, 1, kernels.LlamaCurrent}, {16, nUsed, kernels.LlamaCurrent}, {12, nUsed, kernels.LlamaCurrent}, {16, nUsed, kernels.LlamaC392e50}} {
			N, ne11 := c.N, c.ne11
			{
				t.Run(fmt.Sprintf("%s/N=%d/ne11=%d/%s", ty, N, ne11, c.lb), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(ty), uint64(N*ne11)))
					blocks := randomBlocks(rng, ty, E*N*K/ty.BlockSize())
					rowBytes := K / ty.BlockSize() * ty.TypeSize()
					as, _ := kernels.NewTensor(gguf.GGMLType(ty), K, N, E)
					copy(as.Data, blocks)
					xb, _ := kernels.NewTensor(gguf.TypeF32, K, ne11, T)
					for i := range K * ne11 * T {
						binary.LittleEndian.PutUint32(xb.Data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
					}
					it, _ := kernels.NewTensor(gguf.TypeI32, nUsed, T)
					for i, v := range ids {
						binary.LittleEndian.PutUint32(it.Data[4*i:], uint32(v))
					}
					want, _ := kernels.NewTensor(gguf.TypeF32, N, nUsed, T)
					if err := (kernels.Options{LlamaBuild: c.lb}).MulMatID(want, as, xb, it); err != nil {
						t.Fatal(err)
					}
					d := newDevice(t, Options{QuantMatmul: QuantMatmulGGML, LlamaBuild: c.lb, WorkspaceReserve: 1 << 20, PoolBytes: 64 << 20})
					w := malloc(t, d, int64(len(blocks)))
					buf := malloc(t, d, 1<<20)
					desc := device.TensorDesc{DType: ty, Ne: [4]int64{K, N, E, 1}, Nb: [4]int64{ty.TypeSize(), rowBytes, N * rowBytes, E * N * rowBytes}, Addr: w}
					for _, c := range []struct {
						p    device.Ptr
						data []byte
					}{{w, blocks}, {buf, xb.Data}, {buf + 32768, it.Data}} {
						if err := d.MemcpyH2D(c.p, c.data); err != nil {
							t.Fatal(err)
						}
					}
					if err := d.PlaceWeight(desc, blocks, device.WeightUse{Matmul: true}); err != nil {
						t.Fatal(err)
					}
					k := &device.KernelLaunch{Name: "aclnnWeightQuantBatchMatmulV2", Op: ir.OpMulMatID, Node: 1,
						Inputs: []device.TensorDesc{desc,
							{DType: ir.F32, Ne: [4]int64{K, ne11, T, 1}, Nb: [4]int64{4, 4 * K, 4 * K * ne11, 4 * K * ne11 * T}, Addr: buf},
							{DType: ir.I32, Ne: [4]int64{nUsed, T, 1, 1}, Nb: [4]int64{4, 4 * nUsed, 4 * nUsed * T, 4 * nUsed * T}, Addr: buf + 32768}},
						Output:    device.TensorDesc{DType: ir.F32, Ne: [4]int64{N, nUsed, T, 1}, Nb: [4]int64{4, 4 * N, 4 * N * nUsed, 4 * N * nUsed * T}, Addr: buf + 40960},
						Workspace: buf + 65536, WorkspaceBytes: 1<<20 - 65536}
					if err := d.Launch(device.DefaultStream, k); err != nil {
						t.Fatal(err)
					}
					if err := d.SynchronizeStream(device.DefaultStream); err != nil {
						t.Fatal(err)
					}
					raw := make([]byte, 4*N*nUsed*T)
					if err := d.MemcpyD2H(raw, buf+40960); err != nil {
						t.Fatal(err)
					}
					got := make([]uint32, N*nUsed*T)
					for i := range got {
						got[i] = binary.LittleEndian.Uint32(raw[4*i:])
					}
					diffBits(t, "mul_mat_id", got, want.Data)
				})
			}
		}
	}
}
