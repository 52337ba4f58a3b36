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

// Q8X4COL multiplies the weight block (|x| in Y2, x in Y1, d_x broadcast
// in Y0) with the block of activation column c (qs base Q, scale base D,
// block index R13: qs at Q+32·R13, scale at D+4·R13) into the accumulator
// ACC.
#define Q8X4COL(Q, D, ACC) \
	VMOVDQU (Q)(R13*8), Y3       \
	VPSIGNB Y1, Y3, Y3           \
	VPMADDUBSW Y3, Y2, Y3        \
	VPMADDWD Y15, Y3, Y3         \
	VCVTDQ2PS Y3, Y3             \
	VBROADCASTSS (D)(R13*1), Y4  \
	VMULPS Y4, Y0, Y4            \
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
	SHLQ $2, CX // 4·nb: R13 runs over 4·block
	XORQ R13, R13
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
	VBROADCASTSS X0, Y0
	VMOVDQU 2(SI), Y1
	VPSIGNB Y1, Y1, Y2
	Q8X4COL(R8, BX, Y5)
	Q8X4COL(R9, DX, Y6)
	Q8X4COL(R10, DI, Y7)
	Q8X4COL(R11, R12, Y8)
	ADDQ $34, SI
	ADDQ $4, R13
	CMPQ R13, CX
	JLT  q8x4loop

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

// func dotVecF16TailAVX2(a *byte, b *float32, n int, red float32) float32
// ggml_vec_dot_f16's leftover loop (dotVecF16Tail): n >= 1 products of F16
// values a and b, each rounded to float32 and added in order to a float64
// sum that starts at red; the sum rounded to float32. Eight products at a
// time are formed with vcvtph2ps and vmulps (each rounded as vmulss
// would), then widened and added one by one.
TEXT ·dotVecF16TailAVX2(SB), NOSPLIT, $0-36
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VMOVSS red+24(FP), X0
	VCVTSS2SD X0, X0, X0
	CMPQ CX, $8
	JLT  f16tail1

f16tail8:
	VCVTPH2PS (SI), Y1
	VMULPS    (DI), Y1, Y1
	VCVTPS2PD X1, Y2
	VEXTRACTF128 $1, Y1, X3
	VCVTPS2PD X3, Y3
	VADDSD    X2, X0, X0
	VPERMILPD $1, X2, X4
	VADDSD    X4, X0, X0
	VEXTRACTF128 $1, Y2, X4
	VADDSD    X4, X0, X0
	VPERMILPD $1, X4, X4
	VADDSD    X4, X0, X0
	VADDSD    X3, X0, X0
	VPERMILPD $1, X3, X4
	VADDSD    X4, X0, X0
	VEXTRACTF128 $1, Y3, X4
	VADDSD    X4, X0, X0
	VPERMILPD $1, X4, X4
	VADDSD    X4, X0, X0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	CMPQ CX, $8
	JGE  f16tail8

f16tail1:
	TESTQ CX, CX
	JZ    f16taildone

f16tail1loop:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DI), X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD  X1, X0, X0
	ADDQ $2, SI
	ADDQ $4, DI
	DECQ CX
	JNZ  f16tail1loop

f16taildone:
	VCVTSD2SS X0, X0, X0
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotVecF32AVX2(a *float32, b *float32, n int) float32
// n is a positive multiple of 32. ggml_vec_dot_f32's lanes: four 8-lane
// accumulators, lane e of vector k summing the products of indices
// ≡ 8k+e (mod 32) with vfmadd231ps, then GGML_F32_VEC_REDUCE as in
// dotVecF16RawAVX2. The tail is added by the Go caller.
TEXT ·dotVecF32AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32vecloop:
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ  f32vecloop

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

// func dotF32x4FMAAVX2(a *float32, b *[4]*float32, n int, out *[4]float32)
// dotF32x4AVX2 with tinyBLAS's fused multiply-adds (F32 weights): eight
// lanes per column accumulated with vfmadd231ps, hsum_float_8. n is a
// positive multiple of 8; the Go caller adds the tail.
TEXT ·dotF32x4FMAAVX2(SB), NOSPLIT, $0-32
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

f32x4fmaloop:
	VMOVUPS (SI)(DX*4), Y4
	VFMADD231PS (R8)(DX*4), Y4, Y0
	VFMADD231PS (R9)(DX*4), Y4, Y1
	VFMADD231PS (R10)(DX*4), Y4, Y2
	VFMADD231PS (R11)(DX*4), Y4, Y3
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f32x4fmaloop

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

// func dotF32FMAAVX2(a *float32, b *float32, n int) float32
// One column of dotF32x4FMAAVX2. n is a positive multiple of 8.
TEXT ·dotF32FMAAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	XORQ DX, DX

f32fmaloop:
	VMOVUPS (SI)(DX*4), Y4
	VFMADD231PS (DI)(DX*4), Y4, Y0
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f32fmaloop

	HSUM8(Y0, X0, X4)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF16x4AVX2(a *byte, b *[4]*float32, n int, out *[4]float32)
// dotF32x4AVX2 with the row a given as F16 values, widened by vcvtph2ps.
// The columns hold F16 values too (ggml's vec_dot_type rounding), so every
// product is exact in float32 and an FMA gives the bits of the rounded
// product plus the add: tinyBLAS's own vfmadd, and dotF32's arithmetic.
TEXT ·dotF16x4AVX2(SB), NOSPLIT, $0-32
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

f16x4loop:
	VCVTPH2PS (SI)(DX*2), Y4
	VFMADD231PS (R8)(DX*4), Y4, Y0
	VFMADD231PS (R9)(DX*4), Y4, Y1
	VFMADD231PS (R10)(DX*4), Y4, Y2
	VFMADD231PS (R11)(DX*4), Y4, Y3
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f16x4loop

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

// func f16ToF32AVX2(dst *float32, src *byte, n int)
// n is a positive multiple of 8.
TEXT ·f16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ DX, DX

cvtloop:
	VCVTPH2PS (SI)(DX*2), Y0
	VMOVUPS Y0, (DI)(DX*4)
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  cvtloop
	VZEROUPPER
	RET


