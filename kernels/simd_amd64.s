//go:build amd64 && !purego

// AVX2+FMA+F16C kernels, written by hand. Each reproduces its pure-Go twin
// (quant.go, dot.go) operation for operation: the lanes, the order of the
// float additions and the fused multiply-adds are those of ggml's AVX2
// code (ggml-cpu/arch/x86/quants.c, repack.cpp, vec.h), so results are
// bit-identical to the twins (simd_test.go).

#include "textflag.h"

// Lane order after the two packs of quantize_row_q8_0 (vpermd indices).
DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// BCAST32 broadcasts the 32-bit constant c to every lane of Y.
#define BCAST32(c, X, Y) MOVL c, AX; VMOVD AX, X; VPBROADCASTD X, Y

// HSUM8 reduces the eight lanes of Y0 into X0 as hsum_float_8 does:
// (l0+l4, l1+l5, l2+l6, l3+l7), then pairs, ((t0+t2) + (t1+t3)). T is
// clobbered.
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       X, T, T  \
	VMOVHLPS     T, T, X  \
	VADDPS       X, T, T  \
	VMOVSHDUP    T, X     \
	VADDSS       X, T, X

// func quantizeQ8_0AVX2(x *float32, qs *int8, d *float32, nb int) bool
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-33
	MOVQ x+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	BCAST32($0x80000000, X15, Y15) // sign bit
	MOVL $0x42fe0000, AX           // 127.0
	VMOVD AX, X14
	VMOVDQU q8perm<>(SB), Y13
	BCAST32($0x80808080, X12, Y12) // -128 in every byte
	VPXOR Y10, Y10, Y10            // -128 seen
	VXORPS X9, X9, X9

qloop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3

	// maxAbs = max(max(max(|v0|, |v1|), |v2|), |v3|), maxps semantics
	VANDNPS Y0, Y15, Y4
	VANDNPS Y1, Y15, Y5
	VMAXPS  Y5, Y4, Y4
	VANDNPS Y2, Y15, Y5
	VMAXPS  Y5, Y4, Y4
	VANDNPS Y3, Y15, Y5
	VMAXPS  Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS    X4, X5, X5 // max(hi, lo)
	VMOVHLPS  X5, X5, X6
	VMAXPS    X6, X5, X5 // max(m, movehl(m))
	VMOVSHDUP X5, X6
	VMAXSS    X6, X5, X5 // max_ss(m, movehdup(m))

	// d = F16(max/127), stored widened
	VDIVSS    X14, X5, X7
	VCVTPS2PH $0, X7, X7
	VCVTPH2PS X7, X7
	VMOVSS    X7, (DX)

	// id = max != 0 ? 127/max : 0 (NaN != 0)
	VCMPSS $4, X9, X5, X8
	VDIVSS X5, X14, X11
	VANDPS X8, X11, X11
	VBROADCASTSS X11, Y11

	VMULPS Y11, Y0, Y0
	VMULPS Y11, Y1, Y1
	VMULPS Y11, Y2, Y2
	VMULPS Y11, Y3, Y3
	VROUNDPS $0, Y0, Y0
	VROUNDPS $0, Y1, Y1
	VROUNDPS $0, Y2, Y2
	VROUNDPS $0, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y13, Y0
	VMOVDQU   Y0, (DI)
	VPCMPEQB  Y12, Y0, Y1
	VPOR      Y1, Y10, Y10

	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  qloop

	VPTEST Y10, Y10
	SETNE  ret+32(FP)
	VZEROUPPER
	RET

// func dotQ8_0RawAVX2(src *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ8_0RawAVX2(SB), NOSPLIT, $0-36
	MOVQ src+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	BCAST32($0x00010001, X15, Y15)
	VXORPS Y0, Y0, Y0
	TESTQ  CX, CX
	JZ     q8done

q8loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1 // d_x * d_y
	VBROADCASTSS X1, Y1
	VMOVDQU 2(SI), Y2    // x (weights)
	VMOVDQU (DI), Y3     // y (activations)
	VPSIGNB Y2, Y2, Y4   // |x|
	VPSIGNB Y2, Y3, Y5   // sign(y, x)
	VPMADDUBSW Y5, Y4, Y4
	VPMADDWD   Y15, Y4, Y4
	VCVTDQ2PS  Y4, Y4
	VFMADD231PS Y4, Y1, Y0
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q8loop

