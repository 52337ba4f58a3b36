/*
 * kernels.c: the computing half of the CANN emulator. Every aclnn operator
 * the binding calls has one C function here that computes the operator's
 * documented result (CANN aclnn API reference, one page per operator) on the
 * host, reading and writing "device" memory (host allocations made by
 * aclrtMalloc) through the aclTensor descriptors exactly as CANN defines
 * them: viewDims and strides in elements, a storage offset in elements from
 * the data address, the dtype's element size (INT4: two values per byte,
 * even index in the low nibble), dims of size 1 broadcast, right-aligned.
 *
 * Arithmetic is the device's, not ggml's, where the operator documents it:
 *   - FLOAT16/BFLOAT16 values are rounded to their type after every
 *     operator (round to nearest even); an operator on FLOAT16 tensors
 *     computes in float32 and rounds once when it stores (exact for a single
 *     add or multiply of two float16 values);
 *   - mixed dtypes promote as aclnn's type-promotion table says (int8 with
 *     float16 computes in float16, anything with float32 in float32);
 *   - matrix products accumulate in float32 over k in order; with
 *     cubeMathType ALLOW_FP32_DOWN_PRECISION (1) float32 inputs are rounded
 *     to HF32 (11 mantissa bits) on Atlas A2/A3 and to float16 elsewhere,
 *     USE_FP16 (2) rounds them to float16, USE_HF32 (3) to HF32, and
 *     KEEP_DTYPE (0) keeps float32 (refused for float32 on parts whose cube
 *     unit lacks it, in phase 1);
 *   - aclnnWeightQuantBatchMatmulV2 dequantises the weight in the
 *     activation's dtype, (w + antiquantOffset) * antiquantScale rounded to
 *     float16, then multiplies in float16 with float32 accumulation and
 *     rounds the result to y's dtype;
 *   - aclnnFusedInferAttentionScoreV2 forms scores in float32 from the
 *     float16 query and key, scales, adds the pse shift, takes the softmax in
 *     float32, rounds the probabilities to float16 for the product with the
 *     float16 value, accumulates in float32 and rounds the output to float16.
 * Reductions (norms, softmax) run in float32 in index order; the device's
 * own order is not documented, so sums may differ from a real NPU in their
 * last bits.
 *
 * Before a kernel runs, every tensor it names must lie inside one live
 * device allocation: an access outside is reported as an AI core exception
 * (507015) naming the operator and the tensor, and nothing is written. An
 * index outside its dimension (GatherV2, InplaceIndexCopy) is reported the
 * same way.
 *
 * Operators are grouped by family (norm, elementwise, reductions, matrix
 * products, rows, rotary position embedding, attention), as fakeacl.c's
 * phase 1 and the binding's recipes are. Adding one: README.md.
 */
#include "fakeacl.h"
#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------- numbers ---------------- */