// Constants of ggml_v_expf (expf.go: vexpf), each in eight lanes.
// r = 0x4b400000
// log2e = 0x3fb8aa3b
// ln2hi = 0x3f317200
// ln2lo = 0x35bfbe8e
// c5 = 0x3c072010
// c4 = 0x3d2b9f17
// c3 = 0x3e2aaf33
// c2 = 0x3efffedb
// c1 = 0x3f7ffff6
// one = 0x3f800000
// k126 = 0x42fc0000
// k192 = 0x43400000
// absmask = 0x7fffffff
// g82 = 0x82000000
// b7f = 0x7f000000
DATA expc<>+0(SB)/4, $0x4b400000
DATA expc<>+4(SB)/4, $0x4b400000
DATA expc<>+8(SB)/4, $0x4b400000
DATA expc<>+12(SB)/4, $0x4b400000
DATA expc<>+16(SB)/4, $0x4b400000
DATA expc<>+20(SB)/4, $0x4b400000
DATA expc<>+24(SB)/4, $0x4b400000
DATA expc<>+28(SB)/4, $0x4b400000
DATA expc<>+32(SB)/4, $0x3fb8aa3b
DATA expc<>+36(SB)/4, $0x3fb8aa3b
DATA expc<>+40(SB)/4, $0x3fb8aa3b
DATA expc<>+44(SB)/4, $0x3fb8aa3b
DATA expc<>+48(SB)/4, $0x3fb8aa3b
DATA expc<>+52(SB)/4, $0x3fb8aa3b
DATA expc<>+56(SB)/4, $0x3fb8aa3b
DATA expc<>+60(SB)/4, $0x3fb8aa3b
DATA expc<>+64(SB)/4, $0x3f317200
DATA expc<>+68(SB)/4, $0x3f317200
DATA expc<>+72(SB)/4, $0x3f317200
DATA expc<>+76(SB)/4, $0x3f317200
DATA expc<>+80(SB)/4, $0x3f317200
DATA expc<>+84(SB)/4, $0x3f317200
DATA expc<>+88(SB)/4, $0x3f317200
DATA expc<>+92(SB)/4, $0x3f317200
DATA expc<>+96(SB)/4, $0x35bfbe8e
DATA expc<>+100(SB)/4, $0x35bfbe8e
DATA expc<>+104(SB)/4, $0x35bfbe8e
DATA expc<>+108(SB)/4, $0x35bfbe8e
DATA expc<>+112(SB)/4, $0x35bfbe8e
DATA expc<>+116(SB)/4, $0x35bfbe8e
DATA expc<>+120(SB)/4, $0x35bfbe8e
DATA expc<>+124(SB)/4, $0x35bfbe8e
DATA expc<>+128(SB)/4, $0x3c072010
DATA expc<>+132(SB)/4, $0x3c072010
DATA expc<>+136(SB)/4, $0x3c072010
DATA expc<>+140(SB)/4, $0x3c072010
DATA expc<>+144(SB)/4, $0x3c072010
DATA expc<>+148(SB)/4, $0x3c072010
DATA expc<>+152(SB)/4, $0x3c072010
DATA expc<>+156(SB)/4, $0x3c072010
DATA expc<>+160(SB)/4, $0x3d2b9f17
DATA expc<>+164(SB)/4, $0x3d2b9f17
DATA expc<>+168(SB)/4, $0x3d2b9f17
DATA expc<>+172(SB)/4, $0x3d2b9f17
DATA expc<>+176(SB)/4, $0x3d2b9f17
DATA expc<>+180(SB)/4, $0x3d2b9f17
DATA expc<>+184(SB)/4, $0x3d2b9f17
DATA expc<>+188(SB)/4, $0x3d2b9f17
DATA expc<>+192(SB)/4, $0x3e2aaf33
DATA expc<>+196(SB)/4, $0x3e2aaf33
DATA expc<>+200(SB)/4, $0x3e2aaf33
DATA expc<>+204(SB)/4, $0x3e2aaf33
DATA expc<>+208(SB)/4, $0x3e2aaf33
DATA expc<>+212(SB)/4, $0x3e2aaf33
DATA expc<>+216(SB)/4, $0x3e2aaf33
DATA expc<>+220(SB)/4, $0x3e2aaf33
DATA expc<>+224(SB)/4, $0x3efffedb
DATA expc<>+228(SB)/4, $0x3efffedb
DATA expc<>+232(SB)/4, $0x3efffedb
DATA expc<>+236(SB)/4, $0x3efffedb
DATA expc<>+240(SB)/4, $0x3efffedb
DATA expc<>+244(SB)/4, $0x3efffedb
DATA expc<>+248(SB)/4, $0x3efffedb
DATA expc<>+252(SB)/4, $0x3efffedb
DATA expc<>+256(SB)/4, $0x3f7ffff6
DATA expc<>+260(SB)/4, $0x3f7ffff6
DATA expc<>+264(SB)/4, $0x3f7ffff6
DATA expc<>+268(SB)/4, $0x3f7ffff6
DATA expc<>+272(SB)/4, $0x3f7ffff6
DATA expc<>+276(SB)/4, $0x3f7ffff6
DATA expc<>+280(SB)/4, $0x3f7ffff6
DATA expc<>+284(SB)/4, $0x3f7ffff6
DATA expc<>+288(SB)/4, $0x3f800000
DATA expc<>+292(SB)/4, $0x3f800000
DATA expc<>+296(SB)/4, $0x3f800000
DATA expc<>+300(SB)/4, $0x3f800000
DATA expc<>+304(SB)/4, $0x3f800000
DATA expc<>+308(SB)/4, $0x3f800000
DATA expc<>+312(SB)/4, $0x3f800000
DATA expc<>+316(SB)/4, $0x3f800000
DATA expc<>+320(SB)/4, $0x42fc0000
DATA expc<>+324(SB)/4, $0x42fc0000
DATA expc<>+328(SB)/4, $0x42fc0000
DATA expc<>+332(SB)/4, $0x42fc0000
DATA expc<>+336(SB)/4, $0x42fc0000
DATA expc<>+340(SB)/4, $0x42fc0000
DATA expc<>+344(SB)/4, $0x42fc0000
DATA expc<>+348(SB)/4, $0x42fc0000
DATA expc<>+352(SB)/4, $0x43400000
DATA expc<>+356(SB)/4, $0x43400000
DATA expc<>+360(SB)/4, $0x43400000
DATA expc<>+364(SB)/4, $0x43400000
DATA expc<>+368(SB)/4, $0x43400000
DATA expc<>+372(SB)/4, $0x43400000
DATA expc<>+376(SB)/4, $0x43400000
DATA expc<>+380(SB)/4, $0x43400000
DATA expc<>+384(SB)/4, $0x7fffffff
DATA expc<>+388(SB)/4, $0x7fffffff
DATA expc<>+392(SB)/4, $0x7fffffff
DATA expc<>+396(SB)/4, $0x7fffffff
DATA expc<>+400(SB)/4, $0x7fffffff
DATA expc<>+404(SB)/4, $0x7fffffff
DATA expc<>+408(SB)/4, $0x7fffffff
DATA expc<>+412(SB)/4, $0x7fffffff
DATA expc<>+416(SB)/4, $0x82000000
DATA expc<>+420(SB)/4, $0x82000000
DATA expc<>+424(SB)/4, $0x82000000
DATA expc<>+428(SB)/4, $0x82000000
DATA expc<>+432(SB)/4, $0x82000000
DATA expc<>+436(SB)/4, $0x82000000
DATA expc<>+440(SB)/4, $0x82000000
DATA expc<>+444(SB)/4, $0x82000000
DATA expc<>+448(SB)/4, $0x7f000000
DATA expc<>+452(SB)/4, $0x7f000000
DATA expc<>+456(SB)/4, $0x7f000000
DATA expc<>+460(SB)/4, $0x7f000000
DATA expc<>+464(SB)/4, $0x7f000000
DATA expc<>+468(SB)/4, $0x7f000000
DATA expc<>+472(SB)/4, $0x7f000000
DATA expc<>+476(SB)/4, $0x7f000000
GLOBL expc<>(SB), RODATA|NOPTR, $480

