//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/runtime/device"
)

// Recipes of the fused ops of package passes (the lowering maps them to
// the aclnn operators CANN fuses natively where it has one):
//
//	rms_norm_mul        aclnnRmsNorm(x, gamma = w, eps, y, rstd in the workspace)
//	add_rms_norm_mul    aclnnAddRmsNorm(a, b, w, eps, y = slot 0, rstd, x = slot 1)
//	swiglu              aclnnSilu(gate → out) aclnnInplaceMul(out, up)
//	rope_cache          aclnnGatherV2(angle table, pos) [aclnnDiv factors]
//	                    [aclnnMuls freq_scale] aclnnCos aclnnSin into
//	                    full-width tables, then two aclnnInplaceCopy
//	                    writing the IR table [c0 s0 c1 s1 …] per position
//	                    (angles: see builder.angles)
//	rope_apply          aclnnRotaryPositionEmbedding on the full-width tables
//	rope_apply_set_rows aclnnRotaryPositionEmbedding [aclnnCast → f16]
//	                    aclnnInplaceIndexCopy, staging in the workspace
//	rope_set_rows       the tables from the positions as rope makes them,
//	                    then as rope_apply_set_rows
//	rope_cache_table    aclnnCast(pos) aclnnMul(pos, inv_freq) [aclnnDiv
//	                    factors] [aclnnMuls freq_scale] aclnnInplaceCopy
//	                    (spread to full width) aclnnCos aclnnSin and the
//	                    IR table as rope_cache
//	mul_mat_add         the mul_mat recipe, then aclnnInplaceAdd(out, bias)
//	concat              aclnnCat along the dim
//	attention           aclnnCast(q → f16) aclnnMatmul(q16, k16ᵀ → f32)
//	                    aclnnMuls(scale) [aclnnAdd mask] aclnnSoftmax
//	                    aclnnCast(→ f16) aclnnMatmul(p16, v16 → f32);
//	                    with Options.FlashAttention: aclnnCast(q → f16)
//	                    [aclnnCast(mask → f16)]
//	                    aclnnFusedInferAttentionScoreV2 (BSND, mask as
//	                    pse shift, GQA by numKeyValueHeads)
//	                    aclnnCast(out → f32)
//
// aclnnRotaryPositionEmbedding takes cos and sin as wide as the head; the
// IR's RoPE cache holds n_dims/2 pairs per position. rope_cache therefore
// also writes full-width tables into device scratch of the binding, keyed
// by the cache's address, and rope_apply reads those (it runs after its
// rope_cache in the same step, in stream order). Frequency factors (llama
// 3's rope_freqs) divide the angles with aclnnDiv before cos and sin, as
// ggml divides theta by them.
func init() {
	recipes[ir.OpRMSNormMul] = rmsNormMul
	recipes[ir.OpAddRMSNormMul] = addRMSNormMul
	recipes[ir.OpSwiGLU] = swiGLU
	recipes[ir.OpRopeCache] = ropeCache
	recipes[ir.OpRopeApply] = ropeApply
	recipes[ir.OpRopeApplySetRows] = ropeApplySetRows
	recipes[ir.OpAttention] = attention
	recipes[ir.OpRopeSetRows] = ropeSetRows
	recipes[ir.OpRopeCacheTable] = ropeCacheTable
	recipes[ir.OpMulMatAdd] = mulMatAdd
	recipes[ir.OpConcat] = concat
}

// vector1D is a weight [n, 1, 1, 1] as a 1-D aclTensor.
func (b *builder) vector1D(role string, t device.TensorDesc) (C.uintptr_t, error) {
	if t.Ne[1] != 1 || t.Ne[2] != 1 || t.Ne[3] != 1 {
		return 0, b.unsupported("%s %v: a vector is expected", role, t.Ne)
	}
	return b.desc(role, t, 1)
}

func (b *builder) rstd(x device.TensorDesc) (C.uintptr_t, error) {
	rows := x.Ne[1] * x.Ne[2] * x.Ne[3]
	p, err := b.temp("rstd", 4*rows, 4)
	if err != nil {
		return 0, err
	}
	shape := []int64{x.Ne[3], x.Ne[2], x.Ne[1], 1}
	return b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, p)
}

func rmsNormMul(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	x, w, y := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	gt, err := b.vector1D("gamma", w)
	if err != nil {
		return err
	}
	yt, err := b.desc("y", y, 4)
	if err != nil {
		return err
	}
	rt, err := b.rstd(x)
	if err != nil {
		return err
	}
	a := tensors(xt, gt, yt, rt)
	a.f[0] = C.double(b.attrF("eps", 1e-6))
	b.call(C.IRT_RMSNORM, a)
	return nil
}

// addRMSNormMul: the output is f32[a0,a1,a2,2]; slot 0 of dim 3 receives
// rms_norm(a+b)·w, slot 1 the sum a+b.
func addRMSNormMul(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	x1, x2, w, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	if out.Ne[3] != 2 || x1.Ne[3] != 1 || x2.Ne != x1.Ne {
		return b.unsupported("add_rms_norm_mul of %v and %v into %v: equal shapes only", x1.Ne, x2.Ne, out.Ne)
	}
	slot := func(i int64) device.TensorDesc {
		t := out
		t.Ne[3] = 1
		t.Addr += device.Ptr(i * out.Nb[3])
		return t
	}
	var ts [6]C.uintptr_t
	var err error
	for i, d := range []struct {
		role string
		t    device.TensorDesc
	}{{"x1", x1}, {"x2", x2}} {
		if ts[i], err = b.desc(d.role, d.t, 4); err != nil {
			return err
		}
	}
	if ts[2], err = b.vector1D("gamma", w); err != nil {
		return err
	}
	if ts[3], err = b.desc("yOut", slot(0), 4); err != nil {
		return err
	}
	if ts[4], err = b.rstd(x1); err != nil {
		return err
	}
	if ts[5], err = b.desc("xOut", slot(1), 4); err != nil {
		return err
	}
	a := tensors(ts[:]...)
	a.f[0] = C.double(b.attrF("eps", 1e-6))
	b.call(C.IRT_ADDRMSNORM, a)
	return nil
}

