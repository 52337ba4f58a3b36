//go:build amd64 && !purego

// AVX2+FMA+F16C K-quant matmul kernels, written by hand: each reproduces
// its pure-Go twin in kquant.go operation for operation (the integer lanes,
// the float conversions, FMAs and horizontal sums of ggml-cpu's AVX2
// ggml_vec_dot_q{5,6}_K_q8_K in arch/x86/quants.c and of the q4_K_8x8
// GEMV/GEMM in arch/x86/repack.cpp), so the bits are the twins'
// (kquant_test.go).

#include "textflag.h"

// vpshufb mask: 32-bit lane j = (byte j, 0, byte j, 0) of each 128-bit
// half, i.e. the int16 pair (s_j, s_j) from eight bytes s_0..s_7
// broadcast to both halves.
DATA q4kscm<>+0(SB)/4, $0x80008000
DATA q4kscm<>+4(SB)/4, $0x80018001
DATA q4kscm<>+8(SB)/4, $0x80028002
DATA q4kscm<>+12(SB)/4, $0x80038003
DATA q4kscm<>+16(SB)/4, $0x80048004
DATA q4kscm<>+20(SB)/4, $0x80058005
DATA q4kscm<>+24(SB)/4, $0x80068006
DATA q4kscm<>+28(SB)/4, $0x80078007
GLOBL q4kscm<>(SB), RODATA|NOPTR, $32

// vpshufb mask: from a broadcast int16 pair (w0, w1), w0 in every word of
// the low half and w1 in every word of the high half.
DATA q6scm<>+0(SB)/4, $0x01000100
DATA q6scm<>+4(SB)/4, $0x01000100
DATA q6scm<>+8(SB)/4, $0x01000100
DATA q6scm<>+12(SB)/4, $0x01000100
DATA q6scm<>+16(SB)/4, $0x03020302
DATA q6scm<>+20(SB)/4, $0x03020302
DATA q6scm<>+24(SB)/4, $0x03020302
DATA q6scm<>+28(SB)/4, $0x03020302
GLOBL q6scm<>(SB), RODATA|NOPTR, $32

#define BCAST32(c, X, Y) MOVL c, AX; VMOVD AX, X; VPBROADCASTD X, Y

// HSUM8 reduces the eight lanes of Y into X as hsum_float_8 does:
// (l0+l4, l1+l5, l2+l6, l3+l7), then ((t0+t2) + (t1+t3)). T is clobbered.
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       X, T, T  \
	VMOVHLPS     T, T, X  \
	VADDPS       X, T, T  \
	VMOVSHDUP    T, X     \
	VADDSS       X, T, X

// Q4KH adds vector VO of SI (eight rows' bytes) times the activations:
// low nibbles · y[YO..YO+3] to the int16 pairs Y8, high nibbles ·
// y[YO+32..YO+35] to Y9. Y0..Y3 clobbered; Y15 = 0x0f bytes.
#define Q4KH(VO, YO) \
	VMOVDQU VO(SI), Y0            \
	VPSRLW $4, Y0, Y1             \
	VPAND Y15, Y0, Y0             \
	VPAND Y15, Y1, Y1             \
	VPBROADCASTD YO(DI), Y2       \
	VPBROADCASTD (YO+32)(DI), Y3  \
	VPMADDUBSW Y2, Y0, Y0         \
	VPMADDUBSW Y3, Y1, Y1         \
	VPADDW Y0, Y8, Y8             \
	VPADDW Y1, Y9, Y9

