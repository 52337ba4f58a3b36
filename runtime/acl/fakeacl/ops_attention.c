/*
 * ops_attention.c: the attention family of the CANN emulator,
 * aclnnFusedInferAttentionScoreV2: its phase 1 (argument checks, the
 * executor) and its kernel irt_kernel_FIA, which computes the operator's
 * documented result on the host (kernels.c's conventions).
 */
#include "fakeacl.h"
#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- attention ---------------- */

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

int irt_kernel_FIA(kctx *c) {
	const aclTensor *q = T(0), *pse = T(1), *mask = T(2), *out = T(3);
	const aclOpExecutor *e = c->e;
	double scale = e->f[0];
	int64_t N = e->i[0], pre = e->i[1], next = e->i[2], Nkv = e->i[3] ? e->i[3] : e->i[0];
	lview qv, kv, vv, ov;
	if (e->nl[0] != 1 || e->nl[1] != 1) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: key and value lists of one tensor only are emulated");
		return ACLNN_ERR_PARAM_INVALID;
	}
	if (layout_view(e->s, q, N, &qv) || layout_view(e->s, &e->l[0][0], Nkv, &kv) ||
	    layout_view(e->s, &e->l[1][0], Nkv, &vv) || layout_view(e->s, out, N, &ov)) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: tensors do not fit layout %s", e->s);
		return ACLNN_ERR_PARAM_INVALID;
	}
	int64_t B = lv_dim(&qv, 'B'), S = lv_dim(&qv, 'S'), D = lv_dim(&qv, 'D'), Skv = lv_dim(&kv, 'S');
	int64_t Dv = lv_dim(&vv, 'D');
	if (lv_dim(&kv, 'D') != D || lv_dim(&vv, 'S') != Skv || lv_dim(&kv, 'N') != Nkv || lv_dim(&vv, 'N') != Nkv ||
	    lv_dim(&qv, 'N') != N || N % Nkv != 0) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: query/key/value shapes disagree with numHeads %lld, "
		             "numKeyValueHeads %lld", (long long)N, (long long)Nkv);
		return ACLNN_ERR_PARAM_INVALID;
	}
	if ((pre < Skv && pre < 65535) || (next < Skv && next < 65535)) {
		fake_set_err("aclnnFusedInferAttentionScoreV2: a preTokens/nextTokens band narrower than the keys is "
		             "not emulated");
		return ACLNN_ERR_PARAM_INVALID;
	}
	float *sc = malloc(sizeof(float) * (size_t)(Skv ? Skv : 1));
	float *acc = malloc(sizeof(float) * (size_t)(Dv ? Dv : 1));
	for (int64_t b = 0; b < B; b++) {
		for (int64_t n = 0; n < N; n++) {
			int64_t nk = n / (N / Nkv);
			for (int64_t s = 0; s < S; s++) {
				float m = -INFINITY;
				for (int64_t j = 0; j < Skv; j++) {
					float dot = 0;
					for (int64_t d = 0; d < D; d++)
						dot += (float)ld(q, lv_off(&qv, b, s, n, d)) * (float)ld(kv.t, lv_off(&kv, b, j, nk, d));
					float v = dot * (float)scale;
					int64_t pc[4] = {b, n, s, j};
					if (pse->magic) v += (float)ld(pse, toff(pse, pc, 4));
					if (mask->magic && ld(mask, toff(mask, pc + (4 - mask->ndim), mask->ndim)) != 0) v = -INFINITY;
					sc[j] = v;
					if (v > m) m = v;
				}
				float sum = 0;
				for (int64_t j = 0; j < Skv; j++) {
					sc[j] = m == -INFINITY ? 0 : expf(sc[j] - m);
					sum += sc[j];
				}
				for (int64_t d = 0; d < Dv; d++) acc[d] = 0;
				for (int64_t j = 0; j < Skv; j++) {
					float p = sum > 0 ? round_h(sc[j] / sum) : 0;
					for (int64_t d = 0; d < Dv; d++) acc[d] += p * (float)ld(vv.t, lv_off(&vv, b, j, nk, d));
				}
				for (int64_t d = 0; d < Dv; d++) st(out, lv_off(&ov, b, s, n, d), acc[d]);
			}
		}
	}
	free(sc);
	free(acc);
	return 0;
}
