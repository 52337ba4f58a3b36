package kernels

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
)

// QuantMode selects the arithmetic of matrix products with quantised
// weights.
type QuantMode int

const (
	// QuantGGML reproduces llama.cpp's CPU backend: activations are
	// quantised to the weight type's vec_dot_type (Q8_0 for Q4_0, Q5_0 and
	// Q8_0 weights, Q8_1 for Q4_1 and Q5_1, Q8_K for Q2_K … Q6_K, Q8_0
	// for IQ4_NL, Q8_K for IQ4_XS) and multiplied with exact integer dot
	// products per block, scaled in float32. Weight types without an
	// integer path here (the other IQ types, …) fall back to QuantDequant.
	QuantGGML QuantMode = iota
	// QuantDequant dequantises each weight row to float32 (exactly as
	// ggml's to_float) and takes float32 dot products with the unrounded
	// activations: what llama.cpp computes on an F32 file holding the
	// dequantised weights (the reference's *.dequant-f32 runs).
	QuantDequant
)

// String names the mode as the CLI spells it.
func (m QuantMode) String() string {
	switch m {
	case QuantDequant:
		return "dequant"
	case QuantGGML:
		return "ggml"
	}
	return fmt.Sprintf("QuantMode(%d)", int(m))
}

// ParseQuantMode maps "dequant" or "ggml" to a QuantMode.
func ParseQuantMode(s string) (QuantMode, error) {
	switch s {
	case "dequant":
		return QuantDequant, nil
	case "ggml":
		return QuantGGML, nil
	}
	return 0, fmt.Errorf("kernels: unknown quant mode %q (want dequant or ggml)", s)
}

// matmul kinds.
type mmKind int

const (
	mmFloat mmKind = iota // a rows as float32, b float32 (rounded to a's vec_dot_type)
	mmQ8_0                // a unpacked to int8 blocks of 32, b quantised to Q8_0
	mmQ8_K                // a unpacked K-quant, b quantised to Q8_K
)

// matmul is one prepared product: the activation columns converted once.
type matmul struct {
	kind  mmKind
	a, b  Tensor
	k     int   // inner dimension
	n     int64 // columns per b batch (b.Ne[1])
	bf    []float32
	bq    q8Row
	aView bool // a rows can be read in place as float32
	raw   bool // a rows are multiplied straight from their bytes (few columns, or SIMD)
	// repack: Q4_0 weights that llama.cpp repacks to q4_0_8x8 (a 2-D
	// matrix with a multiple of 8 rows, F32 activations): products in that
	// layout's order (dotQ4_0x8), eight rows at a time.
	repack bool
	// packed: repack rows are also laid out by packQ4_0x8 once per tile
	// (assembly, at least four columns) for gemmQ4_0x8Packed.
	packed bool
	// iq4x8: IQ4_NL weights that llama.cpp repacks to iq4_nl_8x8 (iq4.go),
	// eight rows at a time.
	iq4x8 bool
	// pk: a repack matrix's interleaved copy (WeightPacks.q4x8i), read
	// instead of its rows when not nil.
	pk []byte
	// dotK: the K-quant dot product of the build (qkDot): dotQK, or
	// dotQ4Kx8 for a Q4_K matrix llama.cpp repacks to q4_K_8x8.
	dotK func(*qkRow, q8Row) float32
	// dotK4: for columns j < n − n mod 4 when not nil (qkDotGemm).
	dotK4 func(*qkRow, q8Row) float32
	negs  []bool // per activation column: its Q8_0 values hold -128
	// vec: float kind only (not BF16), products follow
	// ggml_vec_dot_f32/f16 (dotVec) instead of tinyBLAS (dotF32): where
	// llamafile_sgemm declines, i.e. one column per b batch (n < 2) or an
	// inner dimension that is not a multiple of 8.
	vec    bool
	vecF16 bool // vec with F16 weights (ggml_vec_dot_f16)
	// wide: F16 rows read raw (AVX2) in tinyBLAS's order with at least
	// four columns per b batch: each tile also widens its rows to float32
	// once (tile.wide), for the 3x4 register tile (dotF32x3x4FMA) that
	// converts nothing in its loop. The products of F16 values are exact,
	// so the FMAs give the bits of dotF16F32.
	wide bool
	// q8x: Q8_0 rows read raw (AVX2) with at least four columns per b
	// batch: pairs of rows meet groups of four columns in dotQ8_0x2x4,
	// which takes the columns' scales from dc4 (per group of four columns
	// c..c+3, c a multiple of 4: per block their four scales).
	q8x bool
	// q50x: Q5_0 rows read raw (AVX2) with at least four columns per b
	// batch: each tile expands its rows once to Q8_0 blocks (tile.q50),
	// which then take q8x's register tiles (the same lanes and FMAs as
	// ggml_vec_dot_q5_0_q8_0, so the same bits).
	q50x bool
	dc4  []float32
	// ns4: with useAVX512, per group of four columns and block, the
	// columns' q8NegLaneSums for the four-row tile dotQ8_0x4x4AVX512.
	ns4 []int32
	// av: vec with dense F32 weights readable in place (every stride a
	// multiple of 4, dim 0 dense): all of a's data as float32, so that
	// runs of rows go to matVecF32 without per-row loads (decode steps).
	av []float32
	// fma: F32 or dequantised weights, whose products are inexact:
	// tinyBLAS's lanes are fused (dotF32FMA, dotF32x4FMA).
	fma    bool
	r2, r3 int64
	cols   int                   // activation columns (b's rows)
	round  func(float32) float32 // float kind: b's rounding to a's vec_dot_type
	// bDirect: bf is b's own data (F32, contiguous, no rounding): nothing
	// to convert.
	bDirect bool
	bv      []float32 // mmQ8_0: b's data as float32 when it can be read in place
	// Task split of run (schedule): rt weight rows per task.
	rt, tilesPerBatch int64
	tasks             int
	taskWork          int64 // multiply-adds per task
}

