//go:build amd64 && !purego

// AVX2+FMA+F16C kernels of the legacy quantised weights read from their
// blocks (legacy.go): Q5_0 against Q8_0 activations, Q4_1 and Q5_1 against
// Q8_1. Each block's values are expanded to 32 bytes, its products summed
// in eight int32 lanes (lane k: values 4k..4k+3), converted and
// accumulated with one FMA by the block's scale product; the lanes are
// reduced as hsum_float_8 at the end of the row (ggml_vec_dot_q5_0_q8_0,
// ggml_vec_dot_q4_1_q8_1, ggml_vec_dot_q5_1_q8_1 in ggml-cpu's
// arch/x86/quants.c); Q4_1/Q5_1 add their offsets m·s, kept in a scalar
// (four lanes for four columns) with one FMA per block, after the
// reduction. Bit for bit the Go twins of legacy.go (legacy_test.go).

#include "textflag.h"

// lgShuf spreads the four bytes of a broadcast 32-bit word over eight
// bytes each (vpshufb indices: byte j takes byte j/8 of its lane).
DATA lgShuf<>+0(SB)/8, $0x0000000000000000
DATA lgShuf<>+8(SB)/8, $0x0101010101010101
DATA lgShuf<>+16(SB)/8, $0x0202020202020202
DATA lgShuf<>+24(SB)/8, $0x0303030303030303
GLOBL lgShuf<>(SB), RODATA|NOPTR, $32

// lgBits selects bit j%8 in byte j.
DATA lgBits<>+0(SB)/8, $0x8040201008040201
DATA lgBits<>+8(SB)/8, $0x8040201008040201
DATA lgBits<>+16(SB)/8, $0x8040201008040201
DATA lgBits<>+24(SB)/8, $0x8040201008040201
GLOBL lgBits<>(SB), RODATA|NOPTR, $32

// lgShift: dword shift counts, 0 in the low 128-bit lane and 4 in the
// high one (a broadcast row of nibble bytes becomes low | high nibbles).
DATA lgShift<>+0(SB)/8, $0
DATA lgShift<>+8(SB)/8, $0
DATA lgShift<>+16(SB)/8, $0x0000000400000004
DATA lgShift<>+24(SB)/8, $0x0000000400000004
GLOBL lgShift<>(SB), RODATA|NOPTR, $32

#define LGBCAST(c, X, Y) MOVL c, AX; VMOVD AX, X; VPBROADCASTD X, Y

// LGHSUM reduces the eight lanes of Y into X as hsum_float_8 does. T is
// clobbered.
#define LGHSUM(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       X, T, T  \
	VMOVHLPS     T, T, X  \
	VADDPS       X, T, T  \
	VMOVSHDUP    T, X     \
	VADDSS       X, T, X

// QHBITS sets Y to 0xff in byte j where bit j of the 32-bit word at M is
// set, else 0 (Y13 = lgShuf, Y12 = lgBits).
#define QHBITS(M, Y) \
	VPBROADCASTD M, Y  \
	VPSHUFB Y13, Y, Y  \
	VPAND Y12, Y, Y    \
	VPCMPEQB Y12, Y, Y

// NIBS expands the 16 nibble bytes at M into 32 bytes (low nibbles, then
// high nibbles), 0..15, in Y (X its low half). T is clobbered; Y14 = 0x0f.
#define NIBS(M, X, Y, T) \
	VMOVDQU M, X              \
	VPSRLW $4, X, T           \
	VINSERTI128 $1, T, Y, Y   \
	VPAND Y14, Y, Y

// Q0X4COL multiplies the signed weight block (x in Y1, |x| in Y2, d_x
// broadcast in Y0) with the block of activation column c (qs base Q,
// scale base D; R13 = 4·block) into ACC.
#define Q0X4COL(Q, D, ACC) \
	VMOVDQU (Q)(R13*8), Y3       \
	VPSIGNB Y1, Y3, Y3           \
	VPMADDUBSW Y3, Y2, Y3        \
	VPMADDWD Y15, Y3, Y3         \
	VCVTDQ2PS Y3, Y3             \
	VBROADCASTSS (D)(R13*1), Y4  \
	VMULPS Y4, Y0, Y4            \
	VFMADD231PS Y3, Y4, ACC

