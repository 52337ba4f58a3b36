package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// The weights of the "ggml" QuantMatmul mode whose activations ggml-cpu
// quantises to q8_0 (q4_0, q5_0, q8_0) or q8_1 (q4_1, q5_1): each matrix
// (or stack of expert matrices, rows = experts·N) is converted once at
// load into f32 integer operands for the exact integer block dots of
// quantMulMatQ8: per 32-value block the integers q of ggml's blocks
// (block_q4_0 … block_q8_0, ggml-common.h: q8_0 int8, q4_0 nibble − 8,
// q5_0 (nibble | bit << 4) − 16, q4_1 nibble, q5_1 nibble | bit << 4),
// natural order, their f16 scale d and, for q4_1 and q5_1, their f16
// min m. ggml-cpu's AVX2 kernels (ggml_vec_dot_q{4,5,8}_0_q8_0,
// ggml_vec_dot_q{4,5}_1_q8_1, llamafile's tinyBLAS_Q0 for prefill) put
// values 4k..4k+3 of a block into int32 lane k, and the repacked q4_0_8x8
// kernels sum the whole block, so that both are groups of consecutive
// values in this order.

// Q8Types are the types quantMulMatQ8 computes.
var Q8Types = map[ir.DType]bool{ir.Q4_0: true, ir.Q4_1: true, ir.Q5_0: true, ir.Q5_1: true, ir.Q8_0: true}

// Q8 locates the parts of a converted matrix (N rows of K values,
// nb = K/32 blocks per row) in its f32 copy, as offsets in elements:
//
//	W  [N, K]   the integers q
//	D  [N, nb]  the blocks' scales d
//	M  [N, nb]  q4_1, q5_1: the blocks' mins m (else -1)
//
// T is the weight's type, Size the copy's length in f32 elements.
type Q8 struct {
	T             ir.DType
	K, N, NB      int64
	W, D, M, Size int64
	BlockBytes    int64 // bytes per block
}

// NewQ8 is the layout of an N×K matrix of type t (one of Q8Types).
func NewQ8(t ir.DType, K, N int64) Q8 {
	l := Q8{T: t, K: K, N: N, NB: K / 32, M: -1, BlockBytes: t.TypeSize()}
	off := int64(0)
	take := func(n int64) int64 {
		o := off
		off += (n + 15) / 16 * 16 // 64-byte aligned parts
		return o
	}
	l.W = take(N * K)
	l.D = take(N * l.NB)
	if t == ir.Q4_1 || t == ir.Q5_1 {
		l.M = take(N * l.NB)
	}
	l.Size = off
	return l
}

// q8BlockValues unpacks one block b of type t: its 32 integers, f16 scale
// and (q4_1, q5_1) f16 min.
func q8BlockValues(t ir.DType, b []byte, q *[32]int32) (d, m float32) {
	half := func(p []byte) float32 { return gguf.F16ToF32(binary.LittleEndian.Uint16(p)) }
	d = half(b)
	nib := func(qs []byte, j int) int32 {
		if j < 16 {
			return int32(qs[j] & 15)
		}
		return int32(qs[j-16] >> 4)
	}
	switch t {
	case ir.Q8_0: // d, qs[32] int8
		for j := range 32 {
			q[j] = int32(int8(b[2+j]))
		}
	case ir.Q4_0: // d, qs[16]
		for j := range 32 {
			q[j] = nib(b[2:18], j) - 8
		}
	case ir.Q5_0: // d, qh[4], qs[16]
		qh := binary.LittleEndian.Uint32(b[2:])
		for j := range 32 {
			q[j] = nib(b[6:22], j) | int32(qh>>uint(j)&1)<<4 - 16
		}
	case ir.Q4_1: // d, m, qs[16]
		m = half(b[2:])
		for j := range 32 {
			q[j] = nib(b[4:20], j)
		}
	case ir.Q5_1: // d, m, qh[4], qs[16]
		m = half(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		for j := range 32 {
			q[j] = nib(b[8:24], j) | int32(qh>>uint(j)&1)<<4
		}
	}
	return d, m
}

// Q8Values converts N rows of K values of type t (blocks) into the f32
// copy of layout l.
func Q8Values(l Q8, blocks []byte) ([]float32, error) {
	if !Q8Types[l.T] || l.K%32 != 0 || int64(len(blocks)) != l.N*l.NB*l.BlockBytes {
		return nil, fmt.Errorf("%s: %d bytes for a %d×%d matrix", l.T, len(blocks), l.N, l.K)
	}
	out := make([]float32, l.Size)
	var q [32]int32
	for i := range l.N * l.NB {
		d, m := q8BlockValues(l.T, blocks[i*l.BlockBytes:(i+1)*l.BlockBytes], &q)
		for j, v := range q {
			out[l.W+32*i+int64(j)] = float32(v)
		}
		out[l.D+i] = d
		if l.M >= 0 {
			out[l.M+i] = m
		}
	}
	return out, nil
}

// Q8Scalar reports whether kernels multiply a matrix of type t with N rows
// (an expert's N for a stack) in the repacked q4_0_8x8 order (one float
// chain per row: kernels' dotQ4_0x8, llama.cpp's ggml_gemv/gemm_q4_0_8x8_q8_0,
// every build) rather than in eight lanes and a horizontal sum.
func Q8Scalar(t ir.DType, N int64) bool { return t == ir.Q4_0 && N%8 == 0 }