func checkMulMat(op string, dst, a, b Tensor) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: src0: %w", op, err)
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: src1: %w", op, err)
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if !canLoad(a.Type) || a.Type.BlockSize() == 1 && !isFloatType(a.Type) {
		return fmt.Errorf("kernels: %s: src0 type %s is not supported", op, a.Type)
	}
	if !isFloatType(b.Type) {
		return fmt.Errorf("kernels: %s: src1 %s must be f32, f16 or bf16", op, b)
	}
	if dst.Type != gguf.TypeF32 {
		return fmt.Errorf("kernels: %s: dst %s must be f32", op, dst)
	}
	if a.Ne[0] != b.Ne[0] {
		return fmt.Errorf("kernels: %s: inner dims differ: src0 %s, src1 %s", op, a, b)
	}
	if a.Ne[2] == 0 || a.Ne[3] == 0 || b.Ne[2]%a.Ne[2] != 0 || b.Ne[3]%a.Ne[3] != 0 {
		return fmt.Errorf("kernels: %s: src0 %s cannot be broadcast over src1 %s in dims 2, 3", op, a, b)
	}
	want := [MaxDims]int64{a.Ne[1], b.Ne[1], b.Ne[2], b.Ne[3]}
	if dst.Ne != want {
		return fmt.Errorf("kernels: %s: dst %s, want shape %v", op, dst, want)
	}
	if a.Ne[0] > math.MaxInt32 || b.NRows()*a.Ne[0] > math.MaxInt32*int64(8) {
		return fmt.Errorf("kernels: %s: operands too large", op)
	}
	if overlaps(dst, a) || overlaps(dst, b) {
		return fmt.Errorf("kernels: %s: dst %s overlaps an operand; a matmul cannot run in place", op, dst)
	}
	return nil
}

// MulMat computes dst = a·b with ggml_mul_mat's semantics and default
// Options: dst[i, j, i2, i3] = dot(row i of a[:, :, i2/r2, i3/r3], row j of
// b[:, :, i2, i3]) where r2 = b.ne2/a.ne2 and r3 = b.ne3/a.ne3 (a is
// broadcast, as for grouped-query attention). dst is F32
// [a.ne1, b.ne1, b.ne2, b.ne3]. a may be any strided F32/F16/BF16 view
// (a KV-cache view) or a quantised weight; b is F32/F16/BF16, any strides.
func MulMat(dst, a, b Tensor) error { return Options{}.MulMat(dst, a, b) }

// MulMat computes dst = a·b (see the package function MulMat) with these
// options. Precision follows llama.cpp's CPU backend: F32 weights take
// float32 dots; F16 (BF16) weights see b rounded to F16 (BF16) first, with
// the exact products summed in float32; quantised weights follow o.Quant.
func (o Options) MulMat(dst, a, b Tensor) (err error) {
	const op = "mul_mat"
	defer guard(op, &err)
	if err := checkMulMat(op, dst, a, b); err != nil {
		return err
	}
	m := prepareMatmul(o, a, b)
	m.run(o, dst)
	return nil
}

// MulMatAdd computes dst = a·b + bias with bias broadcast over dst as Add
// does (a linear layer with bias); bit for bit MulMat followed by Add.
func MulMatAdd(dst, a, b, bias Tensor) error { return Options{}.MulMatAdd(dst, a, b, bias) }

// MulMatAdd is the method form of MulMatAdd.
func (o Options) MulMatAdd(dst, a, b, bias Tensor) (err error) {
	const op = "mul_mat_add"
	defer guard(op, &err)
	if err := checkMulMat(op, dst, a, b); err != nil {
		return err
	}
	if err := checkFloat(op, "bias", bias); err != nil {
		return err
	}
	if !canRepeat(bias, dst) {
		return fmt.Errorf("kernels: %s: bias %s cannot be broadcast over %s", op, bias, dst)
	}
	m := prepareMatmul(o, a, b)
	m.run(o, dst)
	return o.Add(dst, dst, bias)
}

// vecDotRound returns how b's values are rounded for weights of type t in
// the float path (ggml's vec_dot_type conversion), or nil for none.
func vecDotRound(t gguf.GGMLType) func(float32) float32 {
	switch t {
	case gguf.TypeF16:
		return roundF16
	case gguf.TypeBF16:
		return func(v float32) float32 { return gguf.BF16ToF32(gguf.F32ToBF16(v)) }
	}
	return nil
}

func prepareMatmul(o Options, a, b Tensor) *matmul {
	m := newMatmul(o, a, b)
	grain := max(1, (1<<15)/max(m.k, 1))
	parallelFor(o.Pool, o.Threads, m.cols, grain, m.convert)
	return m
}

