package kernels

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
)

// RopeSetRows applies Rope to src [head_dim, n_head, n_tokens] and
// scatters each token's rotated values, laid out head after head, into row
// idx[t] of dst [head_dim*n_head, n_rows] (converting to dst's type, e.g.
// F16 for a KV cache): the K-cache write of a decoder step in one kernel.
// Bit for bit the same as Rope into a contiguous tensor, a reshape to
// [head_dim*n_head, n_tokens] and SetRows.
func RopeSetRows(dst, src, pos, idx Tensor, p RopeParams) (err error) {
	const op = "rope_set_rows"
	defer guard(op, &err)
	if err := checkFloat(op, "src", src); err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if !canStore(dst.Type) {
		return fmt.Errorf("kernels: %s: dst type %s is not supported", op, dst.Type)
	}
	if src.Ne[3] != 1 || dst.Ne[2] != 1 || dst.Ne[3] != 1 || dst.Ne[0] != src.Ne[0]*src.Ne[1] {
		return fmt.Errorf("kernels: %s: dst %s must be [ne0*ne1 of src %s, n_rows]", op, dst, src)
	}
	if err := checkIndexTensor(op, idx); err != nil {
		return err
	}
	if idx.Ne[0] != src.Ne[2] {
		return fmt.Errorf("kernels: %s: %d indices for %d tokens", op, idx.Ne[0], src.Ne[2])
	}
	for t := range idx.Ne[0] {
		if r := readIndex(idx, t, 0, 0); r < 0 || r >= dst.Ne[1] {
			return fmt.Errorf("kernels: %s: idx[%d] = %d outside the %d rows of %s", op, t, r, dst.Ne[1], dst)
		}
	}
	if err := checkRopeParams(op, p, src); err != nil {
		return err
	}
	ps, err := readPositions(op, pos, src.Ne[2])
	if err != nil {
		return err
	}
	cache := buildRopeCache(ps, p, nil)
	hd, nh := int(src.Ne[0]), int(src.Ne[1])
	neox := p.Mode == RopeNeox
	row := make([]float32, hd*nh)
	scratch := make([]float32, hd)
	for t := range src.Ne[2] {
		c := cache[int(t)*p.NDims : int(t+1)*p.NDims]
		for h := range nh {
			x := srcRow(src, src.rowOff(int64(h), t, 0), hd, scratch)
			ropeApplyRow(row[h*hd:(h+1)*hd], x, c, p.NDims, neox)
		}
		storeRow(dst, dst.rowOff(readIndex(idx, t, 0, 0), 0, 0), row)
	}
	return nil
}

// Attention computes softmax(k·q * scale + slope*mask) · v per head, bit
// for bit what llama.cpp's unfused graph computes with
// kq = mul_mat(k, q), soft_max_ext(kq, mask, scale, max_bias),
// kqv = mul_mat(v, kq), including the rounding of q (and of the
// probabilities) to F16 when k (v) is F16.
//
// Shapes, as in that graph: q [head_dim, n_tokens, n_head, ne3]; k
// [head_dim, n_kv, n_head_kv, ne3k] and v [n_kv, head_dim_v, n_head_kv,
// ne3v] (any strides: views of the KV cache; v is read transposed); mask nil
// or [n_kv, >= n_tokens] F32/F16; dst F32 [head_dim_v, n_tokens, n_head,
// ne3], any strides (so a permuted view can receive it). n_head must be a
// multiple of n_head_kv (grouped-query attention).
func Attention(dst, q, k, v Tensor, mask *Tensor, scale, maxBias float32) error {
	return Options{}.Attention(dst, q, k, v, mask, scale, maxBias)
}

// Attention is the method form of Attention; o.Threads bounds the
// goroutines.
func (o Options) Attention(dst, q, k, v Tensor, mask *Tensor, scale, maxBias float32) (err error) {
	const op = "attention"
	defer guard(op, &err)
	if err := checkAttention(op, dst, q, k, v, mask); err != nil {
		return err
	}
	NKV := k.Ne[1]
	if NKV == 0 || dst.NElements() == 0 {
		return nil
	}
	at := newAttn(dst, q, k, v, mask, scale, maxBias, workers(o.Threads, 1<<30))
	parallelFor(o.Pool, o.Threads, at.tasks, at.grain, func(lo, hi int) {
		bufs := getF32(at.scratch)
		defer putF32(bufs)
		at.run(*bufs, lo, hi)
	})
	return nil
}

