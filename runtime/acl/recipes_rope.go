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
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/runtime/device"
)

// The RoPE family: rope, rope_cache, rope_cache_table, rope_apply,
// rope_apply_set_rows and rope_set_rows (the table of recipes.go lists
// their calls), and the angle and cos/sin tables they share.

// rope: aclnnRotaryPositionEmbedding takes full-width cos and sin tables;
// like ggml-cann the binding computes them on the device from the
// positions (so a captured graph recomputes them from each step's
// positions) with rope_cache's angles (builder.angles) [/ freq_factor of
// j's pair] [· freq_scale].
func rope(b *builder) error {
	x, pos, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	D, T := x.Ne[0], x.Ne[2]
	var ff *device.TensorDesc
	if len(b.k.Inputs) > 2 {
		ff = &b.k.Inputs[2]
	}
	mode, err := b.ropeCheck(D)
	if err != nil {
		return err
	}
	switch {
	case x.Ne[3] != 1 || pos.DType != ir.I32 || pos.Ne[0] != T || !rows2D(pos) || pos.Ne[1] != 1:
		return b.unsupported("rope of %v at positions %s %v", x.Ne, pos.DType, pos.Ne)
	case x.DType != ir.F32 || out.DType != ir.F32:
		return b.unsupported("rope of %s: the cos/sin tables are f32", x.DType)
	}
	rt := b.scratchTables(T, D)
	b.angles(pos, ff, rt, mode)
	// x [D, H, T, 1] in ggml order is BSND = [1, T, H, D] in ACL order.
	xt := b.desc("x", x, 4)
	b.rope(xt, rt, aclRopeMode(mode), b.desc("out", out, 4))
	return b.err
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

// ropeTables are the tables a rope_cache kernel writes for its consumers
// (ropeSlot).
func (b *builder) ropeTables(cache device.TensorDesc) ropeTables {
	T, D := cache.Ne[1], cache.Ne[0]
	return tablesAt(b.ropeSlot(cache), T, D)
}

// tablesAt lays out the tables of a [T, D] rope at p: positions, angles,
// cos, sin.
func tablesAt(p device.Ptr, T, D int64) ropeTables {
	return ropeTables{T: T, D: D, pos: p, ang: p + device.Ptr(4*T), cos: p + device.Ptr(4*(T+T*D)), sin: p + device.Ptr(4*(T+2*T*D))}
}

// ropeCheck accepts the RoPE variants the binding computes.
func (b *builder) ropeCheck(head int64) (mode int64, err error) {
	nDims := b.k.Attrs.Rope().NDims
	mode = b.k.Attrs.Rope().Mode
	switch {
	case nDims != head:
		return 0, b.unsupported("partial rope (n_dims %d of head dim %d) is not bound", nDims, head)
	case b.k.Attrs.Rope().ExtFactor != 0:
		return 0, b.unsupported("YaRN rope (ext_factor %g) is not bound", b.k.Attrs.Rope().ExtFactor)
	case b.k.Attrs.Rope().AttnFactor != 1:
		return 0, b.unsupported("rope with attn_factor %g is not bound", b.k.Attrs.Rope().AttnFactor)
	case mode != 0 && mode != 2:
		return 0, b.unsupported("rope mode %d", mode)
	}
	return mode, nil
}

// ropeTheta returns the device table of the full-width rotary frequencies
// freq_scale · base^(-2i/D), where i is the pair index of column j
// (adjacent pairs for ggml's normal mode, halves for neox), shared by every
// kernel with the same parameters (Options.TableRoPEAngles).
func (b *builder) ropeTheta(D, mode int64) device.Ptr {
	base, fscale := b.k.Attrs.Rope().FreqBase, b.k.Attrs.Rope().FreqScale
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
// float32 with C's powf as GNU libc computes it (ggml_rope_cache_init
// multiplies the angle by it once per pair).
func ropeThetaScale(base float64, D int64) float32 {
	return kernels.Powf(float32(base), -2/float32(D))
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
func (b *builder) angles(pos device.TensorDesc, ff *device.TensorDesc, rt ropeTables, mode int64) {
	T, D := rt.T, rt.D
	pt := b.desc("positions", pos, 1)
	if np := b.attrI(ropePositionsAttr, 0); np > 0 && !b.d.opts.TableRoPEAngles {
		tab := b.ropeAngleTable(np, D, mode)
		b.gather(b.tensor(C.ACL_FLOAT, []int64{np, D}, []int64{D, 1}, 0, tab), pt,
			b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang))
		b.scaleAngles(ff, rt, mode)
		return
	}
	b.cast(pt, b.tensor(C.ACL_FLOAT, []int64{T}, []int64{1}, 0, rt.pos), C.ACL_FLOAT)
	// pairView is pair i's two columns of the full-width table [T, D]:
	// 2i and 2i+1 (normal), i and i+D/2 (neox).
	pairView := func(i int64) C.uintptr_t {
		if mode == 2 {
			return b.tensor(C.ACL_FLOAT, []int64{T, 2}, []int64{D, D / 2}, i, rt.ang)
		}
		return b.tensor(C.ACL_FLOAT, []int64{T, 2}, []int64{D, 1}, 2*i, rt.ang)
	}
	pcol := b.tensor(C.ACL_FLOAT, []int64{T, 1}, []int64{1, 1}, 0, rt.pos)
	if b.d.opts.TableRoPEAngles {
		b.tableAngles(pcol, ff, rt, mode)
		return
	}
	b.op(C.IRT_INPLACECOPY, pairView(0), pcol)
	ts := ropeThetaScale(b.k.Attrs.Rope().FreqBase, D)
	for i := int64(1); i < D/2; i++ {
		b.muls(pairView(i-1), pairView(i), ts)
	}
	b.scaleAngles(ff, rt, mode)
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
func (b *builder) ropeAngleTable(P, D, mode int64) device.Ptr {
	base := b.k.Attrs.Rope().FreqBase
	if P*D*4 > 1<<31 {
		b.unsupported("RoPE angle table of %d positions × %d: more than 2 GiB", P, D)
		return 0
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
func (b *builder) scaleAngles(ff *device.TensorDesc, rt ropeTables, mode int64) {
	T, D := rt.T, rt.D
	if ff != nil {
		b.divideByFactors(*ff, rt.ang, T, D, mode)
	}
	if fs := b.k.Attrs.Rope().FreqScale; fs != 1 {
		ang := func() C.uintptr_t { return b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang) }
		b.muls(ang(), ang(), float32(fs))
	}
	b.cosSin(rt)
}

// tableAngles is angles with Options.TableRoPEAngles: angle[t, j] =
// pos[t] · theta[j] (the table of ropeTheta, freq_scale folded in),
// divided by the pair's frequency factor when ff is given, then cos and
// sin.
func (b *builder) tableAngles(pcol C.uintptr_t, ff *device.TensorDesc, rt ropeTables, mode int64) {
	T, D := rt.T, rt.D
	th := b.ropeTheta(D, mode)
	b.op(C.IRT_MUL, pcol, b.tensor(C.ACL_FLOAT, []int64{1, D}, []int64{D, 1}, 0, th),
		b.tensor(C.ACL_FLOAT, []int64{T, D}, []int64{D, 1}, 0, rt.ang))
	if ff != nil {
		b.divideByFactors(*ff, rt.ang, T, D, mode)
	}
	b.cosSin(rt)
}

// cosSin fills rt's cos and sin tables from its angles.
func (b *builder) cosSin(rt ropeTables) {
	full := func(p device.Ptr) C.uintptr_t {
		return b.tensor(C.ACL_FLOAT, []int64{rt.T, rt.D}, []int64{rt.D, 1}, 0, p)
	}
	b.op(C.IRT_COS, full(rt.ang), full(rt.cos))
	b.op(C.IRT_SIN, full(rt.ang), full(rt.sin))
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
func (b *builder) divideByFactors(ff device.TensorDesc, ang device.Ptr, T, D, mode int64) {
	if !b.factorsOK(ff, D) {
		return
	}
	shape, strides, pair := pairShape(T, D, mode)
	ft := b.tensor(C.ACL_FLOAT, pair, contiguous(pair), 0, ff.Addr)
	in := b.tensor(C.ACL_FLOAT, shape, strides, 0, ang)
	b.op(C.IRT_DIV, in, ft, b.tensor(C.ACL_FLOAT, shape, strides, 0, ang))
}

// factorsOK accepts per-pair frequency factors (or inverse frequencies)
// of a head of D: f32, at least one per rotated pair.
func (b *builder) factorsOK(ff device.TensorDesc, D int64) bool {
	if ff.DType != ir.F32 || ff.Ne[0] < D/2 || ff.Nb[0] != 4 {
		b.unsupported("frequency factors %s %v: f32, one per rotated pair", ff.DType, ff.Ne)
		return false
	}
	return true
}

// irTable writes the IR's RoPE table [D, T] (pair i of position t is
// (cos, sin) of angle i at rows 2i, 2i+1) from the full-width tables, where
// angle i sits at column 2i (normal) or i (neox).
func (b *builder) irTable(rt ropeTables, cache device.TensorDesc, mode int64) {
	T, D := rt.T, rt.D
	step := int64(2)
	if mode == 2 {
		step = 1
	}
	for k, src := range []device.Ptr{rt.cos, rt.sin} {
		dst := b.tensor(C.ACL_FLOAT, []int64{T, D / 2}, []int64{D, 2}, int64(k), cache.Addr)
		b.op(C.IRT_INPLACECOPY, dst, b.tensor(C.ACL_FLOAT, []int64{T, D / 2}, []int64{D, step}, 0, src))
	}
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
	rt := b.ropeTables(cache)
	b.angles(pos, ff, rt, mode)
	b.irTable(rt, cache, mode)
	return b.err
}

// ropeCacheTable is rope_cache_table(pos, inv_freq, ff?){freq_scale}: the
// half-width angles pos · inv_freq[i] [/ ff[i]] [· freq_scale] (aclnnMul,
// aclnnDiv, aclnnMuls), spread to full width for
// aclnnRotaryPositionEmbedding (aclnnInplaceCopy, broadcasting each angle
// over its pair's two columns), cos and sin, and the IR table.
func ropeCacheTable(b *builder) error {
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
	rt := b.ropeTables(cache)
	half := b.buffer(fmt.Sprintf("rope_half[%d,%d]", T, D), 4*T*D/2)
	b.cast(b.desc("positions", pos, 1), b.tensor(C.ACL_FLOAT, []int64{T}, []int64{1}, 0, rt.pos), C.ACL_FLOAT)
	hs := []int64{T, D / 2}
	view := func() C.uintptr_t { return b.tensor(C.ACL_FLOAT, hs, contiguous(hs), 0, half) }
	pcol := b.tensor(C.ACL_FLOAT, []int64{T, 1}, []int64{1, 1}, 0, rt.pos)
	irow := b.tensor(C.ACL_FLOAT, []int64{1, D / 2}, []int64{D / 2, 1}, 0, inv.Addr)
	b.op(C.IRT_MUL, pcol, irow, view())
	if len(b.k.Inputs) > 2 {
		ff := b.k.Inputs[2]
		if !b.factorsOK(ff, D) {
			return b.err
		}
		frow := b.tensor(C.ACL_FLOAT, []int64{1, D / 2}, []int64{D / 2, 1}, 0, ff.Addr)
		in := view()
		b.op(C.IRT_DIV, in, frow, view())
	}
	if fs := b.k.Attrs.Rope().FreqScale; fs != 1 {
		b.muls(view(), view(), float32(fs))
	}
	shape, strides, pair := pairShape(T, D, mode)
	pair[0] = T
	src := b.tensor(C.ACL_FLOAT, pair, contiguous(pair), 0, half)
	b.op(C.IRT_INPLACECOPY, b.tensor(C.ACL_FLOAT, shape, strides, 0, rt.ang), src)
	b.cosSin(rt)
	b.irTable(rt, cache, mode)
	return b.err
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
	p, ok := b.n.tables[ropeKey(cache)]
	b.n.cmu.Unlock()
	if !ok {
		// The table was made elsewhere (a rope_cache the partition left
		// on the CPU, copied in): spread it into full-width tables of
		// this kernel's own, every launch.
		rt := b.spreadTable(cache, mode)
		return rt, aclRopeMode(mode), b.err
	}
	return tablesAt(p, T, D), aclRopeMode(mode), b.err
}

// spreadTable copies the IR's RoPE table cache ([D, T] f32, pair i of
// position t = (cos, sin) at rows 2i, 2i+1) into full-width cos and sin
// tables in scratch of its own (two aclnnInplaceCopy broadcasting each
// value over its pair's two columns): irTable's inverse, for a table no
// rope_cache launch on this device made.
func (b *builder) spreadTable(cache device.TensorDesc, mode int64) ropeTables {
	T, D := cache.Ne[1], cache.Ne[0]
	if cache.DType != ir.F32 || cache.Nb[0] != 4 || cache.Nb[1] != 4*D || D%2 != 0 {
		b.unsupported("a RoPE table %s %v with strides %v: dense f32 [D, T]", cache.DType, cache.Ne, cache.Nb)
		return ropeTables{}
	}
	p := b.buffer(fmt.Sprintf("rope_tables_from_ir[%d,%d]", D, T), 4*2*T*D)
	rt := ropeTables{T: T, D: D, cos: p, sin: p + device.Ptr(4*T*D)}
	shape, strides, _ := pairShape(T, D, mode)
	src, sstr := []int64{T, D / 2, 1}, []int64{D, 2, 1}
	if mode == 2 {
		src, sstr = []int64{T, 1, D / 2}, []int64{D, 1, 2}
	}
	for k, dst := range []device.Ptr{rt.cos, rt.sin} {
		dt := b.tensor(C.ACL_FLOAT, shape, strides, 0, dst)
		b.op(C.IRT_INPLACECOPY, dt, b.tensor(C.ACL_FLOAT, src, sstr, int64(k), cache.Addr))
	}
	return rt
}

// rope calls aclnnRotaryPositionEmbedding on x [D, H, T, 1] (BSND in ACL
// order) into out.
func (b *builder) rope(xt C.uintptr_t, rt ropeTables, mode int64, out C.uintptr_t) {
	table := func(p device.Ptr) C.uintptr_t {
		return b.tensor(C.ACL_FLOAT, []int64{1, rt.T, 1, rt.D}, []int64{rt.T * rt.D, rt.D, rt.D, 1}, 0, p)
	}
	a := tensors(xt, table(rt.cos), table(rt.sin), out)
	a.i[0] = C.int64_t(mode)
	b.call(C.IRT_ROPE, a)
}

func ropeApply(b *builder) error {
	x, cache, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	rt, mode, err := b.ropeInputs(x, cache)
	if err != nil {
		return err
	}
	xt := b.desc("x", x, 4)
	b.rope(xt, rt, mode, b.desc("out", out, 4))
	return b.err
}

// ropeApplySetRows writes rope(x) of token t into row idx[t] of dst, the
// heads of a token laid end to end (the K-cache write).
func ropeApplySetRows(b *builder) error {
	dst, x, cache, idx := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Inputs[3]
	if err := b.checkRowWrite(dst, x, idx); err != nil {
		return err
	}
	rt, mode, err := b.ropeInputs(x, cache)
	if err != nil {
		return err
	}
	b.ropeRows(dst, x, idx, rt, mode)
	return b.err
}

// ropeSetRows is rope_set_rows(dst, x, pos, idx): the tables from the
// positions as the rope recipe makes them, then the rotation and the row
// scatter of rope_apply_set_rows.
func ropeSetRows(b *builder) error {
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
	rt := b.scratchTables(T, D)
	b.angles(pos, nil, rt, mode)
	b.ropeRows(dst, x, idx, rt, aclRopeMode(mode))
	return b.err
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
func (b *builder) scratchTables(T, D int64) ropeTables {
	return tablesAt(b.buffer(fmt.Sprintf("rope_scratch[%d,%d]", T, D), 4*(T+3*T*D)), T, D)
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
func (b *builder) ropeRows(dst, x, idx device.TensorDesc, rt ropeTables, mode int64) {
	D, H, T := x.Ne[0], x.Ne[1], x.Ne[2]
	xt := b.desc("x", x, 4)
	rows := b.temp("roped rows", 4*T*H*D, 32)
	shape := []int64{1, T, H, D}
	b.rope(xt, rt, mode, b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, rows))
	src, srcType := rows, C.int(C.ACL_FLOAT)
	if dst.DType != ir.F32 {
		dd, ok := aclDType(dst.DType)
		if !ok {
			b.unsupported("rows into %s", dst.DType)
			return
		}
		cast := b.temp("cast rows", dst.DType.TypeSize()*T*H*D, 32)
		in := b.tensor(C.ACL_FLOAT, []int64{T, H * D}, []int64{H * D, 1}, 0, rows)
		b.cast(in, b.tensor(dd, []int64{T, H * D}, []int64{H * D, 1}, 0, cast), dd)
		src, srcType = cast, dd
	}
	dt := b.desc("selfRef", dst, 2)
	it := b.desc("index", idx, 1)
	b.indexCopy(dt, it, b.tensor(srcType, []int64{T, H * D}, []int64{H * D, 1}, 0, src))
}