static float h2f_calc(uint16_t h) {
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	if (e == 0) {
		if (m == 0) {
			bits = s;
		} else { /* subnormal */
			e = 127 - 15 + 1;
			while (!(m & 0x400)) {
				m <<= 1;
				e--;
			}
			bits = s | (e << 23) | ((m & 0x3ff) << 13);
		}
	} else if (e == 31) {
		bits = s | 0x7f800000u | (m << 13);
	} else {
		bits = s | ((e + 127 - 15) << 23) | (m << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* h2f(h) (ops.h) is h2f_calc(h) tabulated once when the library loads
 * (every float16 bit pattern, NaN payloads included) */
float h2f_tab[65536];

__attribute__((constructor)) static void h2f_init(void) {
	for (uint32_t h = 0; h < 65536; h++) h2f_tab[h] = h2f_calc((uint16_t)h);
}

/* float32 -> float16, round to nearest even, overflow to infinity */
uint16_t f2h(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t s = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
	if (e == 0xff) return (uint16_t)(s | 0x7c00 | (m ? 0x200 : 0));
	int32_t ee = (int32_t)e - 127 + 15;
	if (ee >= 31) return (uint16_t)(s | 0x7c00);
	if (ee <= 0) {
		if (ee < -10) return (uint16_t)s;
		m |= 0x800000;
		int shift = 14 - ee;
		uint32_t half = 1u << (shift - 1), rest = m & ((1u << shift) - 1), q = m >> shift;
		if (rest > half || (rest == half && (q & 1))) q++;
		return (uint16_t)(s | q);
	}
	uint32_t q = ((uint32_t)ee << 10) | (m >> 13), rest = m & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (q & 1))) q++; /* may carry into the exponent: still right */
	return (uint16_t)(s | q);
}

static float bf2f(uint16_t b) {
	uint32_t bits = (uint32_t)b << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t f2bf(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

float round_h(float f) { return h2f(f2h(f)); }

/* HF32: float32's range with 11 explicit mantissa bits, round to nearest
 * even (SetHF32 transMode 0). */
static float round_hf32(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7f800000) == 0x7f800000) return f;
	uint32_t rest = x & 0xfff, q = x >> 12;
	if (rest > 0x800 || (rest == 0x800 && (q & 1))) q++;
	x = q << 12;
	memcpy(&f, &x, 4);
	return f;
}

/* ---------------- ggml-cpu's arithmetic (IRTFAKE_ARITH=ggml) ----------------
 *
 * An executor made while the emulator's arithmetic is "ggml" (fake_arith,
 * snapshot in ex->arith) computes its floats as ggml-cpu does in the
 * llama.cpp build of x86-64 with AVX2, FMA and F16C (the build of
 * llama.cpp's reference runs), where an operator has a ggml counterpart:
 *   - aclnnRmsNorm / aclnnAddRmsNorm: the squares rounded to float32 and
 *     summed in double (ggml_float), the mean narrowed to float32, then
 *     1/sqrtf(mean + eps); y = float32(x·scale)·gamma (rms_norm, then mul);
 *   - aclnnSoftmax: ggml_vec_soft_max_f32: exp by ggml's vectorised expf
 *     (gg_vexpf) on the first len&~7 values of a row, each block of 8 added
 *     to a double sum by the AVX horizontal add (gg_hsum8), libm expf and
 *     double adds for the rest; the row scaled by float32(1/sum);
 *   - aclnnSilu, aclnnSwiGlu: x/(1 + gg_vexpf(-x)) on the first len&~7
 *     values of each row (the last dim), x/(1 + expf(-x)) on the rest;
 *   - aclnnGelu on FLOAT16: ggml's GELU table entry, f16(gelu(x)) with
 *     ggml_gelu_f32's float32 formula (1 + a·x·x fused), 0 below -10 and x
 *     from 10 up;
 *   - aclnnMatmul / aclnnMm / aclnnBatchMatMul: each output is the dot
 *     product ggml's mul_mat takes for such operands (gg_dot): with a
 *     single row in self or k not a multiple of 8, ggml_vec_dot_f16 /
 *     _f32 (32 lanes, reduced as GGML_F32_VEC_REDUCE); otherwise
 *     llamafile's tinyBLAS (8 lanes, reduced as the AVX horizontal add);
 *     FLOAT16 operands (exact products) by plain adds, float32 ones by
 *     fused multiply-adds; cubeMathType does not round the inputs;
 *   - aclnnRotaryPositionEmbedding: ggml's rotation of a pair (x0, x1),
 *     fmaf(x0, cos, -(x1·sin)) and fmaf(x0, sin, x1·cos);
 *   - aclnnInplaceAddcmul with value 1: one fused multiply-add,
 *     fmaf(tensor1, tensor2, selfRef) (the acc = fma(d, lane, acc) chains
 *     of ggml_vec_dot_q*_K_q8_K and of the repacked q4_K kernels);
 *   - aclnnCos, aclnnSin: the C library's cosf and sinf (GNU libc's are
 *     not correctly rounded; ggml's RoPE table takes them, kernels/libm.go).
 * The rest (casts, adds, multiplies, gathers) already round as ggml does.
 * This proves a lowering computes llama.cpp's function; it is not what an
 * NPU computes. The orders are those of irtool's CPU kernels package
 * (kernels/dot.go, expf.go, norm.go, softmax.go, rope.go, gelu.go). */

static int gg(const kctx *c) { return c->e->arith == ARITH_GGML; }

static uint32_t f32_bits(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float f32_from(uint32_t u) {
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* ggml_v_expf (AVX2 + FMA), one lane: x = n·ln2 + b, a degree-5
 * polynomial in b, 2^n built in the exponent, the special path for
 * |n| > 126 */
static float gg_vexpf(float x) {
	const float r = 0x1.8p23f, log2e = 0x1.715476p+0f, ln2hi = 0x1.62e4p-1f, ln2lo = 0x1.7f7d1cp-20f;
	const float c5 = 0x1.0e4020p-7f, c4 = 0x1.573e2ep-5f, c3 = 0x1.555e66p-3f, c2 = 0x1.fffdb6p-2f,
	            c1 = 0x1.ffffecp-1f;
	float z = fmaf(x, log2e, r);
	float n = z - r;
	float b = fmaf(-n, ln2lo, fmaf(-n, ln2hi, x));
	uint32_t e = f32_bits(z) << 23;
	float k = f32_from(e + 0x3f800000u);
	float u = b * b;
	float j = fmaf(fmaf(fmaf(c5, b, c4), u, fmaf(c3, b, c2)), u, c1 * b);
	float an = fabsf(n);
	if (!(an > 126)) return fmaf(j, k, k);
	uint32_t g = n <= 0 ? 0x82000000u : 0;
	float s1 = f32_from(g + 0x7f000000u), s2 = f32_from(e - g);
	if (an > 192) return s1 * s1;
	return fmaf(s2, j, s2) * s1;
}

/* the AVX horizontal sum of 8 lanes */
static float gg_hsum8(const float *v) {
	float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
	return (t0 + t2) + (t1 + t3);
}

/* ggml's silu of the value at position pos of a row of len values */
static float gg_silu(float x, int64_t pos, int64_t len) {
	if (pos < (len & ~(int64_t)7)) return x / (1.0f + gg_vexpf(-x));
	return x / (1.0f + expf(-x));
}

/* ggml_gelu_f32 (1 + a·x·x contracted to one FMA, as gcc does) */
static float gg_gelu(float x) {
	if (x <= -10.0f) return 0;
	if (x >= 10.0f) return x;
	const float a = 0.044715f, s2pi = 0.79788456080286535587989211986876f;
	float inner = fmaf(a * x, x, 1.0f);
	float t = (float)tanh((double)(s2pi * x * inner));
	return 0.5f * x * (1.0f + t);
}

/* the dot product of x and y (k values each) that ggml's mul_mat computes
 * for operands of this kind: f16 (FLOAT16 operands, exact products: plain
 * adds) or f32 (fused multiply-adds); vec: ggml_vec_dot_* (a single row,
 * or k not a multiple of 8), else tinyBLAS */
static float gg_dot(const float *x, const float *y, int64_t k, int f16, int vec) {
	if (vec) {
		int64_t np = k & ~(int64_t)31;
		float red = 0;
		if (np > 0) {
			float g[4][8] = {{0}};
			for (int64_t i = 0; i < np; i += 32)
				for (int q = 0; q < 4; q++)
					for (int e = 0; e < 8; e++) {
						int64_t j = i + 8 * q + e;
						g[q][e] = f16 ? g[q][e] + x[j] * y[j] : fmaf(x[j], y[j], g[q][e]);
					}
			float v[8];
			for (int e = 0; e < 8; e++) v[e] = (g[0][e] + g[2][e]) + (g[1][e] + g[3][e]);
			float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
			red = (t0 + t1) + (t2 + t3);
		}
		if (f16) {
			double sum = red;
			for (int64_t i = np; i < k; i++) sum += (double)(x[i] * y[i]);
			return (float)sum;
		}
		for (int64_t i = np; i < k; i++) red += x[i] * y[i];
		return red;
	}
	float s[8] = {0};
	int64_t i = 0;
	for (; i + 8 <= k; i += 8)
		for (int e = 0; e < 8; e++) s[e] = f16 ? s[e] + x[i + e] * y[i + e] : fmaf(x[i + e], y[i + e], s[e]);
	float sum = gg_hsum8(s);
	for (; i < k; i++) sum = f16 ? sum + x[i] * y[i] : fmaf(x[i], y[i], sum);
	return sum;
}

static int esize(aclDataType t) {
	switch (t) {
	case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
	case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
	case ACL_INT8: case ACL_UINT8: case ACL_BOOL: case ACL_INT4: return 1;
	case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: return 8;
	default: return 0;
	}
}

static int is_float(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_DOUBLE; }

/* rounds v to what dtype t can hold (the compute dtype of an operator) */
static double round_to(aclDataType t, double v) {
	switch (t) {
	case ACL_FLOAT: return (float)v;
	case ACL_FLOAT16: return h2f(f2h((float)v));
	case ACL_BF16: return bf2f(f2bf((float)v));
	case ACL_DOUBLE: return v;
	default: return (double)(int64_t)v;
	}
}

/* element e (storage offset included) of t */
double ld(const aclTensor *t, int64_t e) {
	const char *p = t->data;
	switch (t->dtype) {
	case ACL_FLOAT: { float v; memcpy(&v, p + 4 * e, 4); return v; }
	case ACL_FLOAT16: { uint16_t v; memcpy(&v, p + 2 * e, 2); return h2f(v); }
	case ACL_BF16: { uint16_t v; memcpy(&v, p + 2 * e, 2); return bf2f(v); }
	case ACL_DOUBLE: { double v; memcpy(&v, p + 8 * e, 8); return v; }
	case ACL_INT8: return (int8_t)p[e];
	case ACL_UINT8: case ACL_BOOL: return (uint8_t)p[e];
	case ACL_INT16: { int16_t v; memcpy(&v, p + 2 * e, 2); return v; }
	case ACL_UINT16: { uint16_t v; memcpy(&v, p + 2 * e, 2); return v; }
	case ACL_INT32: { int32_t v; memcpy(&v, p + 4 * e, 4); return v; }
	case ACL_UINT32: { uint32_t v; memcpy(&v, p + 4 * e, 4); return v; }
	case ACL_INT64: { int64_t v; memcpy(&v, p + 8 * e, 8); return (double)v; }
	case ACL_UINT64: { uint64_t v; memcpy(&v, p + 8 * e, 8); return (double)v; }
	case ACL_INT4: {
		int n = (uint8_t)p[e >> 1];
		n = (e & 1) ? n >> 4 : n & 15;
		return n >= 8 ? n - 16 : n;
	}
	default: return 0;
	}
}

void st(const aclTensor *t, int64_t e, double v) {
	char *p = t->data;
	switch (t->dtype) {
	case ACL_FLOAT: { float x = (float)v; memcpy(p + 4 * e, &x, 4); return; }
	case ACL_FLOAT16: { uint16_t x = f2h((float)v); memcpy(p + 2 * e, &x, 2); return; }
	case ACL_BF16: { uint16_t x = f2bf((float)v); memcpy(p + 2 * e, &x, 2); return; }
	case ACL_DOUBLE: memcpy(p + 8 * e, &v, 8); return;
	case ACL_INT8: p[e] = (char)(int8_t)(int64_t)v; return;
	case ACL_UINT8: p[e] = (char)(uint8_t)(int64_t)v; return;
	case ACL_BOOL: p[e] = v != 0; return;
	case ACL_INT16: { int16_t x = (int16_t)(int64_t)v; memcpy(p + 2 * e, &x, 2); return; }
	case ACL_UINT16: { uint16_t x = (uint16_t)(int64_t)v; memcpy(p + 2 * e, &x, 2); return; }
	case ACL_INT32: { int32_t x = (int32_t)(int64_t)v; memcpy(p + 4 * e, &x, 4); return; }
	case ACL_UINT32: { uint32_t x = (uint32_t)(int64_t)v; memcpy(p + 4 * e, &x, 4); return; }
	case ACL_INT64: { int64_t x = (int64_t)v; memcpy(p + 8 * e, &x, 8); return; }
	case ACL_UINT64: { uint64_t x = (uint64_t)v; memcpy(p + 8 * e, &x, 8); return; }
	case ACL_INT4: {
		int n = (int)(int64_t)v & 15;
		unsigned char *b = (unsigned char *)p + (e >> 1);
		*b = (e & 1) ? (unsigned char)((*b & 0x0f) | (n << 4)) : (unsigned char)((*b & 0xf0) | n);
		return;
	}
	default: return;
	}
}

/* ---------------- indexing ---------------- */

static int64_t numel(const aclTensor *t) {
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
	return n;
}

/* the element offset in t of coordinates c of an nd-dim iteration space,
 * t's dims right-aligned to it; t's dims of size 1 broadcast */
int64_t toff(const aclTensor *t, const int64_t *c, int nd) {
	int64_t o = t->offset;
	int shift = nd - t->ndim;
	for (int i = 0; i < t->ndim; i++) {
		int j = i + shift;
		if (j >= 0 && t->dims[i] != 1) o += c[j] * t->strides[i];
	}
	return o;
}

/* coordinates of linear index n in dims (row-major) */
static void coords(int64_t n, const int64_t *dims, int nd, int64_t *c) {
	for (int i = nd - 1; i >= 0; i--) {
		int64_t d = dims[i] > 0 ? dims[i] : 1;
		c[i] = n % d;
		n /= d;
	}
}

static aclDataType promote(aclDataType a, aclDataType b) {
	if (a == b) return a;
	int fa = is_float(a), fb = is_float(b);
	if (fa && fb) {
		if (a == ACL_DOUBLE || b == ACL_DOUBLE) return ACL_DOUBLE;
		return ACL_FLOAT; /* float32 with anything, float16 with bfloat16 */
	}
	if (fa) return a;
	if (fb) return b;
	return esize(a) >= esize(b) ? a : b;
}

/* ---------------- norm ---------------- */

/* rms_norm over the trailing dims gamma covers; x2, when given, is added
 * first (aclnnAddRmsNorm) and the sum written to xOut */
static int rms(kctx *c, const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma, const aclTensor *y,
               const aclTensor *rstd, const aclTensor *xOut, double eps) {
	int nd = x1->ndim, g = gamma->ndim;
	int64_t inner = numel(gamma), rows = numel(x1) / (inner ? inner : 1), lead[8], cc[8], gc[8];
	for (int i = 0; i < nd; i++) lead[i] = i < nd - g ? x1->dims[i] : 1;
	float *v = malloc(sizeof(float) * (size_t)(inner ? inner : 1));
	for (int64_t r = 0; r < rows; r++) {
		coords(r, lead, nd, cc);
		float ss = 0;
		double dss = 0; /* ggml: the squares summed in double */
		for (int64_t j = 0; j < inner; j++) {
			coords(j, gamma->dims, g, gc);
			for (int i = 0; i < g; i++) cc[nd - g + i] = gc[i];
			float a = (float)ld(x1, toff(x1, cc, nd));
			if (x2) {
				a = (float)round_to(x1->dtype, a + (float)ld(x2, toff(x2, cc, nd)));
				st(xOut, toff(xOut, cc, nd), a);
			}
			v[j] = a;
			ss += a * a;
			dss += (double)(a * a);
		}
		float rs = gg(c) ? 1.0f / sqrtf((float)(dss / (double)inner) + (float)eps)
		                 : 1.0f / sqrtf(ss / (float)inner + (float)eps);
		for (int64_t j = 0; j < inner; j++) {
			coords(j, gamma->dims, g, gc);
			for (int i = 0; i < g; i++) cc[nd - g + i] = gc[i];
			float w = (float)ld(gamma, toff(gamma, gc, g));
			st(y, toff(y, cc, nd), round_to(y->dtype, v[j] * rs * w));
		}
		for (int i = 0; i < g; i++) cc[nd - g + i] = 0;
		if (rstd->magic) st(rstd, toff(rstd, cc, nd), rs);
	}
	free(v);
	return 0;
}

static int k_rms_norm(kctx *c) { return rms(c, T(0), NULL, T(1), T(2), T(3), NULL, c->e->f[0]); }
static int k_add_rms_norm(kctx *c) { return rms(c, T(0), T(1), T(2), T(3), T(4), T(5), c->e->f[0]); }

/* ---------------- elementwise ---------------- */

enum { EW_MUL, EW_ADD, EW_DIV };

/* out = self op other (scaled by alpha for add), broadcasting; the value is
 * rounded to the promoted compute dtype, then stored in out's dtype */
static int ew_binary(kctx *c, const aclTensor *a, const aclTensor *b, const aclTensor *out, int op, double alpha) {
	aclDataType ct = promote(a->dtype, b->dtype);
	int64_t n = numel(out), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, cc);
		float x = (float)ld(a, toff(a, cc, out->ndim)), y = (float)ld(b, toff(b, cc, out->ndim)), r;
		switch (op) {
		case EW_MUL: r = x * y; break;
		case EW_ADD: r = alpha == 1 ? x + y : x + (float)alpha * y; break;
		default: r = x / y; break;
		}
		st(out, toff(out, cc, out->ndim), round_to(ct, r));
	}
	return 0;
}

static int k_mul(kctx *c) { return ew_binary(c, T(0), T(1), T(2), EW_MUL, 1); }
static int k_inplace_mul(kctx *c) { return ew_binary(c, T(0), T(1), T(0), EW_MUL, 1); }
static int k_add(kctx *c) { return ew_binary(c, T(0), T(1), T(2), EW_ADD, c->e->f[0]); }
static int k_inplace_add(kctx *c) { return ew_binary(c, T(0), T(1), T(0), EW_ADD, c->e->f[0]); }
static int k_div(kctx *c) { return ew_binary(c, T(0), T(1), T(2), EW_DIV, 1); }

/* aclnnInplaceAddcmul: selfRef += value·tensor1·tensor2, the product
 * rounded to the compute dtype, then the sum (CANN does not document a
 * fused rounding). Under ggml's arithmetic with value 1 it is one fused
 * multiply-add, fmaf(tensor1, tensor2, selfRef), as the FMA chains of
 * ggml-cpu's K-quant dot products (ggml_vec_dot_q*_K_q8_K) accumulate. */
static int k_inplace_addcmul(kctx *c) {
	const aclTensor *self = T(0), *a = T(1), *b = T(2);
	aclDataType ct = self->dtype;
	double value = c->e->f[0];
	int fused = gg(c) && value == 1;
	int64_t n = numel(self), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, self->dims, self->ndim, cc);
		int64_t o = toff(self, cc, self->ndim);
		float s = (float)ld(self, o), x = (float)ld(a, toff(a, cc, self->ndim)), y = (float)ld(b, toff(b, cc, self->ndim));
		float r = fused ? fmaf(x, y, s) : s + (float)round_to(ct, (float)round_to(ct, (float)value * x) * y);
		st(self, o, round_to(ct, r));
	}
	return 0;
}