func swiGLU(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	gate, up, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	gt, err := b.desc("self", gate, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	b.call(C.IRT_SILU, tensors(gt, ot))
	o2, err := b.desc("selfRef", out, 4)
	if err != nil {
		return err
	}
	ut, err := b.desc("other", up, 4)
	if err != nil {
		return err
	}
	b.call(C.IRT_INPLACEMUL, tensors(o2, ut))
	return nil
}

// ropeTables is the device scratch of one rope_cache: the positions as
// f32, the angles and the full-width cos and sin tables, [T, D] each.
type ropeTables struct {
	T, D               int64
	pos, ang, cos, sin device.Ptr
}

func ropeKey(cache device.TensorDesc) string {
	return fmt.Sprintf("rope_tables@%#x[%d,%d]", uint64(cache.Addr), cache.Ne[0], cache.Ne[1])
}

func (b *builder) ropeTables(cache device.TensorDesc) (ropeTables, error) {
	T, D := cache.Ne[1], cache.Ne[0]
	p, err := b.buffer(ropeKey(cache), 4*(T+3*T*D))
	if err != nil {
		return ropeTables{}, err
	}
	return ropeTables{T: T, D: D, pos: p, ang: p + device.Ptr(4*T), cos: p + device.Ptr(4*(T+T*D)), sin: p + device.Ptr(4*(T+2*T*D))}, nil
}

// ropeCheck accepts the RoPE variants the binding computes.
func (b *builder) ropeCheck(head int64) (mode int64, err error) {
	nDims := b.attrI("n_dims", 0)
	mode = b.attrI("mode", 0)
	switch {
	case nDims != head:
		return 0, b.unsupported("partial rope (n_dims %d of head dim %d) is not bound", nDims, head)
	case b.attrF("ext_factor", 0) != 0:
		return 0, b.unsupported("YaRN rope (ext_factor %g) is not bound", b.attrF("ext_factor", 0))
	case b.attrF("attn_factor", 1) != 1:
		return 0, b.unsupported("rope with attn_factor %g is not bound", b.attrF("attn_factor", 1))
	case mode != 0 && mode != 2:
		return 0, b.unsupported("rope mode %d", mode)
	}
	return mode, nil
}

// ropeTheta returns the device table of the full-width rotary frequencies
// freq_scale · base^(-2i/D), where i is the pair index of column j
// (adjacent pairs for ggml's normal mode, halves for neox), shared by every
// kernel with the same parameters (Options.TableRoPEAngles).
func (b *builder) ropeTheta(D, mode int64) (device.Ptr, error) {
	base, fscale := b.attrF("freq_base", 10000), b.attrF("freq_scale", 1)
	theta := make([]byte, 4*D)
	for j := int64(0); j < D; j++ {
		i := j / 2
		if mode == 2 {
			i = j % (D / 2)
		}
		v := fscale * math.Pow(base, -2*float64(i)/float64(D))
		binary.LittleEndian.PutUint32(theta[4*j:], math.Float32bits(float32(v)))
	}
	return b.table(fmt.Sprintf("rope_theta[%d,mode %d,base %g,scale %g]", D, mode, base, fscale), theta)
}

// ropeThetaScale is ggml's theta_scale, powf(freq_base, -2/n_dims) in
// float32 (ggml_rope_cache_init multiplies the angle by it once per pair).
func ropeThetaScale(base float64, D int64) float32 {
	return float32(math.Pow(float64(float32(base)), float64(-2/float32(D))))
}

// angles emits the calls that fill rt from positions pos (i32 [T]) as
// ggml_rope_cache_init computes the angles: the positions as f32 in pair
// 0, then pair i = pair i-1 · theta_scale (one aclnnMuls per pair, each a
// single f32 rounding, so the chain is ggml's to the bit; a table of
// pos · base^(-2i/D) would differ from it in the last bits), each pair's
// two columns alike; divided by the frequency factor of the pair when ff
// (f32, one value per pair) is given, times freq_scale when it is not 1,
// then cos and sin.
//
// When the kernel carries n_pos (the lowering sets it to the program's
// n_ctx, which bounds every position a session passes), the chain is
// run once on the host for positions 0..n_pos-1 into a constant table
// (ropeAngleTable) and the step's rows are gathered from it with one
// aclnnGatherV2 instead: the same values, D/2-1 launches fewer than the
// chain. A position outside the table is aclnnGatherV2's error.
func (b *builder) angles(pos device.TensorDesc, ff *device.TensorDesc, rt ropeTables, mode int64) error {
	T, D := rt.T, rt.D
	pt, err := b.desc("positions", pos, 1)
	if err != nil {
		return err
	}
	if np := b.attrI(ropePositionsAttr, 0); np > 0 && !b.d.opts.TableRoPEAngles {
		tab, err := b.ropeAngleTable(np, D, mode)
		if err != nil {
			return err
		}
		self, err := b.tensor(C.ACL_FLOAT, []int64{np, D}, []int64{D, 1}, 0, tab)
		if err != nil {
			return err
		}
		out, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang)
		if err != nil {
			return err
		}
		g := tensors(self, pt, out)
		g.i[0] = 0
		b.call(C.IRT_GATHERV2, g)
		return b.scaleAngles(ff, rt, mode)
	}
	pf, err := b.tensor(C.ACL_FLOAT, []int64{T}, []int64{1}, 0, rt.pos)
	if err != nil {
		return err
	}
	c := tensors(pt, pf)
	c.i[0] = C.ACL_FLOAT
	b.call(C.IRT_CAST, c)
	// pairView is pair i's two columns of the full-width table [T, D]:
	// 2i and 2i+1 (normal), i and i+D/2 (neox).
	pairView := func(i int64) (C.uintptr_t, error) {
		if mode == 2 {
			return b.tensor(C.ACL_FLOAT, []int64{T, 2}, []int64{D, D / 2}, i, rt.ang)
		}
		return b.tensor(C.ACL_FLOAT, []int64{T, 2}, []int64{D, 1}, 2*i, rt.ang)
	}
	pcol, err := b.tensor(C.ACL_FLOAT, []int64{T, 1}, []int64{1, 1}, 0, rt.pos)
	if err != nil {
		return err
	}
	if b.d.opts.TableRoPEAngles {
		return b.tableAngles(pcol, ff, rt, mode)
	}
	first, err := pairView(0)
	if err != nil {
		return err
	}
	b.call(C.IRT_INPLACECOPY, tensors(first, pcol))
	ts := ropeThetaScale(b.attrF("freq_base", 10000), D)
	for i := int64(1); i < D/2; i++ {
		prev, err := pairView(i - 1)
		if err != nil {
			return err
		}
		cur, err := pairView(i)
		if err != nil {
			return err
		}
		m := tensors(prev, cur)
		if m.s, err = b.scalarF32(ts); err != nil {
			return err
		}
		b.call(C.IRT_MULS, m)
	}
	return b.scaleAngles(ff, rt, mode)
}

