package kernels

import (
	"fmt"
	"math"
	"sort"

	"github.com/irtool/irtool/gguf"
)

// TopK writes, for each row of src (F32 [n, rows...]), the indices of its k
// largest values in descending order of value (ggml_argsort_top_k: a
// descending argsort cut to k) into dst (I32 [k, rows...]). Equal values
// keep the lower index first.
func TopK(dst, src Tensor, k int) (err error) {
	const op = "top_k"
	defer guard(op, &err)
	if err := checkTopK(op, dst, src, k); err != nil {
		return err
	}
	topKRows(dst, src, k, 0, int(src.NRows()), newTopKSort(int(src.Ne[0])))
	return nil
}

// checkTopK checks TopK's operands.
func checkTopK(op string, dst, src Tensor, k int) error {
	if err := checkFloat(op, "src", src); err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if dst.Type != gguf.TypeI32 {
		return fmt.Errorf("kernels: %s: dst %s must be i32", op, dst)
	}
	if k < 1 || int64(k) > src.Ne[0] {
		return fmt.Errorf("kernels: %s: k %d outside [1, %d]", op, k, src.Ne[0])
	}
	if dst.Ne != [MaxDims]int64{int64(k), src.Ne[1], src.Ne[2], src.Ne[3]} {
		return fmt.Errorf("kernels: %s: dst %s, want [%d, %d, %d, %d]", op, dst, k, src.Ne[1], src.Ne[2], src.Ne[3])
	}
	return nil
}

// topKSort is TopK's scratch for one row: the index permutation, sorted
// by sort.Stable (the algorithm of sort.SliceStable, without its
// per-call allocations) in descending order of the row's values.
type topKSort struct {
	idx []int32
	row []float32 // scratch for a row that is not F32 in place
	x   []float32 // the row being sorted
}

func newTopKSort(n int) *topKSort {
	return &topKSort{idx: make([]int32, n), row: make([]float32, n)}
}

func (s *topKSort) Len() int           { return len(s.idx) }
func (s *topKSort) Less(a, b int) bool { return s.x[s.idx[a]] > s.x[s.idx[b]] }
func (s *topKSort) Swap(a, b int)      { s.idx[a], s.idx[b] = s.idx[b], s.idx[a] }

// topKRows is TopK for the flat rows [lo, hi) of src.
func topKRows(dst, src Tensor, k, lo, hi int, s *topKSort) {
	n := int(src.Ne[0])
	for r := int64(lo); r < int64(hi); r++ {
		i1, i2, i3 := rowIndex(r, src.Ne)
		s.x = srcRow(src, src.rowOff(i1, i2, i3), n, s.row)
		for i := range s.idx {
			s.idx[i] = int32(i)
		}
		sort.Stable(s)
		off := dst.rowOff(i1, i2, i3)
		for j := range k {
			putI32(dst.Data[off+int64(j)*dst.Nb[0]:], s.idx[j])
		}
	}
	s.x = nil
}

