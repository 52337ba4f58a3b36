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
// then each leftover product, rounded, added in index order. Rows go two
// at a time (Y0-Y3 and Y4-Y7 accumulate rows r and r+1, interleaved for
// instruction-level parallelism; each row's operations are unchanged),
// an odd last row alone.
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

mv2row:
	CMPQ   R8, $2
	JLT    mvrow
	LEAQ   (SI)(DX*1), R14
	VXORPS X0, X0, X0
	VXORPS X4, X4, X4
	TESTQ  R10, R10
	JZ     mv2tail
	MOVQ   SI, R11
	MOVQ   DI, R12
	MOVQ   R10, R13
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

mv2loop:
	VMOVUPS     0(R11), Y8
	VMOVUPS     32(R11), Y9
	VMOVUPS     64(R11), Y10
	VMOVUPS     96(R11), Y11
	VMOVUPS     0(R14), Y12
	VMOVUPS     32(R14), Y13
	VMOVUPS     64(R14), Y14
	VMOVUPS     96(R14), Y15
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 64(R12), Y10, Y2
	VFMADD231PS 96(R12), Y11, Y3
	VFMADD231PS 0(R12), Y12, Y4
	VFMADD231PS 32(R12), Y13, Y5
	VFMADD231PS 64(R12), Y14, Y6
	VFMADD231PS 96(R12), Y15, Y7
	ADDQ        $128, R11
	ADDQ        $128, R14
	ADDQ        $128, R12
	SUBQ        $32, R13
	JNZ         mv2loop

	VADDPS       Y2, Y0, Y0
	VADDPS       Y6, Y4, Y4
	VADDPS       Y3, Y1, Y1
	VADDPS       Y7, Y5, Y5
	VADDPS       Y1, Y0, Y0
	VADDPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y0, X1
	VEXTRACTF128 $1, Y4, X5
	VADDPS       X1, X0, X0
	VADDPS       X5, X4, X4
	VHADDPS      X0, X0, X0
	VHADDPS      X4, X4, X4
	VHADDPS      X0, X0, X0
	VHADDPS      X4, X4, X4
	LEAQ         (SI)(DX*1), R14

mv2tail:
	MOVQ R10, R13

mv2tailloop:
	CMPQ   R13, CX
	JGE    mv2store
	VMOVSS (SI)(R13*4), X1
	VMOVSS (R14)(R13*4), X5
	VMULSS (DI)(R13*4), X1, X1
	VMULSS (DI)(R13*4), X5, X5
	VADDSS X1, X0, X0
	VADDSS X5, X4, X4
	INCQ   R13
	JMP    mv2tailloop

mv2store:
	VMOVSS X0, 0(R9)
	VMOVSS X4, 4(R9)
	ADDQ   $8, R9
	LEAQ   (SI)(DX*2), SI
	SUBQ   $2, R8
	JMP    mv2row

mvrow:
	TESTQ  R8, R8
	JZ     mvdone
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

mvdone:
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

// func dotRows8F16AVX2(s *float32, a *float32, q *float32, groups int)
// s[j] = float32(sum of float64(a[8j+i]*q[i]) for i = 0..7, added in
// order from +0) for j < 4*groups: ggml_vec_dot_f16 of head_dim 8 (all
// leftovers), four rows at a time. The rounded products of four rows are
// transposed so that one lane of a 4-wide float64 vector follows one
// row's additions in index order. groups >= 1.
TEXT ·dotRows8F16AVX2(SB), NOSPLIT, $0-32
	MOVQ s+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ q+16(FP), DX
	MOVQ groups+24(FP), CX
	VMOVUPS (DX), Y15

