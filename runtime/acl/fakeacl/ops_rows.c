/*
 * ops_rows.c: the emulator's row gathers and scatters: aclnnGatherV2 and
 * aclnnInplaceIndexCopy (phase 1 and the kernels). An index outside its
 * dimension is an AI core exception (507015) naming the operator.
 */
#include "kernel.h"

aclnnStatus aclnnInplaceIndexCopyGetWorkspaceSize(aclTensor *selfRef, int64_t dim, const aclTensor *index,
                                                  const aclTensor *source, uint64_t *workspaceSize,
                                                  aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceIndexCopyGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	index = arg(&c, "index", index, 1);
	source = arg(&c, "source", source, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	check(&c, index && (index->dtype == ACL_INT64 || index->dtype == ACL_INT32) && index->ndim <= 1,
	      "index must be a 0-D or 1-D INT64/INT32 tensor");
	check(&c, selfRef && source && selfRef->ndim == source->ndim, "source must have selfRef's rank");
	check(&c, selfRef && dim >= -selfRef->ndim && dim < selfRef->ndim, "dim %lld out of range", (long long)dim);
	return call_end(&c, "aclnnInplaceIndexCopy", workspaceSize, executor);
}
RUN(aclnnInplaceIndexCopy)

aclnnStatus aclnnGatherV2GetWorkspaceSize(const aclTensor *self, int64_t dim, const aclTensor *index,
                                          aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnGatherV2GetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	index = arg(&c, "index", index, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	check(&c, index && (index->dtype == ACL_INT64 || index->dtype == ACL_INT32), "index must be INT64 or INT32");
	check(&c, self && dim >= -self->ndim && dim < self->ndim, "dim %lld out of range", (long long)dim);
	return call_end(&c, "aclnnGatherV2", workspaceSize, executor);
}
RUN(aclnnGatherV2)

static int index_at(kctx *c, const aclTensor *idx, int64_t i, int64_t limit, int64_t *v) {
	*v = (int64_t)ld(idx, idx->ndim == 0 ? idx->offset : idx->offset + i * idx->strides[0]);
	if (*v < 0 || *v >= limit) {
		fake_set_err("%s: index %lld at position %lld is outside [0, %lld)", c->e->op, (long long)*v, (long long)i,
		             (long long)limit);
		return ACL_ERROR_RT_AICORE_EXCEPTION;
	}
	return 0;
}

/* aclnnInplaceIndexCopy: selfRef[..., index[i], ...] = source[..., i, ...] */
int irt_kernel_INDEXCOPY(kctx *c) {
	const aclTensor *dst = T(0), *idx = T(1), *src = T(2);
	int nd = dst->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]);
	int64_t n = numel(src), cc[8], v;
	for (int64_t i = 0; i < n; i++) {
		coords(i, src->dims, nd, cc);
		double val = ld(src, toff(src, cc, nd));
		int rc = index_at(c, idx, cc[d], dst->dims[d], &v);
		if (rc) return rc;
		cc[d] = v;
		st(dst, toff(dst, cc, nd), is_float(src->dtype) ? (double)(float)val : val);
	}
	return 0;
}

/* aclnnGatherV2: out = self indexed along dim by index (out's dims are
 * self's with dim replaced by index's dims) */
int irt_kernel_GATHERV2(kctx *c) {
	const aclTensor *self = T(0), *idx = T(1), *out = T(2);
	int nd = self->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]), ni = idx->ndim;
	if (ni > 1) {
		fake_set_err("aclnnGatherV2: a %d-D index is not emulated", ni);
		return ACLNN_ERR_PARAM_INVALID;
	}
	int64_t n = numel(out), oc[8], sc[8], v;
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, oc);
		int64_t pos = ni ? oc[d] : 0;
		for (int k = 0, o = 0; k < nd; k++) {
			if (k == d) {
				sc[k] = 0;
				o += ni;
			} else {
				sc[k] = oc[o++];
			}
		}
		int rc = index_at(c, idx, pos, self->dims[d], &v);
		if (rc) return rc;
		sc[d] = v;
		st(out, toff(out, oc, out->ndim), ld(self, toff(self, sc, nd)));
	}
	return 0;
}