// newMatmul chooses the arithmetic of a·b and allocates the converted
// activation columns; convert fills them.
func newMatmul(o Options, a, b Tensor) *matmul {
	m := &matmul{a: a, b: b, k: int(a.Ne[0]), n: b.Ne[1], r2: b.Ne[2] / a.Ne[2], r3: b.Ne[3] / a.Ne[3]}
	switch {
	case o.Quant == QuantGGML && (a.Type == gguf.TypeQ8_0 || a.Type == gguf.TypeQ4_0 || a.Type == gguf.TypeQ5_0):
		m.kind = mmQ8_0
	case o.Quant == QuantGGML && (a.Type == gguf.TypeQ4_1 || a.Type == gguf.TypeQ5_1):
		// Q8_1 activations (q8_1.go); rows always read from their bytes.
		m.kind, m.raw = mmQ8_0, true
	case o.Quant == QuantGGML && iq4Raw(a.Type):
		// iq4.go: rows read from their bytes; IQ4_NL with Q8_0
		// activations, IQ4_XS with Q8_K.
		m.kind, m.raw, m.iq4x8 = mmQ8_0, true, iq4nlRepack(o, a, b)
		if a.Type == gguf.TypeIQ4_XS {
			m.kind = mmQ8_K
		}
	case o.Quant == QuantGGML && qkSupported(a.Type):
		m.kind = mmQ8_K
	default:
		m.kind = mmFloat
		m.aView = a.Type == gguf.TypeF32 && (a.Nb[0] == 4 || a.Ne[0] == 1) && hostLittleEndian
		// Dequantised weights (QuantDequant) are multiplied as llama.cpp
		// multiplies F32 weights (its F32 dequantisation of them).
		bf16 := a.Type == gguf.TypeBF16
		if !bf16 && (m.n < 2 || m.k%8 != 0) {
			m.vec, m.vecF16 = true, a.Type == gguf.TypeF16
			if a.Type == gguf.TypeF32 && a.Nb[0] == 4 && a.Nb[1]%4 == 0 && a.Nb[2]%4 == 0 && a.Nb[3]%4 == 0 && m.aView {
				m.av = f32view(a.Data, len(a.Data)/4)
			}
		}
		m.fma = a.Type != gguf.TypeF16 && !bf16
	}
	m.repack = m.kind == mmQ8_0 && a.Type == gguf.TypeQ4_0 && a.Ne[1]%8 == 0 &&
		a.Ne[2] == 1 && a.Ne[3] == 1 && b.Type == gguf.TypeF32
	// A weight row that meets fewer than 4 activation columns is cheaper to
	// multiply straight from its bytes than to decode first (decode steps);
	// the SIMD kernels always read the bytes.
	if m.repack || useAVX2 && m.kind == mmQ8_0 && (a.Type == gguf.TypeQ8_0 || a.Type == gguf.TypeQ4_0) ||
		useAVX2 && m.kind == mmFloat && a.Type == gguf.TypeF16 && (a.Nb[0] == 2 || a.Ne[0] == 1) {
		m.raw = true
	}
	m.packed = m.repack && useAVX2 && m.n*m.r2*m.r3 >= 4
	if m.kind == mmQ8_K {
		m.dotK, m.dotK4 = qkDot(o, a, b), qkDotGemm(o, a, b)
		// Q5_K, Q6_K: the row kernels of kquant.go read the bytes (IQ4_XS
		// and Q2_K/Q3_K are read from their bytes by iq4.go's and k23.go's).
		m.raw = m.raw || kRaw(o, a)
	}
	if m.n*m.r2*m.r3 < 4 {
		switch {
		case m.kind == mmFloat && a.Type == gguf.TypeF16 && (a.Nb[0] == 2 || a.Ne[0] == 1):
			m.raw = true
		case m.kind == mmQ8_0 && (a.Type == gguf.TypeQ8_0 || a.Type == gguf.TypeQ4_0 || a.Type == gguf.TypeQ5_0):
			m.raw = true
		}
	}
	if useAVX2 && m.kind == mmQ8_0 && legacyRaw(a.Type) || m.kind == mmQ8_K && k23Raw(a.Type) {
		m.raw = true // legacy.go's, k23.go's kernels, decode and prefill
	}
	m.wide = useAVX2 && m.raw && m.kind == mmFloat && a.Type == gguf.TypeF16 && !m.vec && m.n >= 4
	m.q8x = useAVX2 && m.raw && m.kind == mmQ8_0 && a.Type == gguf.TypeQ8_0 && m.n >= 4
	m.q50x = useAVX2 && m.raw && m.kind == mmQ8_0 && a.Type == gguf.TypeQ5_0 && m.n >= 4
	cols := int(b.NRows())
	m.cols = cols
	k := m.k
	switch m.kind {
	case mmFloat:
		m.round = vecDotRound(a.Type)
		if m.round == nil && b.Type == gguf.TypeF32 && b.IsContiguous() {
			if v := f32view(b.Data, cols*k); v != nil {
				m.bf = v
				m.bDirect = true
				return m
			}
		}
		m.bf = make([]float32, cols*k)
	case mmQ8_0:
		m.bq = q8Row{qs: make([]int8, cols*k), d: make([]float32, cols*k/32), sum: make([]int32, cols*k/32)}
		if a.Type == gguf.TypeQ4_1 || a.Type == gguf.TypeQ5_1 {
			m.bq.s = make([]float32, cols*k/32)
		}
		m.negs = make([]bool, cols)
		if m.q8x || m.q50x {
			m.dc4 = make([]float32, (cols+3)/4*4*(k/32))
			if useAVX512 {
				m.ns4 = make([]int32, (cols+3)/4*k)
			}
		}
		if b.Type == gguf.TypeF32 && b.IsContiguous() {
			m.bv = f32view(b.Data, cols*k)
		}
	case mmQ8_K:
		m.bq = q8Row{qs: make([]int8, cols*k), d: make([]float32, cols*k/256), bsums: make([]int32, cols*k/16),
			bs16: make([]int16, cols*k/16), b32: make([]int16, cols*k/32)}
	}
	return m
}

// setAData points the product at other weight bytes of a's type and
// layout (another expert of MulMatID's stack), as newMatmul would have
// for them.
func (m *matmul) setAData(d []byte) {
	m.a.Data = d
	if m.av != nil {
		// Same base alignment and strides: f32view succeeds as it did.
		m.av = f32view(d, len(d)/4)
	}
}

// convert converts activation columns [lo, hi) of b, as they are now, into
// the matmul's columns (a no-op when they are read in place).
func (m *matmul) convert(lo, hi int) {
	if m.bDirect {
		return
	}
	var p *[]float32
	if m.kind != mmFloat {
		p = getF32(m.k)
		defer putF32(p)
		m.convertWith(*p, lo, hi)
		return
	}
	m.convertWith(nil, lo, hi)
}

// convertWith is convert with scratch (k floats; unused by the float kind).
func (m *matmul) convertWith(scratch []float32, lo, hi int) {
	if m.bDirect {
		return
	}
	k := m.k
	for c := lo; c < hi; c++ {
		switch m.kind {
		case mmFloat:
			row := m.bf[c*k : (c+1)*k]
			m.loadCol(c, row)
			if m.a.Type == gguf.TypeF16 {
				roundF16Row(row)
			} else if m.round != nil {
				for i, v := range row {
					row[i] = m.round(v)
				}
			}
		case mmQ8_0:
			x := scratch[:k]
			if m.bv != nil {
				x = m.bv[c*k : (c+1)*k]
			} else {
				m.loadCol(c, x)
			}
			qs, sum := m.bq.qs[c*k:(c+1)*k], m.bq.sum[c*k/32:(c+1)*k/32]
			m.negs[c] = quantizeQ8_0(x, qs, m.bq.d[c*k/32:(c+1)*k/32])
			if m.dc4 != nil {
				nb := k / 32
				dc := m.dc4[c/4*4*nb:]
				for b, d := range m.bq.d[c*nb : (c+1)*nb] {
					dc[4*b+c%4] = d
				}
				if m.ns4 != nil {
					q8NegLaneSums(qs, c%4, m.ns4[c/4*k:(c/4+1)*k])
				}
			}
			blockSums32(qs, sum)
			if m.bq.s != nil {
				q8_1Sums(x, qs, m.bq.s[c*k/32:(c+1)*k/32])
			}
		case mmQ8_K:
			x := scratch[:k]
			m.loadCol(c, x)
			quantizeQ8_K(x, m.bq.qs[c*k:(c+1)*k], m.bq.d[c*k/256:(c+1)*k/256], m.bq.bsums[c*k/16:(c+1)*k/16])
			q8KExtra(m.bq.bsums[c*k/16:(c+1)*k/16], m.bq.bs16[c*k/16:(c+1)*k/16], m.bq.b32[c*k/32:(c+1)*k/32])
		}
	}
}

// loadCol decodes activation column c of b into row.
func (m *matmul) loadCol(c int, row []float32) {
	i1, i2, i3 := rowIndex(int64(c), m.b.Ne)
	if err := loadRowInto(m.b, m.b.rowOff(i1, i2, i3), row); err != nil {
		panic(err)
	}
}

// col returns activation column c (float kind).
func (m *matmul) col(c int64) []float32 { return m.bf[int(c)*m.k : int(c+1)*m.k] }