// ropePositionsAttr is the kernel attribute giving the number of
// positions the RoPE angle table covers (lower/cann sets it to n_ctx).
const ropePositionsAttr = cann.RopePositionsAttr

// ropeAngleTable returns the constant device table [P, D] of ggml's
// angle chain for positions 0..P-1 before frequency factors and
// freq_scale: column pair i of row p is float32(p) multiplied i times by
// theta_scale, one f32 rounding per step as ggml_rope_cache_init (and the
// aclnnMuls chain) computes it; pair i sits at columns 2i, 2i+1 (normal)
// or i, i+D/2 (neox).
func (b *builder) ropeAngleTable(P, D, mode int64) (device.Ptr, error) {
	base := b.attrF("freq_base", 10000)
	if P*D*4 > 1<<31 {
		return 0, b.unsupported("RoPE angle table of %d positions × %d: more than 2 GiB", P, D)
	}
	ts := ropeThetaScale(base, D)
	data := make([]byte, 4*P*D)
	for p := int64(0); p < P; p++ {
		th := float32(p)
		row := data[4*p*D:]
		for i := int64(0); i < D/2; i++ {
			if i > 0 {
				th *= ts
			}
			a, c := 2*i, 2*i+1
			if mode == 2 {
				a, c = i, i+D/2
			}
			binary.LittleEndian.PutUint32(row[4*a:], math.Float32bits(th))
			binary.LittleEndian.PutUint32(row[4*c:], math.Float32bits(th))
		}
	}
	return b.table(fmt.Sprintf("rope_angles[%d positions,%d,mode %d,base %g]", P, D, mode, base), data)
}

// scaleAngles divides the angles of rt by the frequency factors when ff
// is given and multiplies them by freq_scale when it is not 1, then fills
// the cos and sin tables.
func (b *builder) scaleAngles(ff *device.TensorDesc, rt ropeTables, mode int64) error {
	T, D := rt.T, rt.D
	if ff != nil {
		if err := b.divideByFactors(*ff, rt.ang, T, D, mode); err != nil {
			return err
		}
	}
	if fs := b.attrF("freq_scale", 1); fs != 1 {
		in, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang)
		if err != nil {
			return err
		}
		out, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang)
		if err != nil {
			return err
		}
		m := tensors(in, out)
		if m.s, err = b.scalarF32(float32(fs)); err != nil {
			return err
		}
		b.call(C.IRT_MULS, m)
	}
	return b.cosSin(rt)
}

// tableAngles is angles with Options.TableRoPEAngles: angle[t, j] =
// pos[t] · theta[j] (the table of ropeTheta, freq_scale folded in),
// divided by the pair's frequency factor when ff is given, then cos and
// sin.
func (b *builder) tableAngles(pcol C.uintptr_t, ff *device.TensorDesc, rt ropeTables, mode int64) error {
	T, D := rt.T, rt.D
	th, err := b.ropeTheta(D, mode)
	if err != nil {
		return err
	}
	trow, err := b.tensor(C.ACL_FLOAT, []int64{1, D}, []int64{D, 1}, 0, th)
	if err != nil {
		return err
	}
	at, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang)
	if err != nil {
		return err
	}
	b.call(C.IRT_MUL, tensors(pcol, trow, at))
	if ff != nil {
		if err := b.divideByFactors(*ff, rt.ang, T, D, mode); err != nil {
			return err
		}
	}
	return b.cosSin(rt)
}

// cosSin fills rt's cos and sin tables from its angles.
func (b *builder) cosSin(rt ropeTables) error {
	T, D := rt.T, rt.D
	for _, f := range []struct {
		op  C.int
		dst device.Ptr
	}{{C.IRT_COS, rt.cos}, {C.IRT_SIN, rt.sin}} {
		in, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang)
		if err != nil {
			return err
		}
		o, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, f.dst)
		if err != nil {
			return err
		}
		b.call(f.op, tensors(in, o))
	}
	return nil
}

// pairShape views the full-width angle table [T, D] so that the pair
// index is one dim: [T, D/2, 2] for ggml's normal mode (pair i at columns
// 2i, 2i+1), [T, 2, D/2] for neox (pair i at columns i and i+D/2). A
// per-pair vector [1, D/2, 1] or [1, 1, D/2] then broadcasts over it.
func pairShape(T, D, mode int64) (shape, strides, pair []int64) {
	if mode == 2 {
		return []int64{T, 2, D / 2}, []int64{D, D / 2, 1}, []int64{1, 1, D / 2}
	}
	return []int64{T, D / 2, 2}, []int64{D, 2, 1}, []int64{1, D / 2, 1}
}

// divideByFactors divides the angles at ang in place by the per-pair
// frequency factors ff (llama 3's rope_freqs), as ggml's rope does (theta
// / freq_factor) with aclnnDiv.
func (b *builder) divideByFactors(ff device.TensorDesc, ang device.Ptr, T, D, mode int64) error {
	if ff.DType != ir.F32 || ff.Ne[0] < D/2 || ff.Nb[0] != 4 {
		return b.unsupported("frequency factors %s %v: f32, one per rotated pair", ff.DType, ff.Ne)
	}
	shape, strides, pair := pairShape(T, D, mode)
	ft, err := b.tensor(C.ACL_FLOAT, pair, contiguous(pair), 0, ff.Addr)
	if err != nil {
		return err
	}
	in, err := b.tensor(C.ACL_FLOAT, shape, strides, 0, ang)
	if err != nil {
		return err
	}
	out, err := b.tensor(C.ACL_FLOAT, shape, strides, 0, ang)
	if err != nil {
		return err
	}
	b.call(C.IRT_DIV, tensors(in, ft, out))
	return nil
}

