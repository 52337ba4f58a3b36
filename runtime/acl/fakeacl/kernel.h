/*
 * kernel.h: what an operator file of the CANN emulator (ops_<family>.c)
 * is written against: the kernel every entry of IRT_ACLNN_OPS must have,
 * phase 1's helpers (implemented by aclnn.c and fakeacl.c), and the
 * kernels' numbers and indexing.
 *
 * An operator X(ID, name, (parameters), (arguments)) of IRT_ACLNN_OPS
 * (irtool_acl.h) has, in its family's file:
 *   - phase 1, nameGetWorkspaceSize with the declared parameters: LOCK(),
 *     call_begin, one arg/list_arg per tensor (in the order of the
 *     signature: the order of the executor's snapshot c.ex->t[]), the other
 *     arguments traced (tr) and kept in c.ex->f[], c.ex->i[] or c.ex->s, a
 *     check per documented rule, then call_end (unary and binary do it all
 *     for the plain shapes);
 *   - RUN(name), its phase 2;
 *   - int irt_kernel_ID(kctx *c), declared below for every entry: it reads
 *     the snapshot (T(k), ld, toff, …) and writes the documented result.
 * kernel.c builds the table fake_ops from the same list, so the library
 * does not link while any of the three is missing.
 *
 * The kernels' arithmetic is the device's, not ggml's, where the operator
 * documents it:
 *   - FLOAT16/BFLOAT16 values are rounded to their type after every
 *     operator (round to nearest even); an operator on FLOAT16 tensors
 *     computes in float32 and rounds once when it stores (exact for a single
 *     add or multiply of two float16 values);
 *   - mixed dtypes promote as aclnn's type-promotion table says (int8 with
 *     float16 computes in float16, anything with float32 in float32);
 *   - matrix products accumulate in float32 over k in order (ops_matmul.c
 *     has cubeMathType's rounding and WeightQuantBatchMatmulV2's);
 *   - aclnnFusedInferAttentionScoreV2 forms scores in float32 from the
 *     float16 query and key, scales, adds the pse shift, takes the softmax in
 *     float32, rounds the probabilities to float16 for the product with the
 *     float16 value, accumulates in float32 and rounds the output to float16.
 * Reductions (norms, softmax) run in float32 in index order; the device's
 * own order is not documented, so sums may differ from a real NPU in their
 * last bits. Tensors are read and written through their descriptors as CANN
 * defines them: viewDims and strides in elements, a storage offset in
 * elements from the data address (INT4: two values per byte, even index in
 * the low nibble), dims of size 1 broadcast, right-aligned.
 *
 * Before a kernel runs, the runtime checks that every tensor it names lies
 * inside one live device allocation (an AI core exception, 507015, naming
 * the operator and the tensor otherwise); a kernel reports an index outside
 * its dimension the same way.
 */
#ifndef IRTOOL_FAKEACL_KERNEL_H
#define IRTOOL_FAKEACL_KERNEL_H

#include "fakeacl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- the kernels: one per entry of IRT_ACLNN_OPS ---------------- */

#define FAKE_KERNEL_DECLARE(id, name, params, args) int irt_kernel_##id(kctx *c);
IRT_ACLNN_OPS(FAKE_KERNEL_DECLARE)
#undef FAKE_KERNEL_DECLARE

/* the executor's tensor k (absent optional ones have magic 0) */
#define T(k) (&c->e->t[k])
#define HAS(k) (c->e->t[k].magic != 0)

/* ---------------- phase 1 (aclnn.c) ---------------- */

/* One phase-1 call under construction: tensors are checked and traced,
 * the first failed check sets rc and the error text. */
typedef struct {
	const char *fn;
	int rc;
	aclOpExecutor *ex;
} call;