// q8col returns activation column c (integer kinds).
func (m *matmul) q8col(c int64) q8Row {
	k := m.k
	r := q8Row{qs: m.bq.qs[int(c)*k : int(c+1)*k]}
	switch m.kind {
	case mmQ8_0:
		r.d = m.bq.d[int(c)*k/32 : int(c+1)*k/32]
		r.sum = m.bq.sum[int(c)*k/32 : int(c+1)*k/32]
		r.neg = m.negs[c]
		if m.bq.s != nil {
			r.s = m.bq.s[int(c)*k/32 : int(c+1)*k/32]
		}
	case mmQ8_K:
		r.d = m.bq.d[int(c)*k/256 : int(c+1)*k/256]
		r.bsums = m.bq.bsums[int(c)*k/16 : int(c+1)*k/16]
		r.bs16 = m.bq.bs16[int(c)*k/16 : int(c+1)*k/16]
		r.b32 = m.bq.b32[int(c)*k/32 : int(c+1)*k/32]
	}
	return r
}

// dstWriter stores output elements: in place into F32 data when every
// stride is a multiple of 4 and the data is aligned, else through storeElem.
type dstWriter struct {
	t    Tensor
	view []float32
}

func newDstWriter(t Tensor) dstWriter {
	w := dstWriter{t: t}
	if t.Type == gguf.TypeF32 && t.Nb[0]%4 == 0 && t.Nb[1]%4 == 0 && t.Nb[2]%4 == 0 && t.Nb[3]%4 == 0 {
		w.view = f32view(t.Data, len(t.Data)/4)
	}
	return w
}

func (w *dstWriter) put(i0, i1, i2, i3 int64, v float32) {
	if w.view != nil {
		nb := &w.t.Nb
		w.view[(i0*nb[0]+i1*nb[1]+i2*nb[2]+i3*nb[3])/4] = v
		return
	}
	w.putSlow(i0, i1, i2, i3, v)
}

// col returns dst[:, i1, i2, i3] as a float32 slice when dst is F32 and
// dense along dim 0 (written in place), else nil (use put).
func (w *dstWriter) col(i1, i2, i3 int64) []float32 {
	if w.view == nil || w.t.Nb[0] != 4 {
		return nil
	}
	off := (i1*w.t.Nb[1] + i2*w.t.Nb[2] + i3*w.t.Nb[3]) / 4
	return w.view[off : off+w.t.Ne[0]]
}

// put4 stores v[c] at dst[i, j+c, i2, i3] for c < len(v), through the
// column slices d when they are there.
func (w *dstWriter) put4(d *[4][]float32, i, j, i2, i3 int64, v []float32) {
	for c, x := range v {
		if d[c] != nil {
			d[c][i] = x
		} else {
			w.put(i, j+int64(c), i2, i3, x)
		}
	}
}

// cols4 returns the column slices of dst[:, j..j+3, i2, i3] (see col).
func (w *dstWriter) cols4(j, i2, i3 int64) (d [4][]float32) {
	for c := range d {
		d[c] = w.col(j+int64(c), i2, i3)
	}
	return d
}

func (w *dstWriter) putSlow(i0, i1, i2, i3 int64, v float32) {
	storeElem(w.t.Type, w.t.Data[w.t.offset(i0, i1, i2, i3):], v)
}

// schedule splits the product into tasks of rt weight rows of one weight
// batch for w workers, and returns the grain (tasks per chunk) that keeps
// tiny products on one goroutine.
func (m *matmul) schedule(w int) (grain int) {
	a := m.a
	M := a.Ne[1]
	nA := a.Ne[2] * a.Ne[3]
	k := m.k
	// Rows per task: about 32 KiB of decoded weights, at least 1; rows
	// read in place (raw) are not decoded, and a tile of about 160 KiB of
	// them stays in L2 while every group of activation columns passes over
	// it (the GEMM blocking of the prefill).
	rowBytes, budget := 4*k, 32<<10
	if m.raw {
		rowBytes, budget = k/a.Type.BlockSize()*a.Type.TypeSize(), 160<<10
	}
	rt := int64(max(1, min(64, budget/max(rowBytes, 1))))
	for rt > 1 && nA*((M+rt-1)/rt) < int64(4*w) {
		rt /= 2
	}
	if m.repack || m.kind == mmQ8_K && m.pk != nil || m.iq4x8 {
		rt = max(8, rt&^7) // whole groups of 8 rows
	}
	if m.wide && rt > 3 {
		rt -= rt % 3 // whole register tiles of 3 rows
		if useAVX512 && rt > 6 {
			rt -= rt % 6 // or of 6 rows (dotF32x6x4FMA)
		}
	}
	m.rt = rt
	m.tilesPerBatch = (M + rt - 1) / rt
	m.tasks = int(nA * m.tilesPerBatch)
	if M == 0 || nA == 0 || m.n == 0 {
		m.tasks = 0
	}
	// Work per task in multiply-adds, to keep tiny products on one goroutine.
	perTask := rt * int64(k) * m.n * m.r2 * m.r3
	m.taskWork = perTask
	return int(max(1, (1<<16)/max(perTask, 1)))
}

// run computes every output element. Work is split into tasks of a few
// weight rows of one weight batch; a task decodes its rows once and
// multiplies them with every activation column of every b batch that
// broadcasts to that weight batch.
func (m *matmul) run(o Options, dst Tensor) {
	grain := m.schedule(workers(o.Threads, 1<<30))
	if m.tasks == 0 || dst.NElements() == 0 {
		return
	}
	out := newDstWriter(dst)
	body := func(lo, hi int) {
		tile := newTile(m, int(m.rt))
		m.runTasks(tile, &out, lo, hi)
		tile.release()
	}
	if m.n*m.r2*m.r3 >= 4 && m.taskWork >= 1<<20 {
		// Prefill tiles: one per chunk, so that both workers stay busy to
		// the end of a product with few tiles.
		parallelForEach(o.Pool, o.Threads, m.tasks, body)
		return
	}
	parallelFor(o.Pool, o.Threads, m.tasks, grain, body)
}

// runTasks computes tasks [lo, hi) of the schedule with one tile.
func (m *matmul) runTasks(tile *tile, out *dstWriter, lo, hi int) {
	if m.av != nil && out.view != nil && out.t.Nb[0] == 4 {
		m.runVecTasks(out, lo, hi)
		return
	}
	if m.raw && m.vecF16 && m.a.Nb[0] == 2 && out.view != nil && out.t.Nb[0] == 4 {
		m.runVecF16Tasks(out, lo, hi)
		return
	}
	if m.wide {
		p := getWide(int(m.rt) * m.k)
		tile.wide = *p
		m.runTiles(tile, out, lo, hi)
		tile.wide = nil
		widePool.Put(p)
		return
	}
	m.runTiles(tile, out, lo, hi)
}

