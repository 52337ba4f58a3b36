/*
 * ops_reduce.c: the emulator's reductions: aclnnSoftmax, aclnnReduceSum,
 * aclnnAmax and aclnnTopk (phase 1 and the kernels).
 */
#include "kernel.h"

aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim, aclTensor *out,
                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnSoftmaxGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	check(&c, same_shape(self, out), "out must have the shape of self");
	check(&c, self && dim >= -self->ndim && dim < self->ndim, "dim %lld out of range", (long long)dim);
	return call_end(&c, "aclnnSoftmax", workspaceSize, executor);
}
RUN(aclnnSoftmax)

/* The reductions' executor keeps the reduced dims as i[0] = count, i[1..8]
 * = dims (normalised to [0, ndim)), i[9] keepDims, i[10] dtype.
 * reduce_dims checks and keeps them, */
static void reduce_dims(call *c, const aclTensor *self, const aclIntArray *dims, bool keep, aclDataType dtype) {
	check(c, dims->n <= 8, "at most 8 dims");
	c->ex->i[0] = (int64_t)dims->n;
	for (uint64_t k = 0; !c->rc && k < dims->n; k++) {
		int64_t d = dims->v[k];
		check(c, d >= -self->ndim && d < self->ndim, "dim %lld out of range", (long long)d);
		c->ex->i[1 + k] = d < 0 ? d + self->ndim : d;
	}
	c->ex->i[9] = keep, c->ex->i[10] = dtype;
}

/* and out's shape must be self's with the reduced dims 1 (keep) or gone */
static int reduced_shape(const call *c, const aclTensor *self, const aclTensor *out, bool keep) {
	int64_t want[8], n = c->ex->i[0] < 8 ? c->ex->i[0] : 8;
	int nw = 0;
	for (int i = 0; i < self->ndim; i++) {
		int red = 0;
		for (int64_t k = 0; k < n; k++) red |= c->ex->i[1 + k] == i;
		if (!red) want[nw++] = self->dims[i];
		else if (keep) want[nw++] = 1;
	}
	int same = nw == out->ndim;
	for (int i = 0; same && i < nw; i++) same = want[i] == out->dims[i];
	return same;
}

aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self, const aclIntArray *dims, bool keepDims,
                                           aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
                                           aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnReduceSumGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = dims && dims->magic == INTARRAY_MAGIC;
	tr_i64s("dims", ok ? dims->v : NULL, ok ? dims->n : 0);
	tr(",\"keepDims\":%s,\"dtype\":%d", keepDims ? "true" : "false", (int)dtype);
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		fake_set_err("aclnnReduceSumGetWorkspaceSize: dims is not an int array");
	}
	if (!c.rc) {
		reduce_dims(&c, self, dims, keepDims, dtype);
		check(&c, out->dtype == dtype, "out's type must be dtype");
		check(&c, reduced_shape(&c, self, out, keepDims), "out's shape must be self's reduced over dims");
	}
	return call_end(&c, "aclnnReduceSum", workspaceSize, executor);
}
RUN(aclnnReduceSum)

/* aclnnAmax: the maximum of self over dim (an aclIntArray), keepDim as
 * aclnnReduceSum's keepDims; out has self's dtype. The executor keeps the
 * dims as aclnnReduceSum's does. */
aclnnStatus aclnnAmaxGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnAmaxGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = dim && dim->magic == INTARRAY_MAGIC;
	tr_i64s("dim", ok ? dim->v : NULL, ok ? dim->n : 0);
	tr(",\"keepDim\":%s", keepDim ? "true" : "false");
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		fake_set_err("aclnnAmaxGetWorkspaceSize: dim is not an int array");
	}
	if (!c.rc) {
		reduce_dims(&c, self, dim, keepDim, self->dtype);
		check(&c, out->dtype == self->dtype, "out must have the dtype of self");
		check(&c, self->dtype == ACL_FLOAT || self->dtype == ACL_FLOAT16 || self->dtype == ACL_BF16,
		      "self must be FLOAT, FLOAT16 or BFLOAT16");
		check(&c, reduced_shape(&c, self, out, keepDim), "out's shape must be self's reduced over dim");
	}
	return call_end(&c, "aclnnAmax", workspaceSize, executor);
}
RUN(aclnnAmax)

aclnnStatus aclnnTopkGetWorkspaceSize(const aclTensor *self, int64_t k, int64_t dim, bool largest, bool sorted,
                                      aclTensor *valuesOut, aclTensor *indicesOut, uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnTopkGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	valuesOut = (aclTensor *)arg(&c, "valuesOut", valuesOut, 1);
	indicesOut = (aclTensor *)arg(&c, "indicesOut", indicesOut, 1);
	tr(",\"k\":%lld,\"dim\":%lld,\"largest\":%s,\"sorted\":%s", (long long)k, (long long)dim,
	   largest ? "true" : "false", sorted ? "true" : "false");
	c.ex->i[0] = k, c.ex->i[2] = largest, c.ex->i[3] = sorted;
	if (!c.rc) {
		int d = (int)(dim < 0 ? dim + self->ndim : dim);
		c.ex->i[1] = d;
		check(&c, d >= 0 && d < self->ndim, "dim %lld out of range", (long long)dim);
		check(&c, !c.rc && k >= 0 && k <= self->dims[d], "k %lld outside [0, self.size(dim)]", (long long)k);
		/* CANN 8.x: "sorted currently supports True only" */
		check(&c, sorted, "sorted must be true");
		check(&c, valuesOut->dtype == self->dtype, "valuesOut must have self's dtype");
		check(&c, indicesOut->dtype == ACL_INT64, "indicesOut must be INT64");
		int shp = valuesOut->ndim == self->ndim && indicesOut->ndim == self->ndim;
		for (int i = 0; shp && i < self->ndim; i++)
			shp = valuesOut->dims[i] == (i == d ? k : self->dims[i]) && indicesOut->dims[i] == valuesOut->dims[i];
		check(&c, shp, "valuesOut and indicesOut must be self's shape with k along dim");
	}
	return call_end(&c, "aclnnTopk", workspaceSize, executor);
}
RUN(aclnnTopk)

/* aclnnSoftmax along dim */
int irt_kernel_SOFTMAX(kctx *c) {
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

int irt_kernel_REDUCESUM(kctx *c) { return reduce(c, 0); }

/* aclnnAmax: the maximum over the dims of the executor, NaN propagating */
int irt_kernel_AMAX(kctx *c) { return reduce(c, 1); }

/* aclnnTopk (largest, sorted): the k largest values along dim in descending
 * order and their INT64 indices. CANN does not document the order of equal
 * values; the emulator puts the lower index first. NaN is not ordered here. */
int irt_kernel_TOPK(kctx *c) {
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