// X1X4COL is Q0X4COL for unsigned weights x in Y1 (Q4_1, Q5_1).
#define X1X4COL(Q, D, ACC) \
	VMOVDQU (Q)(R13*8), Y3       \
	VPMADDUBSW Y3, Y1, Y3        \
	VPMADDWD Y15, Y3, Y3         \
	VCVTDQ2PS Y3, Y3             \
	VBROADCASTSS (D)(R13*1), Y4  \
	VMULPS Y4, Y0, Y4            \
	VFMADD231PS Y3, Y4, ACC

// LGX4ARGS loads the four columns' qs pointers into R8..R11 and scale
// pointers into BX, DX, DI, R12 from the legacyX4 at CX.
#define LGX4ARGS \
	MOVQ 0(CX), R8   \
	MOVQ 8(CX), R9   \
	MOVQ 16(CX), R10 \
	MOVQ 24(CX), R11 \
	MOVQ 32(CX), BX  \
	MOVQ 40(CX), DX  \
	MOVQ 48(CX), DI  \
	MOVQ 56(CX), R12

// X1X4 is the block loop and the reductions of dotQ4_1Rawx4AVX2 and
// dotQ5_1Rawx4AVX2 (BS block bytes, nibbles at QO, HI the fifth bits):
// the offsets of the four columns are the four lanes of X10,
// fma(m_x, s_y, X10) per block; out[c] = hsum(acc_c) + X10[c].
#define X1X4(BS, QO, HI, L) \
	MOVQ nb+16(FP), CX                    \
	SHLQ $2, CX                           \
	MOVQ CX, nb+16(FP)                    \
	MOVQ a+8(FP), CX                      \
	XORQ R13, R13                         \
	VXORPS Y6, Y6, Y6                     \
	VXORPS Y7, Y7, Y7                     \
	VXORPS Y8, Y8, Y8                     \
	VXORPS Y9, Y9, Y9                     \
	VXORPS X10, X10, X10                  \
L:                                        \
	MOVWLZX (SI), AX                      \
	VMOVD   AX, X0                        \
	VCVTPH2PS X0, X0                      \
	VBROADCASTSS X0, Y0                   \
	MOVWLZX 2(SI), AX                     \
	VMOVD   AX, X5                        \
	VCVTPH2PS X5, X5                      \
	VBROADCASTSS X5, X5                   \
	MOVQ 64(CX), AX                       \
	VMOVSS (AX)(R13*1), X3                \
	MOVQ 72(CX), AX                       \
	VINSERTPS $0x10, (AX)(R13*1), X3, X3  \
	MOVQ 80(CX), AX                       \
	VINSERTPS $0x20, (AX)(R13*1), X3, X3  \
	MOVQ 88(CX), AX                       \
	VINSERTPS $0x30, (AX)(R13*1), X3, X3  \
	VFMADD231PS X3, X5, X10               \
	NIBS(QO(SI), X1, Y1, X4)              \
	HI                                    \
	X1X4COL(R8, BX, Y6)                   \
	X1X4COL(R9, DX, Y7)                   \
	X1X4COL(R10, DI, Y8)                  \
	X1X4COL(R11, R12, Y9)                 \
	ADDQ $BS, SI                          \
	ADDQ $4, R13                          \
	CMPQ R13, nb+16(FP)                   \
	JLT  L                                \
	MOVQ out+24(FP), AX                   \
	VMOVUPS X10, (AX)                     \
	LGHSUM(Y6, X6, X1)                    \
	VADDSS 0(AX), X6, X6                  \
	VMOVSS X6, 0(AX)                      \
	LGHSUM(Y7, X7, X1)                    \
	VADDSS 4(AX), X7, X7                  \
	VMOVSS X7, 4(AX)                      \
	LGHSUM(Y8, X8, X1)                    \
	VADDSS 8(AX), X8, X8                  \
	VMOVSS X8, 8(AX)                      \
	LGHSUM(Y9, X9, X1)                    \
	VADDSS 12(AX), X9, X9                 \
	VMOVSS X9, 12(AX)

