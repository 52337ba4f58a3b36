/*
 * ops_attention.c: the attention family of the CANN emulator,
 * aclnnFusedInferAttentionScoreV2: its phase 1 (argument checks, the
 * executor) and its kernel irt_kernel_FIA, which computes the operator's
 * documented result on the host (kernel.h's conventions).
 */
#include "fakeacl.h"
#include "kernel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- attention ---------------- */

/*
 * aclnnFusedInferAttentionScoreV2 (CANN's page for the operator, Atlas A2
 * rows; docs/CANN-CONSTRAINTS.md lists each check with its [id] in the
 * self-test). Phase 1 refuses with ACLNN_ERR_PARAM_INVALID (161002):
 *   - dtypes outside the page's: query FLOAT16/BFLOAT16/INT8, key/value
 *     FLOAT16/BFLOAT16/INT8/INT4, pseShift FLOAT16/BFLOAT16, attenMask
 *     BOOL/INT8/UINT8, attentionOut FLOAT16/BFLOAT16/INT8 [fia.dtype];
 *   - a non-contiguous query, key, value, pseShift or attenMask (the page's
 *     "non-contiguous tensor" column: x) [fia.contiguous];
 *   - query, key or value not 3-D (BSH) or 4-D (BSND, BNSD), a pseShift
 *     not 4-D, an attenMask not 2- to 4-D [fia.rank];
 *   - key and value tensors of different shapes [fia.kv];
 *   - B > 65536, N > 256 or D > 512 [fia.limits];
 *   - more than one query token (the PromptFlashAttention branch) with
 *     FLOAT16/BFLOAT16 operands and D not a multiple of 16 (32 for INT8)
 *     [fia.d-align];
 *   - a pseShift not (B or 1, N, >= Q_S, >= KV_S) [fia.pse];
 *   - an attenMask whose last two dims do not cover (Q_S, KV_S)
 *     [fia.mask];
 *   - with more than one query token, sparseMode outside 0..4 [fia.sparse];
 *   - innerPrecise outside 0..3 [fia.inner].
 * The quantised paths (INT8 query, INT8/INT4 key and value, the antiquant
 * and quant scales), page attention, shared prefixes, sparse modes 2-4 and
 * softmaxLse are not emulated: phase 2 refuses them naming the argument.
 */

static int fia_layout_dims(const char *layout) { return layout && strcmp(layout, "BSH") == 0 ? 3 : 4; }

static int fia_contiguous(const aclTensor *t) {
	int64_t want = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->dims[i] != 1 && t->strides[i] != want) return 0;
		want *= t->dims[i];
	}
	return 1;
}

static int fia_dtype_in(const aclTensor *t, const aclDataType *ok, int n) {
	for (int i = 0; i < n; i++)
		if (t->dtype == ok[i]) return 1;
	return 0;
}

/* the dims of query-like tensor t in a layout: B, S, N, D (BSH: N heads) */
static void fia_bsnd(const aclTensor *t, const char *layout, int64_t heads, int64_t *b, int64_t *s, int64_t *n,
                     int64_t *d) {
	*b = t->dims[0];
	if (strcmp(layout, "BSH") == 0) {
		*s = t->dims[1], *n = heads, *d = heads > 0 ? t->dims[2] / heads : 0;
	} else if (strcmp(layout, "BNSD") == 0) {
		*n = t->dims[1], *s = t->dims[2], *d = t->dims[3];
	} else {
		*s = t->dims[1], *n = t->dims[2], *d = t->dims[3];
	}
}