/* aclnnMuls: a float scalar keeps a floating tensor's dtype */
static int k_muls(kctx *c) {
	const aclTensor *a = T(0), *out = T(1);
	aclDataType ct = is_float(a->dtype) ? a->dtype : ACL_FLOAT;
	float s = (float)c->e->f[0];
	int64_t n = numel(out), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, cc);
		st(out, toff(out, cc, out->ndim), round_to(ct, (float)ld(a, toff(a, cc, out->ndim)) * s));
	}
	return 0;
}

enum { UN_SILU, UN_COS, UN_SIN, UN_COPY, UN_ABS, UN_ROUND };

static int ew_unary(kctx *c, const aclTensor *a, const aclTensor *out, int op) {
	int64_t n = numel(out), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, cc);
		double v = ld(a, toff(a, cc, out->ndim));
		float x = (float)v, r;
		switch (op) {
		case UN_SILU:
			r = !gg(c) ? x / (1.0f + expf(-x))
			           : out->ndim ? gg_silu(x, cc[out->ndim - 1], out->dims[out->ndim - 1]) : gg_silu(x, 0, 1);
			break;
		/* The device's cos and sin are correctly rounded here; ggml-cpu
		 * calls the C library's cosf and sinf, which are not always. */
		case UN_COS: r = gg(c) ? cosf(x) : (float)cos((double)x); break;
		case UN_SIN: r = gg(c) ? sinf(x) : (float)sin((double)x); break;
		case UN_ABS: r = fabsf(x); break;
		case UN_ROUND: r = nearbyintf(x); break; /* the default rounding mode: ties to even */
		default:
			/* a copy or cast converts the value once, to out's dtype */
			st(out, toff(out, cc, out->ndim), is_float(a->dtype) ? (double)x : v);
			continue;
		}
		st(out, toff(out, cc, out->ndim), round_to(a->dtype, r));
	}
	return 0;
}

