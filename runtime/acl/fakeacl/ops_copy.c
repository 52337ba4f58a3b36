/*
 * ops_copy.c: the emulator's copies: aclnnCast, aclnnInplaceCopy and
 * aclnnCat (phase 1 and the kernels).
 */
#include "kernel.h"

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnCastGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dtype\":%d", (int)dtype);
	c.ex->i[0] = dtype;
	check(&c, same_shape(self, out), "out must have the shape of self");
	check(&c, out && out->dtype == dtype, "out's type must be dtype");
	return call_end(&c, "aclnnCast", workspaceSize, executor);
}
RUN(aclnnCast)

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef, const aclTensor *src, uint64_t *workspaceSize,
                                             aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceCopyGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	src = arg(&c, "src", src, 1);
	check(&c, broadcasts(src, selfRef), "src must broadcast to selfRef");
	return call_end(&c, "aclnnInplaceCopy", workspaceSize, executor);
}
RUN(aclnnInplaceCopy)

aclnnStatus aclnnCatGetWorkspaceSize(const aclTensorList *tensors, int64_t dim, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnCatGetWorkspaceSize");
	list_arg(&c, "tensors", tensors);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	if (!c.rc) {
		int nd = out->ndim, d = (int)(dim < 0 ? dim + nd : dim);
		check(&c, d >= 0 && d < nd, "dim %lld out of range", (long long)dim);
		int64_t sum = 0;
		for (uint64_t k = 0; !c.rc && k < tensors->n; k++) {
			const aclTensor *t = tensors->v[k];
			check(&c, t->ndim == nd && t->dtype == out->dtype, "tensor %llu must have out's rank and dtype",
			      (unsigned long long)k);
			for (int i = 0; !c.rc && i < nd; i++)
				check(&c, i == d || t->dims[i] == out->dims[i], "tensor %llu differs from out outside dim %d",
				      (unsigned long long)k, d);
			if (!c.rc) sum += t->dims[d];
		}
		check(&c, sum == out->dims[d], "the tensors' dim %d sums to %lld, out has %lld", d, (long long)sum,
		      (long long)out->dims[d]);
	}
	return call_end(&c, "aclnnCat", workspaceSize, executor);
}
RUN(aclnnCat)

/* out = a, broadcasting; the value converted once, to out's dtype (a float
 * through float32); the outputs split over the host threads (fake_split) */
typedef struct {
	const aclTensor *a, *out;
} copy_args;

static int copy_range(void *arg, int64_t lo, int64_t hi) {
	const copy_args *w = arg;
	const aclTensor *a = w->a, *out = w->out;
	int64_t cc[8];
	for (int64_t i = lo; i < hi; i++) {
		coords(i, out->dims, out->ndim, cc);
		double v = ld(a, toff(a, cc, out->ndim));
		st(out, toff(out, cc, out->ndim), is_float(a->dtype) ? (double)(float)v : v);
	}
	return 0;
}

static int copy(const aclTensor *a, const aclTensor *out) {
	copy_args w = {a, out};
	return fake_split(numel(out), 1 << 15, copy_range, &w, out, &a, 1);
}

int irt_kernel_CAST(kctx *c) { return copy(T(0), T(1)); }
int irt_kernel_INPLACECOPY(kctx *c) { return copy(T(1), T(0)); }

/* aclnnCat: the list's tensors joined along dim */
int irt_kernel_CAT(kctx *c) {
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
