//go:build amd64 && !purego

#include "textflag.h"

// AVX-512 prefill tiles. Each computes, per output element, exactly the
// float operations of the AVX2 tiles in simd_amd64.s (ggml's tinyBLAS
// order): a 512-bit register holds the eight lanes of two output elements
// side by side, so every lane sees the same multiply-adds in the same
// order, and the final reduce is hsum_float_8 on each 256-bit half.

// HSUM8Z reduces the eight lanes of Y (an AVX-512 low register half) into
// X as hsum_float_8 does: (l0+l4, l1+l5, l2+l6, l3+l7), then
// ((t0+t2) + (t1+t3)). T is clobbered.
#define HSUM8Z(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       X, T, T  \
	VMOVHLPS     T, T, X  \
	VADDPS       X, T, T  \
	VMOVSHDUP    T, X     \
	VADDSS       X, T, X

// STORE2 stores the two output elements of accumulator Z (low half: out
// offset LO, high half: out offset HI, bytes from AX). Y12, Y13 clobbered.
#define STORE2(Z, Y, X, LO, HI) \
	VEXTRACTF64X4 $1, Z, Y12 \
	HSUM8Z(Y, X, X13)        \
	VMOVSS X, LO(AX)         \
	HSUM8Z(Y12, X12, X13)    \
	VMOVSS X12, HI(AX)

// func dotF32x6x4FMAAVX512(a *[6]*float32, b *[4]*float32, n int, out *[24]float32)
// dotF32x3x4FMAAVX2 for six rows: out[4r+c] = dotF32FMA's lanes of row r
// and column c. Accumulator 2r+p holds columns 2p (low half) and 2p+1
// (high half) of row r; each row's eight values are broadcast to both
// halves. n is a positive multiple of 8.
TEXT ·dotF32x6x4FMAAVX512(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), BX
	MOVQ 24(AX), R12
	MOVQ 32(AX), R13
	MOVQ 40(AX), AX
	MOVQ b+8(FP), DX
	MOVQ 0(DX), R8
	MOVQ 8(DX), R9
	MOVQ 16(DX), R10
	MOVQ 24(DX), R11
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	XORQ DX, DX

f32x6x4loop:
	VMOVUPS       (R8)(DX*4), Y12
	VINSERTF64X4  $1, (R9)(DX*4), Z12, Z12
	VMOVUPS       (R10)(DX*4), Y13
	VINSERTF64X4  $1, (R11)(DX*4), Z13, Z13
	VBROADCASTF64X4 (SI)(DX*4), Z14
	VBROADCASTF64X4 (DI)(DX*4), Z15
	VBROADCASTF64X4 (BX)(DX*4), Z16
	VFMADD231PS   Z12, Z14, Z0
	VFMADD231PS   Z13, Z14, Z1
	VBROADCASTF64X4 (R12)(DX*4), Z17
	VFMADD231PS   Z12, Z15, Z2
	VFMADD231PS   Z13, Z15, Z3
	VBROADCASTF64X4 (R13)(DX*4), Z18
	VFMADD231PS   Z12, Z16, Z4
	VFMADD231PS   Z13, Z16, Z5
	VBROADCASTF64X4 (AX)(DX*4), Z19
	VFMADD231PS   Z12, Z17, Z6
	VFMADD231PS   Z13, Z17, Z7
	VFMADD231PS   Z12, Z18, Z8
	VFMADD231PS   Z13, Z18, Z9
	VFMADD231PS   Z12, Z19, Z10
	VFMADD231PS   Z13, Z19, Z11
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f32x6x4loop

	MOVQ out+24(FP), AX
	STORE2(Z0, Y0, X0, 0, 4)
	STORE2(Z1, Y1, X1, 8, 12)
	STORE2(Z2, Y2, X2, 16, 20)
	STORE2(Z3, Y3, X3, 24, 28)
	STORE2(Z4, Y4, X4, 32, 36)
	STORE2(Z5, Y5, X5, 40, 44)
	STORE2(Z6, Y6, X6, 48, 52)
	STORE2(Z7, Y7, X7, 56, 60)
	STORE2(Z8, Y8, X8, 64, 68)
	STORE2(Z9, Y9, X9, 72, 76)
	STORE2(Z10, Y10, X10, 80, 84)
	STORE2(Z11, Y11, X11, 88, 92)
	VZEROUPPER
	RET