// Q4KC computes chunk C (sub-blocks 2C, 2C+1) of a super-block of eight
// interleaved Q4_K rows at SI: Y8 = the scaled integer sums per row
// (sc·Σq·y of both sub-blocks), Y4 = the mins (m·bsum of both). Y14 =
// q4kscm. Y0..Y5, Y9 clobbered.
#define Q4KC(C) \
	PREFETCHT0 (2368+160+256*C)(SI)     \
	PREFETCHT0 (2368+224+256*C)(SI)     \
	PREFETCHT0 (2368+288+256*C)(SI)     \
	PREFETCHT0 (2368+352+256*C)(SI)     \
	VPXOR Y8, Y8, Y8                    \
	VPXOR Y9, Y9, Y9                    \
	Q4KH(160+256*C, 64*C)               \
	Q4KH(160+256*C+32, 64*C+4)          \
	Q4KH(160+256*C+64, 64*C+8)          \
	Q4KH(160+256*C+96, 64*C+12)         \
	Q4KH(160+256*C+128, 64*C+16)        \
	Q4KH(160+256*C+160, 64*C+20)        \
	Q4KH(160+256*C+192, 64*C+24)        \
	Q4KH(160+256*C+224, 64*C+28)        \
	VPBROADCASTQ (32+16*C)(SI), Y2      \
	VPSHUFB Y14, Y2, Y2                 \
	VPBROADCASTQ (40+16*C)(SI), Y3      \
	VPSHUFB Y14, Y3, Y3                 \
	VPMADDWD Y2, Y8, Y8                 \
	VPMADDWD Y3, Y9, Y9                 \
	VPADDD Y9, Y8, Y8                   \
	VPMOVZXBW (96+16*C)(SI), Y4         \
	VPBROADCASTD (4*C)(BX), Y5          \
	VPMADDWD Y5, Y4, Y4

// Q4KSUM adds chunk C's integers to the super-block's (Y10, Y11).
#define Q4KSUM(C) \
	Q4KC(C)             \
	VPADDD Y8, Y10, Y10 \
	VPADDD Y4, Y11, Y11

// Q4KPAIR accumulates chunk C's integers in float: Y13 += float(Y8)·Y6,
// Y12 += float(Y4)·Y7.
#define Q4KPAIR(C) \
	Q4KC(C)                  \
	VCVTDQ2PS Y8, Y8         \
	VCVTDQ2PS Y4, Y4         \
	VFMADD231PS Y8, Y6, Y13  \
	VFMADD231PS Y4, Y7, Y12

// func dotQ4Kx8iAVX2(p *byte, qs *int8, d *float32, b32 *int16, nsb int, ng int, pairs bool, out *float32)
// ng (> 0) groups of eight Q4_K rows in the interleaved layout (kquant.go),
// nsb (> 0) super-blocks of 1184 bytes each, times one Q8_K activation
// row (qs, d, and b32 = its sums per 32 values): per row and super-block
// the exact integers isum = Σ sc·Σ q·y and imin = Σ m·bsum, then
// acc = fma(float(isum), d_w·d_y, acc) and accMin = fma(float(imin),
// dmin_w·d_y, accMin) (with pairs: the same per pair of sub-blocks);
// out[8g+j] = acc − accMin.
TEXT ·dotQ4Kx8iAVX2(SB), NOSPLIT, $0-64
	MOVQ p+0(FP), SI
	MOVQ ng+40(FP), R9
	MOVQ out+56(FP), R10
	MOVBLZX pairs+48(FP), R11
	BCAST32($0x0f0f0f0f, X15, Y15)
	VMOVDQU q4kscm<>(SB), Y14

q4kgroup:
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ b32+24(FP), BX
	MOVQ nsb+32(FP), CX
	VXORPS Y13, Y13, Y13
	VXORPS Y12, Y12, Y12
	TESTQ R11, R11
	JNZ   q4kpairs

q4ksb:
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	Q4KSUM(0)
	Q4KSUM(1)
	Q4KSUM(2)
	Q4KSUM(3)
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VBROADCASTSS (DX), Y2
	VMULPS Y2, Y0, Y0
	VMULPS Y2, Y1, Y1
	VCVTDQ2PS Y10, Y10
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y10, Y0, Y13
	VFMADD231PS Y11, Y1, Y12
	ADDQ $1184, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $16, BX
	DECQ CX
	JNZ  q4ksb
	JMP  q4kstore

q4kpairs:
	VCVTPH2PS (SI), Y6
	VCVTPH2PS 16(SI), Y7
	VBROADCASTSS (DX), Y2
	VMULPS Y2, Y6, Y6
	VMULPS Y2, Y7, Y7
	Q4KPAIR(0)
	Q4KPAIR(1)
	Q4KPAIR(2)
	Q4KPAIR(3)
	ADDQ $1184, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $16, BX
	DECQ CX
	JNZ  q4kpairs

q4kstore:
	VSUBPS Y12, Y13, Y0
	VMOVUPS Y0, (R10)
	ADDQ $32, R10
	DECQ R9
	JNZ  q4kgroup
	VZEROUPPER
	RET

