/*
 * aclnn.c: the CANN emulator's aclnn objects (aclCreateTensor and the other
 * descriptors, as CANN defines them) and the machinery of phase 1 that
 * every operator's aclnnXxxGetWorkspaceSize shares (kernel.h): the
 * arguments checked, traced and snapshotted into the executor phase 2
 * computes on.
 */
#include "kernel.h"

#include <stdarg.h>

/* the lock, the error text and the trace are the runtime's (fakeacl.c) */
#define set_err(...) fake_set_err(__VA_ARGS__)
#define tr_begin(fn) fake_tr_begin(fn)
#define tr_end(rc) fake_tr_end(rc)

/* ---------------- aclnn objects ---------------- */

static long long tensor_ids, live_tensors, live_scalars, live_arrays, live_lists;

int fake_objects_stat(const char *key, long long *v) {
	if (strcmp(key, "live_tensors") == 0) *v = live_tensors;
	else if (strcmp(key, "live_scalars") == 0) *v = live_scalars;
	else if (strcmp(key, "live_arrays") == 0) *v = live_arrays;
	else if (strcmp(key, "live_lists") == 0) *v = live_lists;
	else return 0;
	return 1;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
	fake_lock();
	aclTensor *t = NULL;
	int rc = fake_injected("aclCreateTensor");
	int es = dtype_size(dataType);
	if (!rc && (viewDimsNum > 8 || storageDimsNum > 8 || (viewDimsNum && (!viewDims || !stride)))) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: at most 8 dims, with strides");
	}
	if (!rc && es == 0) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: unsupported data type %d", (int)dataType);
	}
	if (!rc && offset < 0) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: negative storage offset %lld", (long long)offset);
	}
	int64_t reach = offset; /* last element index + 1 */
	int empty = 0;
	for (uint64_t i = 0; !rc && i < viewDimsNum; i++) {
		if (viewDims[i] < 0 || stride[i] < 0) {
			rc = ACLNN_ERR_PARAM_INVALID;
			set_err("aclCreateTensor: dim %llu has shape %lld stride %lld (must be >= 0)", (unsigned long long)i,
			        (long long)viewDims[i], (long long)stride[i]);
		}
		if (viewDims[i] == 0) empty = 1;
		reach += (viewDims[i] - 1) * stride[i];
	}
	reach += 1;
	int64_t storage = 1;
	for (uint64_t i = 0; i < storageDimsNum; i++) storage *= storageDims[i];
	if (!rc && !empty && storage < reach) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: view reaches element %lld but the storage holds %lld", (long long)reach,
		        (long long)storage);
	}
	if (!rc && !empty && tensorData == NULL) {
		rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("aclCreateTensor: null data");
	}
	int64_t bytes = dataType == ACL_INT4 ? (storage + 1) / 2 : storage * es;
	if (!rc && !empty && !fake_in_device(tensorData, (size_t)bytes)) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: storage [%p,+%lld B) is not inside one device allocation", tensorData,
		        (long long)bytes);
	}
	/* "tensorData must be 32-byte aligned, otherwise undefined errors may
	 * occur" (aclCreateTensor, CANN 9.0.0): refused here, so that a view
	 * into a buffer passes the aligned address and an element offset. */
	if (!rc && !empty && ((uintptr_t)tensorData & 31)) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: tensorData %p is not 32-byte aligned", tensorData);
	}
	if (!rc) {
		t = calloc(1, sizeof *t);
		t->magic = TENSOR_MAGIC;
		t->id = ++tensor_ids;
		t->ndim = (int)viewDimsNum;
		for (uint64_t i = 0; i < viewDimsNum; i++) {
			t->dims[i] = viewDims[i];
			t->strides[i] = stride[i];
		}
		t->nstorage = (int)storageDimsNum;
		for (uint64_t i = 0; i < storageDimsNum; i++) t->storage[i] = storageDims[i];
		t->offset = offset;
		t->dtype = dataType;
		t->format = format;
		t->data = tensorData;
		live_tensors++;
	}
	tr_begin("aclCreateTensor");
	tr(",\"tensor\":%lld,\"dtype\":%d,\"format\":%d", t ? t->id : 0LL, (int)dataType, (int)format);
	tr_i64s("shape", viewDims, viewDims ? viewDimsNum : 0);
	tr_i64s("strides", stride, stride ? viewDimsNum : 0);
	tr(",\"offset\":%lld", (long long)offset);
	tr_i64s("storage", storageDims, storageDims ? storageDimsNum : 0);
	tr(",\"addr\":%llu", (unsigned long long)(uintptr_t)tensorData);
	tr_end(rc);
	fake_unlock();
	return t;
}