/* key and value: the executor's snapshot of the lists (list_arg) */
static void fia_check(call *c, const aclTensor *q, const aclTensor *pse, const aclTensor *mask, const aclTensor *out, int64_t numHeads,
                      const char *layout, int64_t sparseMode, int64_t innerPrecise) {
	static const aclDataType qdt[] = {ACL_FLOAT16, ACL_BF16, ACL_INT8},
	                         kvdt[] = {ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_INT4, ACL_INT32},
	                         psedt[] = {ACL_FLOAT16, ACL_BF16}, maskdt[] = {ACL_BOOL, ACL_INT8, ACL_UINT8};
	int nd = fia_layout_dims(layout);
	check(c, fia_dtype_in(q, qdt, 3), "query must be FLOAT16, BFLOAT16 or INT8");
	check(c, fia_dtype_in(out, qdt, 3), "attentionOut must be FLOAT16, BFLOAT16 or INT8");
	check(c, !pse || fia_dtype_in(pse, psedt, 2), "pseShift must be FLOAT16 or BFLOAT16");
	check(c, !mask || fia_dtype_in(mask, maskdt, 3), "attenMask must be BOOL, INT8 or UINT8");
	check(c, q->ndim == nd, "query must be %d-D for layout %s", nd, layout);
	check(c, fia_contiguous(q), "query must be contiguous");
	const aclOpExecutor *ex = c->ex;
	for (int i = 0; i < ex->nl[0] && i < ex->nl[1]; i++) {
		const aclTensor *k = &ex->l[0][i], *v = &ex->l[1][i];
		check(c, fia_dtype_in(k, kvdt, 5) && fia_dtype_in(v, kvdt, 5),
		      "key and value must be FLOAT16, BFLOAT16, INT8 or INT4");
		check(c, k->ndim == nd && v->ndim == nd, "key and value must be %d-D for layout %s", nd, layout);
		check(c, fia_contiguous(k) && fia_contiguous(v), "key and value must be contiguous");
		check(c, same_shape(k, v), "key and value must have one shape");
	}
	check(c, ex->nl[0] == ex->nl[1] && ex->nl[0] > 0, "key and value must hold as many tensors, at least one");
	check(c, !pse || pse->ndim == 4, "pseShift must be 4-D");
	check(c, !mask || (mask->ndim >= 2 && mask->ndim <= 4), "attenMask must be 2-D to 4-D");
	check(c, !pse || fia_contiguous(pse), "pseShift must be contiguous");
	check(c, !mask || fia_contiguous(mask), "attenMask must be contiguous");
	if (c->rc) return;
	int64_t B, S, N, D, kb, ks, kn, kd;
	fia_bsnd(q, layout, numHeads, &B, &S, &N, &D);
	fia_bsnd(&ex->l[0][0], layout, numHeads, &kb, &ks, &kn, &kd);
	check(c, B <= 65536 && N <= 256 && D <= 512, "query: B %lld, N %lld, D %lld outside B <= 65536, N <= 256, D <= 512",
	      (long long)B, (long long)N, (long long)D);
	if (S > 1) {
		int align = q->dtype == ACL_INT8 || ex->l[0][0].dtype == ACL_INT8 ? 32 : 16;
		check(c, D % align == 0, "query: D %lld is not a multiple of %d (more than one query token, Atlas A2)",
		      (long long)D, align);
		check(c, sparseMode >= 0 && sparseMode <= 4, "sparseMode %lld is not 0..4", (long long)sparseMode);
	}
	check(c, innerPrecise >= 0 && innerPrecise <= 3, "innerPrecise %lld is not 0..3", (long long)innerPrecise);
	if (pse)
		check(c, (pse->dims[0] == B || pse->dims[0] == 1) && pse->dims[1] == N && pse->dims[2] >= S && pse->dims[3] >= ks,
		      "pseShift must be (B or 1, N, >= Q_S, >= KV_S)");
	if (mask)
		check(c, mask->dims[mask->ndim - 2] >= S && mask->dims[mask->ndim - 1] >= ks,
		      "attenMask's last two dims must cover (Q_S %lld, KV_S %lld)", (long long)S, (long long)ks);
}

aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional,
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional,
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens,
    int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnFusedInferAttentionScoreV2GetWorkspaceSize");
	query = arg(&c, "query", query, 1);
	list_arg(&c, "key", key);
	list_arg(&c, "value", value);
	arg(&c, "pseShift", pseShiftOptional, 0);
	arg(&c, "attenMask", attenMaskOptional, 0);
	const aclTensor *unused[] = {deqScale1Optional,         quantScale1Optional,         deqScale2Optional,
	                             quantScale2Optional,       quantOffset2Optional,        antiquantScaleOptional,
	                             antiquantOffsetOptional,   blockTableOptional,          queryPaddingSizeOptional,
	                             kvPaddingSizeOptional,     keyAntiquantScaleOptional,   keyAntiquantOffsetOptional,
	                             valueAntiquantScaleOptional, valueAntiquantOffsetOptional, keySharedPrefixOptional,
	                             valueSharedPrefixOptional};
	int extra = 0;
	for (unsigned i = 0; i < sizeof unused / sizeof unused[0]; i++) extra += unused[i] != NULL;
	extra += actualSeqLengthsOptional != NULL;
	extra += actualSeqLengthsKvOptional != NULL;
	extra += actualSharedPrefixLenOptional != NULL;
	attentionOut = arg(&c, "attentionOut", attentionOut, 1);
	arg(&c, "softmaxLse", softmaxLse, 0);
	tr(",\"numHeads\":%lld,\"scaleValue\":%.17g,\"preTokens\":%lld,\"nextTokens\":%lld,\"inputLayout\":\"%s\","
	   "\"numKeyValueHeads\":%lld,\"sparseMode\":%lld,\"innerPrecise\":%lld,\"blockSize\":%lld,"
	   "\"antiquantMode\":%lld,\"softmaxLseFlag\":%s,\"keyAntiquantMode\":%lld,\"valueAntiquantMode\":%lld,"
	   "\"optionalUsed\":%d",
	   (long long)numHeads, scaleValue, (long long)preTokens, (long long)nextTokens, inputLayout ? inputLayout : "",
	   (long long)numKeyValueHeads, (long long)sparseMode, (long long)innerPrecise, (long long)blockSize,
	   (long long)antiquantMode, softmaxLseFlag ? "true" : "false", (long long)keyAntiquantMode,
	   (long long)valueAntiquantMode, extra);
	c.ex->f[0] = scaleValue;
	c.ex->i[0] = numHeads, c.ex->i[1] = preTokens, c.ex->i[2] = nextTokens, c.ex->i[3] = numKeyValueHeads;
	c.ex->i[4] = sparseMode, c.ex->i[5] = innerPrecise;
	snprintf(c.ex->s, sizeof c.ex->s, "%s", inputLayout ? inputLayout : "");
	check(&c, inputLayout && (strcmp(inputLayout, "BSND") == 0 || strcmp(inputLayout, "BNSD") == 0 ||
	                          strcmp(inputLayout, "BSH") == 0),
	      "inputLayout must be BSND, BNSD or BSH");
	check(&c, numHeads > 0, "numHeads must be > 0");
	check(&c, numKeyValueHeads >= 0 && (numKeyValueHeads == 0 || numHeads % numKeyValueHeads == 0),
	      "numHeads must be a multiple of numKeyValueHeads");
	check(&c, same_shape(query, attentionOut), "attentionOut must have the shape of query");
	if (!c.rc) fia_check(&c, query, pseShiftOptional, attenMaskOptional, attentionOut, numHeads, inputLayout,
	                     sparseMode, innerPrecise);
	return call_end(&c, "aclnnFusedInferAttentionScoreV2", workspaceSize, executor);
}
RUN(aclnnFusedInferAttentionScoreV2)

/* ---------------- attention ---------------- */

/* one head-major view of a layout: element (b, s, n, d) */
typedef struct {
	const aclTensor *t;
	int ib, is, in, id; /* the tensor dim of each of b, s, n, d; -1: none */
	int64_t heads;      /* BSH: D = H / heads */
} lview;