// irTable writes the IR's RoPE table [D, T] (pair i of position t is
// (cos, sin) of angle i at rows 2i, 2i+1) from the full-width tables, where
// angle i sits at column 2i (normal) or i (neox).
func (b *builder) irTable(rt ropeTables, cache device.TensorDesc, mode int64) error {
	T, D := rt.T, rt.D
	step := int64(2)
	if mode == 2 {
		step = 1
	}
	for k, src := range []device.Ptr{rt.cos, rt.sin} {
		dst, err := b.tensor(C.ACL_FLOAT, []int64{T, D / 2}, []int64{D, 2}, int64(k), cache.Addr)
		if err != nil {
			return err
		}
		s, err := b.tensor(C.ACL_FLOAT, []int64{T, D / 2}, []int64{D, step}, 0, src)
		if err != nil {
			return err
		}
		b.call(C.IRT_INPLACECOPY, tensors(dst, s))
	}
	return nil
}

// checkCache accepts the IR RoPE table f32 [D, T] a rope_cache writes.
func (b *builder) checkCache(pos, cache device.TensorDesc) error {
	D, T := cache.Ne[0], cache.Ne[1]
	if pos.DType != ir.I32 || pos.Ne[0] != T || !rows2D(pos) || pos.Ne[1] != 1 || cache.DType != ir.F32 || cache.Nb[0] != 4 || cache.Nb[1] != 4*D || !rows2D(cache) {
		return b.unsupported("rope table %v of positions %s %v", cache.Ne, pos.DType, pos.Ne)
	}
	return nil
}

func ropeCache(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	pos, cache := b.k.Inputs[0], b.k.Output
	var ff *device.TensorDesc
	if len(b.k.Inputs) > 1 {
		ff = &b.k.Inputs[1]
	}
	mode, err := b.ropeCheck(cache.Ne[0])
	if err != nil {
		return err
	}
	if err := b.checkCache(pos, cache); err != nil {
		return err
	}
	rt, err := b.ropeTables(cache)
	if err != nil {
		return err
	}
	if err := b.angles(pos, ff, rt, mode); err != nil {
		return err
	}
	return b.irTable(rt, cache, mode)
}

// ropeCacheTable is rope_cache_table(pos, inv_freq, ff?){freq_scale}: the
// half-width angles pos · inv_freq[i] [/ ff[i]] [· freq_scale] (aclnnMul,
// aclnnDiv, aclnnMuls), spread to full width for
// aclnnRotaryPositionEmbedding (aclnnInplaceCopy, broadcasting each angle
// over its pair's two columns), cos and sin, and the IR table.
func ropeCacheTable(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	pos, inv, cache := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	D, T := cache.Ne[0], cache.Ne[1]
	mode, err := b.ropeCheck(D)
	if err != nil {
		return err
	}
	if err := b.checkCache(pos, cache); err != nil {
		return err
	}
	if inv.DType != ir.F32 || inv.Ne[0] < D/2 || inv.Nb[0] != 4 {
		return b.unsupported("inverse frequencies %s %v: f32, one per rotated pair", inv.DType, inv.Ne)
	}
	rt, err := b.ropeTables(cache)
	if err != nil {
		return err
	}
	half, err := b.buffer(fmt.Sprintf("rope_half[%d,%d]", T, D), 4*T*D/2)
	if err != nil {
		return err
	}
	pt, err := b.desc("positions", pos, 1)
	if err != nil {
		return err
	}
	pf, err := b.tensor(C.ACL_FLOAT, []int64{T}, []int64{1}, 0, rt.pos)
	if err != nil {
		return err
	}
	c := tensors(pt, pf)
	c.i[0] = C.ACL_FLOAT
	b.call(C.IRT_CAST, c)
	hs := []int64{T, D / 2}
	view := func(p device.Ptr) (C.uintptr_t, error) { return b.tensor(C.ACL_FLOAT, hs, contiguous(hs), 0, p) }
	pcol, err := b.tensor(C.ACL_FLOAT, []int64{T, 1}, []int64{1, 1}, 0, rt.pos)
	if err != nil {
		return err
	}
	irow, err := b.tensor(C.ACL_FLOAT, []int64{1, D / 2}, []int64{D / 2, 1}, 0, inv.Addr)
	if err != nil {
		return err
	}
	ht, err := view(half)
	if err != nil {
		return err
	}
	b.call(C.IRT_MUL, tensors(pcol, irow, ht))
	if len(b.k.Inputs) > 2 {
		ff := b.k.Inputs[2]
		if ff.DType != ir.F32 || ff.Ne[0] < D/2 || ff.Nb[0] != 4 {
			return b.unsupported("frequency factors %s %v: f32, one per rotated pair", ff.DType, ff.Ne)
		}
		frow, err := b.tensor(C.ACL_FLOAT, []int64{1, D / 2}, []int64{D / 2, 1}, 0, ff.Addr)
		if err != nil {
			return err
		}
		in, err := view(half)
		if err != nil {
			return err
		}
		out, err := view(half)
		if err != nil {
			return err
		}
		b.call(C.IRT_DIV, tensors(in, frow, out))
	}
	if fs := b.attrF("freq_scale", 1); fs != 1 {
		in, err := view(half)
		if err != nil {
			return err
		}
		out, err := view(half)
		if err != nil {
			return err
		}
		a := tensors(in, out)
		if a.s, err = b.scalarF32(float32(fs)); err != nil {
			return err
		}
		b.call(C.IRT_MULS, a)
	}
	shape, strides, pair := pairShape(T, D, mode)
	pair[0] = T
	src, err := b.tensor(C.ACL_FLOAT, pair, contiguous(pair), 0, half)
	if err != nil {
		return err
	}
	full, err := b.tensor(C.ACL_FLOAT, shape, strides, 0, rt.ang)
	if err != nil {
		return err
	}
	b.call(C.IRT_INPLACECOPY, tensors(full, src))
	for _, f := range []struct {
		op  C.int
		dst device.Ptr
	}{{C.IRT_COS, rt.cos}, {C.IRT_SIN, rt.sin}} {
		in, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang)
		if err != nil {
			return err
		}
		o, err := b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, f.dst)
		if err != nil {
			return err
		}
		b.call(f.op, tensors(in, o))
	}
	return b.irTable(rt, cache, mode)
}