q8done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ4_0RawAVX2(src *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ4_0RawAVX2(SB), NOSPLIT, $0-36
	MOVQ src+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	BCAST32($0x00010001, X15, Y15)
	BCAST32($0x0f0f0f0f, X14, Y14)
	BCAST32($0x08080808, X13, Y13)
	VXORPS Y0, Y0, Y0
	TESTQ  CX, CX
	JZ     q4done

q4loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1
	VBROADCASTSS X1, Y1
	VMOVDQU 2(SI), X2
	VPSRLW  $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND   Y14, Y2, Y2
	VPSUBB  Y13, Y2, Y2  // x = nibble - 8
	VMOVDQU (DI), Y3
	VPSIGNB Y2, Y2, Y4
	VPSIGNB Y2, Y3, Y5
	VPMADDUBSW Y5, Y4, Y4
	VPMADDWD   Y15, Y4, Y4
	VCVTDQ2PS  Y4, Y4
	VFMADD231PS Y4, Y1, Y0
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q4loop

q4done:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Q8X4COL multiplies the weight block (|x| in Y2, x in Y1, d_x in X0) with
// the block of activation column c (qs pointer Q, scale pointer D) into
// the accumulator ACC.
#define Q8X4COL(Q, D, ACC) \
	VMOVDQU (Q), Y3        \
	VPSIGNB Y1, Y3, Y3     \
	VPMADDUBSW Y3, Y2, Y3  \
	VPMADDWD Y15, Y3, Y3   \
	VCVTDQ2PS Y3, Y3       \
	VMULSS (D), X0, X4     \
	VBROADCASTSS X4, Y4    \
	VFMADD231PS Y3, Y4, ACC

// func dotQ8_0Rawx4AVX2(src *byte, qs *[4]*int8, d *[4]*float32, nb int, out *[4]float32)
TEXT ·dotQ8_0Rawx4AVX2(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ qs+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ d+16(FP), AX
	MOVQ 0(AX), BX
	MOVQ 8(AX), DX
	MOVQ 16(AX), DI
	MOVQ 24(AX), R12
	MOVQ nb+24(FP), CX
	BCAST32($0x00010001, X15, Y15)
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	TESTQ  CX, CX
	JZ     q8x4done

q8x4loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X0
	VCVTPH2PS X0, X0
	VMOVDQU 2(SI), Y1
	VPSIGNB Y1, Y1, Y2
	Q8X4COL(R8, BX, Y5)
	Q8X4COL(R9, DX, Y6)
	Q8X4COL(R10, DI, Y7)
	Q8X4COL(R11, R12, Y8)
	ADDQ $34, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $4, BX
	ADDQ $4, DX
	ADDQ $4, DI
	ADDQ $4, R12
	DECQ CX
	JNZ  q8x4loop

q8x4done:
	MOVQ out+32(FP), AX
	HSUM8(Y5, X5, X1)
	VMOVSS X5, 0(AX)
	HSUM8(Y6, X6, X1)
	VMOVSS X6, 4(AX)
	HSUM8(Y7, X7, X1)
	VMOVSS X7, 8(AX)
	HSUM8(Y8, X8, X1)
	VMOVSS X8, 12(AX)
	VZEROUPPER
	RET

// NIB expands the 16 nibble bytes at M into 32 bytes (low nibbles, then
// high nibbles) in Y, unsigned 0..15. T is clobbered; Y14 = 0x0f bytes.
#define NIB(M, X, Y, T) \
	VMOVDQU M, X             \
	VPSRLW $4, X, T          \
	VINSERTI128 $1, T, Y, Y  \
	VPAND Y14, Y, Y

// ROWSUM sets P to the eight int32 partial sums of nibble·y for the
// expanded nibbles W and the activation bytes A (Y15 = int16 ones).
#define ROWSUM(W, A, P) \
	VPMADDUBSW A, W, P \
	VPMADDWD Y15, P, P

// REDUCE8 turns the partial sums P0..P7 (eight int32 lanes each) into one
// vector of their eight totals, row j in lane j (exact integer sums).
#define REDUCE8(P0, P1, P2, P3, P4, P5, P6, P7, R, T) \
	VPHADDD P1, P0, P0         \
	VPHADDD P3, P2, P2         \
	VPHADDD P5, P4, P4         \
	VPHADDD P7, P6, P6         \
	VPHADDD P2, P0, P0         \
	VPHADDD P6, P4, P4         \
	VPERM2I128 $0x20, P4, P0, R \
	VPERM2I128 $0x31, P4, P0, T \
	VPADDD T, R, R

// func dotQ4_0x8AVX2(src *byte, stride int, qs *int8, d *float32, sum *int32, nb int, out *[8]float32)
TEXT ·dotQ4_0x8AVX2(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	LEAQ (R8)(R8*2), R9  // 3·stride
	LEAQ (R8)(R8*4), R10 // 5·stride
	LEAQ (R9)(R8*4), R11 // 7·stride
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ sum+32(FP), BX
	MOVQ nb+40(FP), CX
	BCAST32($0x00010001, X15, Y15)
	BCAST32($0x0f0f0f0f, X14, Y14)
	VXORPS Y13, Y13, Y13
	TESTQ  CX, CX
	JZ     q4x8done

q4x8loop:
	VMOVDQU (DI), Y12
	NIB(2(SI), X0, Y0, X8)
	NIB(2(SI)(R8*1), X1, Y1, X9)
	NIB(2(SI)(R8*2), X2, Y2, X10)
	NIB(2(SI)(R9*1), X3, Y3, X11)
	ROWSUM(Y0, Y12, Y0)
	ROWSUM(Y1, Y12, Y1)
	ROWSUM(Y2, Y12, Y2)
	ROWSUM(Y3, Y12, Y3)
	NIB(2(SI)(R8*4), X4, Y4, X8)
	NIB(2(SI)(R10*1), X5, Y5, X9)
	NIB(2(SI)(R9*2), X6, Y6, X10)
	NIB(2(SI)(R11*1), X7, Y7, X11)
	ROWSUM(Y4, Y12, Y4)
	ROWSUM(Y5, Y12, Y5)
	ROWSUM(Y6, Y12, Y6)
	ROWSUM(Y7, Y12, Y7)
	REDUCE8(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9)

	// sum(x·y) = sum(nibble·y) - 8·sum(y)
	VPBROADCASTD (BX), Y10
	VPSLLD $3, Y10, Y10
	VPSUBD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8

	// the eight row scales, times the activation scale
	MOVWLZX (SI), AX
	VMOVD AX, X9
	VPINSRW $1, (SI)(R8*1), X9, X9
	VPINSRW $2, (SI)(R8*2), X9, X9
	VPINSRW $3, (SI)(R9*1), X9, X9
	VPINSRW $4, (SI)(R8*4), X9, X9
	VPINSRW $5, (SI)(R10*1), X9, X9
	VPINSRW $6, (SI)(R9*2), X9, X9
	VPINSRW $7, (SI)(R11*1), X9, X9
	VCVTPH2PS X9, Y9
	VBROADCASTSS (DX), Y10
	VMULPS Y10, Y9, Y9
	VFMADD231PS Y9, Y8, Y13

	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JNZ  q4x8loop

q4x8done:
	MOVQ out+48(FP), AX
	VMOVUPS Y13, (AX)
	VZEROUPPER
	RET

// Q4X4COL accumulates activation column c (argument pointers at offsets
// QO, DO, SO of AX; block offsets R12 for qs, R13 for d and sum) into
// out[c] at byte offset OO of DI. Y0..Y7 hold the expanded nibbles of the
// eight rows, Y13 their scales.
#define Q4X4COL(QO, DO, SO, OO) \
	MOVQ QO(AX), BX                \
	VMOVDQU (BX)(R12*1), Y8        \
	ROWSUM(Y0, Y8, Y9)             \
	ROWSUM(Y1, Y8, Y10)            \
	VPHADDD Y10, Y9, Y9            \
	ROWSUM(Y2, Y8, Y10)            \
	ROWSUM(Y3, Y8, Y11)            \
	VPHADDD Y11, Y10, Y10          \
	VPHADDD Y10, Y9, Y9            \
	ROWSUM(Y4, Y8, Y10)            \
	ROWSUM(Y5, Y8, Y11)            \
	VPHADDD Y11, Y10, Y10          \
	ROWSUM(Y6, Y8, Y11)            \
	ROWSUM(Y7, Y8, Y12)            \
	VPHADDD Y12, Y11, Y11          \
	VPHADDD Y11, Y10, Y10          \
	VPERM2I128 $0x20, Y10, Y9, Y11 \
	VPERM2I128 $0x31, Y10, Y9, Y12 \
	VPADDD Y12, Y11, Y11           \
	MOVQ SO(AX), BX                \
	VPBROADCASTD (BX)(R13*1), Y12  \
	VPSLLD $3, Y12, Y12            \
	VPSUBD Y12, Y11, Y11           \
	VCVTDQ2PS Y11, Y11             \
	MOVQ DO(AX), BX                \
	VBROADCASTSS (BX)(R13*1), Y12  \
	VMULPS Y12, Y13, Y12           \
	VMOVUPS OO(DI), Y9             \
	VFMADD231PS Y12, Y11, Y9       \
	VMOVUPS Y9, OO(DI)

// func dotQ4_0x8x4AVX2(src *byte, stride int, a *q4x4Args, nb int, out *[4][8]float32)
TEXT ·dotQ4_0x8x4AVX2(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	BCAST32($0x0f0f0f0f, X14, Y14)
	BCAST32($0x00010001, X15, Y15)
	MOVQ a+16(FP), AX
	MOVQ nb+24(FP), CX
	MOVQ out+32(FP), DI
	XORQ R12, R12
	XORQ R13, R13
	TESTQ CX, CX
	JZ    q4x8x4done

q4x8x4loop:
	NIB(2(SI), X0, Y0, X8)
	NIB(2(SI)(R8*1), X1, Y1, X9)
	NIB(2(SI)(R8*2), X2, Y2, X10)
	NIB(2(SI)(R9*1), X3, Y3, X11)
	NIB(2(SI)(R8*4), X4, Y4, X8)
	NIB(2(SI)(R10*1), X5, Y5, X9)
	NIB(2(SI)(R9*2), X6, Y6, X10)
	NIB(2(SI)(R11*1), X7, Y7, X11)
	MOVWLZX (SI), BX
	VMOVD BX, X13
	VPINSRW $1, (SI)(R8*1), X13, X13
	VPINSRW $2, (SI)(R8*2), X13, X13
	VPINSRW $3, (SI)(R9*1), X13, X13
	VPINSRW $4, (SI)(R8*4), X13, X13
	VPINSRW $5, (SI)(R10*1), X13, X13
	VPINSRW $6, (SI)(R9*2), X13, X13
	VPINSRW $7, (SI)(R11*1), X13, X13
	VCVTPH2PS X13, Y13
	Q4X4COL(0, 32, 64, 0)
	Q4X4COL(8, 40, 72, 32)
	Q4X4COL(16, 48, 80, 64)
	Q4X4COL(24, 56, 88, 96)
	ADDQ $18, SI
	ADDQ $32, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  q4x8x4loop

q4x8x4done:
	VZEROUPPER
	RET

// func dotVecF16RawAVX2(a *byte, b *float32, n int) float32
// n is a positive multiple of 32.
TEXT ·dotVecF16RawAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16loop:
	VCVTPH2PS 0(SI), Y4
	VCVTPH2PS 16(SI), Y5
	VCVTPH2PS 32(SI), Y6
	VCVTPH2PS 48(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  f16loop

	// (v0+v2) + (v1+v3), the halves, two horizontal adds
	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS  X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF32x4AVX2(a *float32, b *[4]*float32, n int, out *[4]float32)
// n is a positive multiple of 8. Products rounded, then added (no FMA),
// eight lanes per column, hsum_float_8.
TEXT ·dotF32x4AVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ DX, DX

f32x4loop:
	VMOVUPS (SI)(DX*4), Y4
	VMULPS  (R8)(DX*4), Y4, Y5
	VADDPS  Y5, Y0, Y0
	VMULPS  (R9)(DX*4), Y4, Y6
	VADDPS  Y6, Y1, Y1
	VMULPS  (R10)(DX*4), Y4, Y7
	VADDPS  Y7, Y2, Y2
	VMULPS  (R11)(DX*4), Y4, Y8
	VADDPS  Y8, Y3, Y3
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f32x4loop

	MOVQ out+24(FP), AX
	HSUM8(Y0, X0, X4)
	VMOVSS X0, 0(AX)
	HSUM8(Y1, X1, X4)
	VMOVSS X1, 4(AX)
	HSUM8(Y2, X2, X4)
	VMOVSS X2, 8(AX)
	HSUM8(Y3, X3, X4)
	VMOVSS X3, 12(AX)
	VZEROUPPER
	RET
