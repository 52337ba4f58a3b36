//go:build cann

#include "binding.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* IRT_EACH_FN expands IRT_FN(name, required) for every function the
 * binding resolves: those of IRT_ACL_FUNCS and both phases of every
 * operator of IRT_ACLNN_OPS (optional). */
#define IRT_OP_FNS(id, name, params, args) IRT_FN(name##GetWorkspaceSize, 0) IRT_FN(name, 0)
#define IRT_EACH_FN IRT_ACL_FUNCS(IRT_FN) IRT_ACLNN_OPS(IRT_OP_FNS)

/* The function table: one pointer per declared function, typed from its
 * prototype in irtool_acl.h. */
static struct {
#define IRT_FN(name, req) __typeof__(&name) name;
	IRT_EACH_FN
#undef IRT_FN
} F;

int irt_dlopen(const char *path, char *err, int errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, (size_t)errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
#define IRT_FN(name, req) \
	if (F.name == NULL) F.name = (__typeof__(&name))dlsym(h, #name);
	IRT_EACH_FN
#undef IRT_FN
	return 0;
}

const char *irt_missing_required(void) {
#define IRT_FN(name, req) \
	if (req && F.name == NULL) return #name;
	IRT_EACH_FN
#undef IRT_FN
	return NULL;
}

int irt_has(const char *fn) {
#define IRT_FN(name, req) \
	if (strcmp(fn, #name) == 0) return F.name != NULL;
	IRT_EACH_FN
#undef IRT_FN
	return 0;
}

/* irtool's emulator (fakeacl/) exports its control functions */
int irt_emulated(void) { return dlsym(RTLD_DEFAULT, "irtfake_trace") != NULL; }

const char *irt_errmsg(void) { return F.aclGetRecentErrMsg ? F.aclGetRecentErrMsg() : NULL; }

#define CALL(name, ...) (F.name ? F.name(__VA_ARGS__) : IRT_NOT_LOADED)
#define P(x) ((void *)(x))

aclError irt_aclInit(void) { return CALL(aclInit, NULL); }
aclError irt_aclrtGetDeviceCount(uint32_t *count) { return CALL(aclrtGetDeviceCount, count); }
aclError irt_aclrtSetDevice(int32_t id) { return CALL(aclrtSetDevice, id); }
aclError irt_aclrtResetDevice(int32_t id) { return CALL(aclrtResetDevice, id); }
const char *irt_aclrtGetSocName(void) { return F.aclrtGetSocName ? F.aclrtGetSocName() : NULL; }
aclError irt_aclrtGetMemInfo(size_t *freeMem, size_t *total) { return CALL(aclrtGetMemInfo, ACL_HBM_MEM, freeMem, total); }
aclError irt_aclrtCreateStream(uintptr_t *s) {
	aclrtStream st = NULL;
	aclError rc = CALL(aclrtCreateStream, &st);
	*s = (uintptr_t)st;
	return rc;
}
aclError irt_aclrtDestroyStream(uintptr_t s) { return CALL(aclrtDestroyStream, P(s)); }
aclError irt_aclrtSynchronizeStream(uintptr_t s) { return CALL(aclrtSynchronizeStream, P(s)); }
aclError irt_aclrtSynchronizeDevice(void) { return CALL(aclrtSynchronizeDevice); }

/* ACL binds the current device to the calling thread; cache it per thread
 * as ggml-cann does and set it only when it changes. */
static __thread int cur_device = -1;
aclError irt_ensure_device(int32_t id) {
	if (cur_device == id) return ACL_SUCCESS;
	aclError rc = CALL(aclrtSetDevice, id);
	if (rc == ACL_SUCCESS) cur_device = id;
	return rc;
}
aclError irt_aclrtMalloc(uintptr_t *p, size_t size) {
	void *d = NULL;
	aclError rc = CALL(aclrtMalloc, &d, size, ACL_MEM_MALLOC_HUGE_FIRST);
	*p = (uintptr_t)d;
	return rc;
}
aclError irt_aclrtFree(uintptr_t p) { return CALL(aclrtFree, P(p)); }
void *irt_aclrtMallocHost(size_t size, aclError *rc) {
	void *h = NULL;
	*rc = CALL(aclrtMallocHost, &h, size);
	return h;
}
aclError irt_aclrtFreeHost(void *p) { return CALL(aclrtFreeHost, p); }
aclError irt_h2d(uintptr_t dst, const void *src, size_t count) {
	return CALL(aclrtMemcpy, P(dst), count, src, count, ACL_MEMCPY_HOST_TO_DEVICE);
}
aclError irt_d2h(void *dst, uintptr_t src, size_t count) {
	return CALL(aclrtMemcpy, dst, count, (const void *)src, count, ACL_MEMCPY_DEVICE_TO_HOST);
}
aclError irt_h2d_async(uintptr_t dst, const void *src, size_t count, uintptr_t s) {
	return CALL(aclrtMemcpyAsync, P(dst), count, src, count, ACL_MEMCPY_HOST_TO_DEVICE, P(s));
}
aclError irt_d2h_async(void *dst, uintptr_t src, size_t count, uintptr_t s) {
	return CALL(aclrtMemcpyAsync, dst, count, (const void *)src, count, ACL_MEMCPY_DEVICE_TO_HOST, P(s));
}
aclError irt_aclmdlRICaptureBegin(uintptr_t s, int mode) {
	return CALL(aclmdlRICaptureBegin, P(s), (aclmdlRICaptureMode)mode);
}
aclError irt_aclmdlRICaptureEnd(uintptr_t s, uintptr_t *ri) {
	aclmdlRI r = NULL;
	aclError rc = CALL(aclmdlRICaptureEnd, P(s), &r);
	*ri = (uintptr_t)r;
	return rc;
}
aclError irt_aclmdlRIExecuteAsync(uintptr_t ri, uintptr_t s) { return CALL(aclmdlRIExecuteAsync, P(ri), P(s)); }
aclError irt_aclmdlRIDestroy(uintptr_t ri) { return CALL(aclmdlRIDestroy, P(ri)); }

uintptr_t irt_aclCreateTensor(const int64_t *dims, uint64_t n, int dtype, const int64_t *strides, int64_t offset,
                              int format, const int64_t *storage, uint64_t nstorage, uintptr_t data) {
	if (!F.aclCreateTensor) return 0;
	return (uintptr_t)F.aclCreateTensor(dims, n, (aclDataType)dtype, strides, offset, (aclFormat)format, storage,
	                                    nstorage, P(data));
}
aclnnStatus irt_aclDestroyTensor(uintptr_t t) { return CALL(aclDestroyTensor, (const aclTensor *)t); }
uintptr_t irt_aclCreateScalarF32(float v) {
	return F.aclCreateScalar ? (uintptr_t)F.aclCreateScalar(&v, ACL_FLOAT) : 0;
}
uintptr_t irt_aclCreateScalarF64(double v) {
	return F.aclCreateScalar ? (uintptr_t)F.aclCreateScalar(&v, ACL_DOUBLE) : 0;
}
uintptr_t irt_aclCreateScalarU8(uint8_t v) {
	return F.aclCreateScalar ? (uintptr_t)F.aclCreateScalar(&v, ACL_UINT8) : 0;
}
aclnnStatus irt_aclDestroyScalar(uintptr_t s) { return CALL(aclDestroyScalar, (const aclScalar *)s); }
uintptr_t irt_aclCreateTensorList(const uintptr_t *ts, uint64_t n) {
	const aclTensor *v[16];
	if (!F.aclCreateTensorList || n > 16) return 0;
	for (uint64_t i = 0; i < n; i++) v[i] = (const aclTensor *)ts[i];
	return (uintptr_t)F.aclCreateTensorList(v, n);
}
aclnnStatus irt_aclDestroyTensorList(uintptr_t l) { return CALL(aclDestroyTensorList, (const aclTensorList *)l); }
uintptr_t irt_aclCreateIntArray(const int64_t *v, uint64_t n) {
	return F.aclCreateIntArray ? (uintptr_t)F.aclCreateIntArray(v, n) : 0;
}
aclnnStatus irt_aclDestroyIntArray(uintptr_t a) { return CALL(aclDestroyIntArray, (const aclIntArray *)a); }

/* The arguments of IRT_ACLNN_OPS: the fields of irt_args *a. */
#define T(k) ((aclTensor *)a->t[k])
#define L(k) ((const aclTensorList *)a->l[k])
#define SCALAR ((const aclScalar *)a->s)
#define INTARRAY ((const aclIntArray *)a->s)
#define DBL(k) (a->f[k])
#define INT(k) (a->i[k])
#define BOOL(k) (a->i[k] != 0)
#define LAYOUT layout

int irt_op_available(int op) {
	switch (op) {
#define IRT_OP(id, name, params, args) \
	case IRT_##id: return F.name##GetWorkspaceSize && F.name;
		IRT_ACLNN_OPS(IRT_OP)
#undef IRT_OP
	}
	return 0;
}

const char *irt_op_name(int op) {
	switch (op) {
#define IRT_OP(id, name, params, args) \
	case IRT_##id: return #name;
		IRT_ACLNN_OPS(IRT_OP)
#undef IRT_OP
	}
	return NULL;
}

aclnnStatus irt_workspace(int op, const irt_args *a, uint64_t *ws, uintptr_t *exec) {
	aclOpExecutor *ex = NULL;
	aclnnStatus rc = IRT_NOT_LOADED;
	char layout[8];
	memcpy(layout, a->layout, sizeof layout);
	layout[7] = 0;
	if (!irt_op_available(op)) return rc;
	switch (op) {
#define IRT_OP(id, name, params, args) \
	case IRT_##id: rc = F.name##GetWorkspaceSize(IRT_UNPAREN args, ws, &ex); break;
		IRT_ACLNN_OPS(IRT_OP)
#undef IRT_OP
	}
	*exec = (uintptr_t)ex;
	return rc;
}

aclnnStatus irt_run(int op, uintptr_t ws, uint64_t wsSize, uintptr_t exec, uintptr_t stream) {
	aclOpExecutor *ex = (aclOpExecutor *)exec;
	aclrtStream s = P(stream);
	void *w = P(ws);
	if (!irt_op_available(op)) return IRT_NOT_LOADED;
	switch (op) {
#define IRT_OP(id, name, params, args) \
	case IRT_##id: return F.name(w, wsSize, ex, s);
		IRT_ACLNN_OPS(IRT_OP)
#undef IRT_OP
	}
	return IRT_NOT_LOADED;
}