// checkAttention checks the operands of Attention.
func checkAttention(op string, dst, q, k, v Tensor, mask *Tensor) error {
	if err := checkFloats(op, []string{"q", "k", "v"}, q, k, v); err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if !isFloatType(dst.Type) {
		return fmt.Errorf("kernels: %s: dst %s must be a float type", op, dst)
	}
	D, T, H, B := q.Ne[0], q.Ne[1], q.Ne[2], q.Ne[3]
	NKV, DV := k.Ne[1], v.Ne[1]
	switch {
	case k.Ne[0] != D:
		return fmt.Errorf("kernels: %s: k %s and q %s differ in head_dim", op, k, q)
	case v.Ne[0] != NKV:
		return fmt.Errorf("kernels: %s: v %s must be [n_kv=%d, head_dim_v, n_head_kv]", op, v, NKV)
	case k.Ne[2] == 0 || v.Ne[2] != k.Ne[2] || H%k.Ne[2] != 0:
		return fmt.Errorf("kernels: %s: heads of q %s are not a multiple of those of k %s / v %s", op, q, k, v)
	case k.Ne[3] == 0 || v.Ne[3] == 0 || B%k.Ne[3] != 0 || B%v.Ne[3] != 0:
		return fmt.Errorf("kernels: %s: dim 3 of k %s / v %s does not broadcast over q %s", op, k, v, q)
	case dst.Ne != [MaxDims]int64{DV, T, H, B}:
		return fmt.Errorf("kernels: %s: dst %s, want [%d %d %d %d]", op, dst, DV, T, H, B)
	}
	if overlaps(dst, q) || overlaps(dst, k) || overlaps(dst, v) {
		return fmt.Errorf("kernels: %s: dst %s overlaps q, k or v", op, dst)
	}
	kqShape := Tensor{Ne: [MaxDims]int64{NKV, T, H, B}}
	if err := checkMask(op, mask, kqShape); err != nil {
		return err
	}
	return nil
}

// attn is one checked attention: its task split and constants.
type attn struct {
	dst, q, k, v Tensor
	mask         *Tensor
	scale        float32
	al           alibi
	rk, rv       func(float32) float32
	vt           Tensor
	vAlongDim1   bool
	out          dstWriter
	kqDots       func(s, a, q []float32)
	vDot         func(a, b []float32) float32
	// vDot4: vDot of one row with four at a time (dotF32x4 or
	// dotF32x4FMA, each result bit for bit vDot's), nil where vDot is
	// ggml_vec_dot's order (a single query column).
	vDot4 func(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32)
	// vMat: every vDot is dotVec(·, ·, false)'s value (F32 v, or F16 v
	// whose n_kv is whole blocks of 32: no float64 leftovers), so the dv
	// products of a query run as one matVecF32.
	vMat bool
	// rkF16, rvF16: q (the probabilities) are rounded to F16 row-wise.
	rkF16, rvF16 bool
	// outDense: dst is written row by row into its float32 view.
	outDense     bool
	HKV, r2, T   int64
	d, nkv, dv   int
	tChunks      int
	tLen         int64
	tasks, grain int
	scratch      int // float32s of scratch per worker
}