aclTensor *fake_live_tensor(const aclTensor *t) {
	return (t && t->magic == TENSOR_MAGIC) ? (aclTensor *)t : NULL;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
	fake_lock();
	aclTensor *t = live_tensor(tensor);
	int rc = fake_injected("aclDestroyTensor");
	if (!rc && !t) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclDestroyTensor: not a live tensor");
	}
	if (!rc && t->in_list) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclDestroyTensor: tensor %lld belongs to a tensor list; destroy the list", t->id);
	}
	long long id = t ? t->id : 0;
	if (!rc) {
		t->magic = 0;
		free(t);
		live_tensors--;
	}
	tr_begin("aclDestroyTensor");
	tr(",\"tensor\":%lld", id);
	tr_end(rc);
	fake_unlock();
	return rc;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
	fake_lock();
	aclScalar *s = NULL;
	if (value && dtype_size(dataType)) {
		s = calloc(1, sizeof *s);
		s->magic = SCALAR_MAGIC;
		s->dtype = dataType;
		switch (dataType) {
		case ACL_FLOAT: s->v = *(float *)value; break;
		case ACL_DOUBLE: s->v = *(double *)value; break;
		case ACL_INT32: s->v = *(int32_t *)value; break;
		case ACL_INT64: s->v = (double)*(int64_t *)value; break;
		case ACL_UINT8: s->v = *(uint8_t *)value; break;
		case ACL_INT8: s->v = *(int8_t *)value; break;
		default: s->v = 0;
		}
		live_scalars++;
	} else {
		set_err("aclCreateScalar: null value or bad type");
	}
	tr_begin("aclCreateScalar");
	/* JSON has no infinities or NaN: those values are traced as strings */
	if (!s || isfinite(s->v)) tr(",\"dtype\":%d,\"value\":%.17g", (int)dataType, s ? s->v : 0.0);
	else tr(",\"dtype\":%d,\"value\":\"%g\"", (int)dataType, s->v);
	tr_end(s ? 0 : ACLNN_ERR_PARAM_INVALID);
	fake_unlock();
	return s;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
	fake_lock();
	int rc = (scalar && scalar->magic == SCALAR_MAGIC) ? 0 : ACLNN_ERR_PARAM_INVALID;
	if (!rc) {
		((aclScalar *)scalar)->magic = 0;
		free((void *)scalar);
		live_scalars--;
	}
	tr_begin("aclDestroyScalar");
	tr_end(rc);
	fake_unlock();
	return rc;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
	fake_lock();
	aclIntArray *a = NULL;
	if ((value || size == 0) && size <= 64) {
		a = calloc(1, sizeof *a);
		a->magic = INTARRAY_MAGIC;
		a->n = size;
		for (uint64_t i = 0; i < size; i++) a->v[i] = value[i];
		live_arrays++;
	}
	tr_begin("aclCreateIntArray");
	tr_i64s("value", value, value ? size : 0);
	tr_end(a ? 0 : ACLNN_ERR_PARAM_INVALID);
	fake_unlock();
	return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
	fake_lock();
	int rc = (array && array->magic == INTARRAY_MAGIC) ? 0 : ACLNN_ERR_PARAM_INVALID;
	if (!rc) {
		((aclIntArray *)array)->magic = 0;
		free((void *)array);
		live_arrays--;
	}
	tr_begin("aclDestroyIntArray");
	tr_end(rc);
	fake_unlock();
	return rc;
}

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
	fake_lock();
	aclTensorList *l = NULL;
	int ok = value && size > 0 && size <= 16;
	for (uint64_t i = 0; ok && i < size; i++) ok = live_tensor(value[i]) != NULL;
	if (ok) {
		l = calloc(1, sizeof *l);
		l->magic = TENSORLIST_MAGIC;
		l->n = size;
		for (uint64_t i = 0; i < size; i++) {
			l->v[i] = (aclTensor *)value[i];
			l->v[i]->in_list = 1;
		}
		live_lists++;
	} else {
		set_err("aclCreateTensorList: 1..16 live tensors required");
	}
	tr_begin("aclCreateTensorList");
	tr(",\"tensors\":[");
	for (uint64_t i = 0; ok && i < size; i++) tr(i ? ",%lld" : "%lld", value[i]->id);
	tr("]");
	tr_end(l ? 0 : ACLNN_ERR_PARAM_INVALID);
	fake_unlock();
	return l;
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
	fake_lock();
	int rc = (array && array->magic == TENSORLIST_MAGIC) ? 0 : ACLNN_ERR_PARAM_INVALID;
	if (!rc) {
		/* a list owns its tensors */
		for (uint64_t i = 0; i < array->n; i++) {
			array->v[i]->magic = 0;
			free(array->v[i]);
			live_tensors--;
		}
		((aclTensorList *)array)->magic = 0;
		free((void *)array);
		live_lists--;
	}
	tr_begin("aclDestroyTensorList");
	tr_end(rc);
	fake_unlock();
	return rc;
}


/* ---------------- phase 1 ---------------- */


void fake_call_begin(call *c, const char *fn) {
	c->fn = fn;
	c->rc = fake_injected(fn);
	c->ex = calloc(1, sizeof *c->ex);
	c->ex->arith = fake_arith();
	tr_begin(fn);
}

