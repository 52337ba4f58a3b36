package acl

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

// q8Types are the types quantMulMatQ8 computes.
var q8Types = map[ir.DType]bool{ir.Q4_0: true, ir.Q4_1: true, ir.Q5_0: true, ir.Q5_1: true, ir.Q8_0: true}

// q8Layout locates the parts of a converted matrix (N rows of K values,
// nb = K/32 blocks per row) in its f32 copy, as offsets in elements:
//
//	w  [N, K]   the integers q
//	d  [N, nb]  the blocks' scales d
//	m  [N, nb]  q4_1, q5_1: the blocks' mins m (else -1)
type q8Layout struct {
	t             ir.DType
	K, N, nb      int64
	w, d, m, size int64
	blockBytes    int64 // bytes per block
}

func newQ8Layout(t ir.DType, K, N int64) q8Layout {
	l := q8Layout{t: t, K: K, N: N, nb: K / 32, m: -1, blockBytes: t.TypeSize()}
	off := int64(0)
	take := func(n int64) int64 {
		o := off
		off += (n + 15) / 16 * 16 // 64-byte aligned parts
		return o
	}
	l.w = take(N * K)
	l.d = take(N * l.nb)
	if t == ir.Q4_1 || t == ir.Q5_1 {
		l.m = take(N * l.nb)
	}
	l.size = off
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

// q8Values converts N rows of K values of type t (blocks) into the f32
// copy of layout l.
func q8Values(l q8Layout, blocks []byte) ([]float32, error) {
	if !q8Types[l.t] || l.K%32 != 0 || int64(len(blocks)) != l.N*l.nb*l.blockBytes {
		return nil, fmt.Errorf("%s: %d bytes for a %d×%d matrix", l.t, len(blocks), l.N, l.K)
	}
	out := make([]float32, l.size)
	var q [32]int32
	for i := range l.N * l.nb {
		d, m := q8BlockValues(l.t, blocks[i*l.blockBytes:(i+1)*l.blockBytes], &q)
		for j, v := range q {
			out[l.w+32*i+int64(j)] = float32(v)
		}
		out[l.d+i] = d
		if l.m >= 0 {
			out[l.m+i] = m
		}
	}
	return out, nil
}

// q8Scalar reports whether kernels multiply a matrix of type t with N rows
// (an expert's N for a stack) in the repacked q4_0_8x8 order (one float
// chain per row: kernels' dotQ4_0x8, llama.cpp's ggml_gemv/gemm_q4_0_8x8_q8_0,
// every build) rather than in eight lanes and a horizontal sum.
func q8Scalar(t ir.DType, N int64) bool { return t == ir.Q4_0 && N%8 == 0 }