// Q5KC adds chunk C of a Q5_K super-block at SI (sub-blocks 2C, 2C+1:
// the low and high nibbles of qs bytes 32C..32C+31, their fifth bits
// bits 2C, 2C+1 of qh, kept in Y7 shifted right by 2C) times the
// activations at DI, each times its scale (int16 at 16(SP)), to the
// int32 lanes Y10. Y15 = 0x0f, Y14 = 0x01, Y13 = 0x02 bytes.
#define Q5KC(C) \
	VMOVDQU (48+32*C)(SI), Y0         \
	VPSRLW $4, Y0, Y1                 \
	VPAND Y15, Y0, Y0                 \
	VPAND Y15, Y1, Y1                 \
	VPAND Y14, Y7, Y2                 \
	VPSLLW $4, Y2, Y2                 \
	VPOR Y2, Y0, Y0                   \
	VPAND Y13, Y7, Y3                 \
	VPSLLW $3, Y3, Y3                 \
	VPOR Y3, Y1, Y1                   \
	VPSRLW $2, Y7, Y7                 \
	VPMADDUBSW (64*C)(DI), Y0, Y0     \
	VPMADDUBSW (64*C+32)(DI), Y1, Y1  \
	VPBROADCASTW (16+4*C)(SP), Y2     \
	VPBROADCASTW (18+4*C)(SP), Y3     \
	VPMADDWD Y2, Y0, Y0               \
	VPMADDWD Y3, Y1, Y1               \
	VPADDD Y0, Y10, Y10               \
	VPADDD Y1, Y10, Y10

// func dotQ5KRowsAVX2(src *byte, stride int, qs *int8, d *float32, b32 *int16, nsb int, nr int, out *float32)
// out[r] (r < nr, nr > 0) = the Q5_K row at src + r·stride (nsb > 0
// super-blocks of 176 bytes) times one Q8_K activation row, as
// ggml_vec_dot_q5_K_q8_K on AVX2: per super-block the eight int32 lanes
// (values 4k..4k+3 of each 32-value sub-block times its scale),
// acc = fma(d_y·d, float(lanes), acc), summs = fma(−d_y·dmin, float(Σ
// m·bsum), summs); out = hsum(acc) + summs.
TEXT ·dotQ5KRowsAVX2(SB), NOSPLIT, $32-64
	MOVQ src+0(FP), R11
	MOVQ stride+8(FP), R8
	MOVQ nr+48(FP), R9
	MOVQ out+56(FP), R10
	BCAST32($0x0f0f0f0f, X15, Y15)
	BCAST32($0x01010101, X14, Y14)
	BCAST32($0x02020202, X13, Y13)

q5row:
	MOVQ R11, SI
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ b32+32(FP), BX
	MOVQ nsb+40(FP), CX
	VXORPS Y12, Y12, Y12
	VXORPS X8, X8, X8

q5sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	// The 6-bit scales and mins (get_scale_min_k4) as bytes: scales at
	// 0(SP), mins at 8(SP).
	MOVL 12(SI), AX
	SHRL $4, AX
	ANDL $0x0f0f0f0f, AX
	MOVL 8(SI), R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, AX
	MOVL AX, 12(SP)
	MOVL 8(SI), AX
	ANDL $0x3f3f3f3f, AX
	MOVL AX, 8(SP)
	MOVL 12(SI), AX
	ANDL $0x0f0f0f0f, AX
	MOVL 4(SI), R12
	SHRL $6, R12
	ANDL $0x03030303, R12
	SHLL $4, R12
	ORL  R12, AX
	MOVL AX, 4(SP)
	MOVL 4(SI), AX
	ANDL $0x3f3f3f3f, AX
	MOVL AX, 0(SP)
	VPMOVZXBW 0(SP), X4
	VMOVDQU X4, 16(SP)

	// summs = fma(-(d_y·dmin), float(Σ m·bsum), summs)
	VPMOVZXBW 8(SP), X5
	VPMADDWD (BX), X5, X5
	VPSHUFD $0x4e, X5, X6
	VPADDD X6, X5, X5
	VPSHUFD $0xb1, X5, X6
	VPADDD X6, X5, X5
	VCVTDQ2PS X5, X5
	MOVWLZX 2(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DX), X6, X6
	VFNMADD231SS X5, X6, X8

	VMOVDQU 16(SI), Y7
	VPXOR Y10, Y10, Y10
	Q5KC(0)
	Q5KC(1)
	Q5KC(2)
	Q5KC(3)

	MOVWLZX 0(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DX), X6, X6
	VBROADCASTSS X6, Y6
	VCVTDQ2PS Y10, Y10
	VFMADD231PS Y10, Y6, Y12
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $16, BX
	DECQ CX
	JNZ  q5sb

	HSUM8(Y12, X12, X1)
	VADDSS X8, X12, X12
	VMOVSS X12, (R10)
	ADDQ $4, R10
	ADDQ R8, R11
	DECQ R9
	JNZ  q5row
	VZEROUPPER
	RET