func putI32(b []byte, v int32) {
	u := uint32(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

// SumRows writes the sum of each row of src into dst ([1, rows...]), as
// ggml_vec_sum_f32 computes it: accumulated in float64, rounded once.
func SumRows(dst, src Tensor) (err error) {
	const op = "sum_rows"
	defer guard(op, &err)
	if err := checkSumRows(op, dst, src); err != nil {
		return err
	}
	sumRowsRows(dst, src, 0, int(src.NRows()), make([]float32, src.Ne[0]), make([]float32, 1))
	return nil
}

// checkSumRows checks SumRows's operands.
func checkSumRows(op string, dst, src Tensor) error {
	if err := checkFloats(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	if dst.Ne != [MaxDims]int64{1, src.Ne[1], src.Ne[2], src.Ne[3]} {
		return fmt.Errorf("kernels: %s: dst %s, want [1, %d, %d, %d]", op, dst, src.Ne[1], src.Ne[2], src.Ne[3])
	}
	return nil
}

// sumRowsRows is SumRows for the flat rows [lo, hi) of src, with scratch
// rows row (n values) and out (one value).
func sumRowsRows(dst, src Tensor, lo, hi int, row, out []float32) {
	n := int(src.Ne[0])
	out = out[:1]
	for r := int64(lo); r < int64(hi); r++ {
		i1, i2, i3 := rowIndex(r, src.Ne)
		x := srcRow(src, src.rowOff(i1, i2, i3), n, row)
		var s float64
		for _, v := range x {
			s += float64(v)
		}
		out[0] = float32(s)
		storeRow(dst, dst.rowOff(i1, i2, i3), out)
	}
}

// Div computes dst = a / b with b broadcast over a (ggml_div).
func Div(dst, a, b Tensor) error { return Options{}.Div(dst, a, b) }

// Div is the package's Div with o's pool and threads.
func (o Options) Div(dst, a, b Tensor) error {
	return o.binaryOp("div", dst, a, b, binDiv)
}

// MulMatID is ggml_mul_mat_id: for every token t and slot e,
// dst[:, e, t] = as[:, :, ids[e, t]] · b[:, e % b.ne1, t], i.e. the product
// of the expert matrix that ids selects with the token's activation row
// (b.ne1 is 1 for the first expert projections and n_used for the down
// projection). as is [k, n, n_expert] (any weight type MulMat supports),
// b F32 [k, 1 or n_used, n_tokens], ids I32 [n_used, n_tokens], dst F32
// [n, n_used, n_tokens]. Each product is one MulMat of one column, which
// follows ggml's vec_dot for that weight type (quantising the activation
// as ggml does), the arithmetic of ggml-cpu's mul_mat_id.
func (o Options) MulMatID(dst, as, b, ids Tensor) (err error) {
	const op = "mul_mat_id"
	defer guard(op, &err)
	if err := checkMulMatID(op, dst, as, b, ids); err != nil {
		return err
	}
	nUsed, nTok := ids.Ne[0], ids.Ne[1]
	for t := range nTok {
		for e := range nUsed {
			x := readIndex(ids, e, t, 0)
			if x < 0 || x >= as.Ne[2] {
				return fmt.Errorf("kernels: %s: ids[%d,%d] = %d outside the %d experts", op, e, t, x, as.Ne[2])
			}
		}
	}
	for t := range nTok {
		for e := range nUsed {
			x := readIndex(ids, e, t, 0)
			a, col, out := mulMatIDSlot(dst, as, b, x, e, t)
			if err := o.MulMat(out, a, col); err != nil {
				return fmt.Errorf("kernels: %s: expert %d: %w", op, x, err)
			}
		}
	}
	return nil
}

// mulMatIDSlot returns the operands of MulMatID's product for slot e of
// token t with expert x: the expert's matrix, the activation column and
// the dst column.
func mulMatIDSlot(dst, as, b Tensor, x, e, t int64) (a, col, out Tensor) {
	a = as
	a.Ne[2], a.Data = 1, as.Data[x*as.Nb[2]:]
	col = b
	col.Ne[1], col.Ne[2] = 1, 1
	col.Data = b.Data[(e%b.Ne[1])*b.Nb[1]+t*b.Nb[2]:]
	out = dst
	out.Ne[1], out.Ne[2] = 1, 1
	out.Data = dst.Data[e*dst.Nb[1]+t*dst.Nb[2]:]
	return a, col, out
}

// checkMulMatID checks MulMatID's operands (not the values of ids).
func checkMulMatID(op string, dst, as, b, ids Tensor) error {
	if err := as.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: as: %w", op, err)
	}
	if err := checkFloat(op, "b", b); err != nil {
		return err
	}
	if err := checkIndexTensor(op, ids); err != nil {
		return err
	}
	nUsed, nTok := ids.Ne[0], ids.Ne[1]
	if as.Ne[3] != 1 || b.Ne[3] != 1 || ids.Ne[2] != 1 || ids.Ne[3] != 1 {
		return fmt.Errorf("kernels: %s: 4-D operands are not supported (as %s, b %s, ids %s)", op, as, b, ids)
	}
	if b.Ne[0] != as.Ne[0] || b.Ne[2] != nTok || (b.Ne[1] != 1 && b.Ne[1] != nUsed) {
		return fmt.Errorf("kernels: %s: b %s does not fit as %s and ids %s", op, b, as, ids)
	}
	if dst.Ne != [MaxDims]int64{as.Ne[1], nUsed, nTok, 1} || dst.Type != gguf.TypeF32 {
		return fmt.Errorf("kernels: %s: dst %s, want f32[%d, %d, %d]", op, dst, as.Ne[1], nUsed, nTok)
	}
	return nil
}

// SWAMask writes mask with the keys outside a sliding window of n_swa
// positions hidden: dst[c, r] = -inf where row r is a token (r < len(pos))
// and pos[r] - c >= nSWA, else mask[c, r] (llama.cpp's
// LLAMA_SWA_TYPE_STANDARD; KV cell c holds position c, the session's
// invariant). mask and dst are F32 [n_kv, rows], pos I32 [n_tokens].
func SWAMask(dst, mask, pos Tensor, nSWA int64) (err error) {
	const op = "swa_mask"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "mask"}, dst, mask); err != nil {
		return err
	}
	if dst.Ne != mask.Ne || mask.Ne[2] != 1 || mask.Ne[3] != 1 {
		return fmt.Errorf("kernels: %s: dst %s and mask %s must be the same 2-D shape", op, dst, mask)
	}
	if nSWA < 1 {
		return fmt.Errorf("kernels: %s: window %d must be positive", op, nSWA)
	}
	if err := checkSWAPositions(op, mask, pos); err != nil {
		return err
	}
	n := int(mask.Ne[0])
	swaMaskRows(dst, mask, pos, nSWA, 0, int(mask.Ne[1]), make([]float32, n), make([]float32, n))
	return nil
}