static int k_silu(kctx *c) { return ew_unary(c, T(0), T(1), UN_SILU); }
static int k_cos(kctx *c) { return ew_unary(c, T(0), T(1), UN_COS); }
static int k_sin(kctx *c) { return ew_unary(c, T(0), T(1), UN_SIN); }
static int k_cast(kctx *c) { return ew_unary(c, T(0), T(1), UN_COPY); }
static int k_abs(kctx *c) { return ew_unary(c, T(0), T(1), UN_ABS); }
static int k_round(kctx *c) { return ew_unary(c, T(0), T(1), UN_ROUND); }
static int k_inplace_copy(kctx *c) { return ew_unary(c, T(1), T(0), UN_COPY); }

/* aclnnSwiGlu: x split in halves a | b along dim, out = silu(a) * b */
static int k_swiglu(kctx *c) {
	const aclTensor *x = T(0), *out = T(1);
	int nd = x->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]);
	int64_t h = x->dims[d] / 2, n = numel(out), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, nd, cc);
		float a = (float)ld(x, toff(x, cc, nd));
		cc[d] += h;
		float b = (float)ld(x, toff(x, cc, nd));
		cc[d] -= h;
		float s = (float)round_to(x->dtype, gg(c) ? gg_silu(a, cc[nd - 1], out->dims[nd - 1]) : a / (1.0f + expf(-a)));
		st(out, toff(out, cc, nd), round_to(out->dtype, s * b));
	}
	return 0;
}

/* aclnnCat: the list's tensors joined along dim */
static int k_cat(kctx *c) {
	const aclTensor *out = T(0);
	int nd = out->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]);
	int64_t base = 0, cc[8];
	for (int k = 0; k < c->e->nl[0]; k++) {
		const aclTensor *x = &c->e->l[0][k];
		int64_t n = numel(x);
		for (int64_t i = 0; i < n; i++) {
			coords(i, x->dims, nd, cc);
			double v = ld(x, toff(x, cc, nd));
			cc[d] += base;
			st(out, toff(out, cc, nd), v);
		}
		base += x->dims[d];
	}
	return 0;
}

/* aclnnGelu: out = 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) (the CANN
 * page's formula), computed in float32 and rounded once to out's dtype */
static int k_gelu(kctx *c) {
	const aclTensor *a = T(0), *out = T(1);
	int64_t n = numel(out), cc[8];
	const float s2pi = 0.79788456080286535588f;
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, cc);
		float x = (float)ld(a, toff(a, cc, out->ndim));
		float r = gg(c) && a->dtype == ACL_FLOAT16 ? gg_gelu(x)
		                                           : 0.5f * x * (1.0f + tanhf(s2pi * (x + 0.044715f * x * x * x)));
		st(out, toff(out, cc, out->ndim), round_to(out->dtype, r));
	}
	return 0;
}

/* aclnnGeScalar: out = self >= other, BOOL */
static int k_ge_scalar(kctx *c) {
	const aclTensor *a = T(0), *out = T(1);
	int64_t n = numel(out), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, cc);
		st(out, toff(out, cc, out->ndim), ld(a, toff(a, cc, out->ndim)) >= c->e->f[0]);
	}
	return 0;
}

/* aclnnInplaceMaskedFillScalar: selfRef = value where mask (broadcast) is
 * true; the value converted to selfRef's dtype */
static int k_masked_fill(kctx *c) {
	const aclTensor *self = T(0), *mask = T(1);
	int64_t n = numel(self), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, self->dims, self->ndim, cc);
		if (ld(mask, toff(mask, cc, self->ndim)) != 0) st(self, toff(self, cc, self->ndim), c->e->f[0]);
	}
	return 0;
}

/* ---------------- reductions ---------------- */

/* aclnnSoftmax along dim */
static int k_softmax(kctx *c) {
	const aclTensor *x = T(0), *out = T(1);
	int nd = x->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]);
	int64_t len = x->dims[d], outer[8], cc[8];
	memcpy(outer, x->dims, sizeof outer);
	outer[d] = 1;
	int64_t rows = numel(x) / (len ? len : 1);
	float *buf = malloc(sizeof(float) * (size_t)(len ? len : 1));
	for (int64_t r = 0; r < rows; r++) {
		coords(r, outer, nd, cc);
		float m = -INFINITY, sum = 0;
		for (int64_t j = 0; j < len; j++) {
			cc[d] = j;
			buf[j] = (float)ld(x, toff(x, cc, nd));
			if (buf[j] > m) m = buf[j];
		}
		if (gg(c)) {
			double dsum = 0;
			int64_t n8 = len & ~(int64_t)7, j = 0;
			for (; j < n8; j += 8) {
				for (int q = 0; q < 8; q++) buf[j + q] = gg_vexpf(buf[j + q] - m);
				dsum += (double)gg_hsum8(buf + j);
			}
			for (; j < len; j++) {
				buf[j] = expf(buf[j] - m);
				dsum += (double)buf[j];
			}
			float inv = (float)(1.0 / dsum);
			for (j = 0; j < len; j++) {
				cc[d] = j;
				st(out, toff(out, cc, nd), round_to(out->dtype, buf[j] * inv));
			}
			continue;
		}
		for (int64_t j = 0; j < len; j++) {
			buf[j] = expf(buf[j] - m);
			sum += buf[j];
		}
		for (int64_t j = 0; j < len; j++) {
			cc[d] = j;
			st(out, toff(out, cc, nd), round_to(out->dtype, buf[j] / sum));
		}
	}
	free(buf);
	return 0;
}

