//go:build cann

/*
 * binding.h: the C half of package acl. The CANN libraries are opened with
 * dlopen and every function of IRT_ACL_FUNCS and both phases of every
 * operator of IRT_ACLNN_OPS (irtool_acl.h) are resolved into a
 * table (binding.c); the
 * irt_* wrappers below are what Go calls (cgo cannot call through a function
 * pointer). Device addresses and handles cross the boundary as uintptr_t so
 * that Go never holds them as pointers.
 */
#ifndef IRTOOL_BINDING_H
#define IRTOOL_BINDING_H

#include <stdint.h>

#include "irtool_acl.h"

/* loading */
int irt_dlopen(const char *path, char *err, int errlen);
const char *irt_missing_required(void);
int irt_has(const char *name);
int irt_emulated(void);

/* status used when a function is not resolved */
#define IRT_NOT_LOADED (-424242)

/* error text of the last failed call on this thread, or NULL */
const char *irt_errmsg(void);

/* runtime calls */
aclError irt_aclInit(void);
aclError irt_aclrtGetDeviceCount(uint32_t *count);
aclError irt_aclrtSetDevice(int32_t id);
aclError irt_aclrtResetDevice(int32_t id);
const char *irt_aclrtGetSocName(void);
aclError irt_aclrtGetMemInfo(size_t *freeMem, size_t *total);
aclError irt_aclrtCreateStream(uintptr_t *s);
aclError irt_aclrtDestroyStream(uintptr_t s);
aclError irt_aclrtSynchronizeStream(uintptr_t s);
aclError irt_aclrtSynchronizeDevice(void);
aclError irt_ensure_device(int32_t id);
aclError irt_aclrtMalloc(uintptr_t *p, size_t size);
aclError irt_aclrtFree(uintptr_t p);
void *irt_aclrtMallocHost(size_t size, aclError *rc);
aclError irt_aclrtFreeHost(void *p);
aclError irt_h2d(uintptr_t dst, const void *src, size_t count);
aclError irt_d2h(void *dst, uintptr_t src, size_t count);
aclError irt_h2d_async(uintptr_t dst, const void *src, size_t count, uintptr_t s);
aclError irt_d2h_async(void *dst, uintptr_t src, size_t count, uintptr_t s);
aclError irt_aclmdlRICaptureBegin(uintptr_t s, int mode);
aclError irt_aclmdlRICaptureEnd(uintptr_t s, uintptr_t *ri);
aclError irt_aclmdlRIExecuteAsync(uintptr_t ri, uintptr_t s);
aclError irt_aclmdlRIDestroy(uintptr_t ri);

/* aclnn objects */
uintptr_t irt_aclCreateTensor(const int64_t *dims, uint64_t n, int dtype, const int64_t *strides, int64_t offset,
                              int format, const int64_t *storage, uint64_t nstorage, uintptr_t data);
aclnnStatus irt_aclDestroyTensor(uintptr_t t);
uintptr_t irt_aclCreateScalarF32(float v);
uintptr_t irt_aclCreateScalarF64(double v);
uintptr_t irt_aclCreateScalarU8(uint8_t v);
aclnnStatus irt_aclDestroyScalar(uintptr_t s);
uintptr_t irt_aclCreateTensorList(const uintptr_t *ts, uint64_t n);
aclnnStatus irt_aclDestroyTensorList(uintptr_t l);
uintptr_t irt_aclCreateIntArray(const int64_t *v, uint64_t n);
aclnnStatus irt_aclDestroyIntArray(uintptr_t a);

/* aclnn operators: one argument block, one dispatcher per phase. The ids
 * are IRT_<ID> of each entry of IRT_ACLNN_OPS (irtool_acl.h), which
 * also says which fields of irt_args each operator reads. */
enum irt_op {
#define IRT_OP_ID(id, name, params, args) IRT_##id,
	IRT_ACLNN_OPS(IRT_OP_ID)
#undef IRT_OP_ID
	IRT_NOPS
};

typedef struct {
	uintptr_t t[8]; /* aclTensor* by role, 0 = absent */
	uintptr_t l[2]; /* aclTensorList* */
	uintptr_t s;    /* aclScalar* */
	double f[2];
	int64_t i[8];
	char layout[8];
} irt_args;

int irt_op_available(int op);
const char *irt_op_name(int op); /* "aclnnXxx", or NULL for an unknown id */
aclnnStatus irt_workspace(int op, const irt_args *a, uint64_t *ws, uintptr_t *exec);
aclnnStatus irt_run(int op, uintptr_t ws, uint64_t wsSize, uintptr_t exec, uintptr_t stream);

#endif