/* records tensor argument key; required tensors must be live */
const aclTensor *fake_arg(call *c, const char *key, const aclTensor *t, int required) {
	aclTensor *lt = live_tensor(t);
	tr(",\"%s\":%lld", key, lt ? lt->id : 0LL);
	if (c->rc) return lt;
	if (t && !lt) {
		c->rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: %s is not a live tensor (destroyed?)", c->fn, key);
	} else if (!t && required) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: required tensor %s is null", c->fn, key);
	}
	if (lt && c->ex->nranges < 16) {
		byte_range(lt, &c->ex->lo[c->ex->nranges], &c->ex->hi[c->ex->nranges]);
		c->ex->nranges++;
	}
	/* the snapshot phase 2 computes on: the descriptor as it is now */
	if (c->ex->nt < EX_TENSORS) {
		aclTensor *slot = &c->ex->t[c->ex->nt++];
		if (lt) *slot = *lt;
		else memset(slot, 0, sizeof *slot);
	} else if (!c->rc) {
		c->rc = ACLNN_ERR_INNER;
		set_err("%s: more tensor arguments than the emulator keeps", c->fn);
	}
	return lt;
}

void fake_list_arg(call *c, const char *key, const aclTensorList *l) {
	int ok = l && l->magic == TENSORLIST_MAGIC;
	tr(",\"%s\":[", key);
	for (uint64_t i = 0; ok && i < l->n; i++) {
		tr(i ? ",%lld" : "%lld", l->v[i]->id);
		int which = strcmp(key, "value") == 0;
		if (i < EX_LIST) {
			c->ex->l[which][i] = *l->v[i];
			c->ex->nl[which] = (int)i + 1;
		} else if (!c->rc) {
			c->rc = ACLNN_ERR_INNER;
			set_err("%s: %s has more tensors than the emulator keeps", c->fn, key);
		}
		if (c->ex->nranges < 16) {
			byte_range(l->v[i], &c->ex->lo[c->ex->nranges], &c->ex->hi[c->ex->nranges]);
			c->ex->nranges++;
		}
	}
	tr("]");
	if (!c->rc && !ok) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: %s is not a tensor list", c->fn, key);
	}
}

void fake_check(call *c, int cond, const char *fmt, ...) {
	if (c->rc || cond) return;
	c->rc = ACLNN_ERR_PARAM_INVALID;
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	set_err("%s: %s", c->fn, buf);
}

int fake_same_shape(const aclTensor *a, const aclTensor *b) {
	if (!a || !b || a->ndim != b->ndim) return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->dims[i] != b->dims[i]) return 0;
	return 1;
}

/* b broadcasts to out (numpy rules, right-aligned) */
int fake_broadcasts(const aclTensor *b, const aclTensor *out) {
	if (!b || !out || b->ndim > out->ndim) return 0;
	for (int i = 1; i <= b->ndim; i++) {
		int64_t x = b->dims[b->ndim - i], y = out->dims[out->ndim - i];
		if (x != y && x != 1) return 0;
	}
	return 1;
}

aclnnStatus fake_call_end(call *c, const char *op, uint64_t *workspaceSize, aclOpExecutor **executor) {
	if (!c->rc && (!workspaceSize || !executor)) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: workspaceSize and executor must not be null", c->fn);
	}
	if (!c->rc) c->rc = fake_exec_register(c->ex, c->fn, op);
	if (!c->rc) {
		*workspaceSize = c->ex->ws;
		*executor = c->ex;
		tr(",\"exec\":%lld,\"ws\":%llu", c->ex->id, (unsigned long long)c->ex->ws);
	} else {
		free(c->ex);
	}
	tr_end(c->rc);
	fake_unlock();
	return c->rc;
}

aclnnStatus fake_unary(const char *fn, const char *op, const aclTensor *self, aclTensor *out, uint64_t *ws,
                         aclOpExecutor **ex) {
	call c;
	call_begin(&c, fn);
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	check(&c, same_shape(self, out), "out must have the shape of self");
	return call_end(&c, op, ws, ex);
}

aclnnStatus fake_binary(const char *fn, const char *op, const aclTensor *self, const aclTensor *other,
                          const aclScalar *alpha, aclTensor *out, uint64_t *ws, aclOpExecutor **ex) {
	call c;
	call_begin(&c, fn);
	self = arg(&c, "self", self, 1);
	other = arg(&c, "other", other, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	if (alpha) tr(",\"alpha\":%.17g", alpha->v);
	c.ex->f[0] = alpha ? alpha->v : 1;
	check(&c, broadcasts(self, out) && broadcasts(other, out), "self and other must broadcast to out");
	return call_end(&c, op, ws, ex);
}

/* a scalar's value; non-finite values are traced as strings (JSON has no
 * infinities) */
int fake_scalar_arg(call *c, const char *key, const aclScalar *v, double *out) {
	int ok = v && v->magic == SCALAR_MAGIC;
	if (ok && isfinite(v->v)) tr(",\"%s\":%.17g", key, v->v);
	else if (ok) tr(",\"%s\":\"%g\"", key, v->v);
	*out = ok ? v->v : 0;
	if (!c->rc && !ok) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: %s is not a scalar", c->fn, key);
	}
	return ok;
}
