/*
 * irtool_acl.h: the part of CANN's C API that irtool calls, declared from
 * the documented signatures (hiascend.com CANN API reference: "AscendCL
 * runtime", "aclnn operator API", "15. model run instance management", which
 * also lists the error codes).
 *
 * It replaces acl/acl.h and the aclnn headers so that the package compiles on a
 * machine without the CANN toolkit. Nothing here links against CANN: the
 * binding loads libascendcl.so, libnnopbase.so and libopapi.so with dlopen
 * at run time and resolves every function named in IRT_ACL_FUNCS and
 * IRT_ACLNN_OPS below into a table typed from these prototypes, so a
 * prototype that disagreed with a call would not compile.
 *
 * irtool's emulator of CANN (runtime/acl/fakeacl) includes this header and
 * defines the same functions over host memory, so it is checked against the
 * same declarations.
 *
 * The enum values are CANN's ABI and must not change.
 */
#ifndef IRTOOL_ACL_H
#define IRTOOL_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- base types (acl_base.h, aclnn/acl_meta.h) ---- */

typedef int aclError;        /* runtime status, 0 = ACL_SUCCESS */
typedef int32_t aclnnStatus; /* aclnn status, 0 = success */
typedef void *aclrtStream;
typedef void *aclmdlRI; /* a captured model run instance */

typedef struct aclTensor aclTensor;
typedef struct aclScalar aclScalar;
typedef struct aclIntArray aclIntArray;
typedef struct aclTensorList aclTensorList;
typedef struct aclOpExecutor aclOpExecutor;

#define ACL_SUCCESS 0

/* Error codes the binding and the test double use [CANN docs: the aclError
 * list and the aclmdlRI capture API]. */
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_STREAM_CAPTURE_UNSUPPORTED 107024 /* event wait without record */
#define ACL_ERROR_RT_STREAM_CAPTURE_UNJOINED 107025
#define ACL_ERROR_RT_MODEL_CAPTURED 107026
#define ACL_ERROR_RT_STREAM_CAPTURED 107027 /* also: sync of a capturing stream */
#define ACL_ERROR_RT_EVENT_CAPTURED 107028
#define ACL_ERROR_RT_STREAM_NOT_CAPTURED 107029
#define ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT 107030 /* op not allowed in this capture mode */
#define ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT 107031 /* default stream used */
#define ACL_ERROR_RT_STREAM_CAPTURE_CONFLICT 107032
#define ACL_ERROR_RT_STREAM_TASK_GROUP_STATUS 107033
#define ACL_ERROR_RT_STREAM_TASK_GROUP_INTR 107034
#define ACL_ERROR_RT_STREAM_CAPTURE_WRONG_END 107036 /* End without Begin */
#define ACL_ERROR_RT_MODEL_RUNNING 107037            /* destroy while running */
#define ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD 107038
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_RESOURCE_ALLOC_FAIL 207005
#define ACL_ERROR_RT_DEVICE_OOM 207018
#define ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED 507903

/* aclnn status codes [DOC aclnn return codes]. */
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
/* a kernel fault on the device (illegal address, bad index), reported by
 * the runtime when the task runs */
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015

typedef enum {
	ACL_DT_UNDEFINED = -1,
	ACL_FLOAT = 0,
	ACL_FLOAT16 = 1,
	ACL_INT8 = 2,
	ACL_INT32 = 3,
	ACL_UINT8 = 4,
	ACL_INT16 = 6,
	ACL_UINT16 = 7,
	ACL_UINT32 = 8,
	ACL_INT64 = 9,
	ACL_UINT64 = 10,
	ACL_DOUBLE = 11,
	ACL_BOOL = 12,
	ACL_STRING = 13,
	ACL_COMPLEX64 = 16,
	ACL_COMPLEX128 = 17,
	ACL_BF16 = 27,
	ACL_INT4 = 29,
	ACL_UINT1 = 30,
	ACL_COMPLEX32 = 33,
} aclDataType;

