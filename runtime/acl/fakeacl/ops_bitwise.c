/*
 * ops_bitwise.c: the emulator's integer and broadcast operators that
 * unpack a packed bitmask (the fifth bits of a q5_0 weight, one bit per
 * weight): aclnnExpand, aclnnRightShift and aclnnBitwiseAndScalar, phase 1
 * and the kernels. The dtypes and shape rules are those of CANN's pages
 * (ops-math: math/expand/docs/aclnnExpand.md,
 * math/right_shift/docs/aclnnRightShift.md; aclnnBitwiseAndScalar in the
 * aclnn API reference), on Atlas A2/A3.
 */
#include "kernel.h"

static int is_int(aclDataType t) {
	switch (t) {
	case ACL_INT8: case ACL_UINT8: case ACL_INT16: case ACL_UINT16: case ACL_INT32: case ACL_UINT32:
	case ACL_INT64: case ACL_UINT64: return 1;
	default: return 0;
	}
}

static int is_unsigned(aclDataType t) {
	return t == ACL_UINT8 || t == ACL_UINT16 || t == ACL_UINT32 || t == ACL_UINT64 || t == ACL_BOOL;
}

/* element e of an integer (or BOOL) tensor, exactly */
static inline int64_t ldi(const aclTensor *t, int64_t e) {
	const char *p = t->data;
	switch (t->dtype) {
	case ACL_INT8: return (int8_t)p[e];
	case ACL_UINT8: case ACL_BOOL: return (uint8_t)p[e];
	case ACL_INT16: { int16_t v; memcpy(&v, p + 2 * e, 2); return v; }
	case ACL_UINT16: { uint16_t v; memcpy(&v, p + 2 * e, 2); return v; }
	case ACL_INT32: { int32_t v; memcpy(&v, p + 4 * e, 4); return v; }
	case ACL_UINT32: { uint32_t v; memcpy(&v, p + 4 * e, 4); return v; }
	case ACL_INT64: case ACL_UINT64: { int64_t v; memcpy(&v, p + 8 * e, 8); return v; }
	default: return 0;
	}
}

static inline void sti(const aclTensor *t, int64_t e, int64_t v) {
	char *p = t->data;
	switch (t->dtype) {
	case ACL_INT8: case ACL_UINT8: p[e] = (char)(uint8_t)v; return;
	case ACL_BOOL: p[e] = v != 0; return;
	case ACL_INT16: case ACL_UINT16: { uint16_t x = (uint16_t)v; memcpy(p + 2 * e, &x, 2); return; }
	case ACL_INT32: case ACL_UINT32: { uint32_t x = (uint32_t)v; memcpy(p + 4 * e, &x, 4); return; }
	case ACL_INT64: case ACL_UINT64: memcpy(p + 8 * e, &v, 8); return;
	default: return;
	}
}

/* An iteration over out's elements in index order with the element offsets
 * of out and of up to two inputs broadcast to it (right-aligned; a dim of
 * size 1 repeats), kept by counters rather than recomputed per element. */
typedef struct {
	int nd;
	int64_t dims[8], cc[8];
	int64_t st[3][8], off[3];
	int n;
} walk;

static void walk_init(walk *w, const aclTensor *out, const aclTensor *const *in, int nin) {
	memset(w, 0, sizeof *w);
	w->nd = out->ndim, w->n = nin + 1;
	const aclTensor *ts[3] = {out, nin > 0 ? in[0] : NULL, nin > 1 ? in[1] : NULL};
	for (int i = 0; i < w->nd; i++) w->dims[i] = out->dims[i];
	for (int k = 0; k < w->n; k++) {
		const aclTensor *t = ts[k];
		w->off[k] = t->offset;
		int shift = w->nd - t->ndim;
		for (int i = 0; i < t->ndim; i++)
			if (i + shift >= 0 && t->dims[i] != 1) w->st[k][i + shift] = t->strides[i];
	}
}

static inline void walk_next(walk *w) {
	for (int i = w->nd - 1; i >= 0; i--) {
		for (int k = 0; k < w->n; k++) w->off[k] += w->st[k][i];
		if (++w->cc[i] < w->dims[i]) return;
		for (int k = 0; k < w->n; k++) w->off[k] -= w->st[k][i] * w->dims[i];
		w->cc[i] = 0;
	}
}

/* whether t is laid out row-major without gaps (its storage offset aside) */
static int dense_t(const aclTensor *t) {
	int64_t acc = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->dims[i] != 1 && t->strides[i] != acc) return 0;
		acc *= t->dims[i];
	}
	return 1;
}

