//go:build cann

package acl

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
)

// TestQuantMatmulModes runs a mul_mat of every quantised type with an
// NPU recipe (q4_0, q4_1, q5_0, q5_1, q8_0, q2_K..q6_K) through both
// Options.QuantMatmul recipes on the emulator and compares them with
// kernels.MulMat, ggml-cpu's arithmetic (activations quantised to the
// type's vec_dot partner, q8_0, q8_1 or q8_K, integer dots per block):
// the "ggml" mode exactly (max|Δ| = 0: ggml-cpu's bits), the
// "wqbmm" mode only within 2e-2 (f16 activations), and measurably further
// than "ggml".
func TestQuantMatmulModes(t *testing.T) {
	const K, N, M = 256, 48, 5
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, M*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	x[3*K+40] = 0 // a block with zeros only below
	for j := 64; j < 96; j++ {
		x[2*K+j] = 0
	}
	for _, wt := range []struct {
		ir    ir.DType
		gg    gguf.GGMLType
		size  int64
		bs    int64
		f16At []int64 // byte offsets of the block's f16 scales (d, and the min's scale)
	}{
		{ir.Q8_0, gguf.TypeQ8_0, 34, 32, []int64{0}},
		{ir.Q4_0, gguf.TypeQ4_0, 18, 32, []int64{0}},
		{ir.Q5_0, gguf.TypeQ5_0, 22, 32, []int64{0}},
		{ir.Q4_1, gguf.TypeQ4_1, 20, 32, []int64{0, 2}},
		{ir.Q5_1, gguf.TypeQ5_1, 24, 32, []int64{0, 2}},
		{ir.Q2_K, gguf.TypeQ2_K, 84, 256, []int64{80, 82}},
		{ir.Q3_K, gguf.TypeQ3_K, 110, 256, []int64{108}},
		{ir.Q4_K, gguf.TypeQ4_K, 144, 256, []int64{0, 2}},
		{ir.Q5_K, gguf.TypeQ5_K, 176, 256, []int64{0, 2}},
		{ir.Q6_K, gguf.TypeQ6_K, 210, 256, []int64{208}},
	} {
		nblk := N * K / wt.bs
		blocks := make([]byte, nblk*wt.size)
		for i := range blocks {
			blocks[i] = byte(rng.IntN(256))
		}
		for b := int64(0); b < nblk; b++ { // finite scales around 0.01 (K-quants: 0.001)
			for _, at := range wt.f16At {
				v := 0.002 + 0.02*rng.Float64()
				if wt.bs == 256 {
					v /= 10
				}
				binary.LittleEndian.PutUint16(blocks[b*wt.size+at:], gguf.F32ToF16(float32(v)))
			}
		}
		a, _ := kernels.NewTensor(wt.gg, K, N)
		copy(a.Data, blocks)
		xb, _ := kernels.NewTensor(gguf.TypeF32, K, M)
		for i, v := range x {
			binary.LittleEndian.PutUint32(xb.Data[4*i:], math.Float32bits(v))
		}
		want, _ := kernels.NewTensor(gguf.TypeF32, N, M)
		if err := kernels.MulMat(want, a, xb); err != nil {
			t.Fatal(err)
		}
		errs := map[string]float64{}
		for _, mode := range []string{QuantMatmulGGML, QuantMatmulWQBMM} {
			t.Run(wt.gg.String()+"/"+mode, func(t *testing.T) {
				d := newDevice(t, Options{QuantMatmul: mode, WorkspaceReserve: 1 << 20})
				w := malloc(t, d, int64(len(blocks)))
				buf := malloc(t, d, 1<<16)
				if err := d.MemcpyH2D(w, blocks); err != nil {
					t.Fatal(err)
				}
				if err := d.MemcpyH2D(buf, xb.Data); err != nil {
					t.Fatal(err)
				}
				k := &device.KernelLaunch{Name: "aclnnMm", Op: ir.OpMulMat, Node: 1,
					Inputs: []device.TensorDesc{{DType: wt.ir, Ne: [4]int64{K, N, 1, 1}, Nb: [4]int64{wt.size, K / wt.bs * wt.size, nblk * wt.size, nblk * wt.size}, Addr: w},
						f32(buf, K, M)},
					Output: f32(buf+8192, N, M), Workspace: buf + 16384, WorkspaceBytes: 32768} // q5_0: its bits expanded (2 B/w)
				if err := d.Launch(device.DefaultStream, k); err != nil {
					t.Fatalf("%s %s: %v", wt.ir, mode, err)
				}
				if err := d.SynchronizeStream(device.DefaultStream); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, 4*N*M)
				if err := d.MemcpyD2H(got, buf+8192); err != nil {
					t.Fatal(err)
				}
				var worst, scale float64
				for i := range N * M {
					g := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])))
					r := float64(math.Float32frombits(binary.LittleEndian.Uint32(want.Data[4*i:])))
					worst, scale = max(worst, math.Abs(g-r)), max(scale, math.Abs(r))
				}
				errs[mode] = worst / scale
				t.Logf("%s %s: max|Δ|/max|out| = %.3g", wt.ir, mode, worst/scale)
			})
		}
		if e := errs[QuantMatmulGGML]; e > 0 {
			t.Errorf("%s ggml mode: %.3g, want 0", wt.ir, e)
		}
		if e := errs[QuantMatmulWQBMM]; e > 2e-2 || e < 10*errs[QuantMatmulGGML] {
			t.Errorf("%s wqbmm mode: %.3g (ggml mode %.3g)", wt.ir, e, errs[QuantMatmulGGML])
		}
	}
}