typedef enum {
	ACL_FORMAT_UNDEFINED = -1,
	ACL_FORMAT_NCHW = 0,
	ACL_FORMAT_NHWC = 1,
	ACL_FORMAT_ND = 2,
	ACL_FORMAT_NC1HWC0 = 3,
	ACL_FORMAT_FRACTAL_Z = 4,
	ACL_FORMAT_FRACTAL_NZ = 29,
} aclFormat;

typedef enum aclrtMemMallocPolicy {
	ACL_MEM_MALLOC_HUGE_FIRST = 0,
	ACL_MEM_MALLOC_HUGE_ONLY = 1,
	ACL_MEM_MALLOC_NORMAL_ONLY = 2,
	ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
	ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
	ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
	ACL_MEMCPY_HOST_TO_HOST = 0,
	ACL_MEMCPY_HOST_TO_DEVICE = 1,
	ACL_MEMCPY_DEVICE_TO_HOST = 2,
	ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
} aclrtMemcpyKind;

typedef enum aclrtMemAttr {
	ACL_DDR_MEM = 0,
	ACL_HBM_MEM = 1,
	ACL_DDR_MEM_HUGE = 2,
	ACL_DDR_MEM_NORMAL = 3,
	ACL_HBM_MEM_HUGE = 4,
	ACL_HBM_MEM_NORMAL = 5,
} aclrtMemAttr;

typedef enum {
	ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0,
	ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL = 1,
	ACL_MODEL_RI_CAPTURE_MODE_RELAXED = 2,
} aclmdlRICaptureMode;

typedef enum {
	ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0,
	ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE = 1,
	ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED = 2,
} aclmdlRICaptureStatus;

/* ---- libascendcl: init, device, stream, memory [DOC AscendCL runtime] ---- */

aclError aclInit(const char *configPath);
aclError aclFinalize(void);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtGetDeviceCount(uint32_t *count);
const char *aclrtGetSocName(void);
aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtSynchronizeDevice(void);
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMallocHost(void **hostPtr, size_t size);
aclError aclrtFreeHost(void *hostPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream);
const char *aclGetRecentErrMsg(void);

/* ---- libascendcl: model run instance (ACL graph) [DOC section 15] ---- */

aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode);
aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus *status, aclmdlRI *modelRI);
aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI *modelRI);
aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream);
aclError aclmdlRIDestroy(aclmdlRI modelRI);

/* ---- libnnopbase: aclnn objects [DOC aclCreateTensor & co.] ---- */

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData);
aclnnStatus aclDestroyTensor(const aclTensor *tensor);
aclScalar *aclCreateScalar(void *value, aclDataType dataType);
aclnnStatus aclDestroyScalar(const aclScalar *scalar);
aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size);
aclnnStatus aclDestroyIntArray(const aclIntArray *array);
aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size);
aclnnStatus aclDestroyTensorList(const aclTensorList *array);

/* ---- libopapi: two-phase aclnn operators [DOC aclnnXxx pages] ----
 * Phase 1 (GetWorkspaceSize) checks the arguments and returns the workspace
 * size and a single-use executor; phase 2 enqueues the kernel on a stream.
 *
 * IRT_ACLNN_OPS is the one list of the operators irtool calls. An entry
 *
 *   X(ID, name, (parameters), (arguments))
 *
 * gives the binding's id (IRT_ID in enum irt_op, C.IRT_ID in Go), the
 * operator's name, the parameters of its phase 1 before workspaceSize and
 * executor (CANN's documented signature), and how binding.c fills them from
 * an irt_args *a: T(k) tensor k, L(k) tensor list k, SCALAR and INTARRAY
 * the object in a->s, DBL(k), INT(k) and BOOL(k) a->f[k], a->i[k] and
 * a->i[k] != 0, LAYOUT the layout string. From it come the prototypes
 * below, the function table the libraries are resolved into, the binding's
 * dispatch (binding.c) and the operator names Go reports; the emulator
 * (fakeacl/) defines each operator against these prototypes. Every phase 2
 * has the same shape, declared by IRT_ACLNN_RUN. */