// Q6KG adds group G (32 values, in the bytes of Q) times the activations
// at DI, each half times its 16-value scale (int16 at 4G(SP), 4G+2(SP)),
// to the int32 lanes Y10. Y9 = q6scm; Y5 clobbered.
#define Q6KG(Q, G) \
	VPMADDUBSW (32*G)(DI), Q, Q  \
	VPBROADCASTD (4*G)(SP), Y5   \
	VPSHUFB Y9, Y5, Y5           \
	VPMADDWD Y5, Q, Q            \
	VPADDD Q, Y10, Y10

// Q6KH adds half N (values 128N..128N+127) of a Q6_K super-block at SI:
// ql bytes 64N..64N+63, qh bytes 128+32N..128+32N+31. Y15 = 0x0f,
// Y14 = 0x03, Y12 = 0x30 bytes; Y0..Y5 clobbered.
#define Q6KH(N) \
	VMOVDQU (128+32*N)(SI), Y2  \
	VMOVDQU (64*N)(SI), Y0      \
	VMOVDQU (64*N+32)(SI), Y1   \
	VPAND Y15, Y0, Y3           \
	VPAND Y14, Y2, Y4           \
	VPSLLW $4, Y4, Y4           \
	VPOR Y4, Y3, Y3             \
	Q6KG(Y3, (4*N))             \
	VPAND Y15, Y1, Y3           \
	VPSLLW $2, Y2, Y4           \
	VPAND Y12, Y4, Y4           \
	VPOR Y4, Y3, Y3             \
	Q6KG(Y3, (4*N+1))           \
	VPSRLW $4, Y0, Y3           \
	VPAND Y15, Y3, Y3           \
	VPAND Y12, Y2, Y4           \
	VPOR Y4, Y3, Y3             \
	Q6KG(Y3, (4*N+2))           \
	VPSRLW $4, Y1, Y3           \
	VPAND Y15, Y3, Y3           \
	VPSRLW $2, Y2, Y4           \
	VPAND Y12, Y4, Y4           \
	VPOR Y4, Y3, Y3             \
	Q6KG(Y3, (4*N+3))

// func dotQ6KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bs16 *int16, nsb int, nr int, out *float32)
// out[r] (r < nr, nr > 0) = the Q6_K row at src + r·stride (nsb > 0
// super-blocks of 210 bytes) times one Q8_K activation row (qs, d, bs16 =
// its sums per 16 values), as ggml_vec_dot_q6_K_q8_K on AVX2 (llama.cpp
// 3f545bec): per super-block the int32 lanes of the unsigned 6-bit
// values (values 4k..4k+3 of each 32-value group times its 16-value
// scale) minus 32·(sc[2k]·bsum[2k] + sc[2k+1]·bsum[2k+1]),
// acc = fma(d_y·d, float(lanes), acc); out = hsum(acc).
TEXT ·dotQ6KRowsAVX2(SB), NOSPLIT, $32-64
	MOVQ src+0(FP), R11
	MOVQ stride+8(FP), R8
	MOVQ nr+48(FP), R9
	MOVQ out+56(FP), R10
	BCAST32($0x0f0f0f0f, X15, Y15)
	BCAST32($0x03030303, X14, Y14)
	BCAST32($0x30303030, X12, Y12)
	VMOVDQU q6scm<>(SB), Y9

q6row:
	MOVQ R11, SI
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ bs16+32(FP), BX
	MOVQ nsb+40(FP), CX
	VXORPS Y13, Y13, Y13

q6sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	PREFETCHT0 1216(SI)
	VPMOVSXBW 192(SI), Y0
	VMOVDQU Y0, 0(SP)
	VPMADDWD (BX), Y0, Y11
	VPSLLD $5, Y11, Y11
	VPXOR Y10, Y10, Y10
	Q6KH(0)
	Q6KH(1)
	VPSUBD Y11, Y10, Y10
	VCVTDQ2PS Y10, Y10
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y10, Y6, Y13
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, BX
	DECQ CX
	JNZ  q6sb

	HSUM8(Y13, X13, X1)
	VMOVSS X13, (R10)
	ADDQ $4, R10
	ADDQ R8, R11
	DECQ R9
	JNZ  q6row
	VZEROUPPER
	RET