static int64_t lv_off(const lview *v, int64_t b, int64_t s, int64_t n, int64_t d) {
	const aclTensor *t = v->t;
	int64_t o = t->offset;
	if (v->ib >= 0) o += b * t->strides[v->ib];
	o += s * t->strides[v->is];
	if (v->in >= 0) {
		o += n * t->strides[v->in] + d * t->strides[v->id];
	} else { /* BSH: hidden = n * D + d */
		int64_t D = t->dims[2] / v->heads;
		o += (n * D + d) * t->strides[2];
	}
	return o;
}

static int layout_view(const char *layout, const aclTensor *t, int64_t heads, lview *v) {
	v->t = t;
	v->heads = heads;
	if (strcmp(layout, "BSND") == 0 && t->ndim == 4) {
		v->ib = 0, v->is = 1, v->in = 2, v->id = 3;
	} else if (strcmp(layout, "BNSD") == 0 && t->ndim == 4) {
		v->ib = 0, v->in = 1, v->is = 2, v->id = 3;
	} else if (strcmp(layout, "BSH") == 0 && t->ndim == 3) {
		v->ib = 0, v->is = 1, v->in = -1, v->id = -1;
	} else {
		return -1;
	}
	return 0;
}

static int64_t lv_dim(const lview *v, char what) {
	const aclTensor *t = v->t;
	switch (what) {
	case 'B': return t->dims[v->ib];
	case 'S': return t->dims[v->is];
	case 'N': return v->in >= 0 ? t->dims[v->in] : v->heads;
	default: return v->in >= 0 ? t->dims[v->id] : t->dims[2] / v->heads;
	}
}

/* One FIA launch split over its query rows (b, n, s): each row computed
 * wholly by one thread, so the bits do not depend on the split. */
typedef struct {
	lview qv, kv, vv, ov;
	const aclTensor *pse, *mask;
	int64_t B, N, S, D, Dv, Skv, Nkv, pre, next;
	int band;
	float scale;
	/* K as f32 [B][Nkv][D][Skv] (transposed: one query row's dots over
	 * all keys run as D passes over contiguous keys) and V as f32
	 * [B][Nkv][Skv][Dv], converted once per launch */
	float *kf, *vf;
} fia_job;

/* element d of a head-major row at offset o with stride ds: float16 read
 * directly, other dtypes through ld */
static inline float fia_ld(const aclTensor *t, int64_t o, int64_t ds, int64_t d) {
	if (t->dtype == ACL_FLOAT16) return h2f(((const uint16_t *)t->data)[o + d * ds]);
	return (float)ld(t, o + d * ds);
}