#define EXP_R expc<>+0(SB)
#define EXP_LOG2E expc<>+32(SB)
#define EXP_LN2HI expc<>+64(SB)
#define EXP_LN2LO expc<>+96(SB)
#define EXP_C5 expc<>+128(SB)
#define EXP_C4 expc<>+160(SB)
#define EXP_C3 expc<>+192(SB)
#define EXP_C2 expc<>+224(SB)
#define EXP_C1 expc<>+256(SB)
#define EXP_ONE expc<>+288(SB)
#define EXP_K126 expc<>+320(SB)
#define EXP_K192 expc<>+352(SB)
#define EXP_ABSMASK expc<>+384(SB)
#define EXP_G82 expc<>+416(SB)
#define EXP_B7F expc<>+448(SB)

// VEXPF sets Y0 to vexpf(Y1) lane by lane: ggml_v_expf on AVX2+FMA, the
// operations of vexpf (expf.go) with true FMAs, and its special path for
// |n| > 126 blended in when a lane needs it. Y1..Y9 and AX are clobbered.
// It uses the label vexpfdone, so a function can expand it once.
#define VEXPF \
	VMOVUPS EXP_R, Y2              \
	VFMADD231PS EXP_LOG2E, Y1, Y2  \
	VSUBPS  EXP_R, Y2, Y3          \
	VFNMADD231PS EXP_LN2HI, Y3, Y1 \
	VFNMADD231PS EXP_LN2LO, Y3, Y1 \
	VPSLLD  $23, Y2, Y2            \
	VPADDD  EXP_ONE, Y2, Y4        \
	VMULPS  Y1, Y1, Y5             \
	VMOVUPS EXP_C4, Y6             \
	VFMADD231PS EXP_C5, Y1, Y6     \
	VMOVUPS EXP_C2, Y7             \
	VFMADD231PS EXP_C3, Y1, Y7     \
	VFMADD231PS Y5, Y6, Y7         \
	VMULPS  EXP_C1, Y1, Y8         \
	VFMADD231PS Y5, Y7, Y8         \
	VMOVAPS Y4, Y0                 \
	VFMADD231PS Y8, Y4, Y0         \
	VANDPS  EXP_ABSMASK, Y3, Y9    \
	VCMPPS  $0x1e, EXP_K126, Y9, Y6 \
	VMOVMSKPS Y6, AX               \
	TESTL   AX, AX                 \
	JZ      vexpfdone              \
	VXORPS  Y7, Y7, Y7             \
	VCMPPS  $2, Y7, Y3, Y7         \
	VANDPS  EXP_G82, Y7, Y7        \
	VPADDD  EXP_B7F, Y7, Y5        \
	VPSUBD  Y7, Y2, Y2             \
	VMULPS  Y5, Y5, Y4             \
	VFMADD231PS Y8, Y2, Y2         \
	VMULPS  Y5, Y2, Y2             \
	VCMPPS  $0x1e, EXP_K192, Y9, Y9 \
	VBLENDVPS Y9, Y4, Y2, Y2       \
	VBLENDVPS Y6, Y2, Y0, Y0       \
vexpfdone:

// func siluAVX2(out, x *float32, n int)
// n is a positive multiple of 8. out[i] = x[i] / (1 + vexpf(-x[i])) as
// ggml_v_silu (x' = 0 - x).
TEXT ·siluAVX2(SB), NOSPLIT, $0-24
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ DX, DX
	VXORPS Y15, Y15, Y15

siluloop:
	VMOVUPS (SI)(DX*4), Y10
	VSUBPS  Y10, Y15, Y1
	VEXPF
	VADDPS  EXP_ONE, Y0, Y0
	VDIVPS  Y0, Y10, Y0
	VMOVUPS Y0, (DI)(DX*4)
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  siluloop
	VZEROUPPER
	RET

// func softmaxExpAVX2(w *float32, n int, mx float32) float64
// n is a positive multiple of 8. w[i] = vexpf(w[i] - mx) (a masked -Inf
// entry gives vexpf(-Inf) = +0 by the same lanes), and the float32
// horizontal sum of each block of 8 (hsum_float_8) added to a float64
// total, as ggml_vec_soft_max_f32.
TEXT ·softmaxExpAVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS mx+16(FP), Y11
	VXORPD X12, X12, X12
	XORQ DX, DX

smloop:
	VMOVUPS (SI)(DX*4), Y1
	VSUBPS  Y11, Y1, Y1
	VEXPF
	VMOVUPS Y0, (SI)(DX*4)
	HSUM8(Y0, X0, X1)
	VCVTSS2SD X0, X0, X0
	VADDSD  X0, X12, X12
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  smloop
	VMOVSD X12, ret+24(FP)
	VZEROUPPER
	RET

