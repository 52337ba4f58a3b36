package kernels

import (
	"fmt"
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
	for _, c := range []struct {
		what string
		t    Tensor
	}{{"q", q}, {"k", k}, {"v", v}} {
		if err := checkFloat(op, c.what, c.t); err != nil {
			return err
		}
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
	if NKV == 0 || dst.NElements() == 0 {
		return nil
	}
	al := newAlibi(maxBias, H)
	rk, rv := vecDotRound(k.Type), vecDotRound(v.Type)
	r2 := H / k.Ne[2]
	d, nkv, dv := int(D), int(NKV), int(DV)
	out := newDstWriter(dst)
	grain := max(1, int((1<<15)/max(T*NKV*(D+DV), 1)))
	parallelFor(o.Threads, int(H*B), grain, func(lo, hi int) {
		kr := make([]float32, nkv*d)
		vr := make([]float32, dv*nkv)
		qc := make([]float32, d)
		s := make([]float32, nkv)
		mrow := make([]float32, nkv)
		res := make([]float32, dv)
		for task := lo; task < hi; task++ {
			h, i3 := int64(task)%H, int64(task)/H
			hk, i3k, i3v := h/r2, i3%k.Ne[3], i3%v.Ne[3]
			for j := range nkv {
				if err := loadRowInto(k, k.rowOff(int64(j), hk, i3k), kr[j*d:(j+1)*d]); err != nil {
					panic(err)
				}
			}
			for j := range dv {
				if err := loadRowInto(v, v.rowOff(int64(j), hk, i3v), vr[j*nkv:(j+1)*nkv]); err != nil {
					panic(err)
				}
			}
			for t := range T {
				if err := loadRowInto(q, q.rowOff(t, h, i3), qc); err != nil {
					panic(err)
				}
				if rk != nil {
					for i, x := range qc {
						qc[i] = rk(x)
					}
				}
				for j := range nkv {
					s[j] = dotF32(kr[j*d:(j+1)*d], qc)
				}
				var m []float32
				if mask != nil {
					m = srcRow(*mask, mask.rowOff(t, h%mask.Ne[2], i3%mask.Ne[3]), nkv, mrow)
				}
				softmaxRow(s, m, scale, al.slope(h))
				if rv != nil {
					for i, x := range s {
						s[i] = rv(x)
					}
				}
				for j := range dv {
					res[j] = dotF32(vr[j*nkv:(j+1)*nkv], s)
				}
				if out.view != nil {
					for j, x := range res {
						out.put(int64(j), t, h, i3, x)
					}
				} else {
					storeRow(dst, dst.rowOff(t, h, i3), res)
				}
			}
		}
	})
	return nil
}
