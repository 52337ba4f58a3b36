/*
 * ops_wqbmm.c: the emulator's aclnnWeightQuantBatchMatmulV2 (phase 1 and
 * the kernel): y = x @ ((weight + antiquantOffset) * antiquantScale)
 * [+ bias], the weight dequantised in the activation's dtype (rounded to
 * float16), multiplied in float16 with float32 accumulation and the result
 * rounded to y's dtype; its output columns split over the emulator's host
 * threads (parallel.c), with an AVX2/F16C path giving the same bits.
 */
#include "kernel.h"

aclnnStatus aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *weight, const aclTensor *antiquantScale,
    const aclTensor *antiquantOffsetOptional, const aclTensor *quantScaleOptional,
    const aclTensor *quantOffsetOptional, const aclTensor *biasOptional, int antiquantGroupSize, const aclTensor *y,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnWeightQuantBatchMatmulV2GetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	weight = arg(&c, "weight", weight, 1);
	antiquantScale = arg(&c, "antiquantScale", antiquantScale, 1);
	const aclTensor *antiquantOffset = arg(&c, "antiquantOffset", antiquantOffsetOptional, 0);
	arg(&c, "quantScale", quantScaleOptional, 0);
	arg(&c, "quantOffset", quantOffsetOptional, 0);
	arg(&c, "bias", biasOptional, 0);
	y = arg(&c, "y", y, 1);
	tr(",\"antiquantGroupSize\":%d", antiquantGroupSize);
	c.ex->i[0] = antiquantGroupSize;
	/* The Atlas A2/A3 rules of the operator's page (aclnnWeightQuantBatchMatmulV2,
	 * parameter descriptions and constraints), which CANN's argument checks
	 * (ops-nn, op_api/aclnn_weight_quant_batch_matmul_v2.cpp) enforce. */
	check(&c, x && x->ndim == 2, "x must be 2-D (m, k)");
	check(&c, x && (x->dtype == ACL_FLOAT16 || x->dtype == ACL_BF16), "x must be FLOAT16 or BFLOAT16");
	check(&c, weight && (weight->dtype == ACL_INT8 || weight->dtype == ACL_INT4), "weight must be INT8 or INT4");
	check(&c, x && weight && weight->ndim == 2 && weight->dims[0] == x->dims[1], "weight must be (k, n)");
	/* CANN also takes FRACTAL_NZ under conditions; the emulator computes ND only */
	check(&c, weight && weight->format == ACL_FORMAT_ND, "weight: only ND is emulated (format %d)",
	      weight ? (int)weight->format : -1);
	if (!c.rc) {
		int64_t m = x->dims[0], k = x->dims[1], n = weight->dims[1];
		int xt = x->strides[0] == 1 && x->strides[1] == m && m > 1; /* x stored (k, m) */
		check(&c, k >= 1 && k <= 65535, "weight: k = %lld outside [1, 65535] (Atlas A2/A3)", (long long)k);
		check(&c, n >= 1 && n <= 65535, "weight: n = %lld outside [1, 65535] (Atlas A2/A3)", (long long)n);
		check(&c, m >= 1 && m <= (xt ? 65535 : 2147483647LL), "x: m = %lld outside [1, %lld]%s", (long long)m,
		      xt ? 65535LL : 2147483647LL, xt ? " (x transposed)" : "");
		/* contiguous (k, n), or the transposed view of a contiguous (n, k) */
		int wc = weight->strides[1] == 1 && (weight->strides[0] == n || k == 1);
		int wt = weight->strides[0] == 1 && (weight->strides[1] == k || n == 1);
		check(&c, wc || wt, "weight: strides (%lld, %lld) are neither (k, n) contiguous nor its transpose",
		      (long long)weight->strides[0], (long long)weight->strides[1]);
		check(&c, x->strides[1] == 1 || xt, "x: non-contiguous only when transposed");
		/* INT4: the inner (stored last) axis must be even */
		check(&c, weight->dtype != ACL_INT4 || (wt && !wc ? k % 2 == 0 : n % 2 == 0),
		      "weight: INT4 with an odd inner axis (%s = %lld)", wt && !wc ? "k" : "n",
		      (long long)(wt && !wc ? k : n));
		check(&c, antiquantGroupSize == 0 || (antiquantGroupSize >= 32 && antiquantGroupSize % 32 == 0 &&
		                                      antiquantGroupSize <= k - 1),
		      "antiquantGroupSize = %d: must be 0 or a multiple of 32 in [32, k-1] = [32, %lld]", antiquantGroupSize,
		      (long long)(k - 1));
		check(&c, y->dtype == x->dtype && y->ndim == 2 && y->dims[0] == m && y->dims[1] == n,
		      "y must be (m, n) of x's dtype");
		check(&c, antiquantScale->dtype == x->dtype, "antiquantScale must have x's dtype");
		const aclTensor *s = antiquantScale;
		if (antiquantGroupSize > 0) {
			int64_t groups = (k + antiquantGroupSize - 1) / antiquantGroupSize;
			check(&c, s->ndim == 2 && s->dims[0] == groups && s->dims[1] == n,
			      "per-group antiquantScale must be (ceil(k/%d), n) = (%lld, %lld)", antiquantGroupSize,
			      (long long)groups, (long long)n);
		} else {
			/* per-tensor (1,) / (1, 1), per-channel (n,) / (1, n) */
			int ok = (s->ndim == 1 && (s->dims[0] == 1 || s->dims[0] == n)) ||
			         (s->ndim == 2 && s->dims[0] == 1 && (s->dims[1] == 1 || s->dims[1] == n));
			check(&c, ok, "antiquantScale without groups must be (1,), (1, 1), (n,) or (1, n) with n = %lld",
			      (long long)n);
		}
		const aclTensor *o = antiquantOffset;
		check(&c, !o || same_shape(o, s), "antiquantOffset must have antiquantScale's shape");
		check(&c, !o || o->dtype == s->dtype, "antiquantOffset must have antiquantScale's dtype");
		const aclTensor *bias = live_tensor(biasOptional);
		check(&c, !bias || (bias->dtype == (x->dtype == ACL_FLOAT16 ? ACL_FLOAT16 : ACL_FLOAT) &&
		                    ((bias->ndim == 1 && bias->dims[0] == n) ||
		                     (bias->ndim == 2 && bias->dims[0] == 1 && bias->dims[1] == n))),
		      "bias must be (n,) or (1, n), FLOAT16 with FLOAT16 x, FLOAT with BFLOAT16 x");
		check(&c, !quantScaleOptional && !quantOffsetOptional,
		      "quantScale/quantOffset (INT8 output) are not emulated");
	}
	return call_end(&c, "aclnnWeightQuantBatchMatmulV2", workspaceSize, executor);
}
RUN(aclnnWeightQuantBatchMatmulV2)

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
	if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) return fake_h2f_calc(h);
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

int irt_kernel_WQBMM(kctx *c) {
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
