//go:build cann

#include "binding.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The function table: one pointer per declared function, typed from its
 * prototype in irtool_acl.h. */
static struct {
#define IRT_FIELD(name, req) __typeof__(&name) name;
	IRT_ACL_FUNCS(IRT_FIELD)
#undef IRT_FIELD
} F;

int irt_dlopen(const char *path, char *err, int errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, (size_t)errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
#define IRT_RESOLVE(name, req) \
	if (F.name == NULL) F.name = (__typeof__(&name))dlsym(h, #name);
	IRT_ACL_FUNCS(IRT_RESOLVE)
#undef IRT_RESOLVE
	return 0;
}

const char *irt_missing_required(void) {
#define IRT_REQ(name, req) \
	if (req && F.name == NULL) return #name;
	IRT_ACL_FUNCS(IRT_REQ)
#undef IRT_REQ
	return NULL;
}

int irt_has(const char *fn) {
#define IRT_HAS(name, req) \
	if (strcmp(fn, #name) == 0) return F.name != NULL;
	IRT_ACL_FUNCS(IRT_HAS)
#undef IRT_HAS
	return 0;
}

/* irtool's emulator (testdata/fakeacl) exports its control functions */
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

/* Roles of irt_args per operator:
 *   RMSNORM      t: x gamma y rstd                       f0 eps
 *   ADDRMSNORM   t: x1 x2 gamma y rstd xOut              f0 eps
 *   MUL          t: self other out
 *   INPLACEMUL   t: selfRef other
 *   MULS         t: self out          s: other
 *   ADD          t: self other out    s: alpha
 *   MATMUL/MM/BMM t: self mat2 out                       i0 cubeMathType
 *   WQBMM        t: x weight antiquantScale y            i0 antiquantGroupSize
 *   ROPE         t: x cos sin out                        i0 mode
 *   SOFTMAX      t: self out                             i0 dim
 *   SILU/COS/SIN t: self out
 *   SWIGLU       t: x out                                i0 dim
 *   CAST         t: self out                             i0 dtype
 *   INPLACECOPY  t: selfRef src
 *   INDEXCOPY    t: selfRef index source                 i0 dim
 *   GATHERV2     t: self index out                       i0 dim
 *   FIA          t: query pseShift attenMask attentionOut  l: key value
 *                f0 scaleValue  i0 numHeads i1 preTokens i2 nextTokens
 *                i3 numKeyValueHeads i4 sparseMode i5 innerPrecise  layout
 *   INPLACEADD   t: selfRef other     s: alpha
 *   DIV          t: self other out
 *   CAT          t: out               l0: tensors           i0 dim
 *   GELU         t: self out
 *   REDUCESUM    t: self out          s: dims (aclIntArray*) i0 keepDims i1 dtype
 *   TOPK         t: self valuesOut indicesOut             i0 k i1 dim i2 largest i3 sorted
 *   GESCALAR     t: self out          s: other
 *   MASKEDFILL   t: selfRef mask      s: value
 *   ABS          t: self out
 *   AMAX         t: self out          s: dim (aclIntArray*) i0 keepDim
 *   ROUND        t: self out
 */
#define T(k) ((aclTensor *)a->t[k])

int irt_op_available(int op) {
	switch (op) {
	case IRT_RMSNORM: return F.aclnnRmsNormGetWorkspaceSize && F.aclnnRmsNorm;
	case IRT_ADDRMSNORM: return F.aclnnAddRmsNormGetWorkspaceSize && F.aclnnAddRmsNorm;
	case IRT_MUL: return F.aclnnMulGetWorkspaceSize && F.aclnnMul;
	case IRT_INPLACEMUL: return F.aclnnInplaceMulGetWorkspaceSize && F.aclnnInplaceMul;
	case IRT_MULS: return F.aclnnMulsGetWorkspaceSize && F.aclnnMuls;
	case IRT_ADD: return F.aclnnAddGetWorkspaceSize && F.aclnnAdd;
	case IRT_MATMUL: return F.aclnnMatmulGetWorkspaceSize && F.aclnnMatmul;
	case IRT_MM: return F.aclnnMmGetWorkspaceSize && F.aclnnMm;
	case IRT_BMM: return F.aclnnBatchMatMulGetWorkspaceSize && F.aclnnBatchMatMul;
	case IRT_WQBMM: return F.aclnnWeightQuantBatchMatmulV2GetWorkspaceSize && F.aclnnWeightQuantBatchMatmulV2;
	case IRT_ROPE: return F.aclnnRotaryPositionEmbeddingGetWorkspaceSize && F.aclnnRotaryPositionEmbedding;
	case IRT_SOFTMAX: return F.aclnnSoftmaxGetWorkspaceSize && F.aclnnSoftmax;
	case IRT_SILU: return F.aclnnSiluGetWorkspaceSize && F.aclnnSilu;
	case IRT_COS: return F.aclnnCosGetWorkspaceSize && F.aclnnCos;
	case IRT_SIN: return F.aclnnSinGetWorkspaceSize && F.aclnnSin;
	case IRT_SWIGLU: return F.aclnnSwiGluGetWorkspaceSize && F.aclnnSwiGlu;
	case IRT_CAST: return F.aclnnCastGetWorkspaceSize && F.aclnnCast;
	case IRT_INPLACECOPY: return F.aclnnInplaceCopyGetWorkspaceSize && F.aclnnInplaceCopy;
	case IRT_INDEXCOPY: return F.aclnnInplaceIndexCopyGetWorkspaceSize && F.aclnnInplaceIndexCopy;
	case IRT_GATHERV2: return F.aclnnGatherV2GetWorkspaceSize && F.aclnnGatherV2;
	case IRT_FIA: return F.aclnnFusedInferAttentionScoreV2GetWorkspaceSize && F.aclnnFusedInferAttentionScoreV2;
	case IRT_INPLACEADD: return F.aclnnInplaceAddGetWorkspaceSize && F.aclnnInplaceAdd;
	case IRT_DIV: return F.aclnnDivGetWorkspaceSize && F.aclnnDiv;
	case IRT_CAT: return F.aclnnCatGetWorkspaceSize && F.aclnnCat;
	case IRT_GELU: return F.aclnnGeluGetWorkspaceSize && F.aclnnGelu;
	case IRT_REDUCESUM: return F.aclnnReduceSumGetWorkspaceSize && F.aclnnReduceSum;
	case IRT_TOPK: return F.aclnnTopkGetWorkspaceSize && F.aclnnTopk;
	case IRT_GESCALAR: return F.aclnnGeScalarGetWorkspaceSize && F.aclnnGeScalar;
	case IRT_MASKEDFILL: return F.aclnnInplaceMaskedFillScalarGetWorkspaceSize && F.aclnnInplaceMaskedFillScalar;
	case IRT_ABS: return F.aclnnAbsGetWorkspaceSize && F.aclnnAbs;
	case IRT_AMAX: return F.aclnnAmaxGetWorkspaceSize && F.aclnnAmax;
	case IRT_ROUND: return F.aclnnRoundGetWorkspaceSize && F.aclnnRound;
	}
	return 0;
}

aclnnStatus irt_workspace(int op, const irt_args *a, uint64_t *ws, uintptr_t *exec) {
	aclOpExecutor *ex = NULL;
	aclnnStatus rc = IRT_NOT_LOADED;
	if (!irt_op_available(op)) return rc;
	switch (op) {
	case IRT_RMSNORM:
		rc = F.aclnnRmsNormGetWorkspaceSize(T(0), T(1), a->f[0], T(2), T(3), ws, &ex);
		break;
	case IRT_ADDRMSNORM:
		rc = F.aclnnAddRmsNormGetWorkspaceSize(T(0), T(1), T(2), a->f[0], T(3), T(4), T(5), ws, &ex);
		break;
	case IRT_MUL:
		rc = F.aclnnMulGetWorkspaceSize(T(0), T(1), T(2), ws, &ex);
		break;
	case IRT_INPLACEMUL:
		rc = F.aclnnInplaceMulGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_MULS:
		rc = F.aclnnMulsGetWorkspaceSize(T(0), (const aclScalar *)a->s, T(1), ws, &ex);
		break;
	case IRT_ADD:
		rc = F.aclnnAddGetWorkspaceSize(T(0), T(1), (const aclScalar *)a->s, T(2), ws, &ex);
		break;
	case IRT_MATMUL:
		rc = F.aclnnMatmulGetWorkspaceSize(T(0), T(1), T(2), (int8_t)a->i[0], ws, &ex);
		break;
	case IRT_MM:
		rc = F.aclnnMmGetWorkspaceSize(T(0), T(1), T(2), (int8_t)a->i[0], ws, &ex);
		break;
	case IRT_BMM:
		rc = F.aclnnBatchMatMulGetWorkspaceSize(T(0), T(1), T(2), (int8_t)a->i[0], ws, &ex);
		break;
	case IRT_WQBMM:
		rc = F.aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(T(0), T(1), T(2), NULL, NULL, NULL, NULL, (int)a->i[0],
		                                                     T(3), ws, &ex);
		break;
	case IRT_ROPE:
		rc = F.aclnnRotaryPositionEmbeddingGetWorkspaceSize(T(0), T(1), T(2), a->i[0], T(3), ws, &ex);
		break;
	case IRT_SOFTMAX:
		rc = F.aclnnSoftmaxGetWorkspaceSize(T(0), a->i[0], T(1), ws, &ex);
		break;
	case IRT_SILU:
		rc = F.aclnnSiluGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_COS:
		rc = F.aclnnCosGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_SIN:
		rc = F.aclnnSinGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_SWIGLU:
		rc = F.aclnnSwiGluGetWorkspaceSize(T(0), a->i[0], T(1), ws, &ex);
		break;
	case IRT_CAST:
		rc = F.aclnnCastGetWorkspaceSize(T(0), (aclDataType)a->i[0], T(1), ws, &ex);
		break;
	case IRT_INPLACECOPY:
		rc = F.aclnnInplaceCopyGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_INDEXCOPY:
		rc = F.aclnnInplaceIndexCopyGetWorkspaceSize(T(0), a->i[0], T(1), T(2), ws, &ex);
		break;
	case IRT_GATHERV2:
		rc = F.aclnnGatherV2GetWorkspaceSize(T(0), a->i[0], T(1), T(2), ws, &ex);
		break;
	case IRT_FIA: {
		char layout[8];
		memcpy(layout, a->layout, sizeof layout);
		layout[7] = 0;
		rc = F.aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
		    T(0), (const aclTensorList *)a->l[0], (const aclTensorList *)a->l[1], T(1), T(2), NULL, NULL, NULL, NULL,
		    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, a->i[0], a->f[0],
		    a->i[1], a->i[2], layout, a->i[3], a->i[4], a->i[5], 0, 0, false, 0, 0, T(3), NULL, ws, &ex);
		break;
	}
	case IRT_INPLACEADD:
		rc = F.aclnnInplaceAddGetWorkspaceSize(T(0), T(1), (const aclScalar *)a->s, ws, &ex);
		break;
	case IRT_DIV:
		rc = F.aclnnDivGetWorkspaceSize(T(0), T(1), T(2), ws, &ex);
		break;
	case IRT_CAT:
		rc = F.aclnnCatGetWorkspaceSize((const aclTensorList *)a->l[0], a->i[0], T(0), ws, &ex);
		break;
	case IRT_GELU:
		rc = F.aclnnGeluGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_REDUCESUM:
		rc = F.aclnnReduceSumGetWorkspaceSize(T(0), (const aclIntArray *)a->s, a->i[0] != 0, (aclDataType)a->i[1],
		                                      T(1), ws, &ex);
		break;
	case IRT_TOPK:
		rc = F.aclnnTopkGetWorkspaceSize(T(0), a->i[0], a->i[1], a->i[2] != 0, a->i[3] != 0, T(1), T(2), ws, &ex);
		break;
	case IRT_GESCALAR:
		rc = F.aclnnGeScalarGetWorkspaceSize(T(0), (const aclScalar *)a->s, T(1), ws, &ex);
		break;
	case IRT_MASKEDFILL:
		rc = F.aclnnInplaceMaskedFillScalarGetWorkspaceSize(T(0), T(1), (const aclScalar *)a->s, ws, &ex);
		break;
	case IRT_ABS:
		rc = F.aclnnAbsGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
	case IRT_AMAX:
		rc = F.aclnnAmaxGetWorkspaceSize(T(0), (const aclIntArray *)a->s, a->i[0] != 0, T(1), ws, &ex);
		break;
	case IRT_ROUND:
		rc = F.aclnnRoundGetWorkspaceSize(T(0), T(1), ws, &ex);
		break;
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
	case IRT_RMSNORM: return F.aclnnRmsNorm(w, wsSize, ex, s);
	case IRT_ADDRMSNORM: return F.aclnnAddRmsNorm(w, wsSize, ex, s);
	case IRT_MUL: return F.aclnnMul(w, wsSize, ex, s);
	case IRT_INPLACEMUL: return F.aclnnInplaceMul(w, wsSize, ex, s);
	case IRT_MULS: return F.aclnnMuls(w, wsSize, ex, s);
	case IRT_ADD: return F.aclnnAdd(w, wsSize, ex, s);
	case IRT_MATMUL: return F.aclnnMatmul(w, wsSize, ex, s);
	case IRT_MM: return F.aclnnMm(w, wsSize, ex, s);
	case IRT_BMM: return F.aclnnBatchMatMul(w, wsSize, ex, s);
	case IRT_WQBMM: return F.aclnnWeightQuantBatchMatmulV2(w, wsSize, ex, s);
	case IRT_ROPE: return F.aclnnRotaryPositionEmbedding(w, wsSize, ex, s);
	case IRT_SOFTMAX: return F.aclnnSoftmax(w, wsSize, ex, s);
	case IRT_SILU: return F.aclnnSilu(w, wsSize, ex, s);
	case IRT_COS: return F.aclnnCos(w, wsSize, ex, s);
	case IRT_SIN: return F.aclnnSin(w, wsSize, ex, s);
	case IRT_SWIGLU: return F.aclnnSwiGlu(w, wsSize, ex, s);
	case IRT_CAST: return F.aclnnCast(w, wsSize, ex, s);
	case IRT_INPLACECOPY: return F.aclnnInplaceCopy(w, wsSize, ex, s);
	case IRT_INDEXCOPY: return F.aclnnInplaceIndexCopy(w, wsSize, ex, s);
	case IRT_GATHERV2: return F.aclnnGatherV2(w, wsSize, ex, s);
	case IRT_FIA: return F.aclnnFusedInferAttentionScoreV2(w, wsSize, ex, s);
	case IRT_INPLACEADD: return F.aclnnInplaceAdd(w, wsSize, ex, s);
	case IRT_DIV: return F.aclnnDiv(w, wsSize, ex, s);
	case IRT_CAT: return F.aclnnCat(w, wsSize, ex, s);
	case IRT_GELU: return F.aclnnGelu(w, wsSize, ex, s);
	case IRT_REDUCESUM: return F.aclnnReduceSum(w, wsSize, ex, s);
	case IRT_TOPK: return F.aclnnTopk(w, wsSize, ex, s);
	case IRT_GESCALAR: return F.aclnnGeScalar(w, wsSize, ex, s);
	case IRT_MASKEDFILL: return F.aclnnInplaceMaskedFillScalar(w, wsSize, ex, s);
	case IRT_ABS: return F.aclnnAbs(w, wsSize, ex, s);
	case IRT_AMAX: return F.aclnnAmax(w, wsSize, ex, s);
	case IRT_ROUND: return F.aclnnRound(w, wsSize, ex, s);
	}
	return IRT_NOT_LOADED;
}