d8loop:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMULPS  Y15, Y0, Y0
	VMULPS  Y15, Y1, Y1
	VMULPS  Y15, Y2, Y2
	VMULPS  Y15, Y3, Y3

	// Products of index i of rows 0..3 into one 128-bit half each:
	// C0 = i 0 | 4, C1 = 1 | 5, C2 = 2 | 6, C3 = 3 | 7.
	VUNPCKLPS Y1, Y0, Y4
	VUNPCKHPS Y1, Y0, Y5
	VUNPCKLPS Y3, Y2, Y6
	VUNPCKHPS Y3, Y2, Y7
	VUNPCKLPD Y6, Y4, Y8
	VUNPCKHPD Y6, Y4, Y9
	VUNPCKLPD Y7, Y5, Y10
	VUNPCKHPD Y7, Y5, Y11

	VXORPD    Y12, Y12, Y12
	VCVTPS2PD X8, Y13
	VADDPD    Y13, Y12, Y12
	VCVTPS2PD X9, Y13
	VADDPD    Y13, Y12, Y12
	VCVTPS2PD X10, Y13
	VADDPD    Y13, Y12, Y12
	VCVTPS2PD X11, Y13
	VADDPD    Y13, Y12, Y12
	VEXTRACTF128 $1, Y8, X8
	VCVTPS2PD X8, Y13
	VADDPD    Y13, Y12, Y12
	VEXTRACTF128 $1, Y9, X9
	VCVTPS2PD X9, Y13
	VADDPD    Y13, Y12, Y12
	VEXTRACTF128 $1, Y10, X10
	VCVTPS2PD X10, Y13
	VADDPD    Y13, Y12, Y12
	VEXTRACTF128 $1, Y11, X11
	VCVTPS2PD X11, Y13
	VADDPD    Y13, Y12, Y12
	VCVTPD2PSY Y12, X12
	VMOVUPS   X12, (DI)

	ADDQ $128, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  d8loop
	VZEROUPPER
	RET

// func softmaxScaleMaxAVX2(w *float32, m *float32, n int, scale, slope float32) (mx float32, nan bool)
// soft_max's first passes over a row: w[i] = w[i]*scale, then (m not
// nil) w[i] += slope*m[i], each product and sum rounded as the Go loop
// rounds them (no FMA); returns the lane-wise maximum of the new w (from
// -Inf) and whether any of them is NaN (the caller then recomputes the
// maximum in order, as it does for a zero maximum, whose sign vmaxps
// does not settle as Go's max does). n is a positive multiple of 8.
TEXT ·softmaxScaleMaxAVX2(SB), NOSPLIT, $0-37
	MOVQ         w+0(FP), SI
	MOVQ         m+8(FP), DI
	MOVQ         n+16(FP), CX
	VBROADCASTSS scale+24(FP), Y14
	VBROADCASTSS slope+28(FP), Y13
	MOVL         $0xff800000, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	VXORPS       Y11, Y11, Y11
	XORQ         DX, DX
	TESTQ        DI, DI
	JZ           smnomask

smmask:
	VMOVUPS  (SI)(DX*4), Y0
	VMULPS   Y14, Y0, Y0
	VMULPS   (DI)(DX*4), Y13, Y1
	VADDPS   Y1, Y0, Y0
	VMOVUPS  Y0, (SI)(DX*4)
	VCMPPS   $3, Y0, Y0, Y2
	VORPS    Y2, Y11, Y11
	VMAXPS   Y0, Y12, Y12
	ADDQ     $8, DX
	CMPQ     DX, CX
	JLT      smmask
	JMP      smreduce

smnomask:
	VMOVUPS  (SI)(DX*4), Y0
	VMULPS   Y14, Y0, Y0
	VMOVUPS  Y0, (SI)(DX*4)
	VCMPPS   $3, Y0, Y0, Y2
	VORPS    Y2, Y11, Y11
	VMAXPS   Y0, Y12, Y12
	ADDQ     $8, DX
	CMPQ     DX, CX
	JLT      smnomask

smreduce:
	VEXTRACTF128 $1, Y12, X0
	VMAXPS       X0, X12, X12
	VPERMILPS    $0x4e, X12, X0
	VMAXPS       X0, X12, X12
	VPERMILPS    $0xb1, X12, X0
	VMAXPS       X0, X12, X12
	VMOVSS       X12, mx+32(FP)
	VMOVMSKPS    Y11, AX
	TESTL        AX, AX
	SETNE        nan+36(FP)
	VZEROUPPER
	RET