/* The byte kernels' fast path: out, and every input, dense bytes; rows of
 * len elements split over the host threads (fake_split: distinct outputs,
 * inputs disjoint from out or out itself). */
typedef struct {
	const unsigned char *a, *b; /* input, and the per-column table (shift) */
	unsigned char *out;
	int64_t len;
	int op;
	int64_t v;
} bytes_job;

enum { BY_EXPAND, BY_SHIFT, BY_AND };

static int bytes_range(void *arg, int64_t lo, int64_t hi) {
	const bytes_job *j = arg;
	int64_t L = j->len;
	for (int64_t r = lo; r < hi; r++) {
		unsigned char *o = j->out + r * L;
		switch (j->op) {
		case BY_EXPAND: memset(o, j->a[r], (size_t)L); break;
		case BY_SHIFT:
			for (int64_t i = 0; i < L; i++) {
				unsigned s = j->b[i];
				o[i] = s >= 8 ? 0 : (unsigned char)(j->a[r * L + i] >> s);
			}
			break;
		default:
			for (int64_t i = 0; i < L; i++) o[i] = (unsigned char)(j->a[r * L + i] & j->v);
		}
	}
	return 0;
}

aclnnStatus aclnnExpandGetWorkspaceSize(const aclTensor *self, const aclIntArray *size, aclTensor *out,
                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnExpandGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = size && size->magic == INTARRAY_MAGIC;
	tr_i64s("size", ok ? size->v : NULL, ok ? size->n : 0);
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		fake_set_err("aclnnExpandGetWorkspaceSize: size is not an int array");
	}
	if (!c.rc) {
		aclDataType t = self->dtype;
		check(&c, t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_UINT8 || t == ACL_INT8 ||
		              t == ACL_INT32 || t == ACL_INT64 || t == ACL_BOOL,
		      "self must be BFLOAT16, FLOAT16, FLOAT, UINT8, INT8, INT32, INT64 or BOOL");
		check(&c, out->dtype == t, "out must have the dtype of self");
		check(&c, self->ndim <= 8 && (int64_t)size->n >= self->ndim && size->n <= 8,
		      "size (%llu dims) must have at least self's %d dims, at most 8", (unsigned long long)size->n,
		      self->ndim);
		int same = (int64_t)size->n == out->ndim;
		for (int i = 0; same && i < out->ndim; i++) same = size->v[i] == out->dims[i];
		check(&c, same, "out's shape must be size");
		check(&c, broadcasts(self, out), "self must broadcast to size");
	}
	return call_end(&c, "aclnnExpand", workspaceSize, executor);
}
RUN(aclnnExpand)

/* aclnnExpand: out = self broadcast, bytes copied as they are */
int irt_kernel_EXPAND(kctx *c) {
	const aclTensor *self = T(0), *out = T(1);
	int es = dtype_size(out->dtype);
	/* bytes repeated along the last dim: [.., 1] -> [.., L], both dense */
	int nd = out->ndim;
	if (es == 1 && nd >= 1 && self->ndim == nd && self->dims[nd - 1] == 1 && dense_t(self) && dense_t(out)) {
		int same = 1;
		for (int i = 0; i < nd - 1; i++) same = same && self->dims[i] == out->dims[i];
		if (same) {
			bytes_job j = {(const unsigned char *)self->data + self->offset, NULL,
			               (unsigned char *)out->data + out->offset, out->dims[nd - 1], BY_EXPAND, 0};
			return fake_split(numel(self), 4096, bytes_range, &j, out, &self, 1);
		}
	}
	walk w;
	walk_init(&w, out, &self, 1);
	int64_t n = numel(out);
	for (int64_t i = 0; i < n; i++, walk_next(&w)) memcpy(out->data + es * w.off[0], self->data + es * w.off[1], (size_t)es);
	return 0;
}