/* aclnnReduceSum: out = the sum of self over the dims listed in the
 * executor (i[0] of them in i[1..]), in float32 and index order */
static int reduce(kctx *c, int isMax) {
	const aclTensor *x = T(0), *out = T(1);
	int nd = x->ndim, nred = (int)c->e->i[0];
	int red[8] = {0};
	for (int k = 0; k < nred; k++) red[c->e->i[1 + k]] = 1;
	int64_t kept[8], inner[8], n = 1, m = 1, cc[8], ic[8], oc[8];
	for (int i = 0; i < nd; i++) {
		kept[i] = red[i] ? 1 : x->dims[i];
		inner[i] = red[i] ? x->dims[i] : 1;
		n *= kept[i];
		m *= inner[i];
	}
	for (int64_t o = 0; o < n; o++) {
		coords(o, kept, nd, cc);
		float acc = isMax ? -INFINITY : 0;
		for (int64_t j = 0; j < m; j++) {
			coords(j, inner, nd, ic);
			int64_t xc[8];
			for (int i = 0; i < nd; i++) xc[i] = red[i] ? ic[i] : cc[i];
			float v = (float)ld(x, toff(x, xc, nd));
			if (!isMax) acc += v;
			else if (v > acc || isnan(v)) acc = v; /* NaN propagates, as torch.amax */
		}
		/* out's coordinates: the kept dims, reduced ones as 0 or gone */
		int no = 0;
		for (int i = 0; i < nd; i++) {
			if (!red[i]) oc[no++] = cc[i];
			else if (c->e->i[9]) oc[no++] = 0;
		}
		st(out, toff(out, oc, out->ndim), round_to(out->dtype, acc));
	}
	return 0;
}

static int k_reduce_sum(kctx *c) { return reduce(c, 0); }

/* aclnnAmax: the maximum over the dims of the executor, NaN propagating */
static int k_amax(kctx *c) { return reduce(c, 1); }

/* aclnnTopk (largest, sorted): the k largest values along dim in descending
 * order and their INT64 indices. CANN does not document the order of equal
 * values; the emulator puts the lower index first. NaN is not ordered here. */
static int k_topk(kctx *c) {
	const aclTensor *x = T(0), *vals = T(1), *idx = T(2);
	int nd = x->ndim, d = (int)c->e->i[1], largest = c->e->i[2] != 0;
	int64_t k = c->e->i[0], len = x->dims[d], outer[8], cc[8];
	memcpy(outer, x->dims, sizeof outer);
	outer[d] = 1;
	int64_t rows = numel(x) / (len ? len : 1);
	double *v = malloc(sizeof(double) * (size_t)(len ? len : 1));
	int64_t *ord = malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
	for (int64_t r = 0; r < rows; r++) {
		coords(r, outer, nd, cc);
		for (int64_t j = 0; j < len; j++) {
			cc[d] = j;
			v[j] = ld(x, toff(x, cc, nd));
			ord[j] = j;
		}
		/* selection of the first k, stable */
		for (int64_t a = 0; a < k; a++) {
			int64_t best = a;
			for (int64_t b = a + 1; b < len; b++) {
				double vb = v[ord[b]], vbest = v[ord[best]];
				if (largest ? vb > vbest : vb < vbest) best = b;
			}
			int64_t t = ord[best];
			for (int64_t b = best; b > a; b--) ord[b] = ord[b - 1];
			ord[a] = t;
		}
		for (int64_t a = 0; a < k; a++) {
			cc[d] = a;
			st(vals, toff(vals, cc, nd), v[ord[a]]);
			st(idx, toff(idx, cc, nd), (double)ord[a]);
		}
	}
	free(v);
	free(ord);
	return 0;
}

/* ---------------- matrix products ---------------- */

static int a2_or_a3(void) {
	const char *s = fake_soc();
	return strncmp(s, "Ascend910B", 10) == 0 || strncmp(s, "Ascend910_93", 12) == 0;
}

/* what the cube unit sees of a float32 input under cubeMathType */
static float cube_in(float v, aclDataType t, int cube) {
	if (t != ACL_FLOAT) return v;
	switch (cube) {
	case 0: return v;
	case 1: return a2_or_a3() ? round_hf32(v) : round_h(v);
	case 3: return round_hf32(v);
	default: return round_h(v);
	}
}

/* matmul_views indexes 1-D matmul operands as 2-D ones: self as one row,
 * mat2 as one column, out as whichever of the two it is */
static void matmul_views(const aclTensor *a, const aclTensor *b, const aclTensor *out, aclTensor *A, aclTensor *B, aclTensor *O) {
	*A = *a, *B = *b, *O = *out;
	if (A->ndim == 1) {
		A->ndim = 2;
		A->dims[1] = A->dims[0], A->strides[1] = A->strides[0];
		A->dims[0] = 1, A->strides[0] = 0;
	}
	if (B->ndim == 1) {
		B->ndim = 2;
		B->dims[1] = 1, B->strides[1] = 0;
	}
	if (O->ndim == 1) {
		O->ndim = 2;
		if (a->ndim == 1) {
			O->dims[1] = O->dims[0], O->strides[1] = O->strides[0];
			O->dims[0] = 1, O->strides[0] = 0;
		} else {
			O->dims[1] = 1, O->strides[1] = 0;
		}
	}
}

/* k_matmul with ggml's dot products (gg_dot): per batch, self's rows and
 * mat2's columns gathered into float32 buffers (no cubeMathType rounding) */
static int matmul_ggml(kctx *c) {
	const aclTensor *a = T(0), *b = T(1), *out = T(2);
	int nd = out->ndim < 2 ? 2 : out->ndim;
	int64_t M = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1, K = a->dims[a->ndim - 1];
	int64_t N = b->ndim >= 2 ? b->dims[b->ndim - 1] : 1;
	int64_t bdims[8], batches = 1, cc[8], ca[8], cb[8];
	for (int i = 0; i < nd - 2; i++) {
		bdims[i] = out->dims[i];
		batches *= bdims[i];
	}
	aclTensor A, B, O;
	matmul_views(a, b, out, &A, &B, &O);
	int f16 = a->dtype == ACL_FLOAT16 && b->dtype == ACL_FLOAT16, vec = M < 2 || K % 8 != 0;
	size_t kk = (size_t)(K ? K : 1);
	float *rows = malloc(sizeof(float) * kk * (size_t)(M ? M : 1)), *cols = malloc(sizeof(float) * kk * (size_t)(N ? N : 1));
	if (!rows || !cols) {
		free(rows);
		free(cols);
		fake_set_err("%s: out of host memory", c->e->op);
		return ACL_ERROR_RT_MEMORY_ALLOCATION;
	}
	for (int64_t bi = 0; bi < batches; bi++) {
		coords(bi, bdims, nd - 2, cc);
		memcpy(ca, cc, sizeof cc);
		memcpy(cb, cc, sizeof cc);
		for (int64_t m = 0; m < M; m++)
			for (int64_t k = 0; k < K; k++) {
				ca[nd - 2] = m, ca[nd - 1] = k;
				rows[m * K + k] = (float)ld(&A, toff(&A, ca, nd));
			}
		for (int64_t n = 0; n < N; n++)
			for (int64_t k = 0; k < K; k++) {
				cb[nd - 2] = k, cb[nd - 1] = n;
				cols[n * K + k] = (float)ld(&B, toff(&B, cb, nd));
			}
		for (int64_t m = 0; m < M; m++)
			for (int64_t n = 0; n < N; n++) {
				cc[nd - 2] = m, cc[nd - 1] = n;
				st(&O, toff(&O, cc, nd), gg_dot(rows + m * K, cols + n * K, K, f16, vec));
			}
	}
	free(rows);
	free(cols);
	return 0;
}