#define IRT_ACLNN_OPS(X)                                                                                              \
	X(RMSNORM, aclnnRmsNorm,                                                                                      \
	  (const aclTensor *x, const aclTensor *gamma, double epsilon, const aclTensor *yOut,                         \
	   const aclTensor *rstdOut),                                                                                 \
	  (T(0), T(1), DBL(0), T(2), T(3)))                                                                           \
	X(ADDRMSNORM, aclnnAddRmsNorm,                                                                                \
	  (const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma, double epsilon, const aclTensor *yOut,   \
	   const aclTensor *rstdOut, const aclTensor *xOut),                                                          \
	  (T(0), T(1), T(2), DBL(0), T(3), T(4), T(5)))                                                               \
	X(MUL, aclnnMul, (const aclTensor *self, const aclTensor *other, aclTensor *out), (T(0), T(1), T(2)))        \
	X(INPLACEMUL, aclnnInplaceMul, (aclTensor *selfRef, const aclTensor *other), (T(0), T(1)))                   \
	X(MULS, aclnnMuls, (const aclTensor *self, const aclScalar *other, aclTensor *out), (T(0), SCALAR, T(1)))    \
	X(ADD, aclnnAdd, (const aclTensor *self, const aclTensor *other, const aclScalar *alpha, aclTensor *out),    \
	  (T(0), T(1), SCALAR, T(2)))                                                                                 \
	X(MATMUL, aclnnMatmul, (const aclTensor *self, const aclTensor *mat2, aclTensor *out, int8_t cubeMathType),  \
	  (T(0), T(1), T(2), (int8_t)INT(0)))                                                                         \
	X(MM, aclnnMm, (const aclTensor *self, const aclTensor *mat2, aclTensor *out, int8_t cubeMathType),          \
	  (T(0), T(1), T(2), (int8_t)INT(0)))                                                                         \
	X(BMM, aclnnBatchMatMul,                                                                                      \
	  (const aclTensor *self, const aclTensor *mat2, aclTensor *out, int8_t cubeMathType),                        \
	  (T(0), T(1), T(2), (int8_t)INT(0)))                                                                         \
	X(WQBMM, aclnnWeightQuantBatchMatmulV2,                                                                       \
	  (const aclTensor *x, const aclTensor *weight, const aclTensor *antiquantScale,                              \
	   const aclTensor *antiquantOffsetOptional, const aclTensor *quantScaleOptional,                             \
	   const aclTensor *quantOffsetOptional, const aclTensor *biasOptional, int antiquantGroupSize,               \
	   const aclTensor *y),                                                                                       \
	  (T(0), T(1), T(2), T(3), NULL, NULL, NULL, (int)INT(0), T(4)))                                              \
	X(ROPE, aclnnRotaryPositionEmbedding,                                                                         \
	  (const aclTensor *x, const aclTensor *cos, const aclTensor *sin, int64_t mode, aclTensor *out),             \
	  (T(0), T(1), T(2), INT(0), T(3)))                                                                           \
	X(SOFTMAX, aclnnSoftmax, (const aclTensor *self, int64_t dim, aclTensor *out), (T(0), INT(0), T(1)))         \
	X(SILU, aclnnSilu, (const aclTensor *self, aclTensor *out), (T(0), T(1)))                                    \
	X(COS, aclnnCos, (const aclTensor *self, aclTensor *out), (T(0), T(1)))                                      \
	X(SIN, aclnnSin, (const aclTensor *self, aclTensor *out), (T(0), T(1)))                                      \
	X(SWIGLU, aclnnSwiGlu, (const aclTensor *x, int64_t dim, const aclTensor *out), (T(0), INT(0), T(1)))        \
	X(CAST, aclnnCast, (const aclTensor *self, const aclDataType dtype, aclTensor *out),                         \
	  (T(0), (aclDataType)INT(0), T(1)))                                                                          \
	X(INPLACECOPY, aclnnInplaceCopy, (aclTensor *selfRef, const aclTensor *src), (T(0), T(1)))                   \
	X(INDEXCOPY, aclnnInplaceIndexCopy,                                                                           \
	  (aclTensor *selfRef, int64_t dim, const aclTensor *index, const aclTensor *source),                         \
	  (T(0), INT(0), T(1), T(2)))                                                                                 \
	X(GATHERV2, aclnnGatherV2, (const aclTensor *self, int64_t dim, const aclTensor *index, aclTensor *out),     \
	  (T(0), INT(0), T(1), T(2)))                                                                                 \
	X(FIA, aclnnFusedInferAttentionScoreV2,                                                                       \
	  (const aclTensor *query, const aclTensorList *key, const aclTensorList *value,                              \
	   const aclTensor *pseShiftOptional, const aclTensor *attenMaskOptional,                                     \
	   const aclIntArray *actualSeqLengthsOptional, const aclIntArray *actualSeqLengthsKvOptional,                \
	   const aclTensor *deqScale1Optional, const aclTensor *quantScale1Optional,                                  \
	   const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,                                  \
	   const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,                            \
	   const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,                             \
	   const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,                         \
	   const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,                   \
	   const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,               \
	   const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,                      \
	   const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens,  \
	   int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode,                       \
	   int64_t innerPrecise, int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag,                       \
	   int64_t keyAntiquantMode, int64_t valueAntiquantMode, const aclTensor *attentionOut,                       \
	   const aclTensor *softmaxLse),                                                                              \
	  (T(0), L(0), L(1), T(1), T(2), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,     \
	   NULL, NULL, NULL, NULL, NULL, NULL, NULL, INT(0), DBL(0), INT(1), INT(2), LAYOUT, INT(3), INT(4), INT(5),  \
	   0, 0, false, 0, 0, T(3), NULL))                                                                            \
	X(INPLACEADD, aclnnInplaceAdd, (aclTensor *selfRef, const aclTensor *other, const aclScalar *alpha),         \
	  (T(0), T(1), SCALAR))                                                                                       \
	X(DIV, aclnnDiv, (const aclTensor *self, const aclTensor *other, aclTensor *out), (T(0), T(1), T(2)))        \
	X(CAT, aclnnCat, (const aclTensorList *tensors, int64_t dim, aclTensor *out), (L(0), INT(0), T(0)))          \
	X(GELU, aclnnGelu, (const aclTensor *self, aclTensor *out), (T(0), T(1)))                                    \
	X(REDUCESUM, aclnnReduceSum,                                                                                  \
	  (const aclTensor *self, const aclIntArray *dims, bool keepDims, aclDataType dtype, aclTensor *out),         \
	  (T(0), INTARRAY, BOOL(0), (aclDataType)INT(1), T(1)))                                                       \
	X(TOPK, aclnnTopk,                                                                                            \
	  (const aclTensor *self, int64_t k, int64_t dim, bool largest, bool sorted, aclTensor *valuesOut,            \
	   aclTensor *indicesOut),                                                                                    \
	  (T(0), INT(0), INT(1), BOOL(2), BOOL(3), T(1), T(2)))                                                       \
	X(GESCALAR, aclnnGeScalar, (const aclTensor *self, const aclScalar *other, aclTensor *out),                  \
	  (T(0), SCALAR, T(1)))                                                                                       \
	X(MASKEDFILL, aclnnInplaceMaskedFillScalar,                                                                   \
	  (aclTensor *selfRef, const aclTensor *mask, const aclScalar *value), (T(0), T(1), SCALAR))                 \
	X(ABS, aclnnAbs, (const aclTensor *self, aclTensor *out), (T(0), T(1)))                                      \
	X(AMAX, aclnnAmax, (const aclTensor *self, const aclIntArray *dim, bool keepDim, aclTensor *out),            \
	  (T(0), INTARRAY, BOOL(0), T(1)))                                                                            \
	X(ROUND, aclnnRound, (const aclTensor *self, aclTensor *out), (T(0), T(1)))                                  \
	X(INPLACEADDCMUL, aclnnInplaceAddcmul,                                                                        \
	  (const aclTensor *selfRef, const aclTensor *tensor1, const aclTensor *tensor2, const aclScalar *value),     \
	  (T(0), T(1), T(2), SCALAR))                                                                                 \
	X(EXPAND, aclnnExpand, (const aclTensor *self, const aclIntArray *size, aclTensor *out),                     \
	  (T(0), INTARRAY, T(1)))                                                                                     \
	X(RIGHTSHIFT, aclnnRightShift, (const aclTensor *input, const aclTensor *shiftBits, aclTensor *out),         \
	  (T(0), T(1), T(2)))                                                                                         \
	X(BITWISEANDSCALAR, aclnnBitwiseAndScalar, (const aclTensor *self, const aclScalar *other, aclTensor *out),  \
	  (T(0), SCALAR, T(1)))

