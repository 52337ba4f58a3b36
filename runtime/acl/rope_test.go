//go:build cann

package acl

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
)

// TestRopeCacheAnglesAreGgml launches rope_cache on the emulator for
// positions up to 4095 and compares the table with the CPU kernel
// (ggml_rope_cache_init's arithmetic): by default the angles are ggml's
// chain, and with the emulator's ggml-cpu arithmetic (whose cos and sin
// are the C library's cosf and sinf, as the CPU kernel's are) the table
// is identical; with the device's arithmetic (correctly rounded cos and
// sin) a few values differ by one ulp; with Options.TableRoPEAngles
// (positions × base^(-2i/D)) the angles differ from ggml's in their last
// bits, which at large positions moves cos and sin by more than 1e-6.
func TestRopeCacheAnglesAreGgml(t *testing.T) {
	const D, T = 64, 48
	rng := rand.New(rand.NewPCG(3, 4))
	pos := make([]int32, T)
	for i := range pos {
		pos[i] = int32(rng.IntN(4096))
	}
	pos[0] = 0
	for _, c := range []struct {
		mode      int64
		base, fs  float64
		factors   bool
		table     bool
		wantExact bool
		nPos      int64 // the n_pos kernel attribute: gather from the precomputed chain
	}{
		{0, 10000, 1, false, false, true, 0},
		{2, 1e6, 1, false, false, true, 0},
		{0, 500000, 0.25, true, false, true, 0},
		{0, 10000, 1, false, true, false, 0},
		{2, 1e6, 1, false, true, false, 0},
		{0, 10000, 1, false, false, true, 4096},
		{2, 1e6, 1, false, false, true, 4096},
		{0, 500000, 0.25, true, false, true, 4096},
	} {
		name := fmt.Sprintf("mode%d/base%g/scale%g/factors%v/table%v/npos%d", c.mode, c.base, c.fs, c.factors, c.table, c.nPos)
		t.Run(name, func(t *testing.T) {
			attrs := ir.Attrs{"n_dims": int64(D), "mode": c.mode, "freq_base": c.base, "freq_scale": c.fs,
				"ext_factor": 0.0, "attn_factor": 1.0, "beta_fast": 32.0, "beta_slow": 1.0, "n_ctx_orig": int64(4096)}
			if c.nPos > 0 {
				attrs[ropePositionsAttr] = c.nPos
			}
			d := newDevice(t, Options{WorkspaceReserve: 1 << 20, TableRoPEAngles: c.table})
			fake.Set("arith", 1)
			buf := malloc(t, d, 1<<16)
			pb := make([]byte, 4*T)
			for i, p := range pos {
				binary.LittleEndian.PutUint32(pb[4*i:], uint32(p))
			}
			if err := d.MemcpyH2D(buf, pb); err != nil {
				t.Fatal(err)
			}
			ptab := device.TensorDesc{DType: ir.I32, Ne: [4]int64{T, 1, 1, 1}, Nb: ir.ContiguousStrides(ir.I32, [4]int64{T, 1, 1, 1}), Addr: buf}
			inputs := []device.TensorDesc{ptab}
			ff := make([]float32, D/2)
			for i := range ff {
				ff[i] = 1 + float32(i%5)*0.75
			}
			ffT, _ := kernels.FromF32(ff, D/2)
			if c.factors {
				if err := d.MemcpyH2D(buf+4096, ffT.Data); err != nil {
					t.Fatal(err)
				}
				inputs = append(inputs, f32(buf+4096, D/2))
			}
			k := &device.KernelLaunch{Name: "rope_cache", Op: ir.OpRopeCache, Node: 1, Attrs: attrs,
				Inputs: inputs, Output: f32(buf+8192, D, T), Workspace: buf + 32768, WorkspaceBytes: 16384}
			if err := d.Launch(device.DefaultStream, k); err != nil {
				t.Fatal(err)
			}
			if err := d.SynchronizeStream(device.DefaultStream); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4*D*T)
			if err := d.MemcpyD2H(got, buf+8192); err != nil {
				t.Fatal(err)
			}
			posT, _ := kernels.NewTensor(gguf.TypeI32, T)
			copy(posT.Data, pb)
			want, _ := kernels.NewTensor(gguf.TypeF32, D, T)
			p := eval.RopeParams(&ir.Node{Op: ir.OpRopeCache, Attrs: attrs})
			var err error
			if c.factors {
				err = kernels.RopeCacheWithFactors(want, posT, ffT, p)
			} else {
				err = kernels.RopeCache(want, posT, p)
			}
			if err != nil {
				t.Fatal(err)
			}
			g, w := make([]float32, D*T), make([]float32, D*T)
			diff := 0
			for i := range g {
				g[i] = math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
				w[i] = math.Float32frombits(binary.LittleEndian.Uint32(want.Data[4*i:]))
				if g[i] != w[i] {
					diff++
				}
			}
			e := testmodel.RelErr(g, w)
			t.Logf("%d of %d table values differ from the CPU kernel's, max|Δ| %.3g", diff, D*T, e)
			if c.wantExact && diff != 0 {
				t.Errorf("ggml's angle chain: %d values differ (max|Δ| %.3g), want none", diff, e)
			}
			if !c.wantExact && e < 1e-6 {
				t.Errorf("TableRoPEAngles: max|Δ| %.3g, expected the table's angles to be off ggml's by more than 1e-6 at these positions", e)
			}
		})
	}
}