// X5HI ORs the fifth bits (qh at byte 4) into Y1 as 0x10.
#define NOHI
#define X5HI QHBITS(4(SI), Y2); VPAND Y11, Y2, Y2; VPOR Y2, Y1, Y1

// iq4LUT is IQ4_NL's codebook (kvalues_iq4nl), as vpshufb's table.
DATA iq4LUT<>+0(SB)/8, $0xF6EADDCFBFAD9881
DATA iq4LUT<>+8(SB)/8, $0x7159453526190D01
GLOBL iq4LUT<>(SB), RODATA|NOPTR, $16

// IQROW sets P to the eight int32 partial sums (values 4k..4k+3) of x·y
// for the IQ4_NL nibbles at M (x = codebook[nibble], Y13 = the codebook
// in both lanes, Y12 = lgShift, Y14 = 0x0f) and the activations in Y10:
// |x| · sign(y, x) as ggml's sign trick. Y8 is clobbered.
#define IQROW(M, P) \
	VBROADCASTI128 M, P    \
	VPSRLVD Y12, P, P      \
	VPAND  Y14, P, P       \
	VPSHUFB P, Y13, P      \
	VPSIGNB P, P, Y8       \
	VPSIGNB P, Y10, P      \
	VPMADDUBSW P, Y8, P    \
	VPMADDWD Y15, P, P

// func dotQ5_0RowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32)
// nb, nr > 0. out[r] = the Q5_0 row at src + r·stride times the Q8_0
// activations: per block the expanded values x = (nibble | high << 4) - 16
// meet y in eight int32 lanes (|x| · sign(y, x), as ggml's
// mul_sum_i8_pairs_float), acc = fma(d_x·d_y, lanes, acc), hsum_float_8.
// Eight blocks at a time, their scale products d_x·d_y form one vector
// (the same roundings as one by one) kept on the stack; the nibbles are
// spread by one 128-bit broadcast and a per-lane shift (0 | 4).
TEXT ·dotQ5_0RowsAVX2(SB), NOSPLIT, $32-56
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ nr+40(FP), R9
	MOVQ out+48(FP), R10
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	VMOVDQU lgShuf<>(SB), Y13
	VMOVDQU lgBits<>(SB), Y12
	LGBCAST($0xf0f0f0f0, X11, Y11)
	VMOVDQU lgShift<>(SB), Y10

q50row:
	MOVQ SI, R11
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0

