/*
 * ops_norm.c: the emulator's norms, aclnnRmsNorm and aclnnAddRmsNorm:
 * phase 1 (the argument rules of their aclnn pages) and the kernels.
 */
#include "kernel.h"

aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma, double epsilon,
                                         const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize,
                                         aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnRmsNormGetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	gamma = arg(&c, "gamma", gamma, 1);
	yOut = arg(&c, "yOut", yOut, 1);
	rstdOut = arg(&c, "rstdOut", rstdOut, 1);
	tr(",\"epsilon\":%.17g", epsilon);
	c.ex->f[0] = epsilon;
	check(&c, same_shape(x, yOut), "yOut must have the shape of x");
	check(&c, x && (x->dtype == ACL_FLOAT || x->dtype == ACL_FLOAT16 || x->dtype == ACL_BF16),
	      "x must be FLOAT, FLOAT16 or BFLOAT16");
	if (!c.rc && x && gamma) {
		int ok = gamma->ndim <= x->ndim;
		for (int i = 1; ok && i <= gamma->ndim; i++) ok = gamma->dims[gamma->ndim - i] == x->dims[x->ndim - i];
		check(&c, ok, "gamma must match the trailing dims of x");
		check(&c, rstdOut && numel(rstdOut) * numel(gamma) == numel(x), "rstd * gamma must cover x");
	}
	return call_end(&c, "aclnnRmsNorm", workspaceSize, executor);
}
RUN(aclnnRmsNorm)

aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma,
                                            double epsilon, const aclTensor *yOut, const aclTensor *rstdOut,
                                            const aclTensor *xOut, uint64_t *workspaceSize,
                                            aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnAddRmsNormGetWorkspaceSize");
	x1 = arg(&c, "x1", x1, 1);
	x2 = arg(&c, "x2", x2, 1);
	gamma = arg(&c, "gamma", gamma, 1);
	yOut = arg(&c, "yOut", yOut, 1);
	rstdOut = arg(&c, "rstdOut", rstdOut, 1);
	xOut = arg(&c, "xOut", xOut, 1);
	tr(",\"epsilon\":%.17g", epsilon);
	c.ex->f[0] = epsilon;
	check(&c, same_shape(x1, x2) && same_shape(x1, yOut) && same_shape(x1, xOut),
	      "x1, x2, yOut and xOut must have one shape");
	check(&c, x1 && (x1->dtype == ACL_FLOAT || x1->dtype == ACL_FLOAT16 || x1->dtype == ACL_BF16),
	      "x1 must be FLOAT, FLOAT16 or BFLOAT16");
	return call_end(&c, "aclnnAddRmsNorm", workspaceSize, executor);
}
RUN(aclnnAddRmsNorm)


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

int irt_kernel_RMSNORM(kctx *c) { return rms(c, T(0), NULL, T(1), T(2), T(3), NULL, c->e->f[0]); }
int irt_kernel_ADDRMSNORM(kctx *c) { return rms(c, T(0), T(1), T(2), T(3), T(4), T(5), c->e->f[0]); }