// X4M multiplies the nibbles Y0 (low) and Y1 (high) with activation
// column Q's words YO and YO+32 (DX: the super-block's offset) and adds
// to its int16 pairs LO, HI. Y2, Y3 clobbered.
#define X4M(Q, YO, LO, HI) \
	VPBROADCASTD YO(Q)(DX*1), Y2       \
	VPBROADCASTD (YO+32)(Q)(DX*1), Y3  \
	VPMADDUBSW Y2, Y0, Y2              \
	VPMADDUBSW Y3, Y1, Y3              \
	VPADDW Y2, LO, LO                  \
	VPADDW Y3, HI, HI

// X4H is Q4KH for the four columns of dotQ4Kx8x4iAVX2.
#define X4H(VO, YO) \
	VMOVDQU VO(SI), Y0            \
	VPSRLW $4, Y0, Y1             \
	VPAND Y15, Y0, Y0             \
	VPAND Y15, Y1, Y1             \
	X4M(R8, YO, Y4, Y5)           \
	X4M(R9, YO, Y6, Y7)           \
	X4M(R10, YO, Y8, Y9)          \
	X4M(R11, YO, Y10, Y11)

// X4S applies the sub-block scales Y12, Y13 to column pairs LO, HI and
// converts the chunk's scaled sum to float in LO.
#define X4S(LO, HI) \
	VPMADDWD Y12, LO, LO \
	VPMADDWD Y13, HI, HI \
	VPADDD HI, LO, LO    \
	VCVTDQ2PS LO, LO

// X4F accumulates chunk C of column I: acc += F·(d_w·d_y),
// accMin += float(mins·bsum)·(dmin_w·d_y), both on the stack. Y12 = d_w,
// Y3 = dmin_w, Y13 = the chunk's mins; T, Y0..Y2 clobbered.
#define X4F(C, I, F, T) \
	MOVQ (64+8*I)(DI), AX              \
	VPBROADCASTD (4*C)(AX)(R12*1), Y0  \
	VPMADDWD Y13, Y0, Y0               \
	VCVTDQ2PS Y0, Y0                   \
	MOVQ (32+8*I)(DI), AX              \
	VBROADCASTSS (AX)(BX*4), Y1        \
	VMULPS Y1, Y12, Y2                 \
	VMULPS Y1, Y3, Y1                  \
	VMOVUPS (64*I)(SP), T              \
	VFMADD231PS F, Y2, T               \
	VMOVUPS T, (64*I)(SP)              \
	VMOVUPS (64*I+32)(SP), T           \
	VFMADD231PS Y0, Y1, T              \
	VMOVUPS T, (64*I+32)(SP)

// X4C is chunk C of a super-block for four columns, in the GEMM order.
#define X4C(C) \
	PREFETCHT0 (2368+160+256*C)(SI)     \
	PREFETCHT0 (2368+224+256*C)(SI)     \
	PREFETCHT0 (2368+288+256*C)(SI)     \
	PREFETCHT0 (2368+352+256*C)(SI)     \
	VPXOR Y4, Y4, Y4                    \
	VPXOR Y5, Y5, Y5                    \
	VPXOR Y6, Y6, Y6                    \
	VPXOR Y7, Y7, Y7                    \
	VPXOR Y8, Y8, Y8                    \
	VPXOR Y9, Y9, Y9                    \
	VPXOR Y10, Y10, Y10                 \
	VPXOR Y11, Y11, Y11                 \
	X4H(160+256*C, 64*C)                \
	X4H(160+256*C+32, 64*C+4)           \
	X4H(160+256*C+64, 64*C+8)           \
	X4H(160+256*C+96, 64*C+12)          \
	X4H(160+256*C+128, 64*C+16)         \
	X4H(160+256*C+160, 64*C+20)         \
	X4H(160+256*C+192, 64*C+24)         \
	X4H(160+256*C+224, 64*C+28)         \
	VPBROADCASTQ (32+16*C)(SI), Y12     \
	VPSHUFB Y14, Y12, Y12               \
	VPBROADCASTQ (40+16*C)(SI), Y13     \
	VPSHUFB Y14, Y13, Y13               \
	X4S(Y4, Y5)                         \
	X4S(Y6, Y7)                         \
	X4S(Y8, Y9)                         \
	X4S(Y10, Y11)                       \
	VPMOVZXBW (96+16*C)(SI), Y13        \
	VCVTPH2PS (SI), Y12                 \
	VCVTPH2PS 16(SI), Y3                \
	X4F(C, 0, Y4, Y5)                   \
	X4F(C, 1, Y6, Y7)                   \
	X4F(C, 2, Y8, Y9)                   \
	X4F(C, 3, Y10, Y11)