// func f16T8AVX2(dst *float32, dstStride int, src *byte, stride int, n int)
// Widens 8 rows of n halves (row j at src + j*stride bytes) and stores
// them transposed: value i of row j goes to dst[i*dstStride + j]
// (vcvtph2ps, then an 8x8 transpose per block of 8 values: data
// movement only). n is a positive multiple of 8.
TEXT ·f16T8AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ stride+24(FP), DX
	MOVQ n+32(FP), CX
	LEAQ (DX)(DX*2), R9

f16t8loop:
	LEAQ      (SI)(DX*4), R10
	VCVTPH2PS (SI), Y0
	VCVTPH2PS (SI)(DX*1), Y1
	VCVTPH2PS (SI)(DX*2), Y2
	VCVTPH2PS (SI)(R9*1), Y3
	VCVTPH2PS (R10), Y4
	VCVTPH2PS (R10)(DX*1), Y5
	VCVTPH2PS (R10)(DX*2), Y6
	VCVTPH2PS (R10)(R9*1), Y7

	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7

	MOVQ       DI, R11
	VPERM2F128 $0x20, Y4, Y0, Y8
	VMOVUPS    Y8, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x20, Y5, Y1, Y9
	VMOVUPS    Y9, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x20, Y6, Y2, Y10
	VMOVUPS    Y10, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x20, Y7, Y3, Y11
	VMOVUPS    Y11, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VMOVUPS    Y12, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x31, Y5, Y1, Y13
	VMOVUPS    Y13, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x31, Y6, Y2, Y14
	VMOVUPS    Y14, (R11)
	ADDQ       R8, R11
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS    Y15, (R11)

	ADDQ $16, SI
	LEAQ (DI)(R8*8), DI
	SUBQ $8, CX
	JNZ  f16t8loop
	VZEROUPPER
	RET

// F16VREDUCE reduces ggml_vec_dot_f16's four accumulators A0..A3 into the
// low lane of X0 (A0's low half) as dotVecF16RawAVX2 does: (A0+A2) +
// (A1+A3), the halves, two horizontal adds. T is clobbered.
#define F16VREDUCE(A0, A1, A2, A3, X0, T) \
	VADDPS       A2, A0, A0 \
	VADDPS       A3, A1, A1 \
	VADDPS       A1, A0, A0 \
	VEXTRACTF128 $1, A0, T  \
	VADDPS       T, X0, X0  \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0

// func matVecF16AVX2(a *byte, stride int, rows int, b *float32, n int, out *float32)
// out[r] = dotVecF16RawAVX2(a + r·stride, b, n) for r < rows (rows >= 1,
// n a positive multiple of 32): the F16 matrix-vector product of a decode
// step in one call. Rows go two at a time (Y0-Y3 and Y4-Y7 accumulate
// rows r and r+1; each row's operations are unchanged), an odd last row
// alone. Each iteration reads one cache line of each of the two rows and
// prefetches the line at the same offset of the next two rows (two
// strides ahead): the decode step streams its weights from memory, and
// the hardware prefetchers, which stop at every 4 KiB page, left the
// core waiting (measured with BenchmarkMatVecF16Stream: +50% bytes per
// CPU second on a 640 MiB matrix of 896-wide rows, 1 and 2 threads).
TEXT ·matVecF16AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ stride+8(FP), DX
	MOVQ rows+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), R9
	LEAQ (DX)(DX*1), BX

mf2row:
	CMPQ R8, $2
	JLT  mfrow
	LEAQ (SI)(DX*1), R14
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ CX, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

mf2loop:
	PREFETCHT0  (R11)(BX*1)
	PREFETCHT0  (R14)(BX*1)
	VCVTPH2PS   0(R11), Y8
	VCVTPH2PS   16(R11), Y9
	VCVTPH2PS   32(R11), Y10
	VCVTPH2PS   48(R11), Y11
	VCVTPH2PS   0(R14), Y12
	VCVTPH2PS   16(R14), Y13
	VCVTPH2PS   32(R14), Y14
	VCVTPH2PS   48(R14), Y15
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 0(R12), Y12, Y4
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 32(R12), Y13, Y5
	VFMADD231PS 64(R12), Y10, Y2
	VFMADD231PS 64(R12), Y14, Y6
	VFMADD231PS 96(R12), Y11, Y3
	VFMADD231PS 96(R12), Y15, Y7
	ADDQ        $64, R11
	ADDQ        $64, R14
	ADDQ        $128, R12
	SUBQ        $32, R13
	JNZ         mf2loop

	F16VREDUCE(Y0, Y1, Y2, Y3, X0, X8)
	VMOVSS X0, 0(R9)
	F16VREDUCE(Y4, Y5, Y6, Y7, X4, X8)
	VMOVSS X4, 4(R9)
	ADDQ   $8, R9
	LEAQ   (SI)(DX*2), SI
	SUBQ   $2, R8
	JMP    mf2row