/* out[..., m, n] = Σ_k self[..., m, k] · mat2[..., k, n], batch dims
 * broadcast; 1-D operands are a row (self) or a column (mat2) */
static int k_matmul(kctx *c) {
	const aclTensor *a = T(0), *b = T(1), *out = T(2);
	int cube = (int)c->e->i[0], nd = out->ndim < 2 ? 2 : out->ndim;
	int64_t M = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1, K = a->dims[a->ndim - 1];
	int64_t N = b->ndim >= 2 ? b->dims[b->ndim - 1] : 1;
	int64_t bdims[8], batches = 1, cc[8], ca[8], cb[8];
	if (gg(c)) return matmul_ggml(c);
	if (a->ndim == 2 && b->ndim == 2 && out->ndim == 2 && a->dtype == ACL_FLOAT && b->dtype == ACL_FLOAT && cube == 0) {
		/* 2-D float32 kept in float32: the general loop's sums (over k in
		 * order), read through pointers, column n of mat2 gathered once */
		const float *pa = (const float *)a->data + a->offset, *pb = (const float *)b->data + b->offset;
		float *col = malloc(sizeof(float) * (size_t)(K ? K : 1));
		for (int64_t n = 0; n < N; n++) {
			for (int64_t k = 0; k < K; k++) col[k] = pb[k * b->strides[0] + n * b->strides[1]];
			for (int64_t m = 0; m < M; m++) {
				const float *row = pa + m * a->strides[0];
				float acc = 0;
				for (int64_t k = 0; k < K; k++) acc += row[k * a->strides[1]] * col[k];
				st(out, out->offset + m * out->strides[0] + n * out->strides[1], acc);
			}
		}
		free(col);
		return 0;
	}
	for (int i = 0; i < nd - 2; i++) {
		bdims[i] = out->dims[i];
		batches *= bdims[i];
	}
	aclTensor A, B, O;
	matmul_views(a, b, out, &A, &B, &O);
	for (int64_t bi = 0; bi < batches; bi++) {
		coords(bi, bdims, nd - 2, cc);
		memcpy(ca, cc, sizeof cc);
		memcpy(cb, cc, sizeof cc);
		for (int64_t m = 0; m < M; m++) {
			for (int64_t n = 0; n < N; n++) {
				float acc = 0;
				for (int64_t k = 0; k < K; k++) {
					ca[nd - 2] = m, ca[nd - 1] = k;
					cb[nd - 2] = k, cb[nd - 1] = n;
					float x = cube_in((float)ld(&A, toff(&A, ca, nd)), A.dtype, cube);
					float y = cube_in((float)ld(&B, toff(&B, cb, nd)), B.dtype, cube);
					acc += x * y;
				}
				cc[nd - 2] = m, cc[nd - 1] = n;
				st(&O, toff(&O, cc, nd), acc);
			}
		}
	}
	return 0;
}

/* y = x @ ((weight + antiquantOffset) * antiquantScale) [+ bias]
 *
 * Per output column: the column's dequantised weight (rounded to the
 * activation's type), then each row's dot product over k in index order,
 * accumulated in f32. Columns are independent: they are split over the
 * emulator's threads (parallel.c), and where the host has AVX2 and F16C
 * eight columns are dequantised and accumulated at once, one column per
 * vector lane, with the same operations in the same order as the scalar
 * loop (wq_weight, wq_range_scalar), so the result's bits are the same. */
typedef struct {
	kctx *c;
	const aclTensor *x, *w, *s, *off, *bias, *y;
	int64_t M, K, N, g;
	aclDataType dt;
	const float *xf; /* x's rows in float32, M × K */
} wq_args;

/* the antiquant parameter p (scale or offset) of column n for the group
 * holding k */
static float wq_param(const wq_args *a, const aclTensor *p, int64_t k, int64_t n) {
	int64_t sc[2] = {a->g > 0 ? k / a->g : 0, n};
	int64_t o = p->ndim == 2 ? toff(p, sc, 2) : p->ndim == 1 && p->dims[0] == a->N ? p->offset + n * p->strides[0] : p->offset;
	return (float)ld(p, o);
}

/* one dequantised weight: (w + offset) rounded, times the scale, rounded */
static float wq_weight(const wq_args *a, int64_t k, int64_t n, float sv, float ov) {
	float q = (float)ld(a->w, a->w->offset + k * a->w->strides[0] + n * a->w->strides[1]);
	if (a->off->magic) q = (float)round_to(a->dt, q + ov);
	return (float)round_to(a->dt, q * sv);
}

/* column n's group parameters change at k == 0 and every g from there */
static int wq_group_start(const wq_args *a, int64_t k) { return k == 0 || (a->g > 0 && k % a->g == 0); }

static void wq_store(const wq_args *a, int64_t m, int64_t n, float acc) {
	const aclTensor *bias = a->bias, *y = a->y;
	if (bias->magic) acc += (float)ld(bias, bias->offset + (bias->dims[bias->ndim - 1] == 1 ? 0 : n * bias->strides[bias->ndim - 1]));
	st(y, y->offset + m * y->strides[0] + n * y->strides[1], acc);
}