#define IRT_ACLNN_RUN(name) \
	aclnnStatus name(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)

#define IRT_UNPAREN(...) __VA_ARGS__
#define IRT_ACLNN_DECLARE(id, name, params, args)                                                          \
	aclnnStatus name##GetWorkspaceSize(IRT_UNPAREN params, uint64_t *workspaceSize, aclOpExecutor **executor); \
	IRT_ACLNN_RUN(name);
IRT_ACLNN_OPS(IRT_ACLNN_DECLARE)
#undef IRT_ACLNN_DECLARE

/* ---- the resolved function table ----
 * X(name, required): required functions must resolve when the libraries are
 * loaded. The two phases of every operator of IRT_ACLNN_OPS are resolved
 * too, as optional: kernels may be missing from an older toolkit and fail
 * only when a program uses them. */
#define IRT_ACL_FUNCS(X)                              \
	X(aclInit, 1)                                 \
	X(aclFinalize, 1)                             \
	X(aclrtSetDevice, 1)                          \
	X(aclrtResetDevice, 1)                        \
	X(aclrtGetDeviceCount, 1)                     \
	X(aclrtGetSocName, 1)                         \
	X(aclrtGetMemInfo, 1)                         \
	X(aclrtCreateStream, 1)                       \
	X(aclrtDestroyStream, 1)                      \
	X(aclrtSynchronizeStream, 1)                  \
	X(aclrtSynchronizeDevice, 1)                  \
	X(aclrtMalloc, 1)                             \
	X(aclrtFree, 1)                               \
	X(aclrtMallocHost, 1)                         \
	X(aclrtFreeHost, 1)                           \
	X(aclrtMemcpy, 1)                             \
	X(aclrtMemcpyAsync, 1)                        \
	X(aclGetRecentErrMsg, 1)                      \
	X(aclmdlRICaptureBegin, 0)                    \
	X(aclmdlRICaptureGetInfo, 0)                  \
	X(aclmdlRICaptureEnd, 0)                      \
	X(aclmdlRIExecuteAsync, 0)                    \
	X(aclmdlRIDestroy, 0)                         \
	X(aclCreateTensor, 1)                         \
	X(aclDestroyTensor, 1)                        \
	X(aclCreateScalar, 1)                         \
	X(aclDestroyScalar, 1)                        \
	X(aclCreateIntArray, 1)                       \
	X(aclDestroyIntArray, 1)                      \
	X(aclCreateTensorList, 1)                     \
	X(aclDestroyTensorList, 1)

#ifdef __cplusplus
}
#endif

#endif /* IRTOOL_ACL_H */
