//go:build cann

package acl

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// TestGeluRecipeIsGgmlTable: the gelu recipe (f16 cast, aclnnGelu on f16,
// cast back) gives ggml-cpu's F16-table GELU (kernels.Gelu) for every f16
// input strictly between -10 and 10, bit for bit; ggml's cut-offs (0 at or
// below -10, x at or above 10) are where the two may differ, and are
// checked to stay within one f16 rounding.
func TestGeluRecipeIsGgmlTable(t *testing.T) {
	var xs []float32
	for h := 0; h < 1<<16; h++ {
		v := gguf.F16ToF32(uint16(h))
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) && v > -12 && v < 12 {
			xs = append(xs, v)
		}
	}
	n := int64(len(xs))
	d := newDevice(t, Options{})
	buf := malloc(t, d, 16*n+4096)
	in := make([]byte, 4*n)
	for i, v := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(v))
	}
	if err := d.MemcpyH2D(buf, in); err != nil {
		t.Fatal(err)
	}
	k := &device.KernelLaunch{Name: "aclnnGelu", Op: ir.OpGelu, Node: 1,
		Inputs: []device.TensorDesc{f32(buf, n)}, Output: f32(buf+device.Ptr(4*n), n),
		Workspace: buf + device.Ptr(8*n), WorkspaceBytes: 8*n + 64}
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(device.DefaultStream); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := d.MemcpyD2H(out, buf+device.Ptr(4*n)); err != nil {
		t.Fatal(err)
	}
	src, _ := kernels.NewTensor(gguf.TypeF32, n)
	copy(src.Data, in)
	dst, _ := kernels.NewTensor(gguf.TypeF32, n)
	if err := kernels.Gelu(dst, src); err != nil {
		t.Fatal(err)
	}
	// aclnnGelu computes the CANN page's formula, 0.5x(1 + tanh(sqrt(2/π)(x +
	// 0.044715x³))), where ggml evaluates 0.5x(1 + tanh(sqrt(2/π)·x(1 +
	// 0.044715x²))): the f16 results may differ by one f16 step where the
	// f32 values straddle a rounding boundary (2 of 37888 inputs).
	diff := 0
	for i, x := range xs {
		got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
		want := math.Float32frombits(binary.LittleEndian.Uint32(dst.Data[4*i:]))
		ulp := math.Max(math.Ldexp(1, math.Ilogb(math.Abs(float64(want)))-10), math.Ldexp(1, -24))
		switch {
		case x > -10 && x < 10:
			if got != want {
				diff++
				if math.Abs(float64(got-want)) > ulp {
					t.Errorf("gelu(%g): emulated CANN recipe %g, ggml's table %g: more than one f16 step apart", x, got, want)
				}
			}
		case math.Abs(float64(got-want)) > 4*ulp+math.Ldexp(1, -20):
			t.Errorf("gelu(%g) beyond ggml's cut-off: %g vs %g", x, got, want)
		}
	}
	t.Logf("%d of %d f16 inputs in (-10, 10) one f16 step from ggml's table", diff, n)
	if diff > 8 {
		t.Errorf("%d of %d f16 inputs differ from ggml's table (2 expected)", diff, n)
	}
}

// TestSWAMaskRecipe: the swa_mask recipe on the emulator gives the CPU
// kernel's mask exactly, for a mask with padding rows and -inf entries
// already in it.
func TestSWAMaskRecipe(t *testing.T) {
	const nKV, rows, window = 40, 8, 5
	posv := []int32{9, 10, 11, 12, 13, 30}
	d := newDevice(t, Options{})
	buf := malloc(t, d, 1<<16)
	mask := make([]byte, 4*nKV*rows)
	for r := range rows {
		for c := range nKV {
			v := float32(0)
			if c > 20+r || (r+c)%7 == 0 {
				v = float32(math.Inf(-1))
			}
			binary.LittleEndian.PutUint32(mask[4*(r*nKV+c):], math.Float32bits(v))
		}
	}
	pos := make([]byte, 4*len(posv))
	for i, p := range posv {
		binary.LittleEndian.PutUint32(pos[4*i:], uint32(p))
	}
	mAddr, pAddr, oAddr, ws := buf, buf+device.Ptr(len(mask)), buf+device.Ptr(2*len(mask)), buf+device.Ptr(3*len(mask))
	if err := d.MemcpyH2D(mAddr, mask); err != nil {
		t.Fatal(err)
	}
	if err := d.MemcpyH2D(pAddr, pos); err != nil {
		t.Fatal(err)
	}
	md := f32(mAddr, nKV, rows)
	pd := device.TensorDesc{DType: ir.I32, Ne: [4]int64{int64(len(posv)), 1, 1, 1}, Nb: ir.ContiguousStrides(ir.I32, [4]int64{int64(len(posv)), 1, 1, 1}), Addr: pAddr}
	k := &device.KernelLaunch{Name: "aclnnInplaceMaskedFillScalar", Op: ir.OpSWAMask, Node: 1, Attrs: ir.Attrs{"window": int64(window)},
		Inputs: []device.TensorDesc{md, pd}, Output: f32(oAddr, nKV, rows), Workspace: ws, WorkspaceBytes: 4096}
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(device.DefaultStream); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(mask))
	if err := d.MemcpyD2H(got, oAddr); err != nil {
		t.Fatal(err)
	}
	src, _ := kernels.NewTensor(gguf.TypeF32, nKV, rows)
	copy(src.Data, mask)
	pt, _ := kernels.NewTensor(gguf.TypeI32, int64(len(posv)))
	copy(pt.Data, pos)
	dst, _ := kernels.NewTensor(gguf.TypeF32, nKV, rows)
	if err := kernels.SWAMask(dst, src, pt, window); err != nil {
		t.Fatal(err)
	}
	masked := 0
	for i := 0; i < len(got); i += 4 {
		g := math.Float32frombits(binary.LittleEndian.Uint32(got[i:]))
		w := math.Float32frombits(binary.LittleEndian.Uint32(dst.Data[i:]))
		if g != w {
			t.Errorf("row %d cell %d: %g, the CPU kernel %g", i/4/nKV, i/4%nKV, g, w)
		}
		if math.IsInf(float64(w), -1) && !math.IsInf(float64(math.Float32frombits(binary.LittleEndian.Uint32(mask[i:]))), -1) {
			masked++
		}
	}
	if masked == 0 {
		t.Fatal("the window hid no cell: the case tests nothing")
	}
}