void fake_call_begin(call *c, const char *fn);
/* records tensor argument key; required tensors must be live */
const aclTensor *fake_arg(call *c, const char *key, const aclTensor *t, int required);
/* records tensor list key ("value": the executor's list 1, else list 0) */
void fake_list_arg(call *c, const char *key, const aclTensorList *l);
/* fails the call with fmt unless cond (or it failed already) */
void fake_check(call *c, int cond, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* a scalar argument's value into *out; 1 if it is a scalar */
int fake_scalar_arg(call *c, const char *key, const aclScalar *v, double *out);
/* finishes phase 1 of operator op: the executor on success; unlocks */
aclnnStatus fake_call_end(call *c, const char *op, uint64_t *workspaceSize, aclOpExecutor **executor);
/* the whole phase 1 of one input and one output of its shape (unary), or
 * of two inputs broadcasting to out and an optional alpha (binary) */
aclnnStatus fake_unary(const char *fn, const char *op, const aclTensor *self, aclTensor *out, uint64_t *ws,
                       aclOpExecutor **ex);
aclnnStatus fake_binary(const char *fn, const char *op, const aclTensor *self, const aclTensor *other,
                        const aclScalar *alpha, aclTensor *out, uint64_t *ws, aclOpExecutor **ex);
int fake_same_shape(const aclTensor *a, const aclTensor *b);
/* b broadcasts to out (numpy rules, right-aligned) */
int fake_broadcasts(const aclTensor *b, const aclTensor *out);

#define LOCK() fake_lock()
#define tr(...) fake_tr(__VA_ARGS__)
#define tr_i64s(...) fake_tr_i64s(__VA_ARGS__)
#define call_begin(...) fake_call_begin(__VA_ARGS__)
#define arg(...) fake_arg(__VA_ARGS__)
#define list_arg(...) fake_list_arg(__VA_ARGS__)
#define check(...) fake_check(__VA_ARGS__)
#define scalar_arg(...) fake_scalar_arg(__VA_ARGS__)
#define call_end(...) fake_call_end(__VA_ARGS__)
#define unary(...) fake_unary(__VA_ARGS__)
#define binary(...) fake_binary(__VA_ARGS__)
#define same_shape(...) fake_same_shape(__VA_ARGS__)
#define broadcasts(...) fake_broadcasts(__VA_ARGS__)
#define live_tensor(...) fake_live_tensor(__VA_ARGS__)

/* phase 2: the same for every operator (fake_run) */
#define RUN(name) \
	IRT_ACLNN_RUN(name) { return fake_run(#name, workspace, workspaceSize, executor, stream); }

/* Splits the independent outputs [0, n) of a kernel over the host
 * threads (fake_parallel, at least min_per_thread each) when that cannot
 * change a bit: out's view maps distinct outputs to distinct elements (and
 * is not INT4, two per byte), and every input in[k] either is out's very
 * view (in place) or shares no byte with it, so no thread reads what
 * another writes. Otherwise fn(arg, 0, n) runs in this thread, in order.
 * 0 or the first error. */
int fake_split(int64_t n, int64_t min_per_thread, fake_range_fn fn, void *arg, const aclTensor *out,
               const aclTensor *const *in, int nin);

/* ---------------- numbers ---------------- */

/* float16 -> float32 by its bits; h2f is it tabulated when the library
 * loads (every float16 bit pattern, NaN payloads included: kernel.c) */
float fake_h2f_calc(uint16_t h);
extern float fake_h2f_tab[65536];
static inline float h2f(uint16_t h) { return fake_h2f_tab[h]; }

/* float32 -> float16, round to nearest even, overflow to infinity */
static inline uint16_t f2h(float f) {
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

static inline float bf2f(uint16_t b) {
	uint32_t bits = (uint32_t)b << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline uint16_t f2bf(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

static inline float round_h(float f) { return h2f(f2h(f)); }

/* HF32: float32's range with 11 explicit mantissa bits, round to nearest
 * even (SetHF32 transMode 0). */
static inline float round_hf32(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7f800000) == 0x7f800000) return f;
	uint32_t rest = x & 0xfff, q = x >> 12;
	if (rest > 0x800 || (rest == 0x800 && (q & 1))) q++;
	x = q << 12;
	memcpy(&f, &x, 4);
	return f;
}

static inline int is_float(aclDataType t) {
	return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_DOUBLE;
}

/* rounds v to what dtype t can hold (the compute dtype of an operator) */
static inline double round_to(aclDataType t, double v) {
	switch (t) {
	case ACL_FLOAT: return (float)v;
	case ACL_FLOAT16: return h2f(f2h((float)v));
	case ACL_BF16: return bf2f(f2bf((float)v));
	case ACL_DOUBLE: return v;
	default: return (double)(int64_t)v;
	}
}

/* element e (storage offset included) of t */
static inline double ld(const aclTensor *t, int64_t e) {
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

/* stores v, converted to t's dtype, as element e of t */
static inline void st(const aclTensor *t, int64_t e, double v) {
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

/* the element offset in t of coordinates c of an nd-dim iteration space,
 * t's dims right-aligned to it; t's dims of size 1 broadcast */
static inline int64_t toff(const aclTensor *t, const int64_t *c, int nd) {
	int64_t o = t->offset;
	int shift = nd - t->ndim;
	for (int i = 0; i < t->ndim; i++) {
		int j = i + shift;
		if (j >= 0 && t->dims[i] != 1) o += c[j] * t->strides[i];
	}
	return o;
}

/* coordinates of linear index n in dims (row-major) */
static inline void coords(int64_t n, const int64_t *dims, int nd, int64_t *c) {
	for (int i = nd - 1; i >= 0; i--) {
		int64_t d = dims[i] > 0 ? dims[i] : 1;
		c[i] = n % d;
		n /= d;
	}
}

/* the dtype a and b compute in (aclnn's type promotion) */
static inline aclDataType promote(aclDataType a, aclDataType b) {
	if (a == b) return a;
	int fa = is_float(a), fb = is_float(b);
	if (fa && fb) {
		if (a == ACL_DOUBLE || b == ACL_DOUBLE) return ACL_DOUBLE;
		return ACL_FLOAT; /* float32 with anything, float16 with bfloat16 */
	}
	if (fa) return a;
	if (fb) return b;
	return dtype_size(a) >= dtype_size(b) ? a : b;
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

static inline int gg(const kctx *c) { return c->e->arith == ARITH_GGML; }

static inline uint32_t f32_bits(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float f32_from(uint32_t u) {
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* ggml_v_expf (AVX2 + FMA), one lane: x = n·ln2 + b, a degree-5
 * polynomial in b, 2^n built in the exponent, the special path for
 * |n| > 126 */
static inline float gg_vexpf(float x) {
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
static inline float gg_hsum8(const float *v) {
	float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
	return (t0 + t2) + (t1 + t3);
}

#endif