q50b8:
	CMPQ CX, $8
	JLT  q50tail
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	MOVWLZX (SI), AX
	VMOVD AX, X6
	VPINSRW $1, 22(SI), X6, X6
	VPINSRW $2, 44(SI), X6, X6
	VPINSRW $3, 66(SI), X6, X6
	VPINSRW $4, 88(SI), X6, X6
	VPINSRW $5, 110(SI), X6, X6
	VPINSRW $6, 132(SI), X6, X6
	VPINSRW $7, 154(SI), X6, X6
	VCVTPH2PS X6, Y6
	VMULPS (DX), Y6, Y6
	VMOVUPS Y6, 0(SP)
	VBROADCASTSS 0(SP), Y1
	QHBITS(2(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 6(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 0(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 4(SP), Y1
	QHBITS(24(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 28(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 32(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 8(SP), Y1
	QHBITS(46(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 50(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 64(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 12(SP), Y1
	QHBITS(68(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 72(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 96(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 16(SP), Y1
	QHBITS(90(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 94(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 128(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 20(SP), Y1
	QHBITS(112(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 116(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 160(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 24(SP), Y1
	QHBITS(134(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 138(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 192(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	VBROADCASTSS 28(SP), Y1
	QHBITS(156(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 160(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 224(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP  q50b8

q50tail:
	TESTQ CX, CX
	JZ    q50store

q50blk:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1 // d_x * d_y
	VMOVSS  X1, 0(SP)
	VBROADCASTSS 0(SP), Y1
	QHBITS(2(SI), Y2)
	VPANDN Y11, Y2, Y2
	VBROADCASTI128 6(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VPOR   Y2, Y3, Y3
	VMOVDQU 0(DI), Y4
	VPSIGNB Y3, Y3, Y5
	VPSIGNB Y3, Y4, Y4
	VPMADDUBSW Y4, Y5, Y5
	VPMADDWD   Y15, Y5, Y5
	VCVTDQ2PS  Y5, Y5
	VFMADD231PS Y5, Y1, Y0
	ADDQ $22, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q50blk

q50store:
	LGHSUM(Y0, X0, X1)
	VMOVSS X0, (R10)
	ADDQ $4, R10
	LEAQ (R11)(R8*1), SI
	DECQ R9
	JNZ  q50row
	VZEROUPPER
	RET

// func dotQ4_1RowsAVX2(src *byte, stride int, qs *int8, d *float32, s *float32, nb int, nr int, out *float32)
// nb, nr > 0. out[r] = the row at src + r·stride times the Q8_1
// activations: unsigned values (nibble) meet y in
// eight int32 lanes (vpmaddubsw, exact), acc = fma(d_x·d_y, lanes, acc),
// and the offsets summs = fma(m_x, s_y, summs) block after block; the
// result hsum_float_8(acc) + summs. Eight blocks at a time, as
// dotQ5_0RowsAVX2 (scale products and offsets m_x on the stack).
TEXT ·dotQ4_1RowsAVX2(SB), NOSPLIT, $64-64
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ nr+48(FP), R9
	MOVQ out+56(FP), R10
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	VMOVDQU lgShift<>(SB), Y10

q41row:
	MOVQ SI, R11
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ s+32(FP), BX
	MOVQ nb+40(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X6, X6, X6

q41b8:
	CMPQ CX, $8
	JLT  q41tail
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	MOVWLZX (SI), AX
	VMOVD AX, X7
	VPINSRW $1, 20(SI), X7, X7
	VPINSRW $2, 40(SI), X7, X7
	VPINSRW $3, 60(SI), X7, X7
	VPINSRW $4, 80(SI), X7, X7
	VPINSRW $5, 100(SI), X7, X7
	VPINSRW $6, 120(SI), X7, X7
	VPINSRW $7, 140(SI), X7, X7
	MOVWLZX 2(SI), AX
	VMOVD AX, X8
	VPINSRW $1, 22(SI), X8, X8
	VPINSRW $2, 42(SI), X8, X8
	VPINSRW $3, 62(SI), X8, X8
	VPINSRW $4, 82(SI), X8, X8
	VPINSRW $5, 102(SI), X8, X8
	VPINSRW $6, 122(SI), X8, X8
	VPINSRW $7, 142(SI), X8, X8
	VCVTPH2PS X7, Y7
	VMULPS (DX), Y7, Y7
	VMOVUPS Y7, 0(SP)
	VCVTPH2PS X8, Y8
	VMOVUPS Y8, 32(SP)
	VBROADCASTSS 0(SP), Y1
	VMOVSS 32(SP), X2
	VFMADD231SS 0(BX), X2, X6
	VBROADCASTI128 4(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 0(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 4(SP), Y1
	VMOVSS 36(SP), X2
	VFMADD231SS 4(BX), X2, X6
	VBROADCASTI128 24(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 32(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 8(SP), Y1
	VMOVSS 40(SP), X2
	VFMADD231SS 8(BX), X2, X6
	VBROADCASTI128 44(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 64(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 12(SP), Y1
	VMOVSS 44(SP), X2
	VFMADD231SS 12(BX), X2, X6
	VBROADCASTI128 64(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 96(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 16(SP), Y1
	VMOVSS 48(SP), X2
	VFMADD231SS 16(BX), X2, X6
	VBROADCASTI128 84(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 128(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 20(SP), Y1
	VMOVSS 52(SP), X2
	VFMADD231SS 20(BX), X2, X6
	VBROADCASTI128 104(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 160(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 24(SP), Y1
	VMOVSS 56(SP), X2
	VFMADD231SS 24(BX), X2, X6
	VBROADCASTI128 124(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 192(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 28(SP), Y1
	VMOVSS 60(SP), X2
	VFMADD231SS 28(BX), X2, X6
	VBROADCASTI128 144(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 224(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ $160, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	SUBQ $8, CX
	JMP  q41b8

q41tail:
	TESTQ CX, CX
	JZ    q41store

q41blk:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1
	VMOVSS  X1, 0(SP)
	MOVWLZX 2(SI), AX
	VMOVD   AX, X2
	VCVTPH2PS X2, X2
	VMOVSS  X2, 32(SP)
	VBROADCASTSS 0(SP), Y1
	VMOVSS 32(SP), X2
	VFMADD231SS 0(BX), X2, X6
	VBROADCASTI128 4(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	VMOVDQU 0(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ $20, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JNZ  q41blk

q41store:
	LGHSUM(Y0, X0, X1)
	VADDSS X6, X0, X0
	VMOVSS X0, (R10)
	ADDQ $4, R10
	LEAQ (R11)(R8*1), SI
	DECQ R9
	JNZ  q41row
	VZEROUPPER
	RET

// func dotQ5_1RowsAVX2(src *byte, stride int, qs *int8, d *float32, s *float32, nb int, nr int, out *float32)
// nb, nr > 0. out[r] = the row at src + r·stride times the Q8_1
// activations: unsigned values (nibble | high << 4) meet y in
// eight int32 lanes (vpmaddubsw, exact), acc = fma(d_x·d_y, lanes, acc),
// and the offsets summs = fma(m_x, s_y, summs) block after block; the
// result hsum_float_8(acc) + summs. Eight blocks at a time, as
// dotQ5_0RowsAVX2 (scale products and offsets m_x on the stack).
TEXT ·dotQ5_1RowsAVX2(SB), NOSPLIT, $64-64
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	MOVQ nr+48(FP), R9
	MOVQ out+56(FP), R10
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	VMOVDQU lgShuf<>(SB), Y13
	VMOVDQU lgBits<>(SB), Y12
	LGBCAST($0x10101010, X11, Y11)
	VMOVDQU lgShift<>(SB), Y10

q51row:
	MOVQ SI, R11
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ s+32(FP), BX
	MOVQ nb+40(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS X6, X6, X6

q51b8:
	CMPQ CX, $8
	JLT  q51tail
	PREFETCHT0 1024(SI)
	PREFETCHT0 1088(SI)
	PREFETCHT0 1152(SI)
	MOVWLZX (SI), AX
	VMOVD AX, X7
	VPINSRW $1, 24(SI), X7, X7
	VPINSRW $2, 48(SI), X7, X7
	VPINSRW $3, 72(SI), X7, X7
	VPINSRW $4, 96(SI), X7, X7
	VPINSRW $5, 120(SI), X7, X7
	VPINSRW $6, 144(SI), X7, X7
	VPINSRW $7, 168(SI), X7, X7
	MOVWLZX 2(SI), AX
	VMOVD AX, X8
	VPINSRW $1, 26(SI), X8, X8
	VPINSRW $2, 50(SI), X8, X8
	VPINSRW $3, 74(SI), X8, X8
	VPINSRW $4, 98(SI), X8, X8
	VPINSRW $5, 122(SI), X8, X8
	VPINSRW $6, 146(SI), X8, X8
	VPINSRW $7, 170(SI), X8, X8
	VCVTPH2PS X7, Y7
	VMULPS (DX), Y7, Y7
	VMOVUPS Y7, 0(SP)
	VCVTPH2PS X8, Y8
	VMOVUPS Y8, 32(SP)
	VBROADCASTSS 0(SP), Y1
	VMOVSS 32(SP), X2
	VFMADD231SS 0(BX), X2, X6
	VBROADCASTI128 8(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(4(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 0(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 4(SP), Y1
	VMOVSS 36(SP), X2
	VFMADD231SS 4(BX), X2, X6
	VBROADCASTI128 32(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(28(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 32(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 8(SP), Y1
	VMOVSS 40(SP), X2
	VFMADD231SS 8(BX), X2, X6
	VBROADCASTI128 56(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(52(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 64(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 12(SP), Y1
	VMOVSS 44(SP), X2
	VFMADD231SS 12(BX), X2, X6
	VBROADCASTI128 80(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(76(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 96(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 16(SP), Y1
	VMOVSS 48(SP), X2
	VFMADD231SS 16(BX), X2, X6
	VBROADCASTI128 104(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(100(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 128(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 20(SP), Y1
	VMOVSS 52(SP), X2
	VFMADD231SS 20(BX), X2, X6
	VBROADCASTI128 128(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(124(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 160(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 24(SP), Y1
	VMOVSS 56(SP), X2
	VFMADD231SS 24(BX), X2, X6
	VBROADCASTI128 152(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(148(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 192(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	VBROADCASTSS 28(SP), Y1
	VMOVSS 60(SP), X2
	VFMADD231SS 28(BX), X2, X6
	VBROADCASTI128 176(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(172(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 224(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ $192, SI
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, BX
	SUBQ $8, CX
	JMP  q51b8

q51tail:
	TESTQ CX, CX
	JZ    q51store

q51blk:
	MOVWLZX (SI), AX
	VMOVD   AX, X1
	VCVTPH2PS X1, X1
	VMULSS  (DX), X1, X1
	VMOVSS  X1, 0(SP)
	MOVWLZX 2(SI), AX
	VMOVD   AX, X2
	VCVTPH2PS X2, X2
	VMOVSS  X2, 32(SP)
	VBROADCASTSS 0(SP), Y1
	VMOVSS 32(SP), X2
	VFMADD231SS 0(BX), X2, X6
	VBROADCASTI128 8(SI), Y3
	VPSRLVD Y10, Y3, Y3
	VPAND  Y14, Y3, Y3
	QHBITS(4(SI), Y2)
	VPAND  Y11, Y2, Y2
	VPOR   Y2, Y3, Y3
	VMOVDQU 0(DI), Y4
	VPMADDUBSW Y4, Y3, Y3
	VPMADDWD   Y15, Y3, Y3
	VCVTDQ2PS  Y3, Y3
	VFMADD231PS Y3, Y1, Y0
	ADDQ $24, SI
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, BX
	DECQ CX
	JNZ  q51blk

q51store:
	LGHSUM(Y0, X0, X1)
	VADDSS X6, X0, X0
	VMOVSS X0, (R10)
	ADDQ $4, R10
	LEAQ (R11)(R8*1), SI
	DECQ R9
	JNZ  q51row
	VZEROUPPER
	RET

// func dotQ5_0Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32)
// nb > 0.
TEXT ·dotQ5_0Rawx4AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ a+8(FP), CX
	LGX4ARGS
	MOVQ nb+16(FP), CX
	SHLQ $2, CX
	XORQ R13, R13
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	VMOVDQU lgShuf<>(SB), Y13
	VMOVDQU lgBits<>(SB), Y12
	LGBCAST($0xf0f0f0f0, X11, Y11)
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q50x4:
	MOVWLZX (SI), AX
	VMOVD   AX, X0
	VCVTPH2PS X0, X0
	VBROADCASTSS X0, Y0
	QHBITS(2(SI), Y1)
	VPANDN Y11, Y1, Y1
	NIBS(6(SI), X3, Y3, X4)
	VPOR   Y3, Y1, Y1    // x
	VPSIGNB Y1, Y1, Y2   // |x|
	Q0X4COL(R8, BX, Y6)
	Q0X4COL(R9, DX, Y7)
	Q0X4COL(R10, DI, Y8)
	Q0X4COL(R11, R12, Y9)
	ADDQ $22, SI
	ADDQ $4, R13
	CMPQ R13, CX
	JLT  q50x4

	MOVQ out+24(FP), AX
	LGHSUM(Y6, X6, X1)
	VMOVSS X6, 0(AX)
	LGHSUM(Y7, X7, X1)
	VMOVSS X7, 4(AX)
	LGHSUM(Y8, X8, X1)
	VMOVSS X8, 8(AX)
	LGHSUM(Y9, X9, X1)
	VMOVSS X9, 12(AX)
	VZEROUPPER
	RET

// func dotQ4_1Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32)
// nb > 0.
TEXT ·dotQ4_1Rawx4AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ a+8(FP), CX
	LGX4ARGS
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	X1X4(20, 4, NOHI, q41x4)
	VZEROUPPER
	RET

// func dotQ5_1Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32)
// nb > 0.
TEXT ·dotQ5_1Rawx4AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ a+8(FP), CX
	LGX4ARGS
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	VMOVDQU lgShuf<>(SB), Y13
	VMOVDQU lgBits<>(SB), Y12
	LGBCAST($0x10101010, X11, Y11)
	X1X4(24, 8, X5HI, q51x4)
	VZEROUPPER
	RET

// func dotIQ4NLx8AVX2(src *byte, stride int, qs *int8, d *float32, nb int, out *float32)
// nb > 0. out[j] (j < 8) = the IQ4_NL row at src + j·stride times the
// Q8_0 activations in iq4_nl_8x8's order: per block each row's 32
// products summed exactly (eight partial sums per row, reduced across
// the rows with horizontal adds: row j in lane j), converted, and
// acc = fma(float(sum), d_w·d_a, acc) for the eight rows at once.
TEXT ·dotIQ4NLx8AVX2(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ stride+8(FP), R8
	LEAQ (R8)(R8*2), R9  // 3·stride
	LEAQ (R8)(R8*4), R10 // 5·stride
	LEAQ (R9)(R8*4), R11 // 7·stride
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LGBCAST($0x00010001, X15, Y15)
	LGBCAST($0x0f0f0f0f, X14, Y14)
	VBROADCASTI128 iq4LUT<>(SB), Y13
	VMOVDQU lgShift<>(SB), Y12
	VXORPS Y11, Y11, Y11

iqx8loop:
	PREFETCHT0 256(SI)
	PREFETCHT0 256(SI)(R8*1)
	PREFETCHT0 256(SI)(R8*2)
	PREFETCHT0 256(SI)(R9*1)
	PREFETCHT0 256(SI)(R8*4)
	PREFETCHT0 256(SI)(R10*1)
	PREFETCHT0 256(SI)(R9*2)
	PREFETCHT0 256(SI)(R11*1)
	VMOVDQU (DI), Y10
	IQROW(2(SI), Y0)
	IQROW(2(SI)(R8*1), Y1)
	IQROW(2(SI)(R8*2), Y2)
	IQROW(2(SI)(R9*1), Y3)
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y9
	IQROW(2(SI)(R8*4), Y0)
	IQROW(2(SI)(R10*1), Y1)
	IQROW(2(SI)(R9*2), Y2)
	IQROW(2(SI)(R11*1), Y3)
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VPERM2I128 $0x20, Y0, Y9, Y1
	VPERM2I128 $0x31, Y0, Y9, Y2
	VPADDD Y2, Y1, Y1
	VCVTDQ2PS Y1, Y1

	MOVWLZX (SI), AX
	VMOVD AX, X2
	VPINSRW $1, (SI)(R8*1), X2, X2
	VPINSRW $2, (SI)(R8*2), X2, X2
	VPINSRW $3, (SI)(R9*1), X2, X2
	VPINSRW $4, (SI)(R8*4), X2, X2
	VPINSRW $5, (SI)(R10*1), X2, X2
	VPINSRW $6, (SI)(R9*2), X2, X2
	VPINSRW $7, (SI)(R11*1), X2, X2
	VCVTPH2PS X2, Y2
	VBROADCASTSS (DX), Y3
	VMULPS Y3, Y2, Y2
	VFMADD231PS Y2, Y1, Y11

	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  iqx8loop

	MOVQ out+40(FP), AX
	VMOVUPS Y11, (AX)
	VZEROUPPER
	RET