// checkSWAPositions checks SWAMask's positions: I32, at most one per mask
// row.
func checkSWAPositions(op string, mask, pos Tensor) error {
	if err := pos.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: pos: %w", op, err)
	}
	if pos.Type != gguf.TypeI32 {
		return fmt.Errorf("kernels: %s: positions %s must be i32", op, pos)
	}
	if pos.Ne[0] > mask.Ne[1] {
		return fmt.Errorf("kernels: %s: %d positions for %d mask rows", op, pos.Ne[0], mask.Ne[1])
	}
	return nil
}

// swaMaskRows is SWAMask for the mask rows [lo, hi), with scratch rows
// row and out of n_kv floats.
func swaMaskRows(dst, mask, pos Tensor, nSWA int64, lo, hi int, row, out []float32) {
	n := int(mask.Ne[0])
	out = out[:n]
	negInf := float32(math.Inf(-1))
	for r := int64(lo); r < int64(hi); r++ {
		x := srcRow(mask, mask.rowOff(r, 0, 0), n, row)
		copy(out, x)
		if r < pos.Ne[0] {
			p := int64(int32(readIndex(pos, r, 0, 0)))
			for c := range out {
				if p-int64(c) >= nSWA {
					out[c] = negInf
				}
			}
		}
		storeRow(dst, dst.rowOff(r, 0, 0), out)
	}
}

// SWAMaskJob prepares SWAMask as a Job over the rows of mask (the
// positions are read when it runs).
func SWAMaskJob(dst, mask, pos Tensor, nSWA int64, workers int) (j Job, err error) {
	const op = "swa_mask"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "mask"}, dst, mask); err != nil {
		return nil, err
	}
	if dst.Ne != mask.Ne || mask.Ne[2] != 1 || mask.Ne[3] != 1 {
		return nil, fmt.Errorf("kernels: %s: dst %s and mask %s must be the same 2-D shape", op, dst, mask)
	}
	if nSWA < 1 {
		return nil, fmt.Errorf("kernels: %s: window %d must be positive", op, nSWA)
	}
	if err := checkSWAPositions(op, mask, pos); err != nil {
		return nil, err
	}
	rj := newRowJob(mask.Ne[1], mask.Ne[0], int(mask.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		swaMaskRows(j.dst, j.a, j.b, nSWA, lo, hi, j.rows.s1[wk], j.rows.s2[wk])
	})
	rj.dst, rj.a, rj.b = dst, mask, pos
	return rj, nil
}