// newAttn splits a checked attention into tasks for w workers.
func newAttn(dst, q, k, v Tensor, mask *Tensor, scale, maxBias float32, w int) *attn {
	D, T, H, B := q.Ne[0], q.Ne[1], q.Ne[2], q.Ne[3]
	NKV, DV := k.Ne[1], v.Ne[1]
	at := &attn{dst: dst, q: q, k: k, v: v, mask: mask, scale: scale, T: T}
	at.al = newAlibi(maxBias, H)
	at.rk, at.rv = vecDotRound(k.Type), vecDotRound(v.Type)
	at.HKV = k.Ne[2]
	at.r2 = H / at.HKV
	at.d, at.nkv, at.dv = int(D), int(NKV), int(DV)
	d, nkv, dv := at.d, at.nkv, at.dv
	// v is usually a strided view whose dim 1 (head_dim_v) is the
	// contiguous one (set_rows cache) and sometimes one whose dim 0 (n_kv)
	// is (llama.cpp's transposed cpy cache): read it along whichever is
	// dense. Either way vr holds it as dv rows of nkv values.
	at.vt = v
	at.vt.Ne[0], at.vt.Ne[1], at.vt.Nb[0], at.vt.Nb[1] = v.Ne[1], v.Ne[0], v.Nb[1], v.Nb[0]
	es := int64(v.Type.TypeSize())
	at.vAlongDim1 = v.Nb[0] != es && v.Nb[1] == es
	at.out = newDstWriter(dst)
	// The products follow the kernel ggml's mul_mat picks for each of the
	// two matmuls (see MulMat): tinyBLAS's lanes, fused for F32 operands,
	// unless a single query column or an inner dimension that is not a
	// multiple of 8 sends it to ggml_vec_dot_f16/f32.
	at.kqDots = dotRowsFor(k.Type, T < 2 || d%8 != 0)
	at.vDot = dotFor(v.Type, T < 2 || nkv%8 != 0)
	at.vDot4 = dotX4For(v.Type, T < 2 || nkv%8 != 0)
	if T < 2 || nkv%8 != 0 {
		at.vMat = v.Type == gguf.TypeF32 || v.Type == gguf.TypeF16 && nkv%32 == 0 && nkv > 0
	}
	at.rkF16, at.rvF16 = k.Type == gguf.TypeF16, v.Type == gguf.TypeF16
	at.outDense = at.out.view != nil && dst.Nb[0] == 4
	// One task is one KV head of one dim-3 batch and a range of tokens:
	// its K and V rows are decoded once and serve the r2 query heads that
	// share them (GQA). Tokens are split only when there are too few KV
	// heads to keep the workers busy (each split decodes K and V again).
	// Every output row is computed the same way whatever the split.
	groups := int(at.HKV * B)
	tChunks := 1
	if groups < 4*w && T > 1 && int(at.r2*T)*nkv*(d+dv) >= 4<<15 {
		tChunks = min(int(T), (4*w+groups-1)/groups)
	}
	at.tLen = (T + int64(tChunks) - 1) / int64(tChunks)
	at.tChunks = int((T + at.tLen - 1) / at.tLen)
	work := (int(at.r2*at.tLen) + 1) * nkv * (d + dv)
	at.grain = max(1, (1<<15)/max(work, 1))
	at.tasks = groups * at.tChunks
	at.scratch = nkv*d + dv*nkv + d + 2*nkv + dv + vtmpRows(nkv)*dv
	return at
}