// runTiles is runTasks' loop over its tasks.
func (m *matmul) runTiles(tile *tile, out *dstWriter, lo, hi int) {
	a := m.a
	M, rt := a.Ne[1], m.rt
	for t := lo; t < hi; t++ {
		ab := int64(t) / m.tilesPerBatch
		r0 := (int64(t) % m.tilesPerBatch) * rt
		r1 := min(M, r0+rt)
		i02, i03 := ab%a.Ne[2], ab/a.Ne[2]
		tile.load(m, r0, r1, i02, i03)
		for i13 := i03 * m.r3; i13 < (i03+1)*m.r3; i13++ {
			for i12 := i02 * m.r2; i12 < (i02+1)*m.r2; i12++ {
				base := m.n * (i12 + m.b.Ne[2]*i13)
				tile.mul(m, out, r0, r1, base, i12, i13)
			}
		}
	}
}

// runVecTasks is runTasks for F32 weights read in place (m.av) whose
// products are dotVec's (m.vec) into a dst dense along dim 0: the tasks'
// rows of one weight batch form one run, multiplied with each activation
// column by one matVecF32 call that writes the dst column directly. Every
// element is dotVec(row, column, false), as tile.mul computes it.
func (m *matmul) runVecTasks(out *dstWriter, lo, hi int) {
	a := m.a
	M, rt, tpb := a.Ne[1], m.rt, m.tilesPerBatch
	stride := int(a.Nb[1] / 4)
	for t := int64(lo); t < int64(hi); {
		ab := t / tpb
		end := min(int64(hi), (ab+1)*tpb)
		r0, r1 := (t%tpb)*rt, min(M, ((end-1)%tpb+1)*rt)
		t = end
		i02, i03 := ab%a.Ne[2], ab/a.Ne[2]
		rows := m.av[a.rowOff(r0, i02, i03)/4:]
		for i13 := i03 * m.r3; i13 < (i03+1)*m.r3; i13++ {
			for i12 := i02 * m.r2; i12 < (i02+1)*m.r2; i12++ {
				base := m.n * (i12 + m.b.Ne[2]*i13)
				for j := range m.n {
					matVecF32(rows, stride, m.col(base+j), out.col(j, i12, i13)[r0:r1])
				}
			}
		}
	}
}

// runVecF16Tasks is runVecTasks for F16 weights read raw (m.raw, m.vecF16,
// dim 0 dense) into a dst dense along dim 0: the tasks' rows of one weight
// batch form one run, multiplied with each activation column by one
// matVecF16 call, without a tile. Every element is dotVecF16Raw(row,
// column), as tile.mulRaw computes it.
func (m *matmul) runVecF16Tasks(out *dstWriter, lo, hi int) {
	a := m.a
	M, rt, tpb := a.Ne[1], m.rt, m.tilesPerBatch
	stride := int(a.Nb[1])
	for t := int64(lo); t < int64(hi); {
		ab := t / tpb
		end := min(int64(hi), (ab+1)*tpb)
		r0, r1 := (t%tpb)*rt, min(M, ((end-1)%tpb+1)*rt)
		t = end
		i02, i03 := ab%a.Ne[2], ab/a.Ne[2]
		rows := a.Data[a.rowOff(r0, i02, i03):]
		for i13 := i03 * m.r3; i13 < (i03+1)*m.r3; i13++ {
			for i12 := i02 * m.r2; i12 < (i02+1)*m.r2; i12++ {
				base := m.n * (i12 + m.b.Ne[2]*i13)
				for j := range m.n {
					matVecF16(rows, stride, m.col(base+j), out.col(j, i12, i13)[r0:r1])
				}
			}
		}
	}
}

// mulWideZ computes, with the AVX-512 six-row tile, rows [0, nr − nr mod
// 6) of the tile for every full group of four columns when all of their
// dst columns are dense, and returns that row count (0 when it computed
// nothing). Six rows outer, the column groups inner: the six widened rows
// stay in cache while the columns pass, which loads less from L2 than the
// loop over rows per column group when the columns fit in L2 (measured
// with BenchmarkPrefillTile: about 5% faster at 64 columns, much slower
// at 512 columns of 896 values, hence the caller's bound).
func (t *tile) mulWideZ(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) int {
	ng := int(m.n / 4)
	if nr < 6 || ng == 0 {
		return 0
	}
	t.zd, t.zb = t.zd[:0], t.zb[:0]
	for g := range ng {
		j := int64(4 * g)
		d := out.cols4(j, i12, i13)
		if d[0] == nil || d[1] == nil || d[2] == nil || d[3] == nil {
			return 0
		}
		t.zd = append(t.zd, d)
		t.zb = append(t.zb, [4][]float32{m.col(base + j), m.col(base + j + 1), m.col(base + j + 2), m.col(base + j + 3)})
	}
	k, w := m.k, t.wide
	r := 0
	for ; r+6 <= nr; r += 6 {
		var a6 [6][]float32
		for e := range a6 {
			a6[e] = w[(r+e)*k : (r+e+1)*k]
		}
		i := r0 + int64(r)
		for g := range t.zd {
			var o [24]float32
			dotF32x6x4FMA(&a6, &t.zb[g], &o)
			d0, d1, d2, d3 := t.zd[g][0], t.zd[g][1], t.zd[g][2], t.zd[g][3]
			_, _, _, _ = d0[i+5], d1[i+5], d2[i+5], d3[i+5]
			for e := range int64(6) {
				d0[i+e], d1[i+e], d2[i+e], d3[i+e] = o[4*e], o[4*e+1], o[4*e+2], o[4*e+3]
			}
		}
	}
	return r
}

// tile holds decoded weight rows for one task.
type tile struct {
	zd   [][4][]float32 // mulWideZ: per group of four columns, its dst columns
	zb   [][4][]float32 // and its activation columns
	raw  [][]byte       // undecoded rows (matmul.raw)
	q50  [][]byte       // matmul.q50x: the rows as Q8_0 blocks, one buffer
	pack []byte         // rows repacked by packQ4_0x8 (matmul.packed)
	out  []float32      // matmul.pk: one column of results for a strided dst
	out4 []float32      // mmQ8_K rows in place: four columns of results for a strided dst
	rows [][]float32    // float kind
	wide []float32      // matmul.wide: the raw rows widened to float32, k apart
	buf  *[]float32
	q    []int8 // mmQ8_0
	d    []float32
	qk   []*qkRow // mmQ8_K
}