// func dotQ4Kx8x4iAVX2(p *byte, a *q4kx4Args, nsb int, out *[4][8]float32)
// One group of eight Q4_K rows in the interleaved layout (nsb > 0
// super-blocks) times four Q8_K activation columns in
// dotQ4Kx8iAVX2's GEMM (pairs) order: out[c][j] for column c, row j. The
// nibbles are unpacked once for the four columns; the float accumulators
// live on the stack (acc of column c at 64c, accMin at 64c+32).
TEXT ·dotQ4Kx8x4iAVX2(SB), NOSPLIT, $256-32
	MOVQ p+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ nsb+16(FP), CX
	MOVQ 0(DI), R8
	MOVQ 8(DI), R9
	MOVQ 16(DI), R10
	MOVQ 24(DI), R11
	XORQ DX, DX
	XORQ BX, BX
	XORQ R12, R12
	BCAST32($0x0f0f0f0f, X15, Y15)
	VMOVDQU q4kscm<>(SB), Y14
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	VMOVUPS Y0, 192(SP)
	VMOVUPS Y0, 224(SP)

x4sb:
	X4C(0)
	X4C(1)
	X4C(2)
	X4C(3)
	ADDQ $1184, SI
	ADDQ $256, DX
	ADDQ $16, R12
	INCQ BX
	DECQ CX
	JNZ  x4sb

	MOVQ out+24(FP), AX
	VMOVUPS 0(SP), Y0
	VSUBPS 32(SP), Y0, Y0
	VMOVUPS Y0, 0(AX)
	VMOVUPS 64(SP), Y0
	VSUBPS 96(SP), Y0, Y0
	VMOVUPS Y0, 32(AX)
	VMOVUPS 128(SP), Y0
	VSUBPS 160(SP), Y0, Y0
	VMOVUPS Y0, 64(AX)
	VMOVUPS 192(SP), Y0
	VSUBPS 224(SP), Y0, Y0
	VMOVUPS Y0, 96(AX)
	VZEROUPPER
	RET

// Q6X4M adds group G of the Q6_K values Y3 times column Q's activations,
// scaled by Y8, to the int32 lanes L. Y10 clobbered.
#define Q6X4M(G, Q, L) \
	VPMADDUBSW (32*G)(Q)(DX*1), Y3, Y10 \
	VPMADDWD Y8, Y10, Y10               \
	VPADDD Y10, L, L

// Q6X4G is group G (values in Y3) for the four columns: the scales of
// its two 16-value halves (int16 at 128+4G(SP)) shuffled once.
#define Q6X4G(G) \
	VPBROADCASTD (128+4*G)(SP), Y8 \
	VPSHUFB Y9, Y8, Y8             \
	Q6X4M(G, R8, Y4)               \
	Q6X4M(G, R9, Y5)               \
	Q6X4M(G, R10, Y6)              \
	Q6X4M(G, R11, Y7)

// Q6X4H is Q6KH for the four columns of dotQ6Kx4RowsAVX2 (Y13 the
// scratch of the high bits).
#define Q6X4H(N) \
	VMOVDQU (128+32*N)(SI), Y2  \
	VMOVDQU (64*N)(SI), Y0      \
	VMOVDQU (64*N+32)(SI), Y1   \
	VPAND Y15, Y0, Y3           \
	VPAND Y14, Y2, Y13          \
	VPSLLW $4, Y13, Y13         \
	VPOR Y13, Y3, Y3            \
	Q6X4G((4*N))                \
	VPAND Y15, Y1, Y3           \
	VPSLLW $2, Y2, Y13          \
	VPAND Y12, Y13, Y13         \
	VPOR Y13, Y3, Y3            \
	Q6X4G((4*N+1))              \
	VPSRLW $4, Y0, Y3           \
	VPAND Y15, Y3, Y3           \
	VPAND Y12, Y2, Y13          \
	VPOR Y13, Y3, Y3            \
	Q6X4G((4*N+2))              \
	VPSRLW $4, Y1, Y3           \
	VPAND Y15, Y3, Y3           \
	VPSRLW $2, Y2, Y13          \
	VPAND Y12, Y13, Y13         \
	VPOR Y13, Y3, Y3            \
	Q6X4G((4*N+3))

