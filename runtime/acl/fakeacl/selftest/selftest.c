/*
 * selftest.c: checks operators of the CANN emulator (runtime/acl/fakeacl)
 * against their documented formulas, through the public C API only, as a
 * CANN application would call them. Built and run by TestEmulatorOperators
 * (runtime/acl/emulator_test.go): `selftest` prints one line per check and
 * exits 1 if any failed.
 *
 * Expected values are computed here from the aclnn reference pages'
 * formulas, independently of kernels.c.
 */
#include "irtool_acl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void irtfake_set_soc(const char *name);

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
}

int main(void) {
	if (aclInit(NULL) != 0 || aclrtSetDevice(0) != 0) {
		printf("FAIL init\n");
		return 1;
	}
	test_wqbmm();
	test_rope();
	test_cube();
	test_elementwise();
	test_faults();
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