func newTile(m *matmul, rt int) *tile {
	t := &tile{}
	k := m.k
	if m.raw {
		t.raw = make([][]byte, rt)
		if m.packed {
			t.pack = make([]byte, (rt/8)*(k/32)*packedQ4Block)
		}
		if m.pk != nil || m.kind == mmQ8_K || m.iq4x8 || k23Raw(m.a.Type) || m.a.Type == gguf.TypeIQ4_XS {
			t.out = make([]float32, rt)
		}
		if m.kind == mmQ8_K && m.pk == nil {
			t.out4 = make([]float32, 4*rt) // mulRawK's four columns
		}
		if m.q50x {
			stride := k / 32 * 34
			buf := make([]byte, rt*stride)
			t.q50 = make([][]byte, rt)
			for j := range t.q50 {
				t.q50[j] = buf[j*stride:]
			}
		}
		return t
	}
	switch m.kind {
	case mmFloat:
		t.rows = make([][]float32, rt)
		if !m.aView {
			t.buf = getF32(rt * k)
		}
	case mmQ8_0:
		t.q = make([]int8, rt*k)
		t.d = make([]float32, rt*k/32)
	case mmQ8_K:
		t.qk = make([]*qkRow, rt)
		for i := range t.qk {
			t.qk[i] = newQKRow(k)
		}
	}
	return t
}

func (t *tile) release() {
	if t.buf != nil {
		putF32(t.buf)
		t.buf = nil
	}
}

// load decodes weight rows [r0, r1) of batch (i02, i03).
func (t *tile) load(m *matmul, r0, r1, i02, i03 int64) {
	a, k := m.a, m.k
	if m.raw && a.Type == gguf.TypeQ8_0 && m.n < 4 {
		// Decode: mulRaw reads the tile's rows at their stride from the
		// first one.
		t.raw[0] = a.Data[a.rowOff(r0, i02, i03):]
		return
	}
	if m.pk != nil {
		// The interleaved copy is read in place; the GEMM of four or more
		// columns expands its nibbles once per tile.
		if m.packed {
			nb := k / 32
			for g := range int(r1-r0) / 8 {
				src := m.pk[(int(r0)/8+g)*nb*q4x8iBlock:]
				packQ4_0x8i(t.pack[g*nb*packedQ4Block:(g+1)*nb*packedQ4Block], src, nb)
			}
		}
		return
	}
	for r := r0; r < r1; r++ {
		off := a.rowOff(r, i02, i03)
		j := int(r - r0)
		if m.raw {
			t.raw[j] = a.Data[off:]
			if m.q50x {
				q5_0ToQ8_0(t.raw[j], t.q50[j], k/32)
				continue
			}
			if m.wide {
				if err := loadRowInto(a, off, t.wide[j*k:(j+1)*k]); err != nil {
					panic(err)
				}
				continue
			}
			if m.packed && j%8 == 7 {
				nb := k / 32
				g := j / 8
				packQ4_0x8(t.pack[g*nb*packedQ4Block:(g+1)*nb*packedQ4Block], t.raw[j-7], int(a.Nb[1]), nb)
			}
			continue
		}
		switch m.kind {
		case mmFloat:
			if m.aView {
				if v := f32view(a.Data[off:], k); v != nil {
					t.rows[j] = v
					continue
				}
				// Misaligned view: fall back to decoding (no pooled buffer yet).
				if t.buf == nil {
					t.buf = getF32(len(t.rows) * k)
				}
			}
			row := (*t.buf)[j*k : (j+1)*k]
			if err := loadRowInto(a, off, row); err != nil {
				panic(err)
			}
			t.rows[j] = row
		case mmQ8_0:
			src := a.Data[off:]
			q, d := t.q[j*k:(j+1)*k], t.d[j*k/32:(j+1)*k/32]
			switch a.Type {
			case gguf.TypeQ8_0:
				unpackQ8_0(src, q, d)
			case gguf.TypeQ4_0:
				unpackQ4_0(src, q, d)
			case gguf.TypeQ5_0:
				unpackQ5_0(src, q, d)
			}
		case mmQ8_K:
			unpackQK(a.Type, a.Data[off:], t.qk[j])
		}
	}
}

// mul multiplies the loaded rows [r0, r1) with the n columns starting at
// column base and writes dst[:, :, i12, i13].
func (t *tile) mul(m *matmul, out *dstWriter, r0, r1, base, i12, i13 int64) {
	k := m.k
	nr := int(r1 - r0)
	if m.raw {
		t.mulRaw(m, out, r0, nr, base, i12, i13)
		return
	}
	switch m.kind {
	case mmFloat:
		rows := t.rows[:nr]
		var j int64
		if m.vec {
			for ; j < m.n; j++ {
				c := m.col(base + j)
				for r, row := range rows {
					out.put(r0+int64(r), j, i12, i13, dotVec(row, c, m.vecF16))
				}
			}
			return
		}
		for ; j+4 <= m.n; j += 4 {
			c0, c1, c2, c3 := m.col(base+j), m.col(base+j+1), m.col(base+j+2), m.col(base+j+3)
			for r, row := range rows {
				var v0, v1, v2, v3 float32
				if m.fma {
					v0, v1, v2, v3 = dotF32x4FMA(row, c0, c1, c2, c3)
				} else {
					v0, v1, v2, v3 = dotF32x4(row, c0, c1, c2, c3)
				}
				i := r0 + int64(r)
				out.put(i, j, i12, i13, v0)
				out.put(i, j+1, i12, i13, v1)
				out.put(i, j+2, i12, i13, v2)
				out.put(i, j+3, i12, i13, v3)
			}
		}
		for ; j < m.n; j++ {
			c := m.col(base + j)
			for r, row := range rows {
				if m.fma {
					out.put(r0+int64(r), j, i12, i13, dotF32FMA(row, c))
				} else {
					out.put(r0+int64(r), j, i12, i13, dotF32(row, c))
				}
			}
		}
	case mmQ8_0:
		for j := range m.n {
			c := m.q8col(base + j)
			for r := range nr {
				v := dotQ8_0(t.q[r*k:(r+1)*k], t.d[r*k/32:(r+1)*k/32], c.qs, c.d, c.neg)
				out.put(r0+int64(r), j, i12, i13, v)
			}
		}
	case mmQ8_K:
		for j := range m.n {
			dot := m.dotK
			if m.dotK4 != nil && j < m.n-m.n%4 {
				dot = m.dotK4
			}
			c := m.q8col(base + j)
			for r := range nr {
				out.put(r0+int64(r), j, i12, i13, dot(t.qk[r], c))
			}
		}
	}
}

// mulRaw is mul for weight rows read straight from their bytes.
func (t *tile) mulRaw(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	switch {
	case m.kind == mmQ8_K && !k23Raw(m.a.Type) && !iq4Raw(m.a.Type):
		t.mulRawK(m, out, r0, nr, base, i12, i13)
	case m.pk != nil:
		t.mulPk(m, out, r0, nr, base, i12, i13)
	case m.repack:
		t.mulRepack(m, out, r0, nr, base, i12, i13)
	case legacyRaw(m.a.Type):
		t.mulLegacy(m, out, r0, nr, base, i12, i13)
	case iq4Raw(m.a.Type):
		t.mulIQ4(m, out, r0, nr, base, i12, i13)
	case k23Raw(m.a.Type):
		t.mulK23(m, out, r0, nr, base, i12, i13)
	case m.a.Type == gguf.TypeQ8_0:
		t.mulRawQ8_0(m, out, r0, nr, base, i12, i13)
	default:
		t.mulRawRest(m, out, r0, nr, base, i12, i13)
	}
}

