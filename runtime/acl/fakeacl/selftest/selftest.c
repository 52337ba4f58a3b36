/*
 * selftest.c: checks operators of the CANN emulator (runtime/acl/fakeacl)
 * against their documented formulas, through the public C API only, as a
 * CANN application would call them. Built and run by TestEmulatorOperators
 * (runtime/acl/emulator_test.go): `selftest` prints one line per check and
 * exits 1 if any failed.
 *
 * Expected values are computed here from the aclnn reference pages'
 * formulas, independently of the emulator's kernels.
 */
#include "irtool_acl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void irtfake_set_soc(const char *name);
void irtfake_set(const char *key, long long value);
long long irtfake_stat(const char *key);

static int failures;

static void ok(int cond, const char *what, const char *detail) {
	printf("%s %s%s%s\n", cond ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
	if (!cond) failures++;
}

static void *dev(size_t n) {
	void *p = NULL;
	if (aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST) != 0) {
		printf("FAIL aclrtMalloc %zu\n", n);
		exit(1);
	}
	return p;
}

static aclTensor *tensor(aclDataType dt, int nd, const int64_t *dims, const int64_t *strides, int64_t offset, void *data) {
	int64_t reach = offset + 1;
	for (int i = 0; i < nd; i++) reach += (dims[i] - 1) * strides[i];
	return aclCreateTensor(dims, (uint64_t)nd, dt, strides, offset, ACL_FORMAT_ND, &reach, 1, data);
}

/* float16 by hand: round to nearest even of a float (normal range only) */
static uint16_t half(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t s = (x >> 16) & 0x8000, e = ((x >> 23) & 0xff) - 127 + 15, m = x & 0x7fffff;
	uint32_t q = (e << 10) | (m >> 13), rest = m & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (q & 1))) q++;
	return (uint16_t)(s | q);
}

static float unhalf(uint16_t h) {
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff, s = (uint32_t)(h >> 15) << 31;
	uint32_t bits = e == 0 ? s : s | ((e - 15 + 127) << 23) | (m << 13);
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static int run(const char *op, aclnnStatus rc1, uint64_t ws, aclOpExecutor *ex,
               aclnnStatus (*fn)(void *, uint64_t, aclOpExecutor *, aclrtStream), aclrtStream s) {
	if (rc1 != 0) {
		printf("     %s phase 1: %d %s\n", op, rc1, aclGetRecentErrMsg());
		return rc1;
	}
	void *w = ws ? dev(ws) : NULL;
	int rc = fn(w, ws, ex, s);
	if (rc != 0) printf("     %s: status %d\n", op, rc);
	return rc;
}

/* phase 1, then phase 2 with a workspace of the size phase 1 asked for */
#define run2(op, phase1, wszp, exp, fn, s) \
	({ \
		aclnnStatus rc1_ = (phase1); \
		run(op, rc1_, *(wszp), *(exp), fn, s); \
	})

/* y = x @ ((w + offset) * scale), per group of 32 along k, in float16 */
static void test_wqbmm(void) {
	enum { M = 2, K = 64, N = 3, G = 32 };
	int64_t xd[] = {M, K}, xs[] = {K, 1}, wd[] = {K, N}, ws_[] = {1, K}, sd[] = {K / G, N}, ss[] = {1, K / G};
	int64_t yd[] = {M, N}, ys[] = {N, 1};
	uint16_t *x = dev(2 * M * K), *sc = dev(2 * K / G * N), *of = dev(2 * K / G * N), *y = dev(2 * M * N);
	int8_t *w = dev(K * N);
	for (int i = 0; i < M * K; i++) x[i] = half((float)((i * 7) % 11 - 5) / 8);
	for (int n = 0; n < N; n++)
		for (int k = 0; k < K; k++) w[n * K + k] = (int8_t)((n * 31 + k * 13) % 255 - 127);
	for (int i = 0; i < K / G * N; i++) {
		sc[i] = half(0.01f * (float)(i + 1));
		of[i] = half((float)(i % 3) - 1);
	}
	aclTensor *tx = tensor(ACL_FLOAT16, 2, xd, xs, 0, x), *tw = tensor(ACL_INT8, 2, wd, ws_, 0, w);
	aclTensor *ts = tensor(ACL_FLOAT16, 2, sd, ss, 0, sc), *to = tensor(ACL_FLOAT16, 2, sd, ss, 0, of);
	aclTensor *ty = tensor(ACL_FLOAT16, 2, yd, ys, 0, y);
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	int rc = run2("aclnnWeightQuantBatchMatmulV2", aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(tx, tw, ts, to, NULL, NULL, NULL, G, ty, &wsz, &ex), &wsz, &ex, aclnnWeightQuantBatchMatmulV2, NULL);
	ok(rc == 0, "aclnnWeightQuantBatchMatmulV2 with antiquantScale and antiquantOffset runs", NULL);
	double worst = 0;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double want = 0;
			for (int k = 0; k < K; k++) {
				int g = k / G;
				double a = unhalf(x[m * K + k]);
				double wq = (w[n * K + k] + unhalf(of[n * (K / G) + g])) * unhalf(sc[n * (K / G) + g]);
				want += a * wq;
			}
			worst = fmax(worst, fabs(unhalf(y[m * N + n]) - want) / fmax(fabs(want), 1e-3));
		}
	char buf[64];
	snprintf(buf, sizeof buf, "worst relative error %.2g", worst);
	ok(worst < 2e-3, "WQBMM equals x @ ((w + antiquantOffset) * antiquantScale) to float16 precision", buf);
	/* a per-group scale of the wrong shape is refused in phase 1 */
	int64_t bad[] = {K / G + 1, N};
	aclTensor *tb = tensor(ACL_FLOAT16, 2, bad, ss, 0, dev(64));
	rc = aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(tx, tw, tb, NULL, NULL, NULL, NULL, G, ty, &wsz, &ex);
	const char *msg = aclGetRecentErrMsg();
	ok(rc == ACLNN_ERR_PARAM_INVALID && msg && strstr(msg, "antiquantScale"), "a (k/g+1, n) antiquantScale is ACLNN_ERR_PARAM_INVALID", msg);
}

/* WQBMM's vector and threaded path (AVX2/F16C, ops_wqbmm.c wq_range_avx2)
 * against its scalar loop, bit for bit: INT8 and INT4 weights, float16 and
 * float32 activations, with and without antiquantOffset, per-channel and
 * grouped scales, column counts that leave a tail of fewer than 8, a bias,
 * scales that overflow float16, give subnormal results, are infinite or NaN
 * (the NaN payload included), and 1 or 3 threads. (x is float16: CANN
 * refuses float32; bias float16 with it.) */
static void wqbmm_run(aclDataType xt, aclDataType wt_, int M, int K, int N, int G, int off, int bias, uint16_t special,
                      void *out, size_t outBytes) {
	int ng = G ? K / G : 1;
	int64_t xd[] = {M, K}, xs[] = {K, 1}, wd[] = {K, N}, ws_[] = {1, K};
	int64_t sd2[] = {ng, N}, ss2[] = {1, ng}, sd1[] = {N}, ss1[] = {1}, yd[] = {M, N}, ys[] = {N, 1}, bd[] = {N}, bs[] = {1};
	int xe = xt == ACL_FLOAT ? 4 : 2;
	unsigned char *x = dev((size_t)(xe * M * K)), *w = dev((size_t)(K * N)), *y = dev((size_t)(xe * M * N));
	uint16_t *sc = dev((size_t)(2 * ng * N)), *of = dev((size_t)(2 * ng * N)), *bi = dev((size_t)(2 * N));
	float *bf = dev((size_t)(4 * N));
	unsigned seed = 12345;
	for (int i = 0; i < M * K; i++) {
		seed = seed * 1103515245u + 12345u;
		float v = (float)((int)(seed >> 16) % 2001 - 1000) / 256.0f;
		if (xt == ACL_FLOAT) memcpy(x + 4 * i, &v, 4);
		else {
			uint16_t h = half(v);
			memcpy(x + 2 * i, &h, 2);
		}
	}
	for (int i = 0; i < K * N; i++) {
		seed = seed * 1103515245u + 12345u;
		w[i] = (unsigned char)(seed >> 13);
	}
	for (int i = 0; i < ng * N; i++) {
		seed = seed * 1103515245u + 12345u;
		float v = (float)((int)(seed >> 16) % 1000 + 1) * 1e-4f;
		sc[i] = half(v);
		of[i] = half((float)((int)(seed >> 20) % 17 - 8) * 0.5f);
	}
	sc[1 % (ng * N)] = half(3000.0f);  /* products past float16's range: inf */
	sc[2 % (ng * N)] = 0x0001;         /* a subnormal scale: subnormal results */
	sc[(ng * N) / 2] = special;        /* inf or a NaN with a payload */
	for (int n = 0; n < N; n++) bi[n] = half((float)(n % 5) - 2), bf[n] = (float)(n % 5) - 2.5f;
	aclTensor *tx = tensor(xt, 2, xd, xs, 0, x);
	aclTensor *tw = wt_ == ACL_INT4 ? tensor(ACL_INT4, 2, wd, ws_, 0, w) : tensor(ACL_INT8, 2, wd, ws_, 0, w);
	aclTensor *ts = G ? tensor(ACL_FLOAT16, 2, sd2, ss2, 0, sc) : tensor(ACL_FLOAT16, 1, sd1, ss1, 0, sc);
	aclTensor *to = !off ? NULL : G ? tensor(ACL_FLOAT16, 2, sd2, ss2, 0, of) : tensor(ACL_FLOAT16, 1, sd1, ss1, 0, of);
	aclTensor *tb = !bias ? NULL : xt == ACL_FLOAT ? tensor(ACL_FLOAT, 1, bd, bs, 0, bf) : tensor(ACL_FLOAT16, 1, bd, bs, 0, bi);
	aclTensor *ty = tensor(xt, 2, yd, ys, 0, y);
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	int rc = run2("aclnnWeightQuantBatchMatmulV2", aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(tx, tw, ts, to, NULL, NULL, tb, G, ty, &wsz, &ex), &wsz, &ex, aclnnWeightQuantBatchMatmulV2, NULL);
	if (rc != 0) memset(y, 0xee, (size_t)(xe * M * N));
	memcpy(out, y, outBytes);
}