// run computes tasks [lo, hi) with buf (at.scratch floats) as scratch.
func (at *attn) run(buf []float32, lo, hi int) {
	q, k, v, mask, dst := at.q, at.k, at.v, at.mask, at.dst
	d, nkv, dv := at.d, at.nkv, at.dv
	B, T, HKV, r2 := q.Ne[3], at.T, at.HKV, at.r2
	take := func(n int) []float32 {
		s := buf[:n:n]
		buf = buf[n:]
		return s
	}
	kr, vr, qc, s, mrow, res, vtmp := take(nkv*d), take(dv*nkv), take(d), take(nkv), take(nkv), take(dv), take(vtmpRows(nkv)*dv)
	for task := lo; task < hi; task++ {
		g, tc := int64(task/at.tChunks), int64(task%at.tChunks)
		hk, i3 := g%HKV, g/HKV
		t0, t1 := tc*at.tLen, min(T, (tc+1)*at.tLen)
		// Dim 3 broadcasts as in mul_mat: batch i3 of q meets batch
		// i3/(ne3/ne3k) of k (and likewise of v).
		i3k, i3v := i3/(B/k.Ne[3]), i3/(B/v.Ne[3])
		loadRows(k, hk, i3k, kr, d, nil)
		if at.vAlongDim1 {
			loadRows(at.vt, hk, i3v, vr, dv, vtmp)
		} else {
			loadRows(v, hk, i3v, vr, nkv, nil)
		}
		for h := hk * r2; h < (hk+1)*r2; h++ {
			for t := t0; t < t1; t++ {
				if err := loadRowInto(q, q.rowOff(t, h, i3), qc); err != nil {
					panic(err)
				}
				if at.rkF16 {
					roundF16Row(qc)
				} else if at.rk != nil {
					for i, x := range qc {
						qc[i] = at.rk(x)
					}
				}
				at.kqDots(s, kr, qc)
				var m []float32
				if mask != nil {
					m = srcRow(*mask, mask.rowOff(t, h%mask.Ne[2], i3%mask.Ne[3]), nkv, mrow)
				}
				softmaxRow(s, m, at.scale, at.al.slope(h))
				if at.rvF16 {
					roundF16Row(s)
				} else if at.rv != nil {
					for i, x := range s {
						s[i] = at.rv(x)
					}
				}
				if at.vMat {
					matVecF32(vr, nkv, s, res)
				} else {
					c := 0
					if at.vDot4 != nil {
						for ; c+4 <= dv; c += 4 {
							res[c], res[c+1], res[c+2], res[c+3] = at.vDot4(s, vr[c*nkv:(c+1)*nkv], vr[(c+1)*nkv:(c+2)*nkv], vr[(c+2)*nkv:(c+3)*nkv], vr[(c+3)*nkv:(c+4)*nkv])
						}
					}
					for ; c < dv; c++ {
						res[c] = at.vDot(vr[c*nkv:(c+1)*nkv], s)
					}
				}
				if at.outDense {
					off := (t*dst.Nb[1] + h*dst.Nb[2] + i3*dst.Nb[3]) / 4
					copy(at.out.view[off:off+int64(dv)], res)
				} else if at.out.view != nil {
					for c, x := range res {
						at.out.put(int64(c), t, h, i3, x)
					}
				} else {
					storeRow(dst, dst.rowOff(t, h, i3), res)
				}
			}
		}
	}
}

// vtmpRows is the rows of V that attention widens at a time before it
// transposes them (its vtmp scratch holds that many rows).
func vtmpRows(nkv int) int { return max(1, min(nkv, 32)) }

// loadRows decodes rows i1 = 0, 1, … of n values each (n = t.Ne[0]) of
// batch (i2, i3) of t into dst. With tr nil, row i1 goes to dst[i1*n:]
// (dst holds len(dst)/n rows). With tr (scratch for at least one row) it
// is stored transposed: value i0 of row i1 goes to dst[i0*rows+i1], rows =
// len(dst)/n. Dense F16 rows are widened by f16Rows (f16RowsT), many rows
// per call; all conversions are exact.
func loadRows(t Tensor, i2, i3 int64, dst []float32, n int, tr []float32) {
	rows := len(dst) / n
	if t.Type == gguf.TypeF16 && (t.Nb[0] == 2 || n == 1) {
		if rows == 0 {
			return
		}
		src, stride := t.Data[t.rowOff(0, i2, i3):], int(t.Nb[1])
		if tr == nil {
			f16Rows(dst[:rows*n], src, stride, rows, n)
			return
		}
		f16RowsT(dst[:rows*n], src, stride, rows, n, tr)
		return
	}
	for i1 := range rows {
		row := tr
		if tr == nil {
			row = dst[i1*n : (i1+1)*n]
		}
		if err := loadRowInto(t, t.rowOff(int64(i1), i2, i3), row[:n]); err != nil {
			panic(err)
		}
		if tr != nil {
			for i, x := range row[:n] {
				dst[i*rows+i1] = x
			}
		}
	}
}

// dotFor returns the dot product ggml's mul_mat computes for weights of
// type t (operands already rounded to its vec_dot_type): dotVec where
// tinyBLAS declines (vec; F32 and F16 only), else tinyBLAS's lanes, fused
// for F32.
func dotFor(t gguf.GGMLType, vec bool) func(a, b []float32) float32 {
	switch {
	case vec && t == gguf.TypeF16:
		return func(a, b []float32) float32 { return dotVec(a, b, true) }
	case vec && t == gguf.TypeF32:
		return func(a, b []float32) float32 { return dotVec(a, b, false) }
	case t == gguf.TypeF32:
		return dotF32FMA
	}
	return dotF32
}

