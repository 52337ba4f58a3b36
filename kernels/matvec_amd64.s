//go:build amd64 && !purego

// Many-row kernels for a decode step's tiny operations, written by hand:
// one call covers many rows, which saves the per-row call and slicing.
// matVecF32AVX2 computes every row's value exactly as dotVec(row, b,
// false) does (ggml_vec_dot_f32's AVX2 lanes, then the leftover products
// added in order), so its results are bit-identical to matVecF32's
// pure-Go loop; f16RowsAVX2 widens halves (exact).

#include "textflag.h"

// func matVecF32AVX2(a *float32, stride int, rows int, b *float32, n int, out *float32)
// out[r] = dotVec(a[r*stride : r*stride+n], b[:n], false) for r < rows;
// rows >= 1, n >= 1. For each row: when n >= 32, four 8-lane accumulators
// over the first n&^31 values (lane e of vector k sums the products of
// indices ≡ 8k+e (mod 32) with vfmadd231ps), reduced as
// GGML_F32_VEC_REDUCE ((v0+v2)+(v1+v3), the halves, two horizontal adds);
// then each leftover product, rounded, added in index order.
TEXT ·matVecF32AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ rows+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), R9
	MOVQ CX, R10
	ANDQ $-32, R10

mvrow:
	VXORPS X0, X0, X0
	TESTQ  R10, R10
	JZ     mvtail
	MOVQ   SI, R11
	MOVQ   DI, R12
	MOVQ   R10, R13
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

mvloop:
	VMOVUPS     0(R11), Y4
	VMOVUPS     32(R11), Y5
	VMOVUPS     64(R11), Y6
	VMOVUPS     96(R11), Y7
	VFMADD231PS 0(R12), Y4, Y0
	VFMADD231PS 32(R12), Y5, Y1
	VFMADD231PS 64(R12), Y6, Y2
	VFMADD231PS 96(R12), Y7, Y3
	ADDQ        $128, R11
	ADDQ        $128, R12
	SUBQ        $32, R13
	JNZ         mvloop

	VADDPS       Y2, Y0, Y0
	VADDPS       Y3, Y1, Y1
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

mvtail:
	MOVQ R10, R13

mvtailloop:
	CMPQ   R13, CX
	JGE    mvstore
	VMOVSS (SI)(R13*4), X1
	VMULSS (DI)(R13*4), X1, X1
	VADDSS X1, X0, X0
	INCQ   R13
	JMP    mvtailloop

mvstore:
	VMOVSS X0, 0(R9)
	ADDQ   $4, R9
	ADDQ   DX, SI
	DECQ   R8
	JNZ    mvrow
	VZEROUPPER
	RET

// func f16RowsAVX2(dst *float32, src *byte, stride int, rows int, n int)
// Widens rows rows of n halves (row r at src + r*stride bytes) into dst,
// row after row (vcvtph2ps). rows >= 1; n is a positive multiple of 8.
TEXT ·f16RowsAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ rows+24(FP), R9
	MOVQ n+32(FP), CX

f16rowloop:
	XORQ DX, DX

f16cvtloop:
	VCVTPH2PS (SI)(DX*2), Y0
	VMOVUPS   Y0, (DI)(DX*4)
	ADDQ      $8, DX
	CMPQ      DX, CX
	JLT       f16cvtloop
	LEAQ      (DI)(CX*4), DI
	ADDQ      R8, SI
	DECQ      R9
	JNZ       f16rowloop
	VZEROUPPER
	RET