// ropeInputs resolves x and the full-width tables of its cache operand.
func (b *builder) ropeInputs(x, cache device.TensorDesc) (ropeTables, int64, error) {
	D, T := x.Ne[0], x.Ne[2]
	mode, err := b.ropeCheck(D)
	if err != nil {
		return ropeTables{}, 0, err
	}
	if x.DType != ir.F32 || x.Ne[3] != 1 || cache.Ne[0] != D || cache.Ne[1] != T {
		return ropeTables{}, 0, b.unsupported("rope of %s %v with a table %v", x.DType, x.Ne, cache.Ne)
	}
	b.n.cmu.Lock()
	_, ok := b.n.tables[ropeKey(cache)]
	b.n.cmu.Unlock()
	if !ok {
		// The table was made elsewhere (a rope_cache the partition left
		// on the CPU, copied in): spread it into full-width tables of
		// this kernel's own, every launch.
		rt, err := b.spreadTable(cache, mode)
		if err != nil {
			return ropeTables{}, 0, err
		}
		return rt, aclRopeMode(mode), nil
	}
	rt, err := b.ropeTables(cache)
	if err != nil {
		return ropeTables{}, 0, err
	}
	return rt, aclRopeMode(mode), nil
}

// spreadTable copies the IR's RoPE table cache ([D, T] f32, pair i of
// position t = (cos, sin) at rows 2i, 2i+1) into full-width cos and sin
// tables in scratch of its own (two aclnnInplaceCopy broadcasting each
// value over its pair's two columns): irTable's inverse, for a table no
// rope_cache launch on this device made.
func (b *builder) spreadTable(cache device.TensorDesc, mode int64) (ropeTables, error) {
	T, D := cache.Ne[1], cache.Ne[0]
	if cache.DType != ir.F32 || cache.Nb[0] != 4 || cache.Nb[1] != 4*D || D%2 != 0 {
		return ropeTables{}, b.unsupported("a RoPE table %s %v with strides %v: dense f32 [D, T]", cache.DType, cache.Ne, cache.Nb)
	}
	p, err := b.buffer(fmt.Sprintf("rope_tables_from_ir[%d,%d]", D, T), 4*2*T*D)
	if err != nil {
		return ropeTables{}, err
	}
	rt := ropeTables{T: T, D: D, cos: p, sin: p + device.Ptr(4*T*D)}
	shape, strides, _ := pairShape(T, D, mode)
	src, sstr := []int64{T, D / 2, 1}, []int64{D, 2, 1}
	if mode == 2 {
		src, sstr = []int64{T, 1, D / 2}, []int64{D, 1, 2}
	}
	for k, dst := range []device.Ptr{rt.cos, rt.sin} {
		dt, err := b.tensor(C.ACL_FLOAT, shape, strides, 0, dst)
		if err != nil {
			return ropeTables{}, err
		}
		st, err := b.tensor(C.ACL_FLOAT, src, sstr, int64(k), cache.Addr)
		if err != nil {
			return ropeTables{}, err
		}
		b.call(C.IRT_INPLACECOPY, tensors(dt, st))
	}
	return rt, nil
}

// rope calls aclnnRotaryPositionEmbedding on x [D, H, T, 1] (BSND in ACL
// order) into out.
func (b *builder) rope(x device.TensorDesc, xt C.uintptr_t, rt ropeTables, mode int64, out C.uintptr_t) error {
	ct, err := b.tensor(C.ACL_FLOAT, []int64{1, rt.T, 1, rt.D}, []int64{rt.T * rt.D, rt.D, rt.D, 1}, 0, rt.cos)
	if err != nil {
		return err
	}
	st, err := b.tensor(C.ACL_FLOAT, []int64{1, rt.T, 1, rt.D}, []int64{rt.T * rt.D, rt.D, rt.D, 1}, 0, rt.sin)
	if err != nil {
		return err
	}
	a := tensors(xt, ct, st, out)
	a.i[0] = C.int64_t(mode)
	b.call(C.IRT_ROPE, a)
	return nil
}

func ropeApply(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	x, cache, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	rt, mode, err := b.ropeInputs(x, cache)
	if err != nil {
		return err
	}
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	return b.rope(x, xt, rt, mode, ot)
}

// ropeApplySetRows writes rope(x) of token t into row idx[t] of dst, the
// heads of a token laid end to end (the K-cache write).
func ropeApplySetRows(b *builder) error {
	if err := b.inputs(4); err != nil {
		return err
	}
	dst, x, cache, idx := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Inputs[3]
	if err := b.checkRowWrite(dst, x, idx); err != nil {
		return err
	}
	rt, mode, err := b.ropeInputs(x, cache)
	if err != nil {
		return err
	}
	return b.ropeRows(dst, x, idx, rt, mode)
}

// ropeSetRows is rope_set_rows(dst, x, pos, idx): the tables from the
// positions as the rope recipe makes them, then the rotation and the row
// scatter of rope_apply_set_rows.
func ropeSetRows(b *builder) error {
	if err := b.inputs(4); err != nil {
		return err
	}
	dst, x, pos, idx := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Inputs[3]
	if err := b.checkRowWrite(dst, x, idx); err != nil {
		return err
	}
	D, T := x.Ne[0], x.Ne[2]
	mode, err := b.ropeCheck(D)
	if err != nil {
		return err
	}
	if x.DType != ir.F32 || x.Ne[3] != 1 || pos.DType != ir.I32 || pos.Ne[0] != T || !rows2D(pos) || pos.Ne[1] != 1 {
		return b.unsupported("rope_set_rows of %s %v at positions %s %v", x.DType, x.Ne, pos.DType, pos.Ne)
	}
	rt, err := b.scratchTables(T, D)
	if err != nil {
		return err
	}
	if err := b.angles(pos, nil, rt, mode); err != nil {
		return err
	}
	return b.ropeRows(dst, x, idx, rt, aclRopeMode(mode))
}