// func dotF16x2x4AVX2(a0, a1 *byte, b *[4]*float32, n int, out *[8]float32)
// dotF16x4AVX2 for two rows at once (out[4r+c]): each activation load
// serves both rows. Same lanes and order per output element.
TEXT ·dotF16x2x4AVX2(SB), NOSPLIT, $0-40
	MOVQ a0+0(FP), SI
	MOVQ a1+8(FP), DI
	MOVQ b+16(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ n+24(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ DX, DX

f16x2x4loop:
	VCVTPH2PS (SI)(DX*2), Y8
	VCVTPH2PS (DI)(DX*2), Y9
	VMOVUPS (R8)(DX*4), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS (R9)(DX*4), Y10
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y10, Y9, Y5
	VMOVUPS (R10)(DX*4), Y10
	VFMADD231PS Y10, Y8, Y2
	VFMADD231PS Y10, Y9, Y6
	VMOVUPS (R11)(DX*4), Y10
	VFMADD231PS Y10, Y8, Y3
	VFMADD231PS Y10, Y9, Y7
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f16x2x4loop

	MOVQ out+32(FP), AX
	HSUM8(Y0, X0, X8)
	VMOVSS X0, 0(AX)
	HSUM8(Y1, X1, X8)
	VMOVSS X1, 4(AX)
	HSUM8(Y2, X2, X8)
	VMOVSS X2, 8(AX)
	HSUM8(Y3, X3, X8)
	VMOVSS X3, 12(AX)
	HSUM8(Y4, X4, X8)
	VMOVSS X4, 16(AX)
	HSUM8(Y5, X5, X8)
	VMOVSS X5, 20(AX)
	HSUM8(Y6, X6, X8)
	VMOVSS X6, 24(AX)
	HSUM8(Y7, X7, X8)
	VMOVSS X7, 28(AX)
	VZEROUPPER
	RET

// func packQ4_0x8AVX2(dst *byte, src *byte, stride int, nb int)
// Repacks eight Q4_0 rows (src + j·stride) block by block into dst, 288
// bytes per block: eight 32-byte vectors W_g (g = 0..7) whose 32-bit lane
// j holds the nibbles (unsigned, 0..15) of values 4g..4g+3 of row j, then
// the eight row scales as float32. The layout of llama.cpp's q4_0_8x8
// idea: a 4-byte broadcast of the activations meets all eight rows at once.
TEXT ·packQ4_0x8AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	LEAQ (R9)(R8*4), R11
	MOVQ nb+24(FP), CX
	BCAST32($0x0f0f0f0f, X14, Y14)
	TESTQ CX, CX
	JZ    packdone

packloop:
	NIB(2(SI), X0, Y0, X15)
	NIB(2(SI)(R8*1), X1, Y1, X15)
	NIB(2(SI)(R8*2), X2, Y2, X15)
	NIB(2(SI)(R9*1), X3, Y3, X15)
	NIB(2(SI)(R8*4), X4, Y4, X15)
	NIB(2(SI)(R10*1), X5, Y5, X15)
	NIB(2(SI)(R9*2), X6, Y6, X15)
	NIB(2(SI)(R11*1), X7, Y7, X15)
	// 8x8 transpose of 32-bit groups
	VPUNPCKLDQ Y1, Y0, Y8
	VPUNPCKHDQ Y1, Y0, Y9
	VPUNPCKLDQ Y3, Y2, Y10
	VPUNPCKHDQ Y3, Y2, Y11
	VPUNPCKLDQ Y5, Y4, Y12
	VPUNPCKHDQ Y5, Y4, Y13
	VPUNPCKLDQ Y7, Y6, Y0
	VPUNPCKHDQ Y7, Y6, Y1
	VPUNPCKLQDQ Y10, Y8, Y2
	VPUNPCKHQDQ Y10, Y8, Y3
	VPUNPCKLQDQ Y11, Y9, Y4
	VPUNPCKHQDQ Y11, Y9, Y5
	VPUNPCKLQDQ Y0, Y12, Y6
	VPUNPCKHQDQ Y0, Y12, Y7
	VPUNPCKLQDQ Y1, Y13, Y8
	VPUNPCKHQDQ Y1, Y13, Y9
	VPERM2I128 $0x20, Y6, Y2, Y10
	VMOVDQU Y10, 0(DI)
	VPERM2I128 $0x31, Y6, Y2, Y10
	VMOVDQU Y10, 128(DI)
	VPERM2I128 $0x20, Y7, Y3, Y10
	VMOVDQU Y10, 32(DI)
	VPERM2I128 $0x31, Y7, Y3, Y10
	VMOVDQU Y10, 160(DI)
	VPERM2I128 $0x20, Y8, Y4, Y10
	VMOVDQU Y10, 64(DI)
	VPERM2I128 $0x31, Y8, Y4, Y10
	VMOVDQU Y10, 192(DI)
	VPERM2I128 $0x20, Y9, Y5, Y10
	VMOVDQU Y10, 96(DI)
	VPERM2I128 $0x31, Y9, Y5, Y10
	VMOVDQU Y10, 224(DI)
	// row scales
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
	VMOVUPS Y9, 256(DI)
	ADDQ $18, SI
	ADDQ $288, DI
	DECQ CX
	JNZ  packloop

packdone:
	VZEROUPPER
	RET

// PK4COL adds group g of the packed block (W in Y8) times the broadcast
// activation bytes 4g..4g+3 of column c (pointer P, block offset R12) to
// the int16 sums ACC.
#define PK4COL(P, OFF, ACC) \
	VPBROADCASTD OFF(P)(R12*1), Y9 \
	VPMADDUBSW Y9, Y8, Y9          \
	VPADDW Y9, ACC, ACC

#define PK4GROUP(OFF) \
	VMOVDQU OFF(SI), Y8 \
	PK4COL(R8, OFF/8, Y4)  \
	PK4COL(R9, OFF/8, Y5)  \
	PK4COL(R10, OFF/8, Y6) \
	PK4COL(R11, OFF/8, Y7)

// PK4FIN turns the int16 sums ACC of column c into the float accumulator
// OUT: int32 per row, minus 8·sum(y), converted, fma with d_w·d_y.
#define PK4FIN(ACC, SO, DO, OUT) \
	VPMADDWD Y15, ACC, ACC        \
	MOVQ SO(AX), BX               \
	VPBROADCASTD (BX)(R13*1), Y9  \
	VPSLLD $3, Y9, Y9             \
	VPSUBD Y9, ACC, ACC           \
	VCVTDQ2PS ACC, ACC            \
	MOVQ DO(AX), BX               \
	VBROADCASTSS (BX)(R13*1), Y9  \
	VMULPS Y9, Y13, Y9            \
	VFMADD231PS Y9, ACC, OUT

// func gemmQ4_0x8PackedAVX2(p *byte, a *q4x4Args, nb int, out *[4][8]float32)
// The products of eight packed rows (packQ4_0x8AVX2) with four activation
// rows: dotQ4_0x8's arithmetic (exact integer block sums, then
// acc = fma(float(sum), d_w·d_y, acc) per row), out[c][j].
TEXT ·gemmQ4_0x8PackedAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ a+8(FP), AX
	MOVQ nb+16(FP), CX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	BCAST32($0x00010001, X15, Y15)
	MOVQ a+8(FP), AX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ R12, R12
	XORQ R13, R13
	TESTQ CX, CX
	JZ    gemmdone

gemmloop:
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	PK4GROUP(0)
	PK4GROUP(32)
	PK4GROUP(64)
	PK4GROUP(96)
	PK4GROUP(128)
	PK4GROUP(160)
	PK4GROUP(192)
	PK4GROUP(224)
	VMOVUPS 256(SI), Y13
	PK4FIN(Y4, 64, 32, Y0)
	PK4FIN(Y5, 72, 40, Y1)
	PK4FIN(Y6, 80, 48, Y2)
	PK4FIN(Y7, 88, 56, Y3)
	ADDQ $288, SI
	ADDQ $32, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  gemmloop

gemmdone:
	MOVQ out+24(FP), AX
	VMOVUPS Y0, 0(AX)
	VMOVUPS Y1, 32(AX)
	VMOVUPS Y2, 64(AX)
	VMOVUPS Y3, 96(AX)
	VZEROUPPER
	RET

// func roundF16RowAVX2(x *float32, n int)
// n is a positive multiple of 8. x[i] = float32(float16(x[i])), rounding to
// nearest even (vcvtps2ph with immediate 0, as ggml's FP32_TO_FP16 on F16C).
TEXT ·roundF16RowAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ DX, DX

rndloop:
	VMOVUPS (SI)(DX*4), Y0
	VCVTPS2PH $0, Y0, X0
	VCVTPH2PS X0, Y0
	VMOVUPS Y0, (SI)(DX*4)
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  rndloop
	VZEROUPPER
	RET

// func f32ToF16AVX2(dst *byte, src *float32, n int)
// n is a positive multiple of 8: little-endian halves, rounded to nearest
// even.
TEXT ·f32ToF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ DX, DX

tohloop:
	VMOVUPS (SI)(DX*4), Y0
	VCVTPS2PH $0, Y0, X0
	VMOVDQU X0, (DI)(DX*2)
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  tohloop
	VZEROUPPER
	RET

// Lane pattern for the K-quant group scales: [s0 s0 s0 s0 s1 s1 s1 s1].
DATA qkperm<>+0(SB)/4, $0
DATA qkperm<>+4(SB)/4, $0
DATA qkperm<>+8(SB)/4, $0
DATA qkperm<>+12(SB)/4, $0
DATA qkperm<>+16(SB)/4, $1
DATA qkperm<>+20(SB)/4, $1
DATA qkperm<>+24(SB)/4, $1
DATA qkperm<>+28(SB)/4, $1
GLOBL qkperm<>(SB), RODATA|NOPTR, $32

// func qkLanesAVX2(q *int8, y *int8, sc *int32, nsb int, signed bool, lanes *int32)
// For each super-block s of 256 values: lanes[8s+k] (k < 4) = sum over the
// even 16-value groups g of sc[16s+g]·(4-value product sum k of group g),
// lanes[8s+4+k] the same over the odd groups: dotQK's integer lanes
// (ggml_vec_dot_q*_K_q8_K on AVX2). Exact integer arithmetic: unsigned
// weights (Q2_K, Q4_K, Q5_K) go straight into vpmaddubsw, signed ones
// (Q3_K, Q6_K) through the sign trick, exact since Q8_K activations are
// never -128.
TEXT ·qkLanesAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ sc+16(FP), DX
	MOVQ nsb+24(FP), CX
	MOVBLZX signed+32(FP), R8
	MOVQ lanes+40(FP), BX
	BCAST32($0x00010001, X15, Y15)
	VMOVDQU qkperm<>(SB), Y14
	TESTQ CX, CX
	JZ    qkdone

qksb:
	VPXOR Y0, Y0, Y0
	MOVQ $8, R9

qkpair:
	VMOVDQU (SI), Y1
	VMOVDQU (DI), Y2
	TESTQ R8, R8
	JZ    qkunsigned
	VPSIGNB Y1, Y2, Y2
	VPSIGNB Y1, Y1, Y1

qkunsigned:
	VPMADDUBSW Y2, Y1, Y1
	VPMADDWD Y15, Y1, Y1
	VMOVQ (DX), X3
	VPERMD Y3, Y14, Y3
	VPMULLD Y3, Y1, Y1
	VPADDD Y1, Y0, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $8, DX
	DECQ R9
	JNZ  qkpair
	VMOVDQU Y0, (BX)
	ADDQ $32, BX
	DECQ CX
	JNZ  qksb

qkdone:
	VZEROUPPER
	RET

// Q4I4 adds the products of two interleaved nibble vectors (at V0 and V1
// of SI, values 4h.. of the eight rows in their low nibbles, 16+4h.. in
// their high ones) with the broadcast activation bytes at offsets A0, A1
// (low) and A0+16, A1+16 (high) of DI to the int16 sums ACC. Y0..Y7 are
// clobbered; Y14 = 0x0f bytes.
#define Q4I4(V0, V1, A0, A1, ACC) \
	VMOVDQU V0(SI), Y0             \
	VMOVDQU V1(SI), Y1             \
	VPSRLW $4, Y0, Y2              \
	VPSRLW $4, Y1, Y3              \
	VPAND Y14, Y0, Y0              \
	VPAND Y14, Y1, Y1              \
	VPAND Y14, Y2, Y2              \
	VPAND Y14, Y3, Y3              \
	VPBROADCASTD A0(DI), Y4        \
	VPBROADCASTD A1(DI), Y5        \
	VPBROADCASTD (A0+16)(DI), Y6   \
	VPBROADCASTD (A1+16)(DI), Y7   \
	VPMADDUBSW Y4, Y0, Y0          \
	VPMADDUBSW Y5, Y1, Y1          \
	VPMADDUBSW Y6, Y2, Y2          \
	VPMADDUBSW Y7, Y3, Y3          \
	VPADDW Y1, Y0, Y0              \
	VPADDW Y3, Y2, Y2              \
	VPADDW Y2, Y0, ACC

// func dotQ4_0x8iAVX2(p *byte, qs *int8, d *float32, sum *int32, nb int, ng int, out *float32)
// ng groups of eight Q4_0 rows in the interleaved layout (q4x8i.go), 144
// bytes per block, times one Q8_0 activation row: dotQ4_0x8AVX2's
// arithmetic (exact integer block sums, nibble·y − 8·sum(y), then
// acc = fma(float(sum), d_w·d_y, acc) per row), out[8g+j].
TEXT ·dotQ4_0x8iAVX2(SB), NOSPLIT, $0-56
	MOVQ p+0(FP), SI
	MOVQ ng+40(FP), R9
	BCAST32($0x00010001, X15, Y15)
	BCAST32($0x0f0f0f0f, X14, Y14)
	MOVQ out+48(FP), AX
	TESTQ R9, R9
	JZ    q4idone

q4igroup:
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ sum+24(FP), BX
	MOVQ nb+32(FP), CX
	VXORPS Y13, Y13, Y13
	TESTQ CX, CX
	JZ    q4istore

q4iloop:
	// The stream of a group is contiguous: fetch the block 1 KiB ahead
	// (measured on the 76 MB output projection, one thread: -20% time).
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	Q4I4(16, 48, 0, 4, Y8)
	Q4I4(80, 112, 8, 12, Y9)
	VPADDW Y9, Y8, Y8
	VPMADDWD Y15, Y8, Y8

	// sum(x·y) = sum(nibble·y) - 8·sum(y)
	VPBROADCASTD (BX), Y10
	VPSLLD $3, Y10, Y10
	VPSUBD Y10, Y8, Y8
	VCVTDQ2PS Y8, Y8

	// the eight row scales, times the activation scale
	VCVTPH2PS (SI), Y9
	VBROADCASTSS (DX), Y10
	VMULPS Y10, Y9, Y9
	VFMADD231PS Y9, Y8, Y13

	ADDQ $144, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JNZ  q4iloop

q4istore:
	VMOVUPS Y13, (AX)
	ADDQ $32, AX
	DECQ R9
	JNZ  q4igroup

q4idone:
	VZEROUPPER
	RET

// PKI expands interleaved vector V of SI into the packed groups at byte
// offsets L (low nibbles) and H (high nibbles) of DI.
#define PKI(V, L, H) \
	VMOVDQU V(SI), Y0   \
	VPSRLW $4, Y0, Y1   \
	VPAND Y14, Y0, Y0   \
	VPAND Y14, Y1, Y1   \
	VMOVDQU Y0, L(DI)   \
	VMOVDQU Y1, H(DI)

// func packQ4_0x8iAVX2(dst *byte, p *byte, nb int)
// packQ4_0x8AVX2's output (288 bytes per block) from one group of eight
// rows in the interleaved layout.
TEXT ·packQ4_0x8iAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ nb+16(FP), CX
	BCAST32($0x0f0f0f0f, X14, Y14)
	TESTQ CX, CX
	JZ    pkidone

pkiloop:
	PKI(16, 0, 128)
	PKI(48, 32, 160)
	PKI(80, 64, 192)
	PKI(112, 96, 224)
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, 256(DI)
	ADDQ $144, SI
	ADDQ $288, DI
	DECQ CX
	JNZ  pkiloop

pkidone:
	VZEROUPPER
	RET

// Q8RB adds block b of a Q8_0 row (weights at XO of SI, activations at
// YO of DI, d_x·d_y at SO of SP) to the eight float lanes Y0: one
// iteration of dotQ8_0RawAVX2.
#define Q8RB(XO, YO, SO) \
	VBROADCASTSS SO(SP), Y1 \
	VMOVDQU XO(SI), Y2      \
	VMOVDQU YO(DI), Y3      \
	VPSIGNB Y2, Y2, Y4      \
	VPSIGNB Y2, Y3, Y5      \
	VPMADDUBSW Y5, Y4, Y4   \
	VPMADDWD Y15, Y4, Y4    \
	VCVTDQ2PS Y4, Y4        \
	VFMADD231PS Y4, Y1, Y0

// func dotQ8_0RowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32)
// out[r] = dotQ8_0RawAVX2 of the Q8_0 row at src + r·stride (r < nr) with
// one activation row: the same lanes, FMAs and reduction per row, without
// a call per row, prefetching the stream 2 KiB ahead. The scales
// d_x·d_y of eight blocks at a time are one vector product (the same
// roundings as the scalar ones) kept on the stack.
TEXT ·dotQ8_0RowsAVX2(SB), NOSPLIT, $32-56
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ nr+40(FP), R9
	BCAST32($0x00010001, X15, Y15)
	MOVQ out+48(FP), R10
	TESTQ R9, R9
	JZ    q8rdone

q8rrow:
	MOVQ SI, R11
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0

q8r8:
	CMPQ CX, $8
	JLT  q8rtail
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	PREFETCHT0 2304(SI)
	MOVWLZX (SI), AX
	VMOVD AX, X6
	VPINSRW $1, 34(SI), X6, X6
	VPINSRW $2, 68(SI), X6, X6
	VPINSRW $3, 102(SI), X6, X6
	VPINSRW $4, 136(SI), X6, X6
	VPINSRW $5, 170(SI), X6, X6
	VPINSRW $6, 204(SI), X6, X6
	VPINSRW $7, 238(SI), X6, X6
	VCVTPH2PS X6, Y6
	VMULPS (DX), Y6, Y6
	VMOVUPS Y6, 0(SP)
	Q8RB(2, 0, 0)
	Q8RB(36, 32, 4)
	Q8RB(70, 64, 8)
	Q8RB(104, 96, 12)
	Q8RB(138, 128, 16)
	Q8RB(172, 160, 20)
	Q8RB(206, 192, 24)
	Q8RB(240, 224, 28)
	ADDQ $272, SI
	ADDQ $256, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  q8r8

q8rtail:
	TESTQ CX, CX
	JZ    q8rstore

q8rloop:
	PREFETCHT0 2048(SI)
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
	JNZ  q8rloop

q8rstore:
	HSUM8(Y0, X0, X1)
	VMOVSS X0, (R10)
	ADDQ $4, R10
	LEAQ (R11)(R8*1), SI
	DECQ R9
	JNZ  q8rrow

q8rdone:
	VZEROUPPER
	RET

// func repackQ4_0x8iAVX2(dst *byte, src *byte, stride int, nb int)
// repackQ4_0x8i for one group of eight rows (src + j·stride): per block
// the 4×8 transpose of the rows' nibble words into V_0..V_3 (rows 0–3 in
// the low 128-bit lane, 4–7 in the high one), and the eight scales.
TEXT ·repackQ4_0x8iAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	LEAQ (R8)(R8*2), R9  // 3·stride
	LEAQ (R8)(R8*4), R10 // 5·stride
	LEAQ (R9)(R8*4), R11 // 7·stride
	MOVQ nb+24(FP), CX
	TESTQ CX, CX
	JZ    rpdone

rploop:
	VMOVDQU 2(SI), X0
	VMOVDQU 2(SI)(R8*1), X1
	VMOVDQU 2(SI)(R8*2), X2
	VMOVDQU 2(SI)(R9*1), X3
	VINSERTI128 $1, 2(SI)(R8*4), Y0, Y0
	VINSERTI128 $1, 2(SI)(R10*1), Y1, Y1
	VINSERTI128 $1, 2(SI)(R9*2), Y2, Y2
	VINSERTI128 $1, 2(SI)(R11*1), Y3, Y3
	VPUNPCKLDQ Y1, Y0, Y4
	VPUNPCKHDQ Y1, Y0, Y5
	VPUNPCKLDQ Y3, Y2, Y6
	VPUNPCKHDQ Y3, Y2, Y7
	VPUNPCKLQDQ Y6, Y4, Y0
	VPUNPCKHQDQ Y6, Y4, Y1
	VPUNPCKLQDQ Y7, Y5, Y2
	VPUNPCKHQDQ Y7, Y5, Y3
	VMOVDQU Y0, 16(DI)
	VMOVDQU Y1, 48(DI)
	VMOVDQU Y2, 80(DI)
	VMOVDQU Y3, 112(DI)
	MOVWLZX (SI), AX
	MOVW    AX, 0(DI)
	MOVWLZX (SI)(R8*1), AX
	MOVW    AX, 2(DI)
	MOVWLZX (SI)(R8*2), AX
	MOVW    AX, 4(DI)
	MOVWLZX (SI)(R9*1), AX
	MOVW    AX, 6(DI)
	MOVWLZX (SI)(R8*4), AX
	MOVW    AX, 8(DI)
	MOVWLZX (SI)(R10*1), AX
	MOVW    AX, 10(DI)
	MOVWLZX (SI)(R9*2), AX
	MOVW    AX, 12(DI)
	MOVWLZX (SI)(R11*1), AX
	MOVW    AX, 14(DI)
	ADDQ $18, SI
	ADDQ $144, DI
	DECQ CX
	JNZ  rploop

rpdone:
	VZEROUPPER
	RET

// func dotF32x3x4FMAAVX2(a *[3]*float32, b *[4]*float32, n int, out *[12]float32)
// dotF32x4FMAAVX2 for three rows at once (out[4r+c]): each row load serves
// four columns and each column load three rows, so the loop is bound by
// the twelve FMAs alone. Same lanes and order per output element.
// n is a positive multiple of 8.
TEXT ·dotF32x3x4FMAAVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), BX
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
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	XORQ DX, DX

f32x3x4loop:
	VMOVUPS (SI)(DX*4), Y12
	VMOVUPS (DI)(DX*4), Y13
	VMOVUPS (BX)(DX*4), Y14
	VMOVUPS (R8)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS (R9)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS (R10)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS (R11)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f32x3x4loop

	MOVQ out+24(FP), AX
	HSUM8(Y0, X0, X12)
	VMOVSS X0, 0(AX)
	HSUM8(Y1, X1, X12)
	VMOVSS X1, 4(AX)
	HSUM8(Y2, X2, X12)
	VMOVSS X2, 8(AX)
	HSUM8(Y3, X3, X12)
	VMOVSS X3, 12(AX)
	HSUM8(Y4, X4, X12)
	VMOVSS X4, 16(AX)
	HSUM8(Y5, X5, X12)
	VMOVSS X5, 20(AX)
	HSUM8(Y6, X6, X12)
	VMOVSS X6, 24(AX)
	HSUM8(Y7, X7, X12)
	VMOVSS X7, 28(AX)
	HSUM8(Y8, X8, X12)
	VMOVSS X8, 32(AX)
	HSUM8(Y9, X9, X12)
	VMOVSS X9, 36(AX)
	HSUM8(Y10, X10, X12)
	VMOVSS X10, 40(AX)
	HSUM8(Y11, X11, X12)
	VMOVSS X11, 44(AX)
	VZEROUPPER
	RET

// Q8X2PAIR multiplies the activation block in Y12 (signed) with weight
// row block A (its values in A, their magnitudes in ABS) and adds the
// sums, scaled by the product at S, into ACC: Q8X4COL's steps.
#define Q8X2PAIR(A, ABS, S, ACC) \
	VPSIGNB A, Y12, Y13        \
	VPMADDUBSW Y13, ABS, Y13   \
	VPMADDWD Y15, Y13, Y13     \
	VCVTDQ2PS Y13, Y13         \
	VBROADCASTSS S, Y14        \
	VFMADD231PS Y14, Y13, ACC

// func dotF32x3x4FMARowsAVX2(a *float32, k int, nt int, b *[4]*float32, d *[4]*float32)
// dotF32x3x4FMAAVX2 for nt row triples in one call: rows 3t, 3t+1, 3t+2
// at a + (3t+e)·k, each triple's twelve sums stored straight into the
// four output columns, d[c][3t+e] = row 3t+e · column c. Same lanes and
// order per output element as dotF32x3x4FMAAVX2. k is a positive
// multiple of 8, nt positive.
TEXT ·dotF32x3x4FMARowsAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ k+8(FP), CX
	MOVQ CX, AX
	SHLQ $2, AX
	LEAQ (SI)(AX*1), DI
	LEAQ (DI)(AX*1), BX
	MOVQ b+24(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ nt+16(FP), R12
	XORQ R13, R13

f32rowstriple:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	XORQ DX, DX

f32rowsloop:
	VMOVUPS (SI)(DX*4), Y12
	VMOVUPS (DI)(DX*4), Y13
	VMOVUPS (BX)(DX*4), Y14
	VMOVUPS (R8)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS (R9)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS (R10)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS (R11)(DX*4), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ $8, DX
	CMPQ DX, CX
	JLT  f32rowsloop

	// Row 3t+e of column c at d[c] + 4·(3t+e) (R13 = 12t).
	MOVQ d+32(FP), AX
	MOVQ 0(AX), DX
	HSUM8(Y0, X0, X12)
	VMOVSS X0, 0(DX)(R13*1)
	HSUM8(Y4, X4, X12)
	VMOVSS X4, 4(DX)(R13*1)
	HSUM8(Y8, X8, X12)
	VMOVSS X8, 8(DX)(R13*1)
	MOVQ 8(AX), DX
	HSUM8(Y1, X1, X12)
	VMOVSS X1, 0(DX)(R13*1)
	HSUM8(Y5, X5, X12)
	VMOVSS X5, 4(DX)(R13*1)
	HSUM8(Y9, X9, X12)
	VMOVSS X9, 8(DX)(R13*1)
	MOVQ 16(AX), DX
	HSUM8(Y2, X2, X12)
	VMOVSS X2, 0(DX)(R13*1)
	HSUM8(Y6, X6, X12)
	VMOVSS X6, 4(DX)(R13*1)
	HSUM8(Y10, X10, X12)
	VMOVSS X10, 8(DX)(R13*1)
	MOVQ 24(AX), DX
	HSUM8(Y3, X3, X12)
	VMOVSS X3, 0(DX)(R13*1)
	HSUM8(Y7, X7, X12)
	VMOVSS X7, 4(DX)(R13*1)
	HSUM8(Y11, X11, X12)
	VMOVSS X11, 8(DX)(R13*1)
	// The next triple: rows 12k bytes on.
	MOVQ CX, AX
	SHLQ $2, AX
	LEAQ (AX)(AX*2), AX
	ADDQ AX, SI
	ADDQ AX, DI
	ADDQ AX, BX
	ADDQ $12, R13
	DECQ R12
	JNZ  f32rowstriple
	VZEROUPPER
	RET

// Q8X2SCALES stores at SLOT the eight float32 scale products of one block
// of dotQ8_0x2x4AVX2: the rows' F16 scales (at S0, S1) widened as
// d0,d0,d0,d0,d1,d1,d1,d1 times the four columns' scales at DC.
#define Q8X2SCALES(S0, S1, DC, SLOT) \
	VPBROADCASTW S0, X14          \
	VPBROADCASTW S1, X13          \
	VPUNPCKLQDQ X13, X14, X14     \
	VCVTPH2PS X14, Y14            \
	VBROADCASTF128 DC, Y13        \
	VMULPS Y13, Y14, Y14          \
	VMOVUPS Y14, SLOT

// func dotQ8_0x2x4AVX2(src0, src1 *byte, qs *[4]*int8, dc *float32, nb int, out *[8]float32)
// dotQ8_0Rawx4AVX2 for two Q8_0 rows at once (out[4r+c]). The scale
// products of a block come from one multiply: the rows' F16 scales
// widened as d0,d0,d0,d0,d1,d1,d1,d1 times the four columns' scales (dc,
// per block, broadcast to both halves); lane 4r+c of the product is
// d_r·d_c, the float32 product tinyBLAS takes. Same lanes and order per
// output element.
TEXT ·dotQ8_0x2x4AVX2(SB), NOSPLIT, $64-48
	MOVQ src0+0(FP), SI
	MOVQ src1+8(FP), DI
	MOVQ qs+16(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ dc+24(FP), DX
	MOVQ nb+32(FP), CX
	SHLQ $5, CX // 32·nb: R13 runs over 32·block
	XORQ R13, R13
	BCAST32($0x00010001, X15, Y15)
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     q8x2x4done
	// The scale products of a block are stored one block ahead, in the
	// other of two stack slots (BX the current one, R12 the next): read
	// back from memory a block later, not straight after the store.
	LEAQ 0(SP), BX
	LEAQ 32(SP), R12
	Q8X2SCALES(0(SI), 0(DI), (DX), (BX))

q8x2x4loop:
	LEAQ 32(R13), AX
	CMPQ AX, CX
	JGE  q8x2x4last
	Q8X2SCALES(34(SI), 34(DI), 16(DX), (R12))

q8x2x4last:
	// Each row's block is loaded once (Y8, Y9), its magnitudes once (Y10,
	// Y11), for the four columns.
	VMOVDQU 2(SI), Y8
	VMOVDQU 2(DI), Y9
	VPABSB Y8, Y10
	VPABSB Y9, Y11
	VMOVDQU (R8)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 0(BX), Y0)
	Q8X2PAIR(Y9, Y11, 16(BX), Y4)
	VMOVDQU (R9)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 4(BX), Y1)
	Q8X2PAIR(Y9, Y11, 20(BX), Y5)
	VMOVDQU (R10)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 8(BX), Y2)
	Q8X2PAIR(Y9, Y11, 24(BX), Y6)
	VMOVDQU (R11)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 12(BX), Y3)
	Q8X2PAIR(Y9, Y11, 28(BX), Y7)
	XCHGQ BX, R12
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $16, DX
	ADDQ $32, R13
	CMPQ R13, CX
	JLT  q8x2x4loop