static int wq_range_scalar(void *arg, int64_t lo, int64_t hi) {
	const wq_args *a = arg;
	int64_t K = a->K;
	float *wd = malloc(sizeof(float) * (size_t)(K ? K : 1));
	if (!wd) {
		fake_set_err("aclnnWeightQuantBatchMatmulV2: out of host memory");
		return ACL_ERROR_RT_MEMORY_ALLOCATION;
	}
	for (int64_t n = lo; n < hi; n++) {
		float sv = 0, ov = 0; /* the group's scale and offset, read once per group */
		for (int64_t k = 0; k < K; k++) {
			if (wq_group_start(a, k)) {
				sv = wq_param(a, a->s, k, n);
				if (a->off->magic) ov = wq_param(a, a->off, k, n);
			}
			wd[k] = wq_weight(a, k, n, sv, ov);
		}
		for (int64_t m = 0; m < a->M; m++) {
			const float *xr = a->xf + m * K;
			float acc = 0;
			for (int64_t k = 0; k < K; k++) acc += xr[k] * wd[k];
			wq_store(a, m, n, acc);
		}
	}
	free(wd);
	return 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define WQ_AVX __attribute__((target("avx2,f16c")))

/* v rounded to float16 and back (round to nearest even): round_to's value
 * for every non-NaN v (checked on all 2^32 floats) */
WQ_AVX static inline __m256 wq_round(__m256 v) {
	return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* wq_param for the vector path: a float16 parameter converted by F16C
 * (h2f's value for every non-NaN pattern; a NaN goes through h2f, which
 * keeps its payload as the scalar loop does). h2f's table would be read at
 * random while the weights stream through the cache. */
WQ_AVX static inline float wq_param_v(const wq_args *a, const aclTensor *p, int64_t k, int64_t n) {
	if (p->dtype != ACL_FLOAT16) return wq_param(a, p, k, n);
	int64_t sc[2] = {a->g > 0 ? k / a->g : 0, n};
	int64_t o = p->ndim == 2 ? toff(p, sc, 2) : p->ndim == 1 && p->dims[0] == a->N ? p->offset + n * p->strides[0] : p->offset;
	uint16_t h;
	memcpy(&h, (const char *)p->data + 2 * o, 2);
	if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) return h2f_calc(h);
	return _cvtsh_ss(h);
}

/* 8 × 8 transpose of r[0..7] in place */
WQ_AVX static inline void wq_transpose8(__m256 r[8]) {
	__m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
	__m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
	__m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
	__m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
	__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
	r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
	r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
	r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
	r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* the vector path applies: k contiguous in the weight, INT8 or INT4, a
 * float16 activation, K and the group size multiples of 8 */
static int wq_vector_ok(const wq_args *a) {
	if (a->w->strides[0] != 1 || (a->w->dtype != ACL_INT8 && a->w->dtype != ACL_INT4)) return 0;
	if (a->dt != ACL_FLOAT16) return 0;
	if (a->K % 8 != 0 || (a->g > 0 && a->g % 8 != 0)) return 0;
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

WQ_AVX static int wq_range_avx2(void *arg, int64_t lo, int64_t hi) {
	const wq_args *a = arg;
	int64_t K = a->K, n0 = lo;
	int off = a->off->magic != 0;
	float *wdT = aligned_alloc(32, sizeof(float) * 8 * (size_t)K); /* wdT[k*8 + j]: column n0+j */
	int8_t *q = malloc((size_t)K * 8);                               /* q[j*K + k] */
	if (!wdT || !q) {
		free(wdT);
		free(q);
		fake_set_err("aclnnWeightQuantBatchMatmulV2: out of host memory");
		return ACL_ERROR_RT_MEMORY_ALLOCATION;
	}
	for (; n0 + 8 <= hi; n0 += 8) {
		for (int j = 0; j < 8; j++) {
			int64_t e = a->w->offset + (n0 + j) * a->w->strides[1];
			const unsigned char *p = (const unsigned char *)a->w->data;
			if (a->w->dtype == ACL_INT8) {
				memcpy(q + j * K, p + e, (size_t)K);
			} else {
				for (int64_t k = 0; k < K; k++, e++) {
					int v = p[e >> 1];
					v = (e & 1) ? v >> 4 : v & 15;
					q[j * K + k] = (int8_t)(v >= 8 ? v - 16 : v);
				}
			}
		}
		__m256 sv[8], ov[8], r[8];
		for (int64_t k = 0; k < K; k += 8) {
			for (int j = 0; j < 8; j++) {
				if (wq_group_start(a, k)) {
					sv[j] = _mm256_set1_ps(wq_param_v(a, a->s, k, n0 + j));
					ov[j] = off ? _mm256_set1_ps(wq_param_v(a, a->off, k, n0 + j)) : _mm256_setzero_ps();
				}
				__m128i b = _mm_loadl_epi64((const __m128i *)(q + j * K + k));
				__m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
				if (off) v = wq_round(_mm256_add_ps(v, ov[j]));
				v = wq_round(_mm256_mul_ps(v, sv[j]));
				if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
					/* a NaN: float16's NaN payload as round_to makes it */
					float sj = _mm256_cvtss_f32(sv[j]), oj = _mm256_cvtss_f32(ov[j]);
					float t[8];
					for (int i = 0; i < 8; i++) t[i] = wq_weight(a, k + i, n0 + j, sj, oj);
					v = _mm256_loadu_ps(t);
				}
				r[j] = v;
			}
			wq_transpose8(r);
			for (int i = 0; i < 8; i++) _mm256_store_ps(wdT + (k + i) * 8, r[i]);
		}
		for (int64_t m = 0; m < a->M; m++) {
			const float *xr = a->xf + m * K;
			__m256 acc = _mm256_setzero_ps();
			for (int64_t k = 0; k < K; k++)
				acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(xr[k]), _mm256_load_ps(wdT + k * 8)));
			float t[8];
			_mm256_storeu_ps(t, acc);
			for (int j = 0; j < 8; j++) wq_store(a, m, n0 + j, t[j]);
		}
	}
	free(wdT);
	free(q);
	return n0 < hi ? wq_range_scalar(arg, n0, hi) : 0;
}
#else
static int wq_vector_ok(const wq_args *a) { return 0; }
static int wq_range_avx2(void *arg, int64_t lo, int64_t hi) { return wq_range_scalar(arg, lo, hi); }
#endif

static int k_wqbmm(kctx *c) {
	const aclTensor *x = T(0), *w = T(1), *y = T(7);
	wq_args a = {c, x, w, T(2), T(3), T(6), y, x->dims[0], x->dims[1], w->dims[1], c->e->i[0], x->dtype, NULL};
	float *xf = malloc(sizeof(float) * (size_t)(a.M * a.K > 0 ? a.M * a.K : 1));
	if (!xf) {
		fake_set_err("aclnnWeightQuantBatchMatmulV2: out of host memory for a %lld x %lld weight", (long long)a.K, (long long)a.N);
		return ACL_ERROR_RT_MEMORY_ALLOCATION;
	}
	for (int64_t m = 0; m < a.M; m++)
		for (int64_t k = 0; k < a.K; k++) xf[m * a.K + k] = (float)ld(x, x->offset + m * x->strides[0] + k * x->strides[1]);
	a.xf = xf;
	int rc = fake_parallel(a.N, 64, fake_simd() && wq_vector_ok(&a) ? wq_range_avx2 : wq_range_scalar, &a);
	free(xf);
	return rc;
}

/* ---------------- rows: gather and scatter ---------------- */

static int index_at(kctx *c, const aclTensor *idx, int64_t i, int64_t limit, int64_t *v) {
	*v = (int64_t)ld(idx, idx->ndim == 0 ? idx->offset : idx->offset + i * idx->strides[0]);
	if (*v < 0 || *v >= limit) {
		fake_set_err("%s: index %lld at position %lld is outside [0, %lld)", c->e->op, (long long)*v, (long long)i,
		             (long long)limit);
		return ACL_ERROR_RT_AICORE_EXCEPTION;
	}
	return 0;
}

/* aclnnInplaceIndexCopy: selfRef[..., index[i], ...] = source[..., i, ...] */
static int k_index_copy(kctx *c) {
	const aclTensor *dst = T(0), *idx = T(1), *src = T(2);
	int nd = dst->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]);
	int64_t n = numel(src), cc[8], v;
	for (int64_t i = 0; i < n; i++) {
		coords(i, src->dims, nd, cc);
		double val = ld(src, toff(src, cc, nd));
		int rc = index_at(c, idx, cc[d], dst->dims[d], &v);
		if (rc) return rc;
		cc[d] = v;
		st(dst, toff(dst, cc, nd), is_float(src->dtype) ? (double)(float)val : val);
	}
	return 0;
}

/* aclnnGatherV2: out = self indexed along dim by index (out's dims are
 * self's with dim replaced by index's dims) */