// aclRopeMode is aclnnRotaryPositionEmbedding's mode for a ggml rope mode:
// ggml's normal rotation of adjacent pairs is aclnn's "interleave" (1),
// neox's rotation of halves aclnn's "half" (0).
func aclRopeMode(mode int64) int64 {
	if mode == 2 {
		return 0
	}
	return 1
}

// scratchTables is device scratch for the tables of a rope that makes its
// own from positions, shared by every such kernel of shape [T, D] (each
// writes it before reading it, in stream order).
func (b *builder) scratchTables(T, D int64) (ropeTables, error) {
	p, err := b.buffer(fmt.Sprintf("rope_scratch[%d,%d]", T, D), 4*(T+3*T*D))
	if err != nil {
		return ropeTables{}, err
	}
	return ropeTables{T: T, D: D, pos: p, ang: p + device.Ptr(4*T), cos: p + device.Ptr(4*(T+T*D)), sin: p + device.Ptr(4*(T+2*T*D))}, nil
}

func (b *builder) checkRowWrite(dst, x, idx device.TensorDesc) error {
	D, H, T := x.Ne[0], x.Ne[1], x.Ne[2]
	if !rows2D(dst) || dst.Ne[0] != D*H || !rows2D(idx) || idx.Ne[1] != 1 || idx.Ne[0] != T {
		return b.unsupported("%s of %v into %v by %v", b.k.Op, x.Ne, dst.Ne, idx.Ne)
	}
	return nil
}

// ropeRows rotates x [D, H, T] into f32 rows staged in the workspace,
// casts them to dst's type when it differs and scatters row t to row idx[t]
// of dst (aclnnInplaceIndexCopy along dim 0).
func (b *builder) ropeRows(dst, x, idx device.TensorDesc, rt ropeTables, mode int64) error {
	D, H, T := x.Ne[0], x.Ne[1], x.Ne[2]
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	rows, err := b.temp("roped rows", 4*T*H*D, 32)
	if err != nil {
		return err
	}
	shape := []int64{1, T, H, D}
	rot, err := b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, rows)
	if err != nil {
		return err
	}
	if err := b.rope(x, xt, rt, mode, rot); err != nil {
		return err
	}
	src, srcType := rows, C.int(C.ACL_FLOAT)
	if dst.DType != ir.F32 {
		dd, ok := aclDType(dst.DType)
		if !ok {
			return b.unsupported("rows into %s", dst.DType)
		}
		cast, err := b.temp("cast rows", dst.DType.TypeSize()*T*H*D, 32)
		if err != nil {
			return err
		}
		in, err := b.tensor(C.ACL_FLOAT, []int64{T, H * D}, []int64{H * D, 1}, 0, rows)
		if err != nil {
			return err
		}
		ct, err := b.tensor(dd, []int64{T, H * D}, []int64{H * D, 1}, 0, cast)
		if err != nil {
			return err
		}
		c := tensors(in, ct)
		c.i[0] = C.int64_t(dd)
		b.call(C.IRT_CAST, c)
		src, srcType = cast, dd
	}
	dt, err := b.desc("selfRef", dst, 2)
	if err != nil {
		return err
	}
	it, err := b.desc("index", idx, 1)
	if err != nil {
		return err
	}
	st, err := b.tensor(srcType, []int64{T, H * D}, []int64{H * D, 1}, 0, src)
	if err != nil {
		return err
	}
	a := tensors(dt, it, st)
	a.i[0] = 0
	b.call(C.IRT_INDEXCOPY, a)
	return nil
}

// bsnd is a ggml view whose dims 0..2 are (D, S, N) in some order as a
// BSND aclTensor: perm gives, for S, N and D, the ggml dim holding it.
func bsnd(t device.TensorDesc, s, n, d int) ([]int64, []int64, bool) {
	es := t.DType.TypeSize()
	if t.Ne[3] != 1 || es <= 0 {
		return nil, nil, false
	}
	for _, i := range []int{s, n, d} {
		if t.Nb[i]%es != 0 {
			return nil, nil, false
		}
	}
	return []int64{1, t.Ne[s], t.Ne[n], t.Ne[d]}, []int64{t.Nb[3] / es, t.Nb[s] / es, t.Nb[n] / es, t.Nb[d] / es}, true
}

// attention(q, k, v, mask?){scale, max_bias}: q [D, T, H, 1], k [D, KV,
// Hkv, 1], v [KV, Dv, Hkv, 1] (the transposed V view), mask [KV, T', 1, 1]
// with T' ≥ T; out f32 [Dv·H, T, 1, 1].
//
// By default it runs as ggml-cann runs llama.cpp's attention with flash
// attention off, which is also the arithmetic of ggml-cpu: q cast to f16,
// scores = q16 · k16 with f32 results (aclnnMatmul, the KV-head groups
// broadcast over their query heads), aclnnMuls by the scale, aclnnAdd of
// the mask, aclnnSoftmax, the probabilities cast to f16, and out = p16 ·
// v16 with f32 results written straight into the output's
// [Dv·H, T] layout. Options.FlashAttention selects
// aclnnFusedInferAttentionScoreV2 instead (ggml-cann's -fa path), whose
// output is f16 (docs/LOWERING.md says what that costs in precision).
func attention(b *builder) error {
	if b.d.opts.FlashAttention {
		return fusedAttention(b)
	}
	return matmulAttention(b)
}