// mulRepack is mulRaw for Q4_0 rows in llama.cpp's q4_0_8x8 order, eight
// rows at a time: groups of four columns through the GEMM tile, the rest
// through the GEMV.
func (t *tile) mulRepack(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	stride := int(m.a.Nb[1])
	for r := 0; r < nr; r += 8 {
		src := t.raw[r]
		i := r0 + int64(r)
		var j int64
		for ; j+4 <= m.n; j += 4 {
			cols := [4]q8Row{m.q8col(base + j), m.q8col(base + j + 1), m.q8col(base + j + 2), m.q8col(base + j + 3)}
			var o [4][8]float32
			if m.packed && !cols[0].neg && !cols[1].neg && !cols[2].neg && !cols[3].neg {
				nb := m.k / 32
				gemmQ4_0x8Packed(t.pack[(r/8)*nb*packedQ4Block:(r/8+1)*nb*packedQ4Block], &cols, &o)
			} else {
				dotQ4_0x8x4(src, stride, &cols, &o)
			}
			for c := range o {
				if d := out.col(j+int64(c), i12, i13); d != nil {
					copy(d[i:i+8], o[c][:])
					continue
				}
				for e, v := range o[c] {
					out.put(i+int64(e), j+int64(c), i12, i13, v)
				}
			}
		}
		for ; j < m.n; j++ {
			var o [8]float32
			dotQ4_0x8(src, stride, m.q8col(base+j), &o)
			for e, v := range o {
				out.put(i+int64(e), j, i12, i13, v)
			}
		}
	}
}

// mulRawQ8_0 is mulRaw for Q8_0 rows: groups of four columns through the
// register tiles of mulQ8x (m.q8x) or one row at a time, the other
// columns (every decode step) through one dotQ8_0Rows call per column
// straight into dst when its column is dense.
func (t *tile) mulRawQ8_0(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	stride := int(m.a.Nb[1])
	var j int64
	for ; j+4 <= m.n; j += 4 {
		cols := [4]q8Row{m.q8col(base + j), m.q8col(base + j + 1), m.q8col(base + j + 2), m.q8col(base + j + 3)}
		d := out.cols4(j, i12, i13)
		r := 0
		if m.q8x && (base+j)%4 == 0 {
			r = m.mulQ8x(out, &cols, &d, t.raw, stride, r0, nr, base+j, j, i12, i13)
		}
		for ; r < nr; r++ {
			var o [4]float32
			dotQ8_0Rawx4(t.raw[r], &cols, &o)
			out.put4(&d, r0+int64(r), j, i12, i13, o[:])
		}
	}
	for ; j < m.n; j++ {
		c := m.q8col(base + j)
		if d := out.col(j, i12, i13); d != nil && nr > 0 {
			// Decode: the tile's rows in one kernel call, into dst.
			dotQ8_0Rows(t.raw[0], stride, nr, c, d[r0:r0+int64(nr)])
			continue
		}
		for r := range nr {
			out.put(r0+int64(r), j, i12, i13, dotQ8_0Raw(t.raw[0][r*stride:], c))
		}
	}
}

// mulQ8x multiplies Q8_0 rows (row r at rows[r], which is rows[0][r·stride:])
// with the four activation columns cols (columns g..g+3 of b, g a multiple
// of 4; columns j..j+3 of dst, whose dense columns are d): four rows at a
// time (AVX-512) and then pairs, through q8x2x4. It returns how many of the
// nr rows it did (all but an odd last one).
func (m *matmul) mulQ8x(out *dstWriter, cols *[4]q8Row, d *[4][]float32, rows [][]byte, stride int, r0 int64, nr int, g, j, i12, i13 int64) int {
	nb := m.k / 32
	q := newQ8x2x4(cols, m.dc4[g*int64(nb):(g+4)*int64(nb)])
	r := 0
	if d0, d1, d2, d3 := d[0], d[1], d[2], d[3]; d0 != nil && d1 != nil && d2 != nil && d3 != nil {
		// Dense dst columns: stored in place.
		if m.ns4 != nil && q.asm {
			// Four rows at a time (the rows lie at stride).
			ns := m.ns4[g/4*int64(m.k) : (g/4+1)*int64(m.k)]
			for ; r+4 <= nr; r += 4 {
				var o [16]float32
				q.dot4(rows[r], stride, ns, &o)
				i := r0 + int64(r)
				_, _, _, _ = d0[i+3], d1[i+3], d2[i+3], d3[i+3]
				for e := range int64(4) {
					d0[i+e], d1[i+e], d2[i+e], d3[i+e] = o[4*e], o[4*e+1], o[4*e+2], o[4*e+3]
				}
			}
		}
		if np := (nr - r) / 2; np > 0 {
			// Every row pair in one call (q8x2x4.rows).
			q.rows(rows[r], stride, np, d, int(r0)+r)
			r += 2 * np
		}
	}
	for ; r+2 <= nr; r += 2 {
		var o [8]float32
		q.dot(rows[r], rows[r+1], &o)
		out.put4(d, r0+int64(r), j, i12, i13, o[:4])
		out.put4(d, r0+int64(r+1), j, i12, i13, o[4:])
	}
	return r
}

// mulRawRest is mulRaw for the other raw rows: F16 (tinyBLAS's order,
// four columns at a time through mulF16x4, or ggml_vec_dot_f16's for
// decode) and, without SIMD, Q4_0, Q4_1 and Q5_1 row by row.
func (t *tile) mulRawRest(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	var j0 int64
	if m.a.Type == gguf.TypeF16 && !m.vec {
		rz := 0 // rows every group of four columns has from mulWideZ
		if m.wide && useAVX512 && m.n*int64(m.k)*4 <= 3<<19 {
			// The columns (at most 1.5 MiB) stay in L2.
			rz = t.mulWideZ(m, out, r0, nr, base, i12, i13)
		}
		for ; j0+4 <= m.n; j0 += 4 {
			t.mulF16x4(m, out, r0, nr, rz, base, j0, i12, i13)
		}
	}
	if m.a.Type == gguf.TypeF16 && m.vec && nr > 0 {
		// Decode: the tile's rows in one kernel call, into dst's column
		// when it is dense.
		stride := int(m.a.Nb[1])
		for j := j0; j < m.n; j++ {
			c := m.col(base + j)
			if d := out.col(j, i12, i13); d != nil {
				matVecF16(t.raw[0], stride, c, d[r0:r0+int64(nr)])
				continue
			}
			for r, row := range t.raw[:nr] {
				out.put(r0+int64(r), j, i12, i13, dotVecF16Raw(row, c))
			}
		}
		return
	}
	for j := j0; j < m.n; j++ {
		for r, row := range t.raw[:nr] {
			var v float32
			switch m.a.Type {
			case gguf.TypeF16:
				if m.vec {
					v = dotVecF16Raw(row, m.col(base+j))
				} else {
					v = dotF16F32(row, m.col(base+j))
				}
			case gguf.TypeQ4_0:
				v = dotQ4_0Raw(row, m.q8col(base+j))
			case gguf.TypeQ4_1:
				v = dotQ4_1Raw(row, m.q8col(base+j))
			case gguf.TypeQ5_1:
				v = dotQ5_1Raw(row, m.q8col(base+j))
			}
			out.put(r0+int64(r), j, i12, i13, v)
		}
	}
}

