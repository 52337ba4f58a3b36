//go:build cann

package acl

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// f16Fields are the byte offsets of the f16 fields (d, and m or dmin) of
// one block of each type (ggml-common.h's block_* structs).
var f16Fields = map[ir.DType][]int{
	ir.Q4_0: {0}, ir.Q4_1: {0, 2}, ir.Q5_0: {0}, ir.Q5_1: {0, 2}, ir.Q8_0: {0},
	ir.Q2_K: {80, 82}, ir.Q3_K: {108}, ir.Q4_K: {0, 2}, ir.Q5_K: {0, 2}, ir.Q6_K: {208},
}

// randomBlocks makes n blocks of type t with random quants and finite f16
// fields of magnitude 0.002..0.022.
func randomBlocks(rng *rand.Rand, t ir.DType, n int64) []byte {
	size := t.TypeSize()
	b := make([]byte, n*size)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	for i := int64(0); i < n; i++ {
		for _, o := range f16Fields[t] {
			binary.LittleEndian.PutUint16(b[i*size+int64(o):], gguf.F32ToF16(float32(0.002+0.02*rng.Float64())))
		}
	}
	return b
}

// TestQuantTypesOnEmulatedCANN runs, for every type the weight-quant
// recipes take (quantTypes), a mul_mat through both Options.QuantMatmul
// modes and a get_rows on the emulator, the weight converted at load
// (PlaceWeight) and never read back:
//   - "ggml": kernels.MulMat's result (ggml-cpu's arithmetic, the
//     activations quantised to q8_0, q8_1 or q8_K, ggml's integer dots and
//     float chains) exactly (max|Δ| = 0);
//   - "wqbmm": within 2e-2 (f16 activations against ggml's 8-bit ones);
//   - get_rows: wqconv.Dequant's rows bit for bit (for the exact types
//     ggml's dequantize_row_* values); in the "ggml" mode the tables of
//     re-quantised layouts (q2_K, q6_K) give ggml's values, and q8_0's
//     table, gathered from its blocks, is rounded to f16 in "wqbmm"; a
//     table with an int4 layout (q4_0, q4_1, q4_K) is refused, naming why.
func TestQuantTypesOnEmulatedCANN(t *testing.T) {
	const K, N, M = 512, 40, 3
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, M*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	xb, _ := kernels.NewTensor(gguf.TypeF32, K, M)
	for i, v := range x {
		binary.LittleEndian.PutUint32(xb.Data[4*i:], math.Float32bits(v))
	}
	for _, dt := range quantTypes {
		bs := dt.BlockSize()
		blocks := randomBlocks(rng, dt, N*K/bs)
		a, _ := kernels.NewTensor(gguf.GGMLType(dt), K, N)
		copy(a.Data, blocks)
		want, _ := kernels.NewTensor(gguf.TypeF32, N, M)
		if err := kernels.MulMat(want, a, xb); err != nil {
			t.Fatal(err)
		}
		rowBytes := K / bs * dt.TypeSize()
		wdesc := func(p device.Ptr) device.TensorDesc {
			return device.TensorDesc{DType: dt, Ne: [4]int64{K, N, 1, 1}, Nb: [4]int64{dt.TypeSize(), rowBytes, N * rowBytes, N * rowBytes}, Addr: p}
		}
		for _, mode := range []string{QuantMatmulGGML, QuantMatmulWQBMM} {
			t.Run(dt.String()+"/"+mode, func(t *testing.T) {
				d := newDevice(t, Options{QuantMatmul: mode, WorkspaceReserve: 1 << 20})
				w := malloc(t, d, int64(len(blocks)))
				buf := malloc(t, d, 1<<17)
				if err := d.MemcpyH2D(w, blocks); err != nil {
					t.Fatal(err)
				}
				if err := d.PlaceWeight(wdesc(w), blocks, device.WeightUse{Matmul: true, Rows: true}); err != nil {
					t.Fatal(err)
				}
				if err := d.MemcpyH2D(buf, xb.Data); err != nil {
					t.Fatal(err)
				}
				d2h := d.Stats().BytesD2H
				k := &device.KernelLaunch{Name: "aclnnMm", Op: ir.OpMulMat, Node: 1,
					Inputs: []device.TensorDesc{wdesc(w), f32(buf, K, M)},
					Output: f32(buf+8192, N, M), Workspace: buf + 16384, WorkspaceBytes: 2*M*K + 2*M*N + target.HighBitsScratch(dt, K, N, M)}
				if err := d.Launch(device.DefaultStream, k); err != nil {
					t.Fatal(err)
				}
				// get_rows of rows 3, 0, 39 from the same table.
				ids := []int32{3, 0, N - 1}
				idb := make([]byte, 4*len(ids))
				for i, v := range ids {
					binary.LittleEndian.PutUint32(idb[4*i:], uint32(v))
				}
				if err := d.MemcpyH2D(buf+32768, idb); err != nil {
					t.Fatal(err)
				}
				g := &device.KernelLaunch{Name: "aclnnGatherV2", Op: ir.OpGetRows, Node: 2,
					Inputs: []device.TensorDesc{wdesc(w), {DType: ir.I32, Ne: [4]int64{3, 1, 1, 1}, Nb: [4]int64{4, 12, 12, 12}, Addr: buf + 32768}},
					Output: f32(buf+40960, K, 3), Workspace: buf + 65536, WorkspaceBytes: 65536}
				// An int4 table's get_rows is refused: the target keeps
				// it on the CPU (no bound operator gathers int4 rows).
				rowsOK := recipeTakes(ir.OpGetRows, dt)
				if err := d.Launch(device.DefaultStream, g); rowsOK && err != nil {
					t.Fatal(err)
				} else if !rowsOK && (err == nil || !strings.Contains(err.Error(), "no bound operator gathers int4 rows")) {
					t.Fatalf("%s get_rows: %v, want refused (int4 rows)", dt, err)
				}
				if err := d.SynchronizeStream(device.DefaultStream); err != nil {
					t.Fatal(err)
				}
				if got := d.Stats().BytesD2H - d2h; got != 0 {
					t.Errorf("%d bytes read back: the weight was not converted at load", got)
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
				bound := 2e-2
				if mode == QuantMatmulGGML {
					bound = 0
				}
				if worst/scale > bound {
					t.Errorf("%s %s: max|Δ|/max|out| = %.3g > %.0e against ggml-cpu", dt, mode, worst/scale, bound)
				}
				t.Logf("%s %s: max|Δ|/max|out| = %.3g", dt, mode, worst/scale)
				if !rowsOK {
					return
				}
				cw, err := wqconv.Convert(gguf.GGMLType(dt), blocks, N, K)
				if err != nil {
					t.Fatal(err)
				}
				ref := wqconv.Dequant(cw)
				rows := make([]byte, 4*3*K)
				if err := d.MemcpyD2H(rows, buf+40960); err != nil {
					t.Fatal(err)
				}
				if mode == QuantMatmulGGML && cw.Accuracy == wqconv.Requantised {
					// The table's f32 copy: ggml's values.
					ref = make([]float32, N*K)
					if err := gguf.Dequantize(gguf.GGMLType(dt), blocks, ref); err != nil {
						t.Fatal(err)
					}
				}
				for i, id := range ids {
					for c := range K {
						g := binary.LittleEndian.Uint32(rows[4*(i*K+c):])
						r := math.Float32bits(ref[int(id)*K+c])
						if dt == ir.Q8_0 && mode == QuantMatmulWQBMM {
							// Gathered from the blocks, d·q rounded to f16.
							r = math.Float32bits(gguf.F16ToF32(gguf.F32ToF16(ref[int(id)*K+c])))
						}
						if g != r && g|r != 0x80000000 {
							t.Fatalf("%s get_rows: row %d col %d = %g, wqconv.Dequant %g", dt, id, c, math.Float32frombits(g), math.Float32frombits(r))
						}
					}
				}
			})
		}
	}
}

// TestQuantExpertsOnEmulatedCANN runs mul_mat_id over three experts of
// every type of quantTypes (two tokens, two experts each), converted at
// load (PlaceWeight, wqconv.ConvertExperts' layout), in both modes, and
// compares each (token, slot) with ggml-cpu's mul_mat of the chosen
// expert: exactly, max|Δ| = 0 ("ggml"), and within 2e-2 ("wqbmm").
func TestQuantExpertsOnEmulatedCANN(t *testing.T) {
	const K, N, E, nUsed, T = 256, 16, 3, 2, 2
	rng := rand.New(rand.NewPCG(9, 10))
	x := make([]float32, K*T)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	xb := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(v))
	}
	ids := []int32{2, 0, 1, 2} // token 0: experts 2, 0; token 1: 1, 2
	idb := make([]byte, 4*len(ids))
	for i, v := range ids {
		binary.LittleEndian.PutUint32(idb[4*i:], uint32(v))
	}
	for _, dt := range quantTypes {
		bs := dt.BlockSize()
		rowBytes := K / bs * dt.TypeSize()
		blocks := randomBlocks(rng, dt, E*N*K/bs)
		// ggml-cpu's product of each token with each chosen expert.
		want := make([]float32, N*nUsed*T)
		for p, e := range ids {
			tok := p / nUsed
			a, _ := kernels.NewTensor(gguf.GGMLType(dt), K, N)
			copy(a.Data, blocks[int64(e)*N*rowBytes:int64(e+1)*N*rowBytes])
			xt, _ := kernels.NewTensor(gguf.TypeF32, K, 1)
			copy(xt.Data, xb[4*K*tok:4*K*(tok+1)])
			o, _ := kernels.NewTensor(gguf.TypeF32, N, 1)
			if err := kernels.MulMat(o, a, xt); err != nil {
				t.Fatal(err)
			}
			for n := range N {
				want[p*N+n] = math.Float32frombits(binary.LittleEndian.Uint32(o.Data[4*n:]))
			}
		}
		for _, mode := range []string{QuantMatmulGGML, QuantMatmulWQBMM} {
			t.Run(dt.String()+"/"+mode, func(t *testing.T) {
				d := newDevice(t, Options{QuantMatmul: mode, WorkspaceReserve: 1 << 20})
				w := malloc(t, d, int64(len(blocks)))
				buf := malloc(t, d, 1<<20)
				as := device.TensorDesc{DType: dt, Ne: [4]int64{K, N, E, 1}, Nb: [4]int64{dt.TypeSize(), rowBytes, N * rowBytes, E * N * rowBytes}, Addr: w}
				for _, c := range []struct {
					p    device.Ptr
					data []byte
				}{{w, blocks}, {buf, xb}, {buf + 8192, idb}} {
					if err := d.MemcpyH2D(c.p, c.data); err != nil {
						t.Fatal(err)
					}
				}
				if err := d.PlaceWeight(as, blocks, device.WeightUse{Matmul: true}); err != nil {
					t.Fatal(err)
				}
				d2h := d.Stats().BytesD2H
				k := &device.KernelLaunch{Name: "aclnnWeightQuantBatchMatmulV2", Op: ir.OpMulMatID, Node: 1,
					Inputs: []device.TensorDesc{as,
						{DType: ir.F32, Ne: [4]int64{K, 1, T, 1}, Nb: [4]int64{4, 4 * K, 4 * K, 4 * K * T}, Addr: buf},
						{DType: ir.I32, Ne: [4]int64{nUsed, T, 1, 1}, Nb: [4]int64{4, 4 * nUsed, 4 * nUsed * T, 4 * nUsed * T}, Addr: buf + 8192}},
					Output:    device.TensorDesc{DType: ir.F32, Ne: [4]int64{N, nUsed, T, 1}, Nb: [4]int64{4, 4 * N, 4 * N * nUsed, 4 * N * nUsed * T}, Addr: buf + 16384},
					Workspace: buf + 65536, WorkspaceBytes: 1<<20 - 65536}
				// q5_0's int4 + high-bit layout has no expert recipe: the
				// target keeps its mul_mat_id on the CPU ("ggml" mode
				// still computes it exactly).
				refused := mode == QuantMatmulWQBMM && !recipeTakes(ir.OpMulMatID, dt)
				if err := d.Launch(device.DefaultStream, k); refused {
					if err == nil || !strings.Contains(err.Error(), "no recipe for the type") {
						t.Fatalf("%s mul_mat_id: %v, want refused", dt, err)
					}
					return
				} else if err != nil {
					t.Fatal(err)
				}
				if err := d.SynchronizeStream(device.DefaultStream); err != nil {
					t.Fatal(err)
				}
				if got := d.Stats().BytesD2H - d2h; got != 0 {
					t.Errorf("%d bytes read back: the experts were not converted at load", got)
				}
				got := make([]byte, 4*len(want))
				if err := d.MemcpyD2H(got, buf+16384); err != nil {
					t.Fatal(err)
				}
				var worst, scale float64
				for i, r := range want {
					g := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])))
					worst, scale = max(worst, math.Abs(g-float64(r))), max(scale, math.Abs(float64(r)))
				}
				bound := 2e-2
				if mode == QuantMatmulGGML {
					bound = 0
				}
				if worst/scale > bound {
					t.Errorf("%s %s mul_mat_id: max|Δ|/max|out| = %.3g > %.0e against ggml-cpu", dt, mode, worst/scale, bound)
				}
				t.Logf("%s %s mul_mat_id: max|Δ|/max|out| = %.3g", dt, mode, worst/scale)
			})
		}
	}
}