func matmulAttention(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	q, k, v, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	if mb := b.attrF("max_bias", 0); mb != 0 {
		return b.unsupported("attention with ALiBi (max_bias %g) is not bound", mb)
	}
	D, T, H := q.Ne[0], q.Ne[1], q.Ne[2]
	KV, Hkv, Dv := k.Ne[1], k.Ne[2], v.Ne[1]
	switch {
	case k.DType != ir.F16 || v.DType != ir.F16 || q.DType != ir.F32 || out.DType != ir.F32:
		return b.unsupported("attention of %s q over %s/%s K/V: f32 q, f16 K and V", q.DType, k.DType, v.DType)
	case k.Ne[0] != D || v.Ne[0] != KV || v.Ne[2] != Hkv || Hkv == 0 || H%Hkv != 0 || out.Ne[0] != Dv*H || out.Ne[1] != T || q.Ne[3] != 1 || out.Nb[0] != 4:
		return b.unsupported("attention of q %v, k %v, v %v into %v", q.Ne, k.Ne, v.Ne, out.Ne)
	}
	for _, t := range []device.TensorDesc{q, k, v} {
		if t.Nb[0]%t.DType.TypeSize() != 0 || t.Nb[1]%t.DType.TypeSize() != 0 || t.Nb[2]%t.DType.TypeSize() != 0 {
			return b.unsupported("attention operand with strides %v", t.Nb)
		}
	}
	r := H / Hkv
	e := func(t device.TensorDesc, i int) int64 { return t.Nb[i] / t.DType.TypeSize() }
	// q → f16 [Hkv, r, T, D], contiguous, in the planned workspace.
	q16, err := b.temp("f16 query", 2*H*T*D, 32)
	if err != nil {
		return err
	}
	qin, err := b.tensor(C.ACL_FLOAT, []int64{H, T, D}, []int64{e(q, 2), e(q, 1), e(q, 0)}, 0, q.Addr)
	if err != nil {
		return err
	}
	qout, err := b.tensor(C.ACL_FLOAT16, []int64{H, T, D}, []int64{T * D, D, 1}, 0, q16)
	if err != nil {
		return err
	}
	c := tensors(qin, qout)
	c.i[0] = C.ACL_FLOAT16
	b.call(C.IRT_CAST, c)

	// Scores and probabilities in device scratch shared by the attention
	// kernels of this shape (each writes it before reading it).
	n := H * T * KV
	scratch, err := b.buffer(fmt.Sprintf("attention scores[%d,%d,%d]", H, T, KV), 4*n+4*n+2*n)
	if err != nil {
		return err
	}
	s1, s2, p16 := scratch, scratch+device.Ptr(4*n), scratch+device.Ptr(8*n)
	sShape := []int64{Hkv, r, T, KV}
	sStrides := contiguous(sShape)
	view := func(dt C.int, p device.Ptr) (C.uintptr_t, error) { return b.tensor(dt, sShape, sStrides, 0, p) }
	cube := b.d.cubeMathType()

	qt, err := b.tensor(C.ACL_FLOAT16, []int64{Hkv, r, T, D}, []int64{r * T * D, T * D, D, 1}, 0, q16)
	if err != nil {
		return err
	}
	kt, err := b.tensor(C.ACL_FLOAT16, []int64{Hkv, 1, D, KV}, []int64{e(k, 2), 0, e(k, 0), e(k, 1)}, 0, k.Addr)
	if err != nil {
		return err
	}
	st, err := view(C.ACL_FLOAT, s1)
	if err != nil {
		return err
	}
	mm := tensors(qt, kt, st)
	mm.i[0] = cube
	b.call(C.IRT_MATMUL, mm)

	in, err := view(C.ACL_FLOAT, s1)
	if err != nil {
		return err
	}
	sc, err := view(C.ACL_FLOAT, s2)
	if err != nil {
		return err
	}
	ms := tensors(in, sc)
	if ms.s, err = b.scalarF32(float32(b.attrF("scale", 1))); err != nil {
		return err
	}
	b.call(C.IRT_MULS, ms)
	cur := s2
	if len(b.k.Inputs) > 3 {
		m := b.k.Inputs[3]
		if m.Ne[0] != KV || m.Ne[1] < T || !rows2D(m) || (m.DType != ir.F32 && m.DType != ir.F16) {
			return b.fail(device.ACLErrParamInvalid, "mask %s %v does not cover %d rows of %d keys", m.DType, m.Ne, T, KV)
		}
		md, _ := aclDType(m.DType)
		mt, err := b.tensor(md, []int64{1, 1, T, KV}, []int64{0, 0, e(m, 1), e(m, 0)}, 0, m.Addr)
		if err != nil {
			return err
		}
		a, err := view(C.ACL_FLOAT, s2)
		if err != nil {
			return err
		}
		o, err := view(C.ACL_FLOAT, s1)
		if err != nil {
			return err
		}
		add := tensors(a, mt, o)
		if add.s, err = b.scalarF32(1); err != nil {
			return err
		}
		b.call(C.IRT_ADD, add)
		cur = s1
	}
	smIn, err := view(C.ACL_FLOAT, cur)
	if err != nil {
		return err
	}
	smOut := s1
	if cur == s1 {
		smOut = s2
	}
	so, err := view(C.ACL_FLOAT, smOut)
	if err != nil {
		return err
	}
	sm := tensors(smIn, so)
	sm.i[0] = 3
	b.call(C.IRT_SOFTMAX, sm)
	pin, err := view(C.ACL_FLOAT, smOut)
	if err != nil {
		return err
	}
	pout, err := view(C.ACL_FLOAT16, p16)
	if err != nil {
		return err
	}
	pc := tensors(pin, pout)
	pc.i[0] = C.ACL_FLOAT16
	b.call(C.IRT_CAST, pc)

	pt, err := view(C.ACL_FLOAT16, p16)
	if err != nil {
		return err
	}
	vt, err := b.tensor(C.ACL_FLOAT16, []int64{Hkv, 1, KV, Dv}, []int64{e(v, 2), 0, e(v, 0), e(v, 1)}, 0, v.Addr)
	if err != nil {
		return err
	}
	ot, err := b.tensor(C.ACL_FLOAT, []int64{Hkv, r, T, Dv}, []int64{r * Dv, Dv, out.Nb[1] / 4, 1}, 0, out.Addr)
	if err != nil {
		return err
	}
	pv := tensors(pt, vt, ot)
	pv.i[0] = cube
	b.call(C.IRT_MATMUL, pv)
	return nil
}