q8x2x4done:
	MOVQ out+40(FP), AX
	HSUM8(Y0, X0, X8)
	VMOVSS X0, 0(AX)
	HSUM8(Y1, X1, X8)
	VMOVSS X1, 4(AX)
	HSUM8(Y2, X2, X8)
	VMOVSS X2, 8(AX)
	HSUM8(Y3, X3, X8)
	VMOVSS X3, 12(AX)
	HSUM8(Y4, X4, X8)
	VMOVSS X4, 16(AX)
	HSUM8(Y5, X5, X8)
	VMOVSS X5, 20(AX)
	HSUM8(Y6, X6, X8)
	VMOVSS X6, 24(AX)
	HSUM8(Y7, X7, X8)
	VMOVSS X7, 28(AX)
	VZEROUPPER
	RET

// func dotQ8_0x2x4RowsAVX2(src *byte, stride int, np int, qs *[4]*int8, dc *float32, nb int, d *[4]*float32)
// dotQ8_0x2x4AVX2 for np row pairs in one call: rows 2p and 2p+1 at src
// + (2p)·stride and src + (2p+1)·stride, each pair's eight sums stored
// straight into the four output columns, d[c][2p+e] = row 2p+e · column
// c. Same lanes and order per output element. nb and np are positive.
// Stack: the two scale slots at 0 and 32, then the pairs left (64), the
// output byte offset (72) and the pair's first row (80).
TEXT ·dotQ8_0x2x4RowsAVX2(SB), NOSPLIT, $88-56
	MOVQ qs+24(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	BCAST32($0x00010001, X15, Y15)
	MOVQ np+16(FP), AX
	MOVQ AX, 64(SP)
	MOVQ $0, 72(SP)
	MOVQ src+0(FP), AX
	MOVQ AX, 80(SP)

q8rowspair:
	MOVQ 80(SP), SI
	MOVQ stride+8(FP), AX
	LEAQ (SI)(AX*1), DI
	MOVQ dc+32(FP), DX
	MOVQ nb+40(FP), CX
	SHLQ $5, CX
	XORQ R13, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ 0(SP), BX
	LEAQ 32(SP), R12
	Q8X2SCALES(0(SI), 0(DI), (DX), (BX))

q8rowsloop:
	LEAQ 32(R13), AX
	CMPQ AX, CX
	JGE  q8rowslast
	Q8X2SCALES(34(SI), 34(DI), 16(DX), (R12))

q8rowslast:
	VMOVDQU 2(SI), Y8
	VMOVDQU 2(DI), Y9
	VPABSB Y8, Y10
	VPABSB Y9, Y11
	VMOVDQU (R8)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 0(BX), Y0)
	Q8X2PAIR(Y9, Y11, 16(BX), Y4)
	VMOVDQU (R9)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 4(BX), Y1)
	Q8X2PAIR(Y9, Y11, 20(BX), Y5)
	VMOVDQU (R10)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 8(BX), Y2)
	Q8X2PAIR(Y9, Y11, 24(BX), Y6)
	VMOVDQU (R11)(R13*1), Y12
	Q8X2PAIR(Y8, Y10, 12(BX), Y3)
	Q8X2PAIR(Y9, Y11, 28(BX), Y7)
	XCHGQ BX, R12
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $16, DX
	ADDQ $32, R13
	CMPQ R13, CX
	JLT  q8rowsloop

	// Row 2p+e of column c at d[c] + 4·(2p+e) (CX = 8p).
	MOVQ d+48(FP), AX
	MOVQ 72(SP), CX
	MOVQ 0(AX), DX
	HSUM8(Y0, X0, X8)
	VMOVSS X0, 0(DX)(CX*1)
	HSUM8(Y4, X4, X8)
	VMOVSS X4, 4(DX)(CX*1)
	MOVQ 8(AX), DX
	HSUM8(Y1, X1, X8)
	VMOVSS X1, 0(DX)(CX*1)
	HSUM8(Y5, X5, X8)
	VMOVSS X5, 4(DX)(CX*1)
	MOVQ 16(AX), DX
	HSUM8(Y2, X2, X8)
	VMOVSS X2, 0(DX)(CX*1)
	HSUM8(Y6, X6, X8)
	VMOVSS X6, 4(DX)(CX*1)
	MOVQ 24(AX), DX
	HSUM8(Y3, X3, X8)
	VMOVSS X3, 0(DX)(CX*1)
	HSUM8(Y7, X7, X8)
	VMOVSS X7, 4(DX)(CX*1)
	ADDQ $8, CX
	MOVQ CX, 72(SP)
	MOVQ stride+8(FP), AX
	SHLQ $1, AX
	ADDQ AX, 80(SP)
	DECQ 64(SP)
	JNZ  q8rowspair
	VZEROUPPER
	RET