static int fia_rows(void *arg, int64_t lo, int64_t hi) {
	const fia_job *j = arg;
	float *sc = malloc(sizeof(float) * (size_t)(j->Skv ? j->Skv : 1));
	float *acc = malloc(sizeof(float) * (size_t)(j->Dv ? j->Dv : 1));
	float *qr = malloc(sizeof(float) * (size_t)(j->D ? j->D : 1));
	if (!sc || !acc || !qr) {
		free(sc), free(acc), free(qr);
		fake_set_err("aclnnFusedInferAttentionScoreV2: out of host memory");
		return ACLNN_ERR_INNER;
	}
	for (int64_t r = lo; r < hi; r++) {
		int64_t b = r / (j->N * j->S), n = r / j->S % j->N, s = r % j->S, nk = n / (j->N / j->Nkv);
		int64_t qo = lv_off(&j->qv, b, s, n, 0), qs = j->D > 1 ? lv_off(&j->qv, b, s, n, 1) - qo : 0;
		for (int64_t d = 0; d < j->D; d++) qr[d] = fia_ld(j->qv.t, qo, qs, d);
		/* the scores of every key, each summed over D in order (the
		 * loop over keys is the inner one: the same sums, vectorisable) */
		const float *kf = j->kf + (b * j->Nkv + nk) * j->D * j->Skv;
		for (int64_t t = 0; t < j->Skv; t++) sc[t] = 0;
		for (int64_t d = 0; d < j->D; d++) {
			const float qd = qr[d], *kr = kf + d * j->Skv;
			for (int64_t t = 0; t < j->Skv; t++) sc[t] += qd * kr[t];
		}
		/* the mask's row: its cells t apart by mstep (broadcast dims
		 * step 0); a one-byte mask is read directly */
		int64_t mrow = 0, mstep = 0;
		const unsigned char *mb = NULL;
		if (j->mask) {
			int64_t pc0[4] = {b, n, s, 0}, pc1[4] = {b, n, s, 1};
			int nd = j->mask->ndim;
			mrow = toff(j->mask, pc0 + (4 - nd), nd);
			mstep = toff(j->mask, pc1 + (4 - nd), nd) - mrow;
			if (j->mask->dtype != ACL_FLOAT16 && j->mask->dtype != ACL_FLOAT && j->mask->dtype != ACL_BF16)
				mb = (const unsigned char *)j->mask->data;
		}
		float m = -INFINITY;
		for (int64_t t = 0; t < j->Skv; t++) {
			int hidden = j->band && (t < s - j->pre || t > s + j->next);
			if (j->mask && !hidden) hidden = mb ? mb[mrow + t * mstep] != 0 : ld(j->mask, mrow + t * mstep) != 0;
			if (hidden) {
				sc[t] = -INFINITY;
				continue;
			}
			float v = sc[t] * j->scale;
			if (j->pse) {
				int64_t pc[4] = {b, n, s, t};
				v += (float)ld(j->pse, toff(j->pse, pc, 4));
			}
			sc[t] = v;
			if (v > m) m = v;
		}
		float sum = 0;
		for (int64_t t = 0; t < j->Skv; t++) {
			sc[t] = m == -INFINITY ? 0 : expf(sc[t] - m);
			sum += sc[t];
		}
		for (int64_t d = 0; d < j->Dv; d++) acc[d] = 0;
		const float *vf = j->vf + (b * j->Nkv + nk) * j->Skv * j->Dv;
		for (int64_t t = 0; t < j->Skv; t++) {
			float p = sum > 0 ? round_h(sc[t] / sum) : 0;
			if (p == 0) continue; /* adds +0: no change to any sum */
			const float *vr = vf + t * j->Dv;
			for (int64_t d = 0; d < j->Dv; d++) acc[d] += p * vr[d];
		}
		for (int64_t d = 0; d < j->Dv; d++) st(j->ov.t, lv_off(&j->ov, b, s, n, d), acc[d]);
	}
	free(sc), free(acc), free(qr);
	return 0;
}

/* irt_kernel_FIA: per query row, the f32 scores of the f16 (or bf16) query
 * and key (products summed over D in order), times scaleValue, plus the
 * pseShift; cells the attenMask sets (nonzero), or outside the
 * preTokens/nextTokens band (more than one query token, sparseMode 0 with
 * a mask), are left out; the softmax in f32 (max, exp, the sum in order);
 * the probabilities rounded to f16 for the product with the value, summed
 * in f32 over the keys in order; the result rounded to attentionOut's
 * dtype. A row with every cell left out is zero. Rows run on
 * fake_parallel's threads. */
