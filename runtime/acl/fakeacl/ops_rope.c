/*
 * ops_rope.c: the emulator's aclnnRotaryPositionEmbedding (phase 1 and the
 * kernel): modes 0 (half), 1 (interleave) and 2 (quarter).
 */
#include "kernel.h"

aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor *x, const aclTensor *cos,
                                                         const aclTensor *sin, int64_t mode, aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnRotaryPositionEmbeddingGetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	cos = arg(&c, "cos", cos, 1);
	sin = arg(&c, "sin", sin, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"mode\":%lld", (long long)mode);
	c.ex->i[0] = mode;
	check(&c, mode >= 0 && mode <= 3, "mode %lld is not 0..3", (long long)mode);
	check(&c, same_shape(x, out), "out must have the shape of x");
	check(&c, same_shape(cos, sin), "cos and sin must have one shape");
	check(&c, x && x->ndim == 4, "x must be 4-D");
	/* the formulas split the last dim in halves (quarters in mode 2) */
	check(&c, x && x->dims[3] % (mode == 2 ? 4 : 2) == 0, "x: last dim %lld is not a multiple of %d for mode %lld",
	      x ? (long long)x->dims[3] : 0LL, mode == 2 ? 4 : 2, (long long)mode);
	check(&c, x && cos && cos->dtype == x->dtype && sin->dtype == x->dtype, "cos and sin must have x's dtype");
	return call_end(&c, "aclnnRotaryPositionEmbedding", workspaceSize, executor);
}
RUN(aclnnRotaryPositionEmbedding)

/* aclnnRotaryPositionEmbedding: y = x·cos + rotate(x)·sin over the last dim;
 * mode 0 half, 1 interleave, 2 quarter */
int irt_kernel_ROPE(kctx *c) {
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