// mulF16x4 multiplies the tile's F16 rows from rz on with activation
// columns j0..j0+3 in tinyBLAS's order: the rows widened once (m.wide)
// through the 6×4 (AVX-512) and 3×4 register tiles, otherwise two F16
// rows at a time.
func (t *tile) mulF16x4(m *matmul, out *dstWriter, r0 int64, nr, rz int, base, j0, i12, i13 int64) {
	c0, c1, c2, c3 := m.col(base+j0), m.col(base+j0+1), m.col(base+j0+2), m.col(base+j0+3)
	d := out.cols4(j0, i12, i13)
	r := rz
	if m.wide {
		k := m.k
		w := t.wide
		if d0, d1, d2, d3 := d[0], d[1], d[2], d[3]; d0 != nil && d1 != nil && d2 != nil && d3 != nil {
			// Dense dst columns: stored in place.
			if useAVX512 {
				b4 := [4][]float32{c0, c1, c2, c3}
				for ; r+6 <= nr; r += 6 {
					var a6 [6][]float32
					for e := range a6 {
						a6[e] = w[(r+e)*k : (r+e+1)*k]
					}
					var o [24]float32
					dotF32x6x4FMA(&a6, &b4, &o)
					i := r0 + int64(r)
					_, _, _, _ = d0[i+5], d1[i+5], d2[i+5], d3[i+5]
					for e := range int64(6) {
						d0[i+e], d1[i+e], d2[i+e], d3[i+e] = o[4*e], o[4*e+1], o[4*e+2], o[4*e+3]
					}
				}
			}
			if nt := (nr - r) / 3; nt > 0 {
				// Every row triple in one call (dotF32x3x4FMARows).
				b4 := [4][]float32{c0, c1, c2, c3}
				dotF32x3x4FMARows(w[r*k:], k, nt, &b4, &d, int(r0)+r)
				r += 3 * nt
			}
		}
		for ; r+3 <= nr; r += 3 {
			var o [12]float32
			dotF32x3x4FMA(w[r*k:(r+1)*k], w[(r+1)*k:(r+2)*k], w[(r+2)*k:(r+3)*k], c0, c1, c2, c3, &o)
			for e := range 3 {
				out.put4(&d, r0+int64(r+e), j0, i12, i13, o[4*e:4*e+4])
			}
		}
		for ; r < nr; r++ {
			var o [4]float32
			o[0], o[1], o[2], o[3] = dotF32x4FMA(w[r*k:(r+1)*k], c0, c1, c2, c3)
			out.put4(&d, r0+int64(r), j0, i12, i13, o[:])
		}
	}
	for ; r+2 <= nr; r += 2 {
		var o [8]float32
		dotF16x2x4(t.raw[r], t.raw[r+1], c0, c1, c2, c3, &o)
		out.put4(&d, r0+int64(r), j0, i12, i13, o[:4])
		out.put4(&d, r0+int64(r+1), j0, i12, i13, o[4:])
	}
	for ; r < nr; r++ {
		var o [4]float32
		dotF16x4(t.raw[r], c0, c1, c2, c3, &o)
		out.put4(&d, r0+int64(r), j0, i12, i13, o[:])
	}
}

// mulPk is mulRaw for a repack matrix read from its interleaved copy: the
// decode path runs every group of the tile in one kernel call, straight
// into dst's column when it is dense.
func (t *tile) mulPk(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	nb, ng := m.k/32, nr/8
	p := m.pk[int(r0)/8*nb*q4x8iBlock : (int(r0)/8+ng)*nb*q4x8iBlock]
	var j int64
	if m.packed {
		for ; j+4 <= m.n; j += 4 {
			cols := [4]q8Row{m.q8col(base + j), m.q8col(base + j + 1), m.q8col(base + j + 2), m.q8col(base + j + 3)}
			neg := cols[0].neg || cols[1].neg || cols[2].neg || cols[3].neg
			d := out.cols4(j, i12, i13)
			for g := range ng {
				var o [4][8]float32
				if !neg {
					gemmQ4_0x8Packed(t.pack[g*nb*packedQ4Block:(g+1)*nb*packedQ4Block], &cols, &o)
				} else {
					for c := range cols {
						dotQ4_0x8i(p[g*nb*q4x8iBlock:], 1, cols[c], o[c][:])
					}
				}
				i := r0 + int64(8*g)
				for c := range o {
					if d[c] != nil {
						copy(d[c][i:i+8], o[c][:])
						continue
					}
					for e, v := range o[c] {
						out.put(i+int64(e), j+int64(c), i12, i13, v)
					}
				}
			}
		}
	}
	for ; j < m.n; j++ {
		c := m.q8col(base + j)
		if d := out.col(j, i12, i13); d != nil {
			dotQ4_0x8i(p, ng, c, d[r0:r0+int64(nr)])
			continue
		}
		dotQ4_0x8i(p, ng, c, t.out[:nr])
		for e, v := range t.out[:nr] {
			out.put(r0+int64(e), j, i12, i13, v)
		}
	}
}

// unpackQ5_0 reads a Q5_0 row (22-byte blocks: f16 d, 32 high bits, 16
// bytes of nibbles) into int8 values (nibble | high bit << 4) - 16.
func unpackQ5_0(src []byte, qs []int8, d []float32) {
	tab := f16tab()
	for b := range d {
		blk := src[b*22 : b*22+22]
		d[b] = tab[uint16(blk[0])|uint16(blk[1])<<8]
		qh := uint32(blk[2]) | uint32(blk[3])<<8 | uint32(blk[4])<<16 | uint32(blk[5])<<24
		q := qs[b*32 : b*32+32]
		for j := range 16 {
			v := blk[6+j]
			h0 := uint8((qh>>uint(j))<<4) & 0x10
			h1 := uint8(qh>>uint(j+12)) & 0x10
			q[j] = int8(v&0x0f|h0) - 16
			q[j+16] = int8(v>>4|h1) - 16
		}
	}
}