static int k_gather(kctx *c) {
	const aclTensor *self = T(0), *idx = T(1), *out = T(2);
	int nd = self->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]), ni = idx->ndim;
	if (ni > 1) {
		fake_set_err("aclnnGatherV2: a %d-D index is not emulated", ni);
		return ACLNN_ERR_PARAM_INVALID;
	}
	int64_t n = numel(out), oc[8], sc[8], v;
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, oc);
		int64_t pos = ni ? oc[d] : 0;
		for (int k = 0, o = 0; k < nd; k++) {
			if (k == d) {
				sc[k] = 0;
				o += ni;
			} else {
				sc[k] = oc[o++];
			}
		}
		int rc = index_at(c, idx, pos, self->dims[d], &v);
		if (rc) return rc;
		sc[d] = v;
		st(out, toff(out, oc, out->ndim), ld(self, toff(self, sc, nd)));
	}
	return 0;
}

/* ---------------- rotary position embedding ---------------- */

/* aclnnRotaryPositionEmbedding: y = x·cos + rotate(x)·sin over the last dim;
 * mode 0 half, 1 interleave, 2 quarter */
static int k_rope(kctx *c) {
	const aclTensor *x = T(0), *cs = T(1), *sn = T(2), *out = T(3);
	int mode = (int)c->e->i[0];
	if (mode == 3) {
		fake_set_err("aclnnRotaryPositionEmbedding: mode 3 (interleave-half) is not emulated");
		return ACLNN_ERR_PARAM_INVALID;
	}
	int64_t D = x->dims[3], n = numel(x), cc[8], rc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, x->dims, 4, cc);
		int64_t d = cc[3], j;
		float sign;
		switch (mode) {
		case 0: j = d < D / 2 ? d + D / 2 : d - D / 2; sign = d < D / 2 ? -1.0f : 1.0f; break;
		case 1: j = d ^ 1; sign = (d & 1) ? 1.0f : -1.0f; break;
		default: {
			int64_t q = D / 4, blk = d / q;
			j = (blk & 1) ? d - q : d + q;
			sign = (blk & 1) ? 1.0f : -1.0f;
		}
		}
		memcpy(rc, cc, sizeof rc);
		rc[3] = j;
		float xv = (float)ld(x, toff(x, cc, 4)), rv = sign * (float)ld(x, toff(x, rc, 4));
		float co = (float)ld(cs, toff(cs, cc, 4)), si = (float)ld(sn, toff(sn, cc, 4));
		float a = xv * co, b = rv * si;
		if (gg(c)) /* ggml: fmaf(x0, cos, -(x1·sin)), fmaf(x0, sin, x1·cos) */
			st(out, toff(out, cc, 4), round_to(out->dtype, sign < 0 ? fmaf(xv, co, b) : fmaf(rv, si, a)));
		else
			st(out, toff(out, cc, 4), round_to(out->dtype, a + b));
	}
	return 0;
}

/* ---------------- the table ---------------- */

static const struct kdef {
	const char *op;
	int (*fn)(kctx *);
} table[] = {
    /* norm */
    {"aclnnRmsNorm", k_rms_norm},
    {"aclnnAddRmsNorm", k_add_rms_norm},
    /* elementwise */
    {"aclnnMul", k_mul},
    {"aclnnInplaceMul", k_inplace_mul},
    {"aclnnMuls", k_muls},
    {"aclnnAdd", k_add},
    {"aclnnInplaceAdd", k_inplace_add},
    {"aclnnDiv", k_div},
    {"aclnnSilu", k_silu},
    {"aclnnCos", k_cos},
    {"aclnnSin", k_sin},
    {"aclnnSwiGlu", k_swiglu},
    {"aclnnGelu", k_gelu},
    {"aclnnAbs", k_abs},
    {"aclnnRound", k_round},
    {"aclnnInplaceAddcmul", k_inplace_addcmul},
    {"aclnnCast", k_cast},
    {"aclnnInplaceCopy", k_inplace_copy},
    {"aclnnGeScalar", k_ge_scalar},
    {"aclnnInplaceMaskedFillScalar", k_masked_fill},
    {"aclnnCat", k_cat},
    /* reductions */
    {"aclnnSoftmax", k_softmax},
    {"aclnnReduceSum", k_reduce_sum},
    {"aclnnAmax", k_amax},
    {"aclnnTopk", k_topk},
    /* matrix products */
    {"aclnnMatmul", k_matmul},
    {"aclnnMm", k_matmul},
    {"aclnnBatchMatMul", k_matmul},
    {"aclnnWeightQuantBatchMatmulV2", k_wqbmm},
    /* rows: gather and scatter */
    {"aclnnGatherV2", k_gather},
    {"aclnnInplaceIndexCopy", k_index_copy},
    /* rotary position embedding */
    {"aclnnRotaryPositionEmbedding", k_rope},
    /* attention */
    {"aclnnFusedInferAttentionScoreV2", irt_kernel_FIA}, /* ops_attention.c */
};

static const struct kdef *find(const char *op) {
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (strcmp(table[i].op, op) == 0) return &table[i];
	return NULL;
}

int fake_has_kernel(const char *op) { return find(op) != NULL; }

/* the bytes a tensor's view touches */
static void extent(const aclTensor *t, int64_t *lo, int64_t *hi) {
	int64_t reach = t->offset;
	for (int i = 0; i < t->ndim; i++) reach += (t->dims[i] - 1) * t->strides[i];
	if (t->dtype == ACL_INT4) {
		*lo = t->offset / 2;
		*hi = reach / 2 + 1;
	} else {
		int es = esize(t->dtype);
		*lo = t->offset * es;
		*hi = (reach + 1) * es;
	}
}

static int check_access(const aclOpExecutor *e, const aclTensor *t, const char *what) {
	if (!t->magic || numel(t) == 0) return 0;
	int64_t lo, hi;
	extent(t, &lo, &hi);
	if (!fake_in_device(t->data + lo, (size_t)(hi - lo))) {
		fake_set_err("%s: %s [%p,+%lld B) is outside every device allocation (freed, or never allocated)", e->op,
		             what, (void *)(t->data + lo), (long long)(hi - lo));
		return ACL_ERROR_RT_AICORE_EXCEPTION;
	}
	return 0;
}

int fake_compute(const aclOpExecutor *e, void *workspace, uint64_t wsSize) {
	const struct kdef *k = find(e->op);
	if (!k) {
		fake_set_err("%s: the emulator has no kernel for this operator", e->op);
		return ACLNN_ERR_INNER;
	}
	char what[32];
	for (int i = 0; i < e->nt; i++) {
		snprintf(what, sizeof what, "tensor argument %d", i);
		int rc = check_access(e, &e->t[i], what);
		if (rc) return rc;
	}
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < e->nl[l]; i++) {
			snprintf(what, sizeof what, "tensor %d of list %d", i, l);
			int rc = check_access(e, &e->l[l][i], what);
			if (rc) return rc;
		}
	if (e->ws > 0 && !fake_in_device(workspace, (size_t)e->ws)) {
		fake_set_err("%s: workspace [%p,+%llu B) is outside every device allocation", e->op, workspace,
		             (unsigned long long)e->ws);
		return ACL_ERROR_RT_AICORE_EXCEPTION;
	}
	kctx c = {e, workspace, wsSize};
	int rc = k->fn(&c);
	/* The workspace is the operator's scratch: it holds nothing afterwards,
	 * which the emulator makes visible by leaving garbage in it. */
	if (!rc && e->ws > 0) memset(workspace, 0xff, (size_t)e->ws);
	return rc;
}