int irt_kernel_FIA(kctx *c) {
	const aclTensor *q = T(0), *pse = T(1), *mask = T(2), *out = T(3);
	const aclOpExecutor *e = c->e;
	fia_job j = {0};
	j.scale = (float)e->f[0];
	j.N = e->i[0], j.pre = e->i[1], j.next = e->i[2], j.Nkv = e->i[3] ? e->i[3] : e->i[0];
	int64_t sparse = e->i[4];
	if (e->nl[0] != 1 || e->nl[1] != 1) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: key and value lists of one tensor only are emulated");
		return ACLNN_ERR_PARAM_INVALID;
	}
	const aclTensor *k = &e->l[0][0], *v = &e->l[1][0];
	if ((q->dtype != ACL_FLOAT16 && q->dtype != ACL_BF16) || k->dtype != q->dtype || v->dtype != q->dtype ||
	    out->dtype != q->dtype) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: query, key, value and attentionOut of one dtype, FLOAT16 or "
		             "BFLOAT16, are emulated (the quantised paths are not)");
		return ACLNN_ERR_PARAM_INVALID;
	}
	if (layout_view(e->s, q, j.N, &j.qv) || layout_view(e->s, k, j.Nkv, &j.kv) || layout_view(e->s, v, j.Nkv, &j.vv) ||
	    layout_view(e->s, out, j.N, &j.ov)) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: tensors do not fit layout %s", e->s);
		return ACLNN_ERR_PARAM_INVALID;
	}
	j.B = lv_dim(&j.qv, 'B'), j.S = lv_dim(&j.qv, 'S'), j.D = lv_dim(&j.qv, 'D'), j.Skv = lv_dim(&j.kv, 'S');
	j.Dv = lv_dim(&j.vv, 'D');
	if (lv_dim(&j.kv, 'D') != j.D || lv_dim(&j.vv, 'S') != j.Skv || lv_dim(&j.kv, 'N') != j.Nkv ||
	    lv_dim(&j.vv, 'N') != j.Nkv || lv_dim(&j.qv, 'N') != j.N || j.N % j.Nkv != 0 || lv_dim(&j.kv, 'B') != j.B ||
	    lv_dim(&j.vv, 'B') != j.B || lv_dim(&j.ov, 'D') != j.Dv) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: query/key/value shapes disagree with numHeads %lld, "
		             "numKeyValueHeads %lld", (long long)j.N, (long long)j.Nkv);
		return ACLNN_ERR_PARAM_INVALID;
	}
	if (j.S > 1 && sparse >= 2) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: sparseMode %lld (the optimised 2048x2048 masks) is not emulated",
		             (long long)sparse);
		return ACLNN_ERR_PARAM_INVALID;
	}
	j.pse = pse->magic ? pse : NULL;
	j.mask = mask->magic ? mask : NULL;
	/* the band applies with a mask in sparseMode 0; Q_S 1 ignores it */
	j.band = j.S > 1 && j.mask && sparse == 0;
	if (j.B * j.N * j.S == 0) return 0;
	size_t nk = (size_t)(j.B * j.Nkv * j.Skv);
	j.kf = malloc(sizeof(float) * (nk * (size_t)j.D + 1));
	j.vf = malloc(sizeof(float) * (nk * (size_t)j.Dv + 1));
	if (!j.kf || !j.vf) {
		free(j.kf), free(j.vf);
		fake_set_err("aclnnFusedInferAttentionScoreV2: out of host memory for K and V in f32");
		return ACLNN_ERR_INNER;
	}
	for (int64_t b = 0; b < j.B; b++)
		for (int64_t h = 0; h < j.Nkv; h++)
			for (int64_t t = 0; t < j.Skv; t++) {
				int64_t ko = lv_off(&j.kv, b, t, h, 0), kd = j.D > 1 ? lv_off(&j.kv, b, t, h, 1) - ko : 0;
				int64_t vo = lv_off(&j.vv, b, t, h, 0), vd = j.Dv > 1 ? lv_off(&j.vv, b, t, h, 1) - vo : 0;
				float *kf = j.kf + (b * j.Nkv + h) * j.D * j.Skv, *vf = j.vf + ((b * j.Nkv + h) * j.Skv + t) * j.Dv;
				for (int64_t d = 0; d < j.D; d++) kf[d * j.Skv + t] = fia_ld(j.kv.t, ko, kd, d);
				for (int64_t d = 0; d < j.Dv; d++) vf[d] = fia_ld(j.vv.t, vo, vd, d);
			}
	int rc = fake_parallel(j.B * j.N * j.S, 4, fia_rows, &j);
	free(j.kf), free(j.vf);
	return rc;
}