// Q8X2PAIRVNNI is Q8X2PAIR with the four-byte sums of one VPDPBUSD (into
// zero) in place of VPMADDUBSW and VPMADDWD: the same exact int32 lanes,
// since VPMADDUBSW's pairs never saturate here (|a| <= 128, |b| <= 127).
#define Q8X2PAIRVNNI(A, ABS, S, ACC) \
	VPSIGNB A, Y12, Y13        \
	VPXOR Y9, Y9, Y9           \
	VPDPBUSD Y13, ABS, Y9      \
	VCVTDQ2PS Y9, Y13          \
	VBROADCASTSS S, Y14        \
	VFMADD231PS Y14, Y13, ACC

// func dotQ8_0x2x4VNNI(src0, src1 *byte, qs *[4]*int8, dc *float32, nb int, out *[8]float32)
// dotQ8_0x2x4AVX2 with AVX512-VNNI's VPDPBUSD on 256-bit vectors (needs
// AVX512VL). Same int32 lanes, same order per output element, same bits.
TEXT ·dotQ8_0x2x4VNNI(SB), NOSPLIT, $32-48
	MOVQ src0+0(FP), SI
	MOVQ src1+8(FP), DI
	MOVQ qs+16(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ dc+24(FP), DX
	MOVQ nb+32(FP), CX
	SHLQ $5, CX
	XORQ R13, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ  CX, CX
	JZ     q8x2x4vdone

q8x2x4vloop:
	VPABSB 2(SI), Y10
	VPABSB 2(DI), Y11
	VPBROADCASTW 0(SI), X14
	VPBROADCASTW 0(DI), X13
	VPUNPCKLQDQ X13, X14, X14
	VCVTPH2PS X14, Y14
	VBROADCASTF128 (DX), Y13
	VMULPS Y13, Y14, Y14
	VMOVUPS Y14, 0(SP)
	VMOVDQU (R8)(R13*1), Y12
	Q8X2PAIRVNNI(2(SI), Y10, 0(SP), Y0)
	Q8X2PAIRVNNI(2(DI), Y11, 16(SP), Y4)
	VMOVDQU (R9)(R13*1), Y12
	Q8X2PAIRVNNI(2(SI), Y10, 4(SP), Y1)
	Q8X2PAIRVNNI(2(DI), Y11, 20(SP), Y5)
	VMOVDQU (R10)(R13*1), Y12
	Q8X2PAIRVNNI(2(SI), Y10, 8(SP), Y2)
	Q8X2PAIRVNNI(2(DI), Y11, 24(SP), Y6)
	VMOVDQU (R11)(R13*1), Y12
	Q8X2PAIRVNNI(2(SI), Y10, 12(SP), Y3)
	Q8X2PAIRVNNI(2(DI), Y11, 28(SP), Y7)
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $16, DX
	ADDQ $32, R13
	CMPQ R13, CX
	JLT  q8x2x4vloop

q8x2x4vdone:
	MOVQ out+40(FP), AX
	HSUM8(Y0, X0, X8)
	VMOVSS X0, 0(AX)
	HSUM8(Y1, X1, X8)
	VMOVSS X1, 4(AX)
	HSUM8(Y2, X2, X8)
	VMOVSS X2, 8(AX)
	HSUM8(Y3, X3, X8)
	VMOVSS X3, 12(AX)
	HSUM8(Y4, X4, X8)
	VMOVSS X4, 16(AX)
	HSUM8(Y5, X5, X8)
	VMOVSS X5, 20(AX)
	HSUM8(Y6, X6, X8)
	VMOVSS X6, 24(AX)
	HSUM8(Y7, X7, X8)
	VMOVSS X7, 28(AX)
	VZEROUPPER
	RET