// fusedAttention is attention through aclnnFusedInferAttentionScoreV2.
func fusedAttention(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	q, k, v, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	if mb := b.attrF("max_bias", 0); mb != 0 {
		return b.unsupported("attention with ALiBi (max_bias %g) is not bound", mb)
	}
	D, T, H := q.Ne[0], q.Ne[1], q.Ne[2]
	KV, Hkv := k.Ne[1], k.Ne[2]
	if k.DType != ir.F16 || v.DType != ir.F16 {
		return b.unsupported("attention over %s/%s K/V: aclnnFusedInferAttentionScoreV2 reads f16 caches", k.DType, v.DType)
	}
	if k.Ne[0] != D || v.Ne[1] != D || v.Ne[0] != KV || v.Ne[2] != Hkv || Hkv == 0 || H%Hkv != 0 || out.Ne[0] != D*H || out.Ne[1] != T {
		return b.unsupported("attention of q %v, k %v, v %v into %v", q.Ne, k.Ne, v.Ne, out.Ne)
	}
	// q → f16, BSND, contiguous (the operator takes no strided query).
	qs, qst, ok := bsnd(q, 1, 2, 0)
	if !ok || q.DType != ir.F32 {
		return b.unsupported("query %s %v", q.DType, q.Nb)
	}
	qin, err := b.tensor(C.ACL_FLOAT, qs, qst, 0, q.Addr)
	if err != nil {
		return err
	}
	q16, err := b.temp("f16 query", 2*T*H*D, 32)
	if err != nil {
		return err
	}
	o16, err := b.temp("f16 output", 2*T*H*D, 32)
	if err != nil {
		return err
	}
	qshape := []int64{1, T, H, D}
	q16t, err := b.tensor(C.ACL_FLOAT16, qshape, contiguous(qshape), 0, q16)
	if err != nil {
		return err
	}
	c := tensors(qin, q16t)
	c.i[0] = C.ACL_FLOAT16
	b.call(C.IRT_CAST, c)

	ks, kst, ok1 := bsnd(k, 1, 2, 0)
	vs, vst, ok2 := bsnd(v, 0, 2, 1)
	if !ok1 || !ok2 {
		return b.unsupported("K/V views with strides %v / %v", k.Nb, v.Nb)
	}
	kt, err := b.tensor(C.ACL_FLOAT16, ks, kst, 0, k.Addr)
	if err != nil {
		return err
	}
	vt, err := b.tensor(C.ACL_FLOAT16, vs, vst, 0, v.Addr)
	if err != nil {
		return err
	}
	var pse C.uintptr_t
	if len(b.k.Inputs) > 3 {
		m := b.k.Inputs[3]
		if m.Ne[0] != KV || m.Ne[1] < T || !rows2D(m) {
			return b.fail(device.ACLErrParamInvalid, "mask %v does not cover %d rows of %d keys", m.Ne, T, KV)
		}
		// The mask goes in as the position shift, one row per query, the
		// same for every head (head stride 0), as ggml-cann passes it.
		maddr, rowStride := m.Addr, m.Nb[1]/2
		if m.DType == ir.F32 {
			scratch, err := b.buffer(fmt.Sprintf("mask_f16@%#x[%d,%d]", uint64(m.Addr), KV, T), 2*KV*T)
			if err != nil {
				return err
			}
			min, err := b.tensor(C.ACL_FLOAT, []int64{T, KV}, []int64{m.Nb[1] / 4, 1}, 0, m.Addr)
			if err != nil {
				return err
			}
			mout, err := b.tensor(C.ACL_FLOAT16, []int64{T, KV}, []int64{KV, 1}, 0, scratch)
			if err != nil {
				return err
			}
			mc := tensors(min, mout)
			mc.i[0] = C.ACL_FLOAT16
			b.call(C.IRT_CAST, mc)
			maddr, rowStride = scratch, KV
		} else if m.DType != ir.F16 {
			return b.unsupported("a %s mask", m.DType)
		}
		if pse, err = b.tensor(C.ACL_FLOAT16, []int64{1, H, T, KV}, []int64{0, 0, rowStride, 1}, 0, maddr); err != nil {
			return err
		}
	}
	kl := C.irt_aclCreateTensorList(&kt, 1)
	if kl == 0 {
		return newError("aclCreateTensorList", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.adopt(kl, kt)
	vl := C.irt_aclCreateTensorList(&vt, 1)
	if vl == 0 {
		return newError("aclCreateTensorList", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.adopt(vl, vt)
	o16t, err := b.tensor(C.ACL_FLOAT16, qshape, contiguous(qshape), 0, o16)
	if err != nil {
		return err
	}
	q16in, err := b.tensor(C.ACL_FLOAT16, qshape, contiguous(qshape), 0, q16)
	if err != nil {
		return err
	}
	a := tensors(q16in, pse, 0, o16t)
	a.l[0], a.l[1] = kl, vl
	a.f[0] = C.double(b.attrF("scale", 1))
	a.i[0] = C.int64_t(H)
	a.i[1], a.i[2] = 65535, 65535
	a.i[3] = C.int64_t(Hkv)
	a.i[4] = 0
	if T > 1 {
		a.i[5] = 2 // innerPrecise 2 for S > 1, 0 for S == 1, as ggml-cann
	}
	for i, ch := range "BSND" {
		a.layout[i] = C.char(ch)
	}
	b.call(C.IRT_FIA, a)

	o16in, err := b.tensor(C.ACL_FLOAT16, qshape, contiguous(qshape), 0, o16)
	if err != nil {
		return err
	}
	ot, err := b.tensor(C.ACL_FLOAT, qshape, []int64{T * out.Nb[1] / 4, out.Nb[1] / 4, D, 1}, 0, out.Addr)
	if err != nil {
		return err
	}
	back := tensors(o16in, ot)
	back.i[0] = C.ACL_FLOAT
	b.call(C.IRT_CAST, back)
	return nil
}

// adopt moves tensors ts into list l's ownership: destroying the list
// destroys them.
func (b *builder) adopt(l C.uintptr_t, ts ...C.uintptr_t) {
	b.p.lists = append(b.p.lists, l)
	for _, t := range ts {
		for i, x := range b.p.tensors {
			if x == t {
				b.p.tensors = append(b.p.tensors[:i], b.p.tensors[i+1:]...)
				break
			}
		}
	}
}