// Q8Z4 adds one block of column C (signed values in ZA, broadcast to both
// halves) times the weight row pair in ZU (values + 128, as unsigned
// bytes) into ACC: the init -128·(sum of the column's four values) per
// lane (NS, broadcast) makes VPDPBUSD's lanes the exact int32 four-byte
// sums of weight × activation; converted, they are scaled by the rows'
// scales ZD times the column's scale at S and fused into ACC.
#define Q8Z4(NS, ZA, ZU, ZD, S, ACC) \
	VBROADCASTI64X4 NS, Z16      \
	VPDPBUSD ZA, ZU, Z16         \
	VCVTDQ2PS Z16, Z16           \
	VMULPS.BCST S, ZD, Z17       \
	VFMADD231PS Z17, Z16, ACC

// func dotQ8_0x4x4AVX512(src *byte, stride int, qs *[4]*int8, ns *int32, dc *float32, nb int, out *[16]float32)
// The Q8_0 register tile of four weight rows (src + r·stride) and four
// activation columns (out[4r+c]), with 512-bit VNNI. ns holds, per block,
// the four columns' lane sums times -128 (8 int32 each, q8NegLaneSums);
// dc per block the four columns' scales (matmul.dc4). Accumulator 4p+c
// holds rows 2p (low half) and 2p+1 (high half) of column c. The weight
// values are taken as unsigned bytes w+128: sum((w+128)·a) - 128·sum(a)
// is the exact sum of w·a, the int32 lane that VPMADDUBSW+VPMADDWD give.
TEXT ·dotQ8_0x4x4AVX512(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	LEAQ (R8)(R8*2), R9
	MOVQ qs+16(FP), AX
	MOVQ 0(AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	MOVQ ns+24(FP), DI
	MOVQ dc+32(FP), DX
	MOVQ nb+40(FP), CX
	SHLQ $5, CX
	XORQ BX, BX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	TESTQ CX, CX
	JZ    q8x4x4done

q8x4x4loop:
	// Rows' scales: [d0 ×8 | d1 ×8] and [d2 ×8 | d3 ×8] as float32.
	VPBROADCASTW 0(SI), X14
	VPBROADCASTW 0(SI)(R8*1), X12
	VINSERTI128  $1, X12, Y14, Y14
	VCVTPH2PS    Y14, Z14
	VPBROADCASTW 0(SI)(R8*2), X15
	VPBROADCASTW 0(SI)(R9*1), X13
	VINSERTI128  $1, X13, Y15, Y15
	VCVTPH2PS    Y15, Z15
	// Row pairs' values + 128.
	VMOVDQU       2(SI), Y12
	VINSERTI64X4  $1, 2(SI)(R8*1), Z12, Z12
	VPXORD        Z31, Z12, Z12
	VMOVDQU       2(SI)(R8*2), Y13
	VINSERTI64X4  $1, 2(SI)(R9*1), Z13, Z13
	VPXORD        Z31, Z13, Z13
	// Columns' values, broadcast to both halves.
	VBROADCASTI64X4 (R10)(BX*1), Z8
	VBROADCASTI64X4 (R11)(BX*1), Z9
	VBROADCASTI64X4 (R12)(BX*1), Z10
	VBROADCASTI64X4 (R13)(BX*1), Z11
	Q8Z4(0(DI), Z8, Z12, Z14, 0(DX), Z0)
	Q8Z4(32(DI), Z9, Z12, Z14, 4(DX), Z1)
	Q8Z4(64(DI), Z10, Z12, Z14, 8(DX), Z2)
	Q8Z4(96(DI), Z11, Z12, Z14, 12(DX), Z3)
	Q8Z4(0(DI), Z8, Z13, Z15, 0(DX), Z4)
	Q8Z4(32(DI), Z9, Z13, Z15, 4(DX), Z5)
	Q8Z4(64(DI), Z10, Z13, Z15, 8(DX), Z6)
	Q8Z4(96(DI), Z11, Z13, Z15, 12(DX), Z7)
	ADDQ $34, SI
	ADDQ $128, DI
	ADDQ $16, DX
	ADDQ $32, BX
	CMPQ BX, CX
	JLT  q8x4x4loop

q8x4x4done:
	// Accumulator 4p+c: out[4·2p+c] (low), out[4·(2p+1)+c] (high).
	MOVQ out+48(FP), AX
	STORE2(Z0, Y0, X0, 0, 16)
	STORE2(Z1, Y1, X1, 4, 20)
	STORE2(Z2, Y2, X2, 8, 24)
	STORE2(Z3, Y3, X3, 12, 28)
	STORE2(Z4, Y4, X4, 32, 48)
	STORE2(Z5, Y5, X5, 36, 52)
	STORE2(Z6, Y6, X6, 40, 56)
	STORE2(Z7, Y7, X7, 44, 60)
	VZEROUPPER
	RET