// TestRopeApplySpreadsAHostTable launches rope_apply with a RoPE table no
// rope_cache launch on the device made (the CPU kernel's, uploaded), in
// ggml's normal and neox modes, and compares with the CPU kernel: the
// binding spreads the table into its full-width cos/sin tables, and the
// rotation differs from ggml-cpu's only by the FMA ggml's compiler
// contracts (within 1e-6 of max|x|).
func TestRopeApplySpreadsAHostTable(t *testing.T) {
	const D, H, T = 32, 3, 5
	rng := rand.New(rand.NewPCG(5, 6))
	for _, mode := range []int64{0, 2} {
		t.Run(fmt.Sprintf("mode%d", mode), func(t *testing.T) {
			attrs := ir.Attrs{"n_dims": int64(D), "mode": mode, "freq_base": 10000.0, "freq_scale": 1.0,
				"ext_factor": 0.0, "attn_factor": 1.0, "beta_fast": 32.0, "beta_slow": 1.0, "n_ctx_orig": int64(4096)}
			p := eval.RopeParams(&ir.Node{Op: ir.OpRopeApply, Attrs: attrs})
			posT, _ := kernels.NewTensor(gguf.TypeI32, T)
			for i := range T {
				binary.LittleEndian.PutUint32(posT.Data[4*i:], uint32(rng.IntN(2000)))
			}
			cache, _ := kernels.NewTensor(gguf.TypeF32, D, T)
			if err := kernels.RopeCache(cache, posT, p); err != nil {
				t.Fatal(err)
			}
			xs := make([]float32, D*H*T)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			x, _ := kernels.FromF32(xs, D, H, T)
			want, _ := kernels.NewTensor(gguf.TypeF32, D, H, T)
			if err := kernels.RopeApply(want, x, cache, p); err != nil {
				t.Fatal(err)
			}
			d := newDevice(t, Options{WorkspaceReserve: 1 << 20})
			buf := malloc(t, d, 1<<16)
			if err := d.MemcpyH2D(buf, x.Data); err != nil {
				t.Fatal(err)
			}
			if err := d.MemcpyH2D(buf+8192, cache.Data); err != nil {
				t.Fatal(err)
			}
			k := &device.KernelLaunch{Name: "rope_apply", Op: ir.OpRopeApply, Node: 2, Attrs: attrs,
				Inputs: []device.TensorDesc{f32(buf, D, H, T), f32(buf+8192, D, T)}, Output: f32(buf+16384, D, H, T),
				Workspace: buf + 32768, WorkspaceBytes: 16384}
			if err := d.Launch(device.DefaultStream, k); err != nil {
				t.Fatal(err)
			}
			if err := d.SynchronizeStream(device.DefaultStream); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4*D*H*T)
			if err := d.MemcpyD2H(got, buf+16384); err != nil {
				t.Fatal(err)
			}
			g, w := make([]float32, D*H*T), make([]float32, D*H*T)
			for i := range g {
				g[i] = math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
				w[i] = math.Float32frombits(binary.LittleEndian.Uint32(want.Data[4*i:]))
			}
			if e := testmodel.RelErr(g, w); e > 1e-6 {
				t.Errorf("max|Δ|/max|x| = %.3g against the CPU kernel, want ≤ 1e-6", e)
			} else {
				t.Logf("max|Δ|/max|x| = %.3g against the CPU kernel", e)
			}
		})
	}
}