aclnnStatus aclnnRightShiftGetWorkspaceSize(const aclTensor *input, const aclTensor *shiftBits, aclTensor *out,
                                            uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnRightShiftGetWorkspaceSize");
	input = arg(&c, "input", input, 1);
	shiftBits = arg(&c, "shiftBits", shiftBits, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	if (!c.rc) {
		check(&c, is_int(input->dtype) && is_int(shiftBits->dtype) && is_int(out->dtype),
		      "input, shiftBits and out must be INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32 or UINT64");
		check(&c, input->ndim <= 8 && shiftBits->ndim <= 8, "at most 8 dims");
		check(&c, broadcasts(shiftBits, input), "shiftBits must broadcast to input");
		check(&c, same_shape(out, input), "out must have the shape of input");
	}
	return call_end(&c, "aclnnRightShift", workspaceSize, executor);
}
RUN(aclnnRightShift)

/* aclnnRightShift: out = input >> shiftBits, a negative shift taken as 0
 * (CANN's page); an arithmetic shift of a signed input, a shift past the
 * width leaving the sign */
int irt_kernel_RIGHTSHIFT(kctx *c) {
	const aclTensor *in = T(0), *sh = T(1), *out = T(2);
	const aclTensor *ins[2] = {in, sh};
	int bits = 8 * dtype_size(in->dtype), uns = is_unsigned(in->dtype);
	/* UINT8 bytes shifted by a table along the last dim, all dense */
	int nd = out->ndim;
	if (in->dtype == ACL_UINT8 && sh->dtype == ACL_UINT8 && out->dtype == ACL_UINT8 && nd >= 1 && sh->ndim == 1 &&
	    sh->dims[0] == out->dims[nd - 1] && sh->strides[0] == 1 && dense_t(in) && dense_t(out) && out->data != in->data) {
		int64_t L = out->dims[nd - 1];
		bytes_job j = {(const unsigned char *)in->data + in->offset, (const unsigned char *)sh->data + sh->offset,
		               (unsigned char *)out->data + out->offset, L, BY_SHIFT, 0};
		return fake_split(numel(out) / (L ? L : 1), 64, bytes_range, &j, out, ins, 2);
	}
	walk w;
	walk_init(&w, out, ins, 2);
	int64_t n = numel(out);
	for (int64_t i = 0; i < n; i++, walk_next(&w)) {
		int64_t x = ldi(in, w.off[1]), s = ldi(sh, w.off[2]);
		if (s < 0) s = 0;
		int64_t r;
		if (uns) r = s >= bits ? 0 : (int64_t)((uint64_t)x >> s);
		else r = s >= bits ? (x < 0 ? -1 : 0) : x >> s;
		sti(out, w.off[0], r);
	}
	return 0;
}

aclnnStatus aclnnBitwiseAndScalarGetWorkspaceSize(const aclTensor *self, const aclScalar *other, aclTensor *out,
                                                  uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnBitwiseAndScalarGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = other && other->magic == SCALAR_MAGIC;
	tr(",\"other\":%.17g", ok ? other->v : 0.0);
	c.ex->i[0] = ok ? (int64_t)other->v : 0;
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		fake_set_err("aclnnBitwiseAndScalarGetWorkspaceSize: other is not a scalar");
	}
	if (!c.rc) {
		aclDataType t = self->dtype;
		int ints = t == ACL_INT8 || t == ACL_UINT8 || t == ACL_INT16 || t == ACL_UINT16 || t == ACL_INT32 ||
		           t == ACL_INT64 || t == ACL_BOOL;
		check(&c, ints, "self must be INT16, UINT16, INT32, INT64, INT8, UINT8 or BOOL");
		check(&c, is_int(other->dtype) || other->dtype == ACL_BOOL,
		      "other must be an integer or BOOL scalar (dtype %d)", (int)other->dtype);
		check(&c, is_int(out->dtype) || out->dtype == ACL_BOOL, "out must be an integer or BOOL tensor");
		check(&c, self->ndim <= 8, "at most 8 dims");
		check(&c, same_shape(out, self), "out must have the shape of self");
	}
	return call_end(&c, "aclnnBitwiseAndScalar", workspaceSize, executor);
}
RUN(aclnnBitwiseAndScalar)

/* aclnnBitwiseAndScalar: out = self & other */
int irt_kernel_BITWISEANDSCALAR(kctx *c) {
	const aclTensor *self = T(0), *out = T(1);
	int64_t v = c->e->i[0];
	/* dense bytes */
	if ((self->dtype == ACL_UINT8 || self->dtype == ACL_INT8) && self->dtype == out->dtype && dense_t(self) && dense_t(out)) {
		int64_t n = numel(out), L = 1 << 16;
		bytes_job j = {(const unsigned char *)self->data + self->offset, NULL, (unsigned char *)out->data + out->offset,
		               L, BY_AND, v};
		int rc = fake_split(n / L, 1, bytes_range, &j, out, &self, 1);
		for (int64_t i = n / L * L; !rc && i < n; i++) j.out[i] = (unsigned char)(j.a[i] & v);
		return rc;
	}
	walk w;
	walk_init(&w, out, &self, 1);
	int64_t n = numel(out);
	for (int64_t i = 0; i < n; i++, walk_next(&w)) sti(out, w.off[0], ldi(self, w.off[1]) & v);
	return 0;
}