// dotX4For returns dotFor(t, vec) for one row and four others at a time
// (dot(a, bi), products commute): tinyBLAS's lanes four columns per call,
// with or without FMAs; nil for ggml_vec_dot's order (vec and F16/F32),
// which has no such kernel.
func dotX4For(t gguf.GGMLType, vec bool) func(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32) {
	switch {
	case vec && (t == gguf.TypeF16 || t == gguf.TypeF32):
		return nil
	case t == gguf.TypeF32:
		return dotF32x4FMA
	}
	return dotF32x4
}

// dotRowsFor returns a function setting s[j] = dot(a[j*d:(j+1)*d], q) for
// every row j of a (d = len(q)) with dotFor(t, vec)'s dot, unrolled for
// head_dim 8 where that is one block of tinyBLAS's eight lanes.
func dotRowsFor(t gguf.GGMLType, vec bool) func(s, a, q []float32) {
	dot := dotFor(t, vec)
	dot4 := dotX4For(t, vec)
	return func(s, a, q []float32) {
		d := len(q)
		switch {
		case d == 8 && !(vec && (t == gguf.TypeF16 || t == gguf.TypeF32)):
			dotRows8(s, a, q)
		case d == 8 && vec && t == gguf.TypeF16:
			dotRows8F16(s, a, q)
		case d < 32 && vec && t == gguf.TypeF16:
			// ggml_vec_dot_f16 without a full block: the rounded
			// products summed in float64 from +0 (dotVec's leftovers).
			q = q[:d:d]
			for j := range s {
				x := a[j*d : (j+1)*d : (j+1)*d]
				var sum float64
				for i, y := range q {
					sum += float64(x[i] * y)
				}
				s[j] = float32(sum)
			}
		default:
			j := 0
			if dot4 != nil && d >= 8 {
				// Four K rows per call (prefill: the products of every
				// query row with all n_kv keys).
				for ; j+4 <= len(s); j += 4 {
					s[j], s[j+1], s[j+2], s[j+3] = dot4(q, a[j*d:(j+1)*d], a[(j+1)*d:(j+2)*d], a[(j+2)*d:(j+3)*d], a[(j+3)*d:(j+4)*d])
				}
			}
			for ; j < len(s); j++ {
				s[j] = dot(a[j*d:(j+1)*d], q)
			}
		}
	}
}

// dotRows8F16 is dotRowsFor's ggml_vec_dot_f16 of head_dim 8 (all
// leftovers: the rounded products added in order in float64 from +0),
// unrolled; four rows at a time in assembly (dotRows8F16AVX2) when the
// SIMD kernels are in use.
func dotRows8F16(s, a, q []float32) {
	y := q[:8:8]
	j0 := 0
	if g := len(s) / 4; useAVX2 && g > 0 {
		_ = a[32*g-1]
		dotRows8F16AVX2(&s[0], &a[0], &y[0], g)
		j0 = 4 * g
	}
	for j := j0; j < len(s); j++ {
		x := a[j*8 : j*8+8 : j*8+8]
		var sum float64
		sum += float64(x[0] * y[0])
		sum += float64(x[1] * y[1])
		sum += float64(x[2] * y[2])
		sum += float64(x[3] * y[3])
		sum += float64(x[4] * y[4])
		sum += float64(x[5] * y[5])
		sum += float64(x[6] * y[6])
		sum += float64(x[7] * y[7])
		s[j] = float32(sum)
	}
}

// dotRows8 sets s[j] = dotF32(a[j*8:(j+1)*8], q) (also dotF32FMA's value:
// with one block of lanes each lane holds a single rounded product).
func dotRows8(s, a, q []float32) {
	y := q[:8:8]
	for j := range s {
		x := a[j*8 : j*8+8 : j*8+8]
		t0 := float32(x[0]*y[0]) + float32(x[4]*y[4])
		t1 := float32(x[1]*y[1]) + float32(x[5]*y[5])
		t2 := float32(x[2]*y[2]) + float32(x[6]*y[6])
		t3 := float32(x[3]*y[3]) + float32(x[7]*y[7])
		s[j] = (t0 + t2) + (t1 + t3)
	}
}