static void test_wqbmm_paths(void) {
	static const struct {
		aclDataType x, w;
		int M, K, N, G, off, bias;
		uint16_t special;
	} cases[] = {
		{ACL_FLOAT16, ACL_INT8, 1, 896, 77, 32, 0, 0, 0x7c00},
		{ACL_FLOAT16, ACL_INT8, 3, 256, 40, 32, 1, 1, 0x7e01},
		{ACL_FLOAT16, ACL_INT8, 2, 64, 19, 0, 1, 0, 0xfd55},
		{ACL_FLOAT16, ACL_INT8, 13, 4864, 24, 64, 0, 1, 0x7d00},
		{ACL_FLOAT16, ACL_INT4, 5, 128, 34, 64, 1, 0, 0x7c00},
		{ACL_FLOAT16, ACL_INT4, 1, 64, 8, 32, 0, 1, 0x7d00},
		{ACL_FLOAT16, ACL_INT4, 4, 64, 10, 0, 1, 0, 0x7e00},
		{ACL_FLOAT16, ACL_INT8, 2, 36, 16, 0, 1, 0, 0x3c00}, /* K not a multiple of 8: the scalar loop */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int xe = cases[i].x == ACL_FLOAT ? 4 : 2;
		size_t bytes = (size_t)(xe * cases[i].M * cases[i].N);
		unsigned char *ref = malloc(bytes), *got = malloc(bytes);
		irtfake_set("simd", 0);
		irtfake_set("threads", 1);
		wqbmm_run(cases[i].x, cases[i].w, cases[i].M, cases[i].K, cases[i].N, cases[i].G, cases[i].off, cases[i].bias, cases[i].special, ref, bytes);
		int same = 1;
		for (int t = 1; t <= 3; t += 2)
			for (int simd = 0; simd <= 1; simd++) {
				irtfake_set("simd", simd);
				irtfake_set("threads", t);
				wqbmm_run(cases[i].x, cases[i].w, cases[i].M, cases[i].K, cases[i].N, cases[i].G, cases[i].off, cases[i].bias, cases[i].special, got, bytes);
				same &= memcmp(ref, got, bytes) == 0;
			}
		char what[160];
		snprintf(what, sizeof what, "WQBMM %s x %s, M=%d K=%d N=%d group %d%s%s, scale 0x%04x: vector and threaded paths equal the scalar loop bit for bit",
		         cases[i].x == ACL_FLOAT ? "f32" : "f16", cases[i].w == ACL_INT4 ? "int4" : "int8", cases[i].M, cases[i].K, cases[i].N,
		         cases[i].G, cases[i].off ? ", offset" : "", cases[i].bias ? ", bias" : "", cases[i].special);
		ok(same, what, NULL);
		free(ref);
		free(got);
	}
	irtfake_set("simd", -1);
	irtfake_set("threads", 0);
}

/* n pseudo-random values in [-4, 4) of dtype dt (FLOAT or FLOAT16) at p */
static void fill(aclDataType dt, void *p, int64_t n, unsigned seed) {
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		float v = (float)((int)(seed >> 12) % 8192 - 4096) / 1024.0f;
		if (dt == ACL_FLOAT) ((float *)p)[i] = v;
		else ((uint16_t *)p)[i] = half(v);
	}
}

/* a contiguous tensor of nd dims over fresh device memory filled by fill */
static aclTensor *th_tensor(aclDataType dt, int nd, const int64_t *dims, unsigned seed, void **data, size_t *bytes) {
	int64_t st_[8], n = 1;
	for (int i = nd - 1; i >= 0; i--) st_[i] = n, n *= dims[i];
	*bytes = (size_t)n * (dt == ACL_FLOAT ? 4 : 2);
	*data = dev(*bytes);
	fill(dt, *data, n, seed);
	return tensor(dt, nd, dims, st_, 0, *data);
}

enum { TH_MM_F32, TH_MM_HF32, TH_BMM_F16, TH_MM_GGML_F16, TH_MM_GGML_F32, TH_MUL, TH_SILU, TH_SWIGLU, TH_CAST, TH_INPLACE_ADD };

/* launches case which once: its output copied into *out (malloc'd) */
static int th_launch(int which, unsigned char **out, size_t *bytes) {
	const aclDataType F = ACL_FLOAT, H = ACL_FLOAT16;
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	void *a, *b, *o;
	size_t na, nb, no;
	aclTensor *ta, *tb, *to;
	int rc;
	switch (which) {
	case TH_MM_F32: case TH_MM_HF32: case TH_MM_GGML_F16: case TH_MM_GGML_F32: {
		static const int64_t shapes[][3] = {{5, 64, 1000}, {64, 48, 300}, {0}, {4, 64, 2000}, {3, 40, 2000}};
		const int64_t *sh = shapes[which];
		aclDataType dt = which == TH_MM_GGML_F16 ? H : F;
		int64_t ad[] = {sh[0], sh[1]}, bd[] = {sh[1], sh[2]}, od[] = {sh[0], sh[2]};
		ta = th_tensor(dt, 2, ad, 1, &a, &na), tb = th_tensor(dt, 2, bd, 2, &b, &nb), to = th_tensor(F, 2, od, 3, &o, &no);
		rc = run2("aclnnMm", aclnnMmGetWorkspaceSize(ta, tb, to, which == TH_MM_HF32 ? 1 : 0, &wsz, &ex), &wsz, &ex, aclnnMm, NULL);
		break;
	}
	case TH_BMM_F16: {
		int64_t ad[] = {4, 16, 32}, bd[] = {4, 32, 200}, od[] = {4, 16, 200};
		ta = th_tensor(H, 3, ad, 4, &a, &na), tb = th_tensor(H, 3, bd, 5, &b, &nb), to = th_tensor(H, 3, od, 6, &o, &no);
		rc = run2("aclnnBatchMatMul", aclnnBatchMatMulGetWorkspaceSize(ta, tb, to, 0, &wsz, &ex), &wsz, &ex, aclnnBatchMatMul, NULL);
		break;
	}
	case TH_MUL: {
		int64_t ad[] = {300, 512}, bd[] = {512};
		ta = th_tensor(H, 2, ad, 7, &a, &na), tb = th_tensor(H, 1, bd, 8, &b, &nb), to = th_tensor(H, 2, ad, 9, &o, &no);
		rc = run2("aclnnMul", aclnnMulGetWorkspaceSize(ta, tb, to, &wsz, &ex), &wsz, &ex, aclnnMul, NULL);
		break;
	}
	case TH_SILU: case TH_CAST: {
		int64_t ad[] = {200, 1003};
		ta = th_tensor(F, 2, ad, 10, &a, &na), to = th_tensor(which == TH_CAST ? H : F, 2, ad, 11, &o, &no);
		b = NULL;
		rc = which == TH_SILU ? run2("aclnnSilu", aclnnSiluGetWorkspaceSize(ta, to, &wsz, &ex), &wsz, &ex, aclnnSilu, NULL)
		                      : run2("aclnnCast", aclnnCastGetWorkspaceSize(ta, H, to, &wsz, &ex), &wsz, &ex, aclnnCast, NULL);
		break;
	}
	case TH_SWIGLU: {
		int64_t ad[] = {100, 1400}, od[] = {100, 700};
		ta = th_tensor(F, 2, ad, 12, &a, &na), to = th_tensor(F, 2, od, 13, &o, &no);
		b = NULL;
		rc = run2("aclnnSwiGlu", aclnnSwiGluGetWorkspaceSize(ta, -1, to, &wsz, &ex), &wsz, &ex, aclnnSwiGlu, NULL);
		break;
	}
	default: { /* TH_INPLACE_ADD: o += 0.5 · b, in place */
		int64_t od[] = {300, 400}, bd[] = {400};
		float half_ = 0.5f;
		aclScalar *alpha = aclCreateScalar(&half_, F);
		to = th_tensor(F, 2, od, 14, &o, &no), tb = th_tensor(F, 1, bd, 15, &b, &nb);
		a = NULL;
		rc = run2("aclnnInplaceAdd", aclnnInplaceAddGetWorkspaceSize(to, tb, alpha, &wsz, &ex), &wsz, &ex, aclnnInplaceAdd, NULL);
		aclDestroyScalar(alpha);
	}
	}
	*bytes = no;
	*out = malloc(no);
	memcpy(*out, o, no);
	aclrtFree(o);
	if (a) aclrtFree(a);
	if (b) aclrtFree(b);
	return rc;
}

/* The kernels that split their outputs over the host threads (matrix
 * products, elementwise operators) give the same bits on 1, 2 and 3
 * threads, under the device's arithmetic and ggml's; and they do split
 * (irtfake_stat's parallel_splits grows). */