// Q6X4O starts column I's lanes L at −32·(sc[2k]·bsum[2k] +
// sc[2k+1]·bsum[2k+1]) (Y0: the sixteen int16 scales).
#define Q6X4O(I, L) \
	MOVQ (64+8*I)(DI), AX          \
	VPMADDWD (AX)(R12*1), Y0, Y13  \
	VPSLLD $5, Y13, Y13            \
	VPXOR L, L, L                  \
	VPSUBD Y13, L, L

// Q6X4A accumulates column I: acc (at 32I(SP)) = fma(float(L), d_w·d_y,
// acc) (Y11 = d_w).
#define Q6X4A(I, L) \
	VCVTDQ2PS L, L                \
	MOVQ (32+8*I)(DI), AX         \
	VBROADCASTSS (AX)(BX*4), Y13  \
	VMULPS Y13, Y11, Y13          \
	VMOVUPS (32*I)(SP), Y10       \
	VFMADD231PS L, Y13, Y10       \
	VMOVUPS Y10, (32*I)(SP)

// Q6X4OUT stores column I's horizontal sum to out[I][R13].
#define Q6X4OUT(I) \
	VMOVUPS (32*I)(SP), Y0  \
	HSUM8(Y0, X0, X1)       \
	MOVQ (96+8*I)(DI), AX   \
	VMOVSS X0, (AX)(R13*4)

// func dotQ6Kx4RowsAVX2(src *byte, stride int, a *q6kx4Args, nsb int, nr int)
// dotQ6KRowsAVX2 for four activation columns at once (the prefill): each
// Q6_K row (nr > 0 rows, nsb > 0 super-blocks) is unpacked once and meets
// the four columns with the same lanes, FMAs and sums as the one-column
// kernel; out[c][r] for column c, row r (float accumulators at 0..127(SP),
// the scales at 128(SP), the row start at 160(SP)).
TEXT ·dotQ6Kx4RowsAVX2(SB), NOSPLIT, $168-40
	MOVQ a+16(FP), DI
	MOVQ 0(DI), R8
	MOVQ 8(DI), R9
	MOVQ 16(DI), R10
	MOVQ 24(DI), R11
	BCAST32($0x0f0f0f0f, X15, Y15)
	BCAST32($0x03030303, X14, Y14)
	BCAST32($0x30303030, X12, Y12)
	VMOVDQU q6scm<>(SB), Y9
	MOVQ src+0(FP), SI
	XORQ R13, R13

q6x4row:
	MOVQ SI, 160(SP)
	MOVQ nsb+24(FP), CX
	XORQ DX, DX
	XORQ BX, BX
	XORQ R12, R12
	VXORPS Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)

q6x4sb:
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	PREFETCHT0 1216(SI)
	VPMOVSXBW 192(SI), Y0
	VMOVDQU Y0, 128(SP)
	Q6X4O(0, Y4)
	Q6X4O(1, Y5)
	Q6X4O(2, Y6)
	Q6X4O(3, Y7)
	Q6X4H(0)
	Q6X4H(1)
	MOVWLZX 208(SI), AX
	VMOVD AX, X11
	VCVTPH2PS X11, X11
	VBROADCASTSS X11, Y11
	Q6X4A(0, Y4)
	Q6X4A(1, Y5)
	Q6X4A(2, Y6)
	Q6X4A(3, Y7)
	ADDQ $210, SI
	ADDQ $256, DX
	ADDQ $32, R12
	INCQ BX
	DECQ CX
	JNZ  q6x4sb

	Q6X4OUT(0)
	Q6X4OUT(1)
	Q6X4OUT(2)
	Q6X4OUT(3)
	MOVQ 160(SP), SI
	ADDQ stride+8(FP), SI
	INCQ R13
	CMPQ R13, nr+32(FP)
	JLT  q6x4row
	VZEROUPPER
	RET