// TestArchOpsOnEmulatedCANN runs the ops of gemma3 (gelu, swa_mask) and of
// mixture-of-experts routing through their recipes: a prefill and three decode steps of the gemma3 and qwen3moe
// models on the emulator with graphs on, against the reference executor
// (ggml's arithmetic), requiring that gelu, or the whole MoE routing (top_k,
// get_rows of the probabilities, sum_rows, div, mul_mat_id), ran on the NPU
// and that decode replayed captured graphs with the routing inside them.
// f32 files are held to 1e-3 of max|logit|; q4_0 ones to 3e-2
// (aclnnWeightQuantBatchMatmulV2's f16 activations, docs/LOWERING.md).
func TestArchOpsOnEmulatedCANN(t *testing.T) {
	moe := []ir.Op{ir.OpTopK, ir.OpGetRows, ir.OpSumRows, ir.OpDiv, ir.OpMulMatID}
	cases := []struct {
		model string
		want  []ir.Op
	}{
		{"synth-gemma3-Q4_0.gguf", []ir.Op{ir.OpGelu, ir.OpSWAMask}},
		{"synth-qwen3moe-Q4_0.gguf", moe},
		{"synth-llamamoe-Q4_0.gguf", moe},
		{"synth-gemma3-F32", []ir.Op{ir.OpGelu, ir.OpSWAMask}},
		{"synth-qwen3moe-F32", moe},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			var path string
			if strings.HasSuffix(c.model, ".gguf") {
				path = testref.Testdata(c.model)
			} else {
				path = testref.Shared(t, "models/"+c.model+".gguf")
			}
			tol := 1e-3
			if strings.Contains(c.model, "Q4_0") {
				tol = 3e-2
			}
			f, m := testmodel.Build(t, path, models.Options{NCtx: 64})
			d := newDevice(t, Options{PoolBytes: 128 << 20, WorkspaceReserve: 16 << 20})
			var mu sync.Mutex
			launched := map[ir.Op]int{}
			d.onLaunch = func(k *device.KernelLaunch, _ []string) {
				mu.Lock()
				launched[k.Op]++
				mu.Unlock()
			}
			s, ref := pairedSessions(t, m, f, d, program.Options{Policy: device.DefaultGraphPolicy()})
			atCapture := map[ir.Op]int{}
			worst := 0.0
			// a prompt longer than gemma3's window of 8, so that the
			// sliding-window layers hide cells
			prompt := []int32{1, 403, 407, 261, 378, 12, 99, 250, 31, 77, 180, 5}
			for step, toks := range [][]int32{prompt, {42}, {7}, {300}} {
				if step == 2 {
					// steps 2 and 3 are in the bucket step 1 captured: a
					// replay launches nothing, so the ops below must not be
					// launched again
					mu.Lock()
					for op, n := range launched {
						atCapture[op] = n
					}
					mu.Unlock()
				}
				e := testmodel.RelErr(stepBoth(t, step, s, ref, toks))
				worst = max(worst, e)
				if e > tol {
					t.Errorf("step %d: max|Δ|/max|logit| = %.3g against the reference executor (bound %.0e)", step, e, tol)
				}
			}
			for _, op := range c.want {
				if launched[op] == 0 {
					t.Errorf("no %s was launched on the NPU (launched: %v)", op, fmt.Sprint(launched))
				}
				if launched[op] != atCapture[op] {
					t.Errorf("%s was launched eagerly in replayed decode steps (%d launches after the capture): not in a captured segment", op, launched[op]-atCapture[op])
				}
			}
			st := s.Stats().Decode
			if st.Replays == 0 {
				t.Errorf("decode replayed no captured graph: %+v", st)
			}
			t.Logf("worst max|Δ|/max|logit| %.2e; decode %d captures, %d replays; launches by op: %v", worst, st.Captures, st.Replays, launched)
		})
	}
}