static void test_threads(void) {
	static const struct {
		int which, arith;
		const char *what;
	} cases[] = {
	    {TH_MM_F32, 0, "Mm float32 (5x64 @ 64x1000)"},
	    {TH_MM_HF32, 0, "Mm float32 with HF32 inputs (64x48 @ 48x300)"},
	    {TH_BMM_F16, 0, "BatchMatMul float16 (4 batches of 16x32 @ 32x200)"},
	    {TH_MM_GGML_F16, 1, "Mm float16 under ggml's arithmetic (4x64 @ 64x2000)"},
	    {TH_MM_GGML_F32, 1, "Mm float32 under ggml's arithmetic (3x40 @ 40x2000)"},
	    {TH_MUL, 0, "Mul float16 broadcasting (300x512 by 512)"},
	    {TH_SILU, 1, "Silu float32 under ggml's arithmetic (200x1003)"},
	    {TH_SWIGLU, 1, "SwiGlu float32 under ggml's arithmetic (100x1400)"},
	    {TH_CAST, 0, "Cast float32 to float16 (200x1003)"},
	    {TH_INPLACE_ADD, 0, "InplaceAdd float32, alpha 0.5 (300x400 by 400)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		irtfake_set("arith", cases[i].arith);
		unsigned char *ref = NULL, *got;
		size_t n = 0, m;
		int rc = 0, same = 1;
		long long before = irtfake_stat("parallel_splits");
		for (int t = 1; t <= 3; t++) {
			irtfake_set("threads", t);
			rc |= th_launch(cases[i].which, &got, &m);
			if (!ref) {
				ref = got, n = m;
				continue;
			}
			same &= m == n && memcmp(ref, got, n) == 0;
			free(got);
		}
		free(ref);
		char what[160];
		snprintf(what, sizeof what, "%s: 1, 2 and 3 threads give the same bits", cases[i].what);
		ok(rc == 0 && same && irtfake_stat("parallel_splits") >= before + 2, what, NULL);
	}
	irtfake_set("threads", 0);
	irtfake_set("arith", -1);
}

/* aclnnRotaryPositionEmbedding modes 0 (half) and 1 (interleave) */
static void test_rope(void) {
	enum { D = 8 };
	int64_t d[] = {1, 1, 1, D}, s[] = {D, D, D, 1};
	float *x = dev(4 * D), *c = dev(4 * D), *sn = dev(4 * D), *y = dev(4 * D);
	for (int i = 0; i < D; i++) {
		x[i] = (float)(i + 1);
		c[i] = cosf(0.1f * (float)(i + 1));
		sn[i] = sinf(0.1f * (float)(i + 1));
	}
	for (int mode = 0; mode <= 1; mode++) {
		aclTensor *tx = tensor(ACL_FLOAT, 4, d, s, 0, x), *tc = tensor(ACL_FLOAT, 4, d, s, 0, c);
		aclTensor *ts = tensor(ACL_FLOAT, 4, d, s, 0, sn), *ty = tensor(ACL_FLOAT, 4, d, s, 0, y);
		uint64_t wsz = 0;
		aclOpExecutor *ex = NULL;
		int rc = run2("aclnnRotaryPositionEmbedding", aclnnRotaryPositionEmbeddingGetWorkspaceSize(tx, tc, ts, mode, ty, &wsz, &ex), &wsz, &ex, aclnnRotaryPositionEmbedding, NULL);
		double worst = 0;
		for (int i = 0; i < D; i++) {
			float rot;
			if (mode == 0) rot = i < D / 2 ? -x[i + D / 2] : x[i - D / 2];
			else rot = (i & 1) ? x[i - 1] : -x[i + 1];
			worst = fmax(worst, fabs(y[i] - (x[i] * c[i] + rot * sn[i])));
		}
		char what[96];
		snprintf(what, sizeof what, "RoPE mode %d is y = x*cos + rotate(x)*sin", mode);
		ok(rc == 0 && worst < 1e-5, what, NULL);
	}
}

/* cubeMathType: HF32 on Atlas A2, refusal of KEEP_DTYPE elsewhere */
static void test_cube(void) {
	int64_t d[] = {1, 1}, s[] = {1, 1};
	float *a = dev(4), *b = dev(4), *o = dev(4);
	*a = 1.0f + 1.0f / 4096; /* 13 mantissa bits: HF32 keeps 11 */
	*b = 1.0f;
	aclTensor *ta = tensor(ACL_FLOAT, 2, d, s, 0, a), *tb = tensor(ACL_FLOAT, 2, d, s, 0, b), *to = tensor(ACL_FLOAT, 2, d, s, 0, o);
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	int rc = run2("aclnnMm", aclnnMmGetWorkspaceSize(ta, tb, to, 0, &wsz, &ex), &wsz, &ex, aclnnMm, NULL);
	ok(rc == 0 && *o == *a, "aclnnMm KEEP_DTYPE keeps float32 on Ascend910B", NULL);
	rc = run2("aclnnMm", aclnnMmGetWorkspaceSize(ta, tb, to, 1, &wsz, &ex), &wsz, &ex, aclnnMm, NULL);
	ok(rc == 0 && *o == 1.0f, "aclnnMm ALLOW_FP32_DOWN_PRECISION rounds float32 to HF32 on Ascend910B", NULL);
	irtfake_set_soc("Ascend310P3");
	rc = aclnnMmGetWorkspaceSize(ta, tb, to, 0, &wsz, &ex);
	const char *msg = aclGetRecentErrMsg();
	ok(rc == ACLNN_ERR_PARAM_INVALID, "aclnnMm KEEP_DTYPE with FLOAT is refused on Ascend310P3", msg);
	irtfake_set_soc("Ascend910B3");
}

/* an index outside the gathered dim, and a replay after the memory it
 * reads was freed, are AI core exceptions naming the operator */
static void test_faults(void) {
	int64_t td[] = {4, 2}, ts[] = {2, 1}, id[] = {2}, is[] = {1}, od[] = {2, 2}, os[] = {2, 1};
	float *tab = dev(4 * 8), *out = dev(4 * 4);
	int32_t *idx = dev(8);
	idx[0] = 1;
	idx[1] = 9;
	aclTensor *tt = tensor(ACL_FLOAT, 2, td, ts, 0, tab), *ti = tensor(ACL_INT32, 1, id, is, 0, idx);
	aclTensor *to = tensor(ACL_FLOAT, 2, od, os, 0, out);
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	int rc = run2("aclnnGatherV2", aclnnGatherV2GetWorkspaceSize(tt, 0, ti, to, &wsz, &ex), &wsz, &ex, aclnnGatherV2, NULL);
	const char *msg = aclGetRecentErrMsg();
	ok(rc == ACL_ERROR_RT_AICORE_EXCEPTION && msg && strstr(msg, "aclnnGatherV2"), "GatherV2 with index 9 of 4 rows is 507015 naming the operator", msg);

	aclrtStream st = NULL;
	aclrtCreateStream(&st);
	float *a = dev(16), *b = dev(16), *c = dev(16);
	int64_t d[] = {4}, s[] = {1};
	aclTensor *ta = tensor(ACL_FLOAT, 1, d, s, 0, a), *tb = tensor(ACL_FLOAT, 1, d, s, 0, b), *tc = tensor(ACL_FLOAT, 1, d, s, 0, c);
	for (int i = 0; i < 4; i++) a[i] = (float)i, b[i] = 2;
	aclmdlRICaptureBegin(st, ACL_MODEL_RI_CAPTURE_MODE_RELAXED);
	rc = run2("aclnnMul", aclnnMulGetWorkspaceSize(ta, tb, tc, &wsz, &ex), &wsz, &ex, aclnnMul, st);
	void *late = NULL;
	ok(aclrtMalloc(&late, 64, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT && !late,
	   "aclrtMalloc while a stream captures (even RELAXED) is 107030", aclGetRecentErrMsg());
	aclmdlRI ri = NULL;
	aclmdlRICaptureEnd(st, &ri);
	ok(rc == 0 && c[3] == 0, "a captured aclnnMul computes nothing until replayed", NULL);
	a[3] = 5;
	rc = aclmdlRIExecuteAsync(ri, st);
	ok(rc == 0 && c[3] == 10, "the replay computes on the addresses bound at capture, reading their current contents", NULL);
	aclrtSynchronizeStream(st);
	aclrtFree(b);
	rc = aclmdlRIExecuteAsync(ri, st);
	msg = aclGetRecentErrMsg();
	ok(rc == ACL_ERROR_RT_AICORE_EXCEPTION && msg && strstr(msg, "aclnnMul"), "replaying after aclrtFree of an operand is 507015 naming the operator", msg);
	aclrtSynchronizeStream(st);
	aclmdlRIDestroy(ri);
	aclrtDestroyStream(st);
}

/* aclnnSwiGlu, aclnnSoftmax, aclnnCat, aclnnCast and aclnnInplaceIndexCopy
 * against their formulas */
static void test_elementwise(void) {
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	/* SwiGlu over the last dim of [2, 4]: out = silu(x[:, :2]) * x[:, 2:] */
	int64_t xd[] = {2, 4}, xs[] = {4, 1}, od[] = {2, 2}, os[] = {2, 1};
	float *x = dev(4 * 8), *o = dev(4 * 4);
	for (int i = 0; i < 8; i++) x[i] = (float)(i - 3) / 2;
	int rc = run2("aclnnSwiGlu", aclnnSwiGluGetWorkspaceSize(tensor(ACL_FLOAT, 2, xd, xs, 0, x), -1, tensor(ACL_FLOAT, 2, od, os, 0, o), &wsz, &ex), &wsz, &ex, aclnnSwiGlu, NULL);
	double worst = 0;
	for (int r = 0; r < 2; r++)
		for (int j = 0; j < 2; j++) {
			double a = x[r * 4 + j], b = x[r * 4 + 2 + j];
			worst = fmax(worst, fabs(o[r * 2 + j] - a / (1 + exp(-a)) * b));
		}
	ok(rc == 0 && worst < 1e-6, "SwiGlu is silu(first half) * second half", NULL);

	/* Softmax over dim 1 of [2, 4] */
	float *sm = dev(4 * 8);
	rc = run2("aclnnSoftmax", aclnnSoftmaxGetWorkspaceSize(tensor(ACL_FLOAT, 2, xd, xs, 0, x), 1, tensor(ACL_FLOAT, 2, xd, xs, 0, sm), &wsz, &ex), &wsz, &ex, aclnnSoftmax, NULL);
	worst = 0;
	for (int r = 0; r < 2; r++) {
		double sum = 0;
		for (int j = 0; j < 4; j++) sum += exp(x[r * 4 + j]);
		for (int j = 0; j < 4; j++) worst = fmax(worst, fabs(sm[r * 4 + j] - exp(x[r * 4 + j]) / sum));
	}
	ok(rc == 0 && worst < 1e-6, "Softmax along dim 1", NULL);

	/* Cat of [1, 4] and [2, 4] along dim 0 */
	float *c = dev(4 * 12);
	int64_t ad[] = {1, 4}, bd[] = {2, 4}, cd[] = {3, 4};
	const aclTensor *parts[] = {tensor(ACL_FLOAT, 2, ad, xs, 0, x), tensor(ACL_FLOAT, 2, bd, xs, 0, sm)};
	aclTensorList *l = aclCreateTensorList(parts, 2);
	rc = run2("aclnnCat", aclnnCatGetWorkspaceSize(l, 0, tensor(ACL_FLOAT, 2, cd, xs, 0, c), &wsz, &ex), &wsz, &ex, aclnnCat, NULL);
	ok(rc == 0 && c[0] == x[0] && c[3] == x[3] && c[4] == sm[0] && c[11] == sm[7], "Cat joins along dim 0", NULL);

	/* Cast float32 -> float16 rounds to nearest even: 1 + 2^-11 is a tie */
	float *f = dev(4);
	uint16_t *h = dev(2);
	*f = 1.0f + 1.0f / 2048;
	int64_t one[] = {1}, st1[] = {1};
	rc = run2("aclnnCast", aclnnCastGetWorkspaceSize(tensor(ACL_FLOAT, 1, one, st1, 0, f), ACL_FLOAT16, tensor(ACL_FLOAT16, 1, one, st1, 0, h), &wsz, &ex), &wsz, &ex, aclnnCast, NULL);
	ok(rc == 0 && *h == 0x3c00, "Cast to FLOAT16 rounds a tie to even", NULL);

	/* InplaceIndexCopy: rows 0 and 1 of src into rows 3 and 1 of dst */
	float *dst = dev(4 * 8), *src = dev(4 * 4);
	int64_t *ix = dev(16);
	for (int i = 0; i < 8; i++) dst[i] = 0;
	for (int i = 0; i < 4; i++) src[i] = (float)(i + 1);
	ix[0] = 3, ix[1] = 1;
	int64_t dd[] = {4, 2}, ds[] = {2, 1}, sd[] = {2, 2}, id[] = {2};
	rc = run2("aclnnInplaceIndexCopy", aclnnInplaceIndexCopyGetWorkspaceSize(tensor(ACL_FLOAT, 2, dd, ds, 0, dst), 0, tensor(ACL_INT64, 1, id, st1, 0, ix), tensor(ACL_FLOAT, 2, sd, ds, 0, src), &wsz, &ex), &wsz, &ex, aclnnInplaceIndexCopy, NULL);
	ok(rc == 0 && dst[6] == 1 && dst[7] == 2 && dst[2] == 3 && dst[3] == 4 && dst[0] == 0, "InplaceIndexCopy writes row i of source to row index[i]", NULL);

	/* InplaceAddcmul: s = -(1 + 2^-11), t1 = t2 = 1 + 2^-12, value 1, so
	 * s + t1·t2 = 2^-24 exactly. The device's arithmetic rounds the
	 * product first (a tie, to even: 1 + 2^-11) and gets 0; ggml's (one
	 * fmaf) keeps 2^-24. t2 broadcasts over the two elements of s. */
	float *as = dev(4 * 2), *a1 = dev(4 * 2), *a2 = dev(4);
	int64_t two[] = {2};
	for (int arith = 0; arith < 2; arith++) {
		irtfake_set("arith", arith);
		as[0] = as[1] = -(1.0f + 1.0f / 2048);
		a1[0] = a1[1] = *a2 = 1.0f + 1.0f / 4096;
		aclScalar *v1 = aclCreateScalar(&(float){1}, ACL_FLOAT);
		rc = run2("aclnnInplaceAddcmul", aclnnInplaceAddcmulGetWorkspaceSize(tensor(ACL_FLOAT, 1, two, st1, 0, as), tensor(ACL_FLOAT, 1, two, st1, 0, a1), tensor(ACL_FLOAT, 1, one, st1, 0, a2), v1, &wsz, &ex), &wsz, &ex, aclnnInplaceAddcmul, NULL);
		float want = arith ? 1.0f / 16777216 : 0;
		ok(rc == 0 && as[0] == want && as[1] == want, arith ? "InplaceAddcmul under ggml's arithmetic is one fmaf" : "InplaceAddcmul rounds the product, then adds", NULL);
	}
	irtfake_set("arith", -1);
}

/* q5_0's fifth-bit unpacking: Expand [n, B, 1] -> [n, B, 8], RightShift by
 * the table 0..7, BitwiseAndScalar 1: element 8b+i is bit i of byte b. A
 * dense and a strided (padded rows) output take the kernels' two paths. */
static void test_bitwise(void) {
	uint64_t wsz = 0;
	aclOpExecutor *ex = NULL;
	enum { N = 3, B = 2 };
	const aclDataType U8 = ACL_UINT8;
	unsigned char *m = dev(N * B), *sh = dev(8), *e = dev(2 * N * B * 8), *s = dev(2 * N * B * 8), *o = dev(2 * N * B * 8);
	for (int i = 0; i < N * B; i++) m[i] = (unsigned char)(37 * i + 5);
	for (int i = 0; i < 8; i++) sh[i] = (unsigned char)i;
	for (int pad = 0; pad < 2; pad++) {
		int64_t md[] = {N, B, 1}, ms[] = {B, 1, 1}, ed[] = {N, B, 8}, es[] = {B * 8 * (1 + pad), 8, 1}, sd[] = {8}, ss[] = {1};
		uint8_t onev = 1;
		aclScalar *one = aclCreateScalar(&onev, U8);
		int rc = run2("aclnnExpand", aclnnExpandGetWorkspaceSize(tensor(U8, 3, md, ms, 0, m), aclCreateIntArray(ed, 3), tensor(U8, 3, ed, es, 0, e), &wsz, &ex), &wsz, &ex, aclnnExpand, NULL);
		rc |= run2("aclnnRightShift", aclnnRightShiftGetWorkspaceSize(tensor(U8, 3, ed, es, 0, e), tensor(U8, 1, sd, ss, 0, sh), tensor(U8, 3, ed, es, 0, s), &wsz, &ex), &wsz, &ex, aclnnRightShift, NULL);
		rc |= run2("aclnnBitwiseAndScalar", aclnnBitwiseAndScalarGetWorkspaceSize(tensor(U8, 3, ed, es, 0, s), one, tensor(U8, 3, ed, es, 0, o), &wsz, &ex), &wsz, &ex, aclnnBitwiseAndScalar, NULL);
		int good = rc == 0;
		for (int r = 0; r < N; r++)
			for (int b = 0; b < B; b++)
				for (int i = 0; i < 8; i++) good = good && o[r * es[0] + b * 8 + i] == ((m[r * B + b] >> i) & 1);
		ok(good, pad ? "Expand, RightShift, BitwiseAndScalar unpack a bitmask (strided out)" : "Expand, RightShift, BitwiseAndScalar unpack a bitmask (dense)", NULL);
	}
	/* a signed input shifts arithmetically; a negative shift counts as 0 */
	int8_t *x = dev(2), *y = dev(2), *k = dev(2);
	x[0] = x[1] = -128, k[0] = 7, k[1] = -3;
	int64_t d2[] = {2}, s1[] = {1};
	int rc = run2("aclnnRightShift", aclnnRightShiftGetWorkspaceSize(tensor(ACL_INT8, 1, d2, s1, 0, x), tensor(ACL_INT8, 1, d2, s1, 0, k), tensor(ACL_INT8, 1, d2, s1, 0, y), &wsz, &ex), &wsz, &ex, aclnnRightShift, NULL);
	ok(rc == 0 && y[0] == -1 && y[1] == -128, "RightShift: INT8 -128 >> 7 is -1, a shift of -3 is 0", NULL);
}

/* ---- documented constraints: one rejection per constraint ----
 * Each check is named [id]; docs/CANN-CONSTRAINTS.md cites the ids, and
 * TestConstraintTable (runtime/acl) requires every id the table cites to
 * print "ok". A check calls phase 1 with arguments that break exactly one
 * documented rule and wants ACLNN_ERR_PARAM_INVALID (161002), or the
 * given code, with a message naming the operator and the argument; most
 * also show that the nearest legal call passes, so a check that refused
 * everything would fail. */

static char *cbuf; /* one device buffer the constraint tensors view */

/* a contiguous tensor of rank nd (dims d[0..nd-1]) at the start of cbuf */
static aclTensor *ct(aclDataType dt, int nd, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
	int64_t d[4] = {d0, d1, d2, d3}, st[4];
	int64_t acc = 1;
	for (int i = nd - 1; i >= 0; i--) st[i] = acc, acc *= d[i];
	return tensor(dt, nd, d, st, 0, cbuf);
}

/* a (k, n) weight stored as the transpose of a contiguous (n, k) */
static aclTensor *wt(aclDataType dt, int64_t k, int64_t n) {
	int64_t d[2] = {k, n}, st[2] = {1, k};
	return tensor(dt, 2, d, st, 0, cbuf);
}

static uint64_t cws;
static aclOpExecutor *cex;

/* want: the expected status; op and arg must appear in the message */
static void refuse(const char *id, aclnnStatus rc, int want, const char *op, const char *arg) {
	const char *msg = aclGetRecentErrMsg();
	char what[160];
	snprintf(what, sizeof what, "[%s] %s refuses: %s", id, op, arg);
	ok(rc == want && msg && strstr(msg, op) && strstr(msg, arg), what, msg ? msg : "(no message)");
}

static void accept(const char *id, aclnnStatus rc, const char *op) {
	char what[160];
	snprintf(what, sizeof what, "[%s] %s accepts the nearest legal call", id, op);
	ok(rc == 0, what, rc ? aclGetRecentErrMsg() : NULL);
}

#define WQ "aclnnWeightQuantBatchMatmulV2"
#define wq(x, w, s, o, g, y) aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(x, w, s, o, NULL, NULL, NULL, g, y, &cws, &cex)

static const aclDataType F = ACL_FLOAT, H = ACL_FLOAT16;

/* aclnnWeightQuantBatchMatmulV2, Atlas A2/A3 */
static void constraints_wqbmm(void) {
	accept("wqbmm.n", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 65535), ct(H, 2, 1, 65535, 0, 0), NULL, 0, ct(H, 2, 1, 65535, 0, 0)), WQ);
	refuse("wqbmm.n", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 151936), ct(H, 2, 1, 151936, 0, 0), NULL, 0, ct(H, 2, 1, 151936, 0, 0)), 161002, WQ, "n = 151936");
	refuse("wqbmm.n", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 65536), ct(H, 2, 1, 65536, 0, 0), NULL, 0, ct(H, 2, 1, 65536, 0, 0)), 161002, WQ, "n = 65536");
	accept("wqbmm.k", wq(ct(H, 2, 1, 65535, 0, 0), wt(ACL_INT8, 65535, 8), ct(H, 2, 1, 8, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), WQ);
	refuse("wqbmm.k", wq(ct(H, 2, 1, 70000, 0, 0), wt(ACL_INT8, 70000, 8), ct(H, 2, 1, 8, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "k = 70000");
	refuse("wqbmm.k", wq(ct(H, 2, 1, 65536, 0, 0), wt(ACL_INT8, 65536, 8), ct(H, 2, 1, 8, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "k = 65536");
	accept("wqbmm.group", wq(ct(H, 2, 1, 96, 0, 0), wt(ACL_INT8, 96, 8), ct(H, 2, 2, 8, 0, 0), NULL, 64, ct(H, 2, 1, 8, 0, 0)), WQ);
	refuse("wqbmm.group", wq(ct(H, 2, 1, 96, 0, 0), wt(ACL_INT8, 96, 8), ct(H, 2, 2, 8, 0, 0), NULL, 48, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantGroupSize = 48");
	refuse("wqbmm.group", wq(ct(H, 2, 1, 96, 0, 0), wt(ACL_INT8, 96, 8), ct(H, 2, 6, 8, 0, 0), NULL, 16, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantGroupSize = 16");
	refuse("wqbmm.group-below-k", wq(ct(H, 2, 1, 32, 0, 0), wt(ACL_INT8, 32, 8), ct(H, 2, 1, 8, 0, 0), NULL, 32, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantGroupSize = 32");
	refuse("wqbmm.group-below-k", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(H, 2, 1, 8, 0, 0), NULL, 96, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantGroupSize = 96");
	accept("wqbmm.group-below-k", wq(ct(H, 2, 1, 32, 0, 0), wt(ACL_INT8, 32, 8), ct(H, 2, 1, 8, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), WQ);
	accept("wqbmm.int4-even", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT4, 64, 7), ct(H, 2, 2, 7, 0, 0), NULL, 32, ct(H, 2, 1, 7, 0, 0)), WQ);
	refuse("wqbmm.int4-even", wq(ct(H, 2, 1, 33, 0, 0), wt(ACL_INT4, 33, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "INT4 with an odd inner axis (k = 33)");
	refuse("wqbmm.int4-even", wq(ct(H, 2, 1, 64, 0, 0), ct(ACL_INT4, 2, 64, 7, 0, 0), ct(H, 1, 7, 0, 0, 0), NULL, 0, ct(H, 2, 1, 7, 0, 0)), 161002, WQ, "INT4 with an odd inner axis (n = 7)");
	refuse("wqbmm.weight-dtype", wq(ct(H, 2, 1, 64, 0, 0), wt(H, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "weight must be INT8 or INT4");
	{
		int64_t d[2] = {64, 8}, st[2] = {2, 128};
		refuse("wqbmm.weight-layout", wq(ct(H, 2, 1, 64, 0, 0), tensor(ACL_INT8, 2, d, st, 0, cbuf), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "weight: strides");
	}
	{
		int64_t d[2] = {2, 64}, st[2] = {128, 2};
		refuse("wqbmm.x-layout", wq(tensor(H, 2, d, st, 0, cbuf), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 2, 8, 0, 0)), 161002, WQ, "x: non-contiguous only when transposed");
	}
	refuse("wqbmm.x-dtype", wq(ct(F, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(F, 1, 8, 0, 0, 0), NULL, 0, ct(F, 2, 1, 8, 0, 0)), 161002, WQ, "x must be FLOAT16 or BFLOAT16");
	refuse("wqbmm.x-rank", wq(ct(H, 3, 1, 1, 64, 0), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "x must be 2-D");
	{
		/* x transposed ((m, k) viewed from a contiguous (k, m)): m at most 65535 */
		int64_t d[2] = {65536, 64}, st[2] = {1, 65536}, d1[2] = {65535, 64}, st1[2] = {1, 65535};
		accept("wqbmm.x-m", wq(tensor(H, 2, d1, st1, 0, cbuf), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 65535, 8, 0, 0)), WQ);
		refuse("wqbmm.x-m", wq(tensor(H, 2, d, st, 0, cbuf), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 65536, 8, 0, 0)), 161002, WQ, "x: m = 65536 outside [1, 65535] (x transposed)");
	}
	refuse("wqbmm.scale-dtype", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(F, 1, 8, 0, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantScale must have x's dtype");
	refuse("wqbmm.scale-shape", wq(ct(H, 2, 1, 96, 0, 0), wt(ACL_INT8, 96, 8), ct(H, 2, 2, 8, 0, 0), NULL, 32, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "per-group antiquantScale");
	refuse("wqbmm.scale-shape", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(H, 1, 4, 0, 0, 0), NULL, 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantScale without groups");
	refuse("wqbmm.offset", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), ct(H, 2, 1, 8, 0, 0), 0, ct(H, 2, 1, 8, 0, 0)), 161002, WQ, "antiquantOffset must have antiquantScale's shape");
	refuse("wqbmm.y", wq(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, 0, ct(F, 2, 1, 8, 0, 0)), 161002, WQ, "y must be (m, n) of x's dtype");
	refuse("wqbmm.bias", aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(ct(H, 2, 1, 64, 0, 0), wt(ACL_INT8, 64, 8), ct(H, 1, 8, 0, 0, 0), NULL, NULL, NULL, ct(F, 1, 8, 0, 0, 0), 0, ct(H, 2, 1, 8, 0, 0), &cws, &cex), 161002, WQ, "bias must be");
}

/* aclCreateTensor */
static void constraints_tensor(void) {
	{
		int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, one = 1;
		aclTensor *t = aclCreateTensor(d9, 9, F, s9, 0, ACL_FORMAT_ND, &one, 1, cbuf);
		refuse("tensor.rank", t ? 0 : 161002, 161002, "aclCreateTensor", "at most 8 dims");
		int64_t d[1] = {4}, sn[1] = {-1}, s1[1] = {1}, four = 4, three = 3;
		t = aclCreateTensor(d, 1, F, sn, 0, ACL_FORMAT_ND, &four, 1, cbuf);
		refuse("tensor.stride", t ? 0 : 161002, 161002, "aclCreateTensor", "stride -1");
		t = aclCreateTensor(d, 1, F, s1, -1, ACL_FORMAT_ND, &four, 1, cbuf);
		refuse("tensor.stride", t ? 0 : 161002, 161002, "aclCreateTensor", "negative storage offset");
		t = aclCreateTensor(d, 1, F, s1, 0, ACL_FORMAT_ND, &three, 1, cbuf);
		refuse("tensor.storage", t ? 0 : 161002, 161002, "aclCreateTensor", "storage holds 3");
		float host[4];
		t = aclCreateTensor(d, 1, F, s1, 0, ACL_FORMAT_ND, &four, 1, host);
		refuse("tensor.device", t ? 0 : 161002, 161002, "aclCreateTensor", "not inside one device allocation");
		t = aclCreateTensor(d, 1, (aclDataType)ACL_STRING, s1, 0, ACL_FORMAT_ND, &four, 1, cbuf);
		refuse("tensor.dtype", t ? 0 : 161002, 161002, "aclCreateTensor", "unsupported data type");
		int64_t five = 5;
		t = aclCreateTensor(d, 1, F, s1, 1, ACL_FORMAT_ND, &five, 1, cbuf);
		accept("tensor.align", t ? 0 : 161002, "aclCreateTensor");
		t = aclCreateTensor(d, 1, F, s1, 0, ACL_FORMAT_ND, &four, 1, cbuf + 4);
		refuse("tensor.align", t ? 0 : 161002, 161002, "aclCreateTensor", "not 32-byte aligned");
	}
}

/* norms, elementwise operators: broadcasting to out, out's shape */
static void constraints_elementwise(void) {
	refuse("rmsnorm.dtype", aclnnRmsNormGetWorkspaceSize(ct(ACL_INT32, 2, 2, 8, 0, 0), ct(ACL_INT32, 1, 8, 0, 0, 0), 1e-6, ct(ACL_INT32, 2, 2, 8, 0, 0), ct(F, 2, 2, 1, 0, 0), &cws, &cex), 161002, "aclnnRmsNorm", "x must be FLOAT");
	refuse("rmsnorm.gamma", aclnnRmsNormGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 4, 0, 0, 0), 1e-6, ct(F, 2, 2, 8, 0, 0), ct(F, 2, 2, 1, 0, 0), &cws, &cex), 161002, "aclnnRmsNorm", "gamma must match");
	refuse("rmsnorm.y", aclnnRmsNormGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 8, 0, 0, 0), 1e-6, ct(F, 2, 2, 4, 0, 0), ct(F, 2, 2, 1, 0, 0), &cws, &cex), 161002, "aclnnRmsNorm", "yOut must have the shape of x");
	refuse("addrmsnorm.shape", aclnnAddRmsNormGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 1, 8, 0, 0), ct(F, 1, 8, 0, 0, 0), 1e-6, ct(F, 2, 2, 8, 0, 0), ct(F, 2, 2, 1, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnAddRmsNorm", "x1, x2, yOut and xOut");
	refuse("addrmsnorm.dtype", aclnnAddRmsNormGetWorkspaceSize(ct(ACL_INT32, 2, 2, 8, 0, 0), ct(ACL_INT32, 2, 2, 8, 0, 0), ct(F, 1, 8, 0, 0, 0), 1e-6, ct(ACL_INT32, 2, 2, 8, 0, 0), ct(F, 2, 2, 1, 0, 0), ct(ACL_INT32, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnAddRmsNorm", "x1 must be FLOAT");
	float one = 1;
	aclScalar *alpha = aclCreateScalar(&one, F);
	refuse("mul.broadcast", aclnnMulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 3, 0, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnMul", "self and other must broadcast to out");
	accept("mul.broadcast", aclnnMulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 8, 0, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), "aclnnMul");
	refuse("div.broadcast", aclnnDivGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 3, 8, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnDiv", "self and other must broadcast to out");
	refuse("add.broadcast", aclnnAddGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 5, 0, 0, 0), alpha, ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnAdd", "self and other must broadcast to out");
	refuse("add.alpha", aclnnAddGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 8, 0, 0, 0), NULL, ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161001, "aclnnAdd", "alpha");
	refuse("inplacemul.broadcast", aclnnInplaceMulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 4, 8, 0, 0), &cws, &cex), 161002, "aclnnInplaceMul", "other must broadcast to selfRef");
	refuse("inplaceadd.broadcast", aclnnInplaceAddGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 1, 3, 0, 0, 0), alpha, &cws, &cex), 161002, "aclnnInplaceAdd", "other must broadcast to selfRef");
	refuse("muls.shape", aclnnMulsGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), alpha, ct(F, 2, 2, 4, 0, 0), &cws, &cex), 161002, "aclnnMuls", "out must have the shape of self");
	refuse("silu.shape", aclnnSiluGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(F, 1, 4, 0, 0, 0), &cws, &cex), 161002, "aclnnSilu", "out must have the shape of self");
	refuse("cos.shape", aclnnCosGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(F, 1, 4, 0, 0, 0), &cws, &cex), 161002, "aclnnCos", "out must have the shape of self");
	refuse("sin.shape", aclnnSinGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(F, 1, 4, 0, 0, 0), &cws, &cex), 161002, "aclnnSin", "out must have the shape of self");
	refuse("abs.shape", aclnnAbsGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(F, 1, 4, 0, 0, 0), &cws, &cex), 161002, "aclnnAbs", "out must have the shape of self");
	refuse("inplaceaddcmul.broadcast", aclnnInplaceAddcmulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 2, 8, 0, 0), ct(F, 1, 3, 0, 0, 0), alpha, &cws, &cex), 161002, "aclnnInplaceAddcmul", "tensor1 and tensor2 must broadcast to selfRef");
	accept("inplaceaddcmul.broadcast", aclnnInplaceAddcmulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 2, 8, 0, 0), ct(F, 2, 2, 1, 0, 0), alpha, &cws, &cex), "aclnnInplaceAddcmul");
	refuse("inplaceaddcmul.dtype", aclnnInplaceAddcmulGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(H, 1, 8, 0, 0, 0), ct(F, 1, 8, 0, 0, 0), alpha, &cws, &cex), 161002, "aclnnInplaceAddcmul", "of one dtype");
	refuse("round.shape", aclnnRoundGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(F, 1, 4, 0, 0, 0), &cws, &cex), 161002, "aclnnRound", "out must have the shape of self");
	refuse("gelu.dtype", aclnnGeluGetWorkspaceSize(ct(ACL_INT32, 1, 8, 0, 0, 0), ct(ACL_INT32, 1, 8, 0, 0, 0), &cws, &cex), 161002, "aclnnGelu", "self must be FLOAT");
	refuse("swiglu.dim", aclnnSwiGluGetWorkspaceSize(ct(F, 2, 2, 7, 0, 0), -1, ct(F, 2, 2, 3, 0, 0), &cws, &cex), 161002, "aclnnSwiGlu", "dim -1 must exist and be even");
	refuse("swiglu.out", aclnnSwiGluGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), -1, ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnSwiGlu", "out must be half of x");
	refuse("cast.dtype", aclnnCastGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), H, ct(F, 1, 8, 0, 0, 0), &cws, &cex), 161002, "aclnnCast", "out's type must be dtype");
	refuse("inplacecopy.broadcast", aclnnInplaceCopyGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 3, 8, 0, 0), &cws, &cex), 161002, "aclnnInplaceCopy", "src must broadcast to selfRef");
	refuse("gescalar.out", aclnnGeScalarGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), alpha, ct(F, 1, 8, 0, 0, 0), &cws, &cex), 161002, "aclnnGeScalar", "out must be BOOL");
	refuse("maskedfill.mask", aclnnInplaceMaskedFillScalarGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(F, 1, 8, 0, 0, 0), alpha, &cws, &cex), 161002, "aclnnInplaceMaskedFillScalar", "mask must be BOOL");
	refuse("maskedfill.broadcast", aclnnInplaceMaskedFillScalarGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), ct(ACL_BOOL, 1, 3, 0, 0, 0), alpha, &cws, &cex), 161002, "aclnnInplaceMaskedFillScalar", "mask must broadcast to selfRef");
	{
		aclTensor *parts[2] = {ct(F, 2, 2, 3, 0, 0), ct(F, 2, 2, 4, 0, 0)};
		aclTensorList *l = aclCreateTensorList((const aclTensor *const *)parts, 2);
		refuse("cat.dims", aclnnCatGetWorkspaceSize(l, 1, ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnCat", "the tensors' dim 1 sums to 7");
		aclTensor *bad[2] = {ct(F, 2, 2, 3, 0, 0), ct(H, 2, 2, 5, 0, 0)};
		aclTensorList *l2 = aclCreateTensorList((const aclTensor *const *)bad, 2);
		refuse("cat.dtype", aclnnCatGetWorkspaceSize(l2, 1, ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnCat", "tensor 1 must have out's rank and dtype");
	}
}

/* the bitmask unpacking of q5_0's high bits: expand, shift, mask */
static void constraints_bitwise(void) {
	const aclDataType U8 = ACL_UINT8;
	int64_t sz[3] = {2, 4, 8};
	aclIntArray *size = aclCreateIntArray(sz, 3);
	refuse("expand.dtype", aclnnExpandGetWorkspaceSize(ct(ACL_INT16, 3, 2, 4, 1, 0), size, ct(ACL_INT16, 3, 2, 4, 8, 0), &cws, &cex), 161002, "aclnnExpand", "self must be BFLOAT16, FLOAT16, FLOAT, UINT8");
	refuse("expand.shape", aclnnExpandGetWorkspaceSize(ct(U8, 3, 2, 4, 1, 0), size, ct(U8, 3, 2, 4, 4, 0), &cws, &cex), 161002, "aclnnExpand", "out's shape must be size");
	refuse("expand.broadcast", aclnnExpandGetWorkspaceSize(ct(U8, 3, 2, 3, 1, 0), size, ct(U8, 3, 2, 4, 8, 0), &cws, &cex), 161002, "aclnnExpand", "self must broadcast to size");
	accept("expand.broadcast", aclnnExpandGetWorkspaceSize(ct(U8, 3, 2, 4, 1, 0), size, ct(U8, 3, 2, 4, 8, 0), &cws, &cex), "aclnnExpand");
	refuse("rightshift.dtype", aclnnRightShiftGetWorkspaceSize(ct(F, 3, 2, 4, 8, 0), ct(U8, 1, 8, 0, 0, 0), ct(F, 3, 2, 4, 8, 0), &cws, &cex), 161002, "aclnnRightShift", "input, shiftBits and out must be INT8");
	refuse("rightshift.broadcast", aclnnRightShiftGetWorkspaceSize(ct(U8, 3, 2, 4, 8, 0), ct(U8, 1, 3, 0, 0, 0), ct(U8, 3, 2, 4, 8, 0), &cws, &cex), 161002, "aclnnRightShift", "shiftBits must broadcast to input");
	refuse("rightshift.shape", aclnnRightShiftGetWorkspaceSize(ct(U8, 3, 2, 4, 8, 0), ct(U8, 1, 8, 0, 0, 0), ct(U8, 3, 2, 4, 4, 0), &cws, &cex), 161002, "aclnnRightShift", "out must have the shape of input");
	accept("rightshift.shape", aclnnRightShiftGetWorkspaceSize(ct(U8, 3, 2, 4, 8, 0), ct(U8, 1, 8, 0, 0, 0), ct(U8, 3, 2, 4, 8, 0), &cws, &cex), "aclnnRightShift");
	uint8_t onev = 1;
	float onef = 1;
	aclScalar *one8 = aclCreateScalar(&onev, U8), *onef32 = aclCreateScalar(&onef, F);
	refuse("bitwiseand.dtype", aclnnBitwiseAndScalarGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), one8, ct(F, 1, 8, 0, 0, 0), &cws, &cex), 161002, "aclnnBitwiseAndScalar", "self must be INT16, UINT16, INT32, INT64, INT8, UINT8 or BOOL");
	refuse("bitwiseand.other", aclnnBitwiseAndScalarGetWorkspaceSize(ct(U8, 1, 8, 0, 0, 0), onef32, ct(U8, 1, 8, 0, 0, 0), &cws, &cex), 161002, "aclnnBitwiseAndScalar", "other must be an integer or BOOL scalar");
	refuse("bitwiseand.shape", aclnnBitwiseAndScalarGetWorkspaceSize(ct(U8, 1, 8, 0, 0, 0), one8, ct(U8, 1, 4, 0, 0, 0), &cws, &cex), 161002, "aclnnBitwiseAndScalar", "out must have the shape of self");
	accept("bitwiseand.shape", aclnnBitwiseAndScalarGetWorkspaceSize(ct(U8, 1, 8, 0, 0, 0), one8, ct(U8, 1, 8, 0, 0, 0), &cws, &cex), "aclnnBitwiseAndScalar");
}

/* reductions, matrix products, rows, rotary position embedding */
static void constraints_reduce_matmul(void) {
	refuse("softmax.dim", aclnnSoftmaxGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), 2, ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnSoftmax", "dim 2 out of range");
	refuse("softmax.shape", aclnnSoftmaxGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), 1, ct(F, 2, 2, 4, 0, 0), &cws, &cex), 161002, "aclnnSoftmax", "out must have the shape of self");
	{
		int64_t dd[1] = {2}, d1[1] = {1};
		refuse("reducesum.dim", aclnnReduceSumGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), aclCreateIntArray(dd, 1), true, F, ct(F, 2, 2, 1, 0, 0), &cws, &cex), 161002, "aclnnReduceSum", "dim 2 out of range");
		refuse("reducesum.dtype", aclnnReduceSumGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), aclCreateIntArray(d1, 1), true, H, ct(F, 2, 2, 1, 0, 0), &cws, &cex), 161002, "aclnnReduceSum", "out's type must be dtype");
		refuse("amax.dtype", aclnnAmaxGetWorkspaceSize(ct(ACL_INT32, 2, 2, 8, 0, 0), aclCreateIntArray(d1, 1), true, ct(ACL_INT32, 2, 2, 1, 0, 0), &cws, &cex), 161002, "aclnnAmax", "self must be FLOAT");
		refuse("amax.shape", aclnnAmaxGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), aclCreateIntArray(d1, 1), true, ct(F, 1, 2, 0, 0, 0), &cws, &cex), 161002, "aclnnAmax", "out's shape must be self's reduced");
	}
	refuse("topk.k", aclnnTopkGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), 9, 0, true, true, ct(F, 1, 9, 0, 0, 0), ct(ACL_INT64, 1, 9, 0, 0, 0), &cws, &cex), 161002, "aclnnTopk", "k 9 outside");
	refuse("topk.sorted", aclnnTopkGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), 2, 0, true, false, ct(F, 1, 2, 0, 0, 0), ct(ACL_INT64, 1, 2, 0, 0, 0), &cws, &cex), 161002, "aclnnTopk", "sorted must be true");
	refuse("topk.indices", aclnnTopkGetWorkspaceSize(ct(F, 1, 8, 0, 0, 0), 2, 0, true, true, ct(F, 1, 2, 0, 0, 0), ct(ACL_INT32, 1, 2, 0, 0, 0), &cws, &cex), 161002, "aclnnTopk", "indicesOut must be INT64");
	refuse("mm.k", aclnnMmGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 4, 3, 0, 0), ct(F, 2, 2, 3, 0, 0), 1, &cws, &cex), 161002, "aclnnMm", "reduce dims differ");
	refuse("mm.rank", aclnnMmGetWorkspaceSize(ct(F, 3, 1, 2, 8, 0), ct(F, 3, 1, 8, 3, 0), ct(F, 3, 1, 2, 3, 0), 1, &cws, &cex), 161002, "aclnnMm", "takes 2-D operands");
	refuse("bmm.rank", aclnnBatchMatMulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 8, 3, 0, 0), ct(F, 2, 2, 3, 0, 0), 1, &cws, &cex), 161002, "aclnnBatchMatMul", "takes 3-D operands");
	refuse("matmul.out", aclnnMatmulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 8, 3, 0, 0), ct(F, 2, 2, 4, 0, 0), 1, &cws, &cex), 161002, "aclnnMatmul", "out's last dim must be mat2's");
	refuse("matmul.cube", aclnnMatmulGetWorkspaceSize(ct(F, 2, 2, 8, 0, 0), ct(F, 2, 8, 3, 0, 0), ct(F, 2, 2, 3, 0, 0), 4, &cws, &cex), 161002, "aclnnMatmul", "cubeMathType 4");
	refuse("matmul.dtype", aclnnMatmulGetWorkspaceSize(ct(ACL_INT32, 2, 2, 8, 0, 0), ct(F, 2, 8, 3, 0, 0), ct(F, 2, 2, 3, 0, 0), 1, &cws, &cex), 161002, "aclnnMatmul", "self and mat2 must be FLOAT");
	refuse("gather.index", aclnnGatherV2GetWorkspaceSize(ct(F, 2, 4, 8, 0, 0), 0, ct(F, 1, 2, 0, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnGatherV2", "index must be INT64 or INT32");
	refuse("gather.dim", aclnnGatherV2GetWorkspaceSize(ct(F, 2, 4, 8, 0, 0), 2, ct(ACL_INT64, 1, 2, 0, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnGatherV2", "dim 2 out of range");
	refuse("indexcopy.index", aclnnInplaceIndexCopyGetWorkspaceSize(ct(F, 2, 4, 8, 0, 0), 0, ct(ACL_INT64, 2, 1, 2, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnInplaceIndexCopy", "index must be a 0-D or 1-D");
	refuse("indexcopy.dim", aclnnInplaceIndexCopyGetWorkspaceSize(ct(F, 2, 4, 8, 0, 0), 3, ct(ACL_INT64, 1, 2, 0, 0, 0), ct(F, 2, 2, 8, 0, 0), &cws, &cex), 161002, "aclnnInplaceIndexCopy", "dim 3 out of range");
	refuse("indexcopy.rank", aclnnInplaceIndexCopyGetWorkspaceSize(ct(F, 2, 4, 8, 0, 0), 0, ct(ACL_INT64, 1, 2, 0, 0, 0), ct(F, 1, 8, 0, 0, 0), &cws, &cex), 161002, "aclnnInplaceIndexCopy", "source must have selfRef's rank");
	refuse("rope.rank", aclnnRotaryPositionEmbeddingGetWorkspaceSize(ct(F, 3, 1, 2, 8, 0), ct(F, 3, 1, 2, 8, 0), ct(F, 3, 1, 2, 8, 0), 0, ct(F, 3, 1, 2, 8, 0), &cws, &cex), 161002, "aclnnRotaryPositionEmbedding", "x must be 4-D");
	refuse("rope.mode", aclnnRotaryPositionEmbeddingGetWorkspaceSize(ct(F, 4, 1, 1, 2, 8), ct(F, 4, 1, 1, 2, 8), ct(F, 4, 1, 1, 2, 8), 4, ct(F, 4, 1, 1, 2, 8), &cws, &cex), 161002, "aclnnRotaryPositionEmbedding", "mode 4");
	refuse("rope.d", aclnnRotaryPositionEmbeddingGetWorkspaceSize(ct(F, 4, 1, 1, 2, 6), ct(F, 4, 1, 1, 2, 6), ct(F, 4, 1, 1, 2, 6), 2, ct(F, 4, 1, 1, 2, 6), &cws, &cex), 161002, "aclnnRotaryPositionEmbedding", "x: last dim 6 is not a multiple of 4");
	refuse("rope.cos", aclnnRotaryPositionEmbeddingGetWorkspaceSize(ct(F, 4, 1, 1, 2, 8), ct(F, 4, 1, 1, 2, 8), ct(F, 4, 1, 1, 1, 8), 0, ct(F, 4, 1, 1, 2, 8), &cws, &cex), 161002, "aclnnRotaryPositionEmbedding", "cos and sin must have one shape");
	refuse("rope.dtype", aclnnRotaryPositionEmbeddingGetWorkspaceSize(ct(F, 4, 1, 1, 2, 8), ct(H, 4, 1, 1, 2, 8), ct(H, 4, 1, 1, 2, 8), 0, ct(F, 4, 1, 1, 2, 8), &cws, &cex), 161002, "aclnnRotaryPositionEmbedding", "cos and sin must have x's dtype");
	accept("rope.d", aclnnRotaryPositionEmbeddingGetWorkspaceSize(ct(F, 4, 1, 1, 2, 8), ct(F, 4, 1, 1, 2, 8), ct(F, 4, 1, 1, 2, 8), 2, ct(F, 4, 1, 1, 2, 8), &cws, &cex), "aclnnRotaryPositionEmbedding");
}

/* attention */
static void constraints_attention(void) {
	{
		aclTensor *k1[1] = {ct(H, 4, 1, 2, 4, 8)}, *v1[1] = {ct(H, 4, 1, 2, 4, 8)};
		aclTensorList *kl = aclCreateTensorList((const aclTensor *const *)k1, 1), *vl = aclCreateTensorList((const aclTensor *const *)v1, 1);
		aclTensor *q = ct(H, 4, 1, 4, 1, 8), *o = ct(H, 4, 1, 4, 1, 8);
#define FIA(qq, heads, kvheads, layout, out) aclnnFusedInferAttentionScoreV2GetWorkspaceSize(qq, kl, vl, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, heads, 0.35, 65535, 0, layout, kvheads, 0, 0, 0, 0, false, 0, 0, out, NULL, &cws, &cex)
		refuse("fia.layout", FIA(q, 4, 2, "SBH", o), 161002, "aclnnFusedInferAttentionScoreV2", "inputLayout must be BSND, BNSD or BSH");
		refuse("fia.heads", FIA(q, 4, 3, "BNSD", o), 161002, "aclnnFusedInferAttentionScoreV2", "numHeads must be a multiple of numKeyValueHeads");
		refuse("fia.out", FIA(q, 4, 2, "BNSD", ct(H, 4, 1, 4, 2, 8)), 161002, "aclnnFusedInferAttentionScoreV2", "attentionOut must have the shape of query");
		refuse("fia.dtype", FIA(ct(F, 4, 1, 4, 1, 8), 4, 2, "BNSD", ct(F, 4, 1, 4, 1, 8)), 161002, "aclnnFusedInferAttentionScoreV2", "query must be FLOAT16, BFLOAT16 or INT8");
		refuse("fia.rank", FIA(ct(H, 3, 1, 1, 32, 0), 4, 2, "BNSD", ct(H, 3, 1, 1, 32, 0)), 161002, "aclnnFusedInferAttentionScoreV2", "query must be 4-D for layout BNSD");
		{ /* a query whose heads are 16 elements apart, 8 wide */
			int64_t d[4] = {1, 4, 1, 8}, st[4] = {64, 16, 8, 1};
			aclTensor *qt = tensor(H, 4, d, st, 0, cbuf);
			refuse("fia.contiguous", FIA(qt, 4, 2, "BNSD", o), 161002, "aclnnFusedInferAttentionScoreV2", "query must be contiguous");
			accept("fia.contiguous", FIA(q, 4, 2, "BNSD", o), "aclnnFusedInferAttentionScoreV2");
		}
		refuse("fia.limits", FIA(ct(H, 4, 1, 4, 1, 520), 4, 2, "BNSD", ct(H, 4, 1, 4, 1, 520)), 161002, "aclnnFusedInferAttentionScoreV2", "D 520 outside");
		{ /* prefill (2 query tokens) with D 8: not a multiple of 16 on Atlas A2 */
			aclTensor *k8[1] = {ct(H, 4, 1, 2, 4, 8)}, *v8[1] = {ct(H, 4, 1, 2, 4, 8)}, *k16[1] = {ct(H, 4, 1, 2, 4, 16)}, *v16[1] = {ct(H, 4, 1, 2, 4, 16)};
			aclTensorList *kl8 = aclCreateTensorList((const aclTensor *const *)k8, 1), *vl8 = aclCreateTensorList((const aclTensor *const *)v8, 1);
			aclTensorList *kl16 = aclCreateTensorList((const aclTensor *const *)k16, 1), *vl16 = aclCreateTensorList((const aclTensor *const *)v16, 1);
#define FIAP(kk, vv, qq, mask, sparse, inner, out) aclnnFusedInferAttentionScoreV2GetWorkspaceSize(qq, kk, vv, NULL, mask, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 4, 0.35, 2147483647, 2147483647, "BNSD", 2, sparse, inner, 0, 0, false, 0, 0, out, NULL, &cws, &cex)
			refuse("fia.d-align", FIAP(kl8, vl8, ct(H, 4, 1, 4, 2, 8), NULL, 0, 0, ct(H, 4, 1, 4, 2, 8)), 161002, "aclnnFusedInferAttentionScoreV2", "D 8 is not a multiple of 16");
			accept("fia.d-align", FIAP(kl16, vl16, ct(H, 4, 1, 4, 2, 16), NULL, 0, 0, ct(H, 4, 1, 4, 2, 16)), "aclnnFusedInferAttentionScoreV2");
			refuse("fia.sparse", FIAP(kl16, vl16, ct(H, 4, 1, 4, 2, 16), NULL, 5, 0, ct(H, 4, 1, 4, 2, 16)), 161002, "aclnnFusedInferAttentionScoreV2", "sparseMode 5 is not 0..4");
			refuse("fia.inner", FIAP(kl16, vl16, ct(H, 4, 1, 4, 2, 16), NULL, 0, 4, ct(H, 4, 1, 4, 2, 16)), 161002, "aclnnFusedInferAttentionScoreV2", "innerPrecise 4 is not 0..3");
			refuse("fia.mask", FIAP(kl16, vl16, ct(H, 4, 1, 4, 2, 16), ct(ACL_BOOL, 2, 2, 3, 0, 0), 0, 0, ct(H, 4, 1, 4, 2, 16)), 161002, "aclnnFusedInferAttentionScoreV2", "attenMask's last two dims must cover");
			refuse("fia.dtype", FIAP(kl16, vl16, ct(H, 4, 1, 4, 2, 16), ct(F, 2, 2, 4, 0, 0), 0, 0, ct(H, 4, 1, 4, 2, 16)), 161002, "aclnnFusedInferAttentionScoreV2", "attenMask must be BOOL, INT8 or UINT8");
			accept("fia.mask", FIAP(kl16, vl16, ct(H, 4, 1, 4, 2, 16), ct(ACL_BOOL, 4, 1, 1, 2, 4), 0, 0, ct(H, 4, 1, 4, 2, 16)), "aclnnFusedInferAttentionScoreV2");
			aclTensor *v16b[1] = {ct(H, 4, 1, 2, 3, 16)};
			aclTensorList *vl16b = aclCreateTensorList((const aclTensor *const *)v16b, 1);
			refuse("fia.kv", FIAP(kl16, vl16b, ct(H, 4, 1, 4, 2, 16), NULL, 0, 0, ct(H, 4, 1, 4, 2, 16)), 161002, "aclnnFusedInferAttentionScoreV2", "key and value must have one shape");
#undef FIAP
			aclDestroyTensorList(kl8), aclDestroyTensorList(vl8), aclDestroyTensorList(kl16), aclDestroyTensorList(vl16), aclDestroyTensorList(vl16b);
		}
		{ /* a pseShift with one head where the query has 4 */
			aclTensor *pse = ct(H, 4, 1, 1, 1, 4);
			refuse("fia.pse", aclnnFusedInferAttentionScoreV2GetWorkspaceSize(q, kl, vl, pse, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 4, 0.35, 2147483647, 2147483647, "BNSD", 2, 0, 0, 0, 0, false, 0, 0, o, NULL, &cws, &cex), 161002, "aclnnFusedInferAttentionScoreV2", "pseShift must be (B or 1, N, >= Q_S, >= KV_S)");
		}
#undef FIA
	}
}

/* memory, streams, capture, executors (runtime API) */
static void constraints_runtime(void) {
	{
		void *p = NULL;
		refuse("mem.size", aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM, "aclrtMalloc", "size must be > 0");
		char host[64] = {0};
		refuse("mem.destmax", aclrtMemcpy(cbuf, 16, host, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "aclrtMemcpy", "count 64 exceeds destMax 16");
		refuse("mem.device", aclrtMemcpy(host, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM, "aclrtMemcpy", "destination");
		refuse("mem.kind", aclrtMemcpy(cbuf, 64, host, 64, (aclrtMemcpyKind)7), ACL_ERROR_INVALID_PARAM, "aclrtMemcpy", "bad copy kind 7");
		aclrtStream st = NULL;
		aclrtCreateStream(&st);
		refuse("capture.default-stream", aclmdlRICaptureBegin(NULL, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, "aclmdlRICaptureBegin", "default stream");
		aclmdlRI ri = NULL;
		refuse("capture.end-without-begin", aclmdlRICaptureEnd(st, &ri), ACL_ERROR_RT_STREAM_CAPTURE_WRONG_END, "aclmdlRICaptureEnd", "");
		aclmdlRICaptureBegin(st, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
		refuse("capture.sync", aclrtSynchronizeStream(st), ACL_ERROR_RT_STREAM_CAPTURED, "aclrtSynchronizeStream", "captur");
		refuse("capture.sync-copy", aclrtMemcpy(cbuf, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, "aclrtMemcpy", "captur");
		aclmdlRICaptureEnd(st, &ri);
		if (ri) aclmdlRIDestroy(ri);
		aclrtDestroyStream(st);
		/* phase 2: the workspace phase 1 asked for, and single use */
		irtfake_set("workspace:aclnnSilu", 256);
		aclTensor *a = ct(F, 1, 8, 0, 0, 0), *b = ct(F, 1, 8, 0, 0, 0);
		aclnnStatus rc = aclnnSiluGetWorkspaceSize(a, b, &cws, &cex);
		ok(rc == 0 && cws == 256, "[exec.workspace] phase 1 asks for the workspace", NULL);
		refuse("exec.workspace", aclnnSilu(cbuf, 128, cex, NULL), 161002, "aclnnSilu", "workspace of 128 B given, 256 B required");
		ok(aclnnSilu(cbuf + 1024, 256, cex, NULL) == 0, "[exec.single-use] the executor runs once", NULL);
		refuse("exec.single-use", aclnnSilu(cbuf + 1024, 256, cex, NULL), 161002, "aclnnSilu", "executor is not live");
		irtfake_set("workspace:aclnnSilu", 0);
	}
}

static void test_constraints(void) {
	cbuf = dev(64 << 20);
	constraints_wqbmm();
	constraints_tensor();
	constraints_elementwise();
	constraints_bitwise();
	constraints_reduce_matmul();
	constraints_attention();
	constraints_runtime();
}


int main(void) {
	if (aclInit(NULL) != 0 || aclrtSetDevice(0) != 0) {
		printf("FAIL init\n");
		return 1;
	}
	test_wqbmm();
	test_wqbmm_paths();
	test_threads();
	test_rope();
	test_cube();
	test_elementwise();
	test_bitwise();
	test_faults();
	test_constraints();
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