mfrow:
	TESTQ R8, R8
	JZ    mfdone
	MOVQ  SI, R11
	MOVQ  DI, R12
	MOVQ  CX, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

mf1loop:
	VCVTPH2PS   0(R11), Y8
	VCVTPH2PS   16(R11), Y9
	VCVTPH2PS   32(R11), Y10
	VCVTPH2PS   48(R11), Y11
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 64(R12), Y10, Y2
	VFMADD231PS 96(R12), Y11, Y3
	ADDQ        $64, R11
	ADDQ        $128, R12
	SUBQ        $32, R13
	JNZ         mf1loop

	F16VREDUCE(Y0, Y1, Y2, Y3, X0, X8)
	VMOVSS X0, 0(R9)

mfdone:
	VZEROUPPER
	RET

// func matVecF16R1AVX2(a *byte, stride int, rows int, b *float32, n int, out *float32)
// The same products as matVecF16AVX2 (each row dotVecF16RawAVX2's lanes
// and reduction), one row at a time with no software prefetch: a chunk of
// dense rows is then one sequential stream, which the hardware
// prefetchers of AMD's Zen cores follow across pages by themselves, while
// two interleaved rows 1,792 bytes apart and a PREFETCHT0 per cache line
// lost a fifth of the bytes per CPU second on an EPYC (Zen 3;
// BenchmarkMatVecF16Stream). Two steps of 32 values per iteration (each
// accumulator still takes its values in order), a last single step when
// n/32 is odd. rows >= 1, n a positive multiple of 32.
TEXT ·matVecF16R1AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ stride+8(FP), DX
	MOVQ rows+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), R9

mr1row:
	MOVQ   SI, R11
	MOVQ   DI, R12
	MOVQ   CX, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   R13, $64
	JLT    mr1one

mr1loop:
	VCVTPH2PS   0(R11), Y8
	VCVTPH2PS   16(R11), Y9
	VCVTPH2PS   32(R11), Y10
	VCVTPH2PS   48(R11), Y11
	VCVTPH2PS   64(R11), Y12
	VCVTPH2PS   80(R11), Y13
	VCVTPH2PS   96(R11), Y14
	VCVTPH2PS   112(R11), Y15
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 64(R12), Y10, Y2
	VFMADD231PS 96(R12), Y11, Y3
	VFMADD231PS 128(R12), Y12, Y0
	VFMADD231PS 160(R12), Y13, Y1
	VFMADD231PS 192(R12), Y14, Y2
	VFMADD231PS 224(R12), Y15, Y3
	ADDQ        $128, R11
	ADDQ        $256, R12
	SUBQ        $64, R13
	CMPQ        R13, $64
	JGE         mr1loop

mr1one:
	TESTQ       R13, R13
	JZ          mr1red
	VCVTPH2PS   0(R11), Y8
	VCVTPH2PS   16(R11), Y9
	VCVTPH2PS   32(R11), Y10
	VCVTPH2PS   48(R11), Y11
	VFMADD231PS 0(R12), Y8, Y0
	VFMADD231PS 32(R12), Y9, Y1
	VFMADD231PS 64(R12), Y10, Y2
	VFMADD231PS 96(R12), Y11, Y3

mr1red:
	F16VREDUCE(Y0, Y1, Y2, Y3, X0, X8)
	VMOVSS X0, 0(R9)
	ADDQ   $4, R9
	ADDQ   DX, SI
	DECQ   R8
	JNZ    mr1row
	VZEROUPPER
	RET
