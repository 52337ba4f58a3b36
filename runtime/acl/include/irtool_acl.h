/*
 * irtool_acl.h: the part of CANN's C API that irtool calls, declared from
 * the documented signatures (hiascend.com CANN API reference: "AscendCL
 * runtime", "aclnn operator API", "15. model run instance management", which
 * also lists the error codes).
 *
 * It replaces acl/acl.h and the aclnn headers so that the package compiles on a
 * machine without the CANN toolkit. Nothing here links against CANN: the
 * binding loads libascendcl.so, libnnopbase.so and libopapi.so with dlopen
 * at run time and resolves every function named in IRT_ACL_FUNCS below;
 * irt_acl_fns holds the resolved pointers, typed from these prototypes, so a
 * prototype that disagreed with a call would not compile.
 *
 * The test double (testdata/fakeacl/fakeacl.c) includes this header and
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
 * Every phase 2 has the same shape, declared by IRT_ACLNN_RUN. */

#define IRT_ACLNN_RUN(name) \
	aclnnStatus name(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream)

aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma, double epsilon,
                                         const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize,
                                         aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnRmsNorm);

aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma,
                                            double epsilon, const aclTensor *yOut, const aclTensor *rstdOut,
                                            const aclTensor *xOut, uint64_t *workspaceSize,
                                            aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnAddRmsNorm);

aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnMul);

aclnnStatus aclnnInplaceMulGetWorkspaceSize(aclTensor *selfRef, const aclTensor *other, uint64_t *workspaceSize,
                                            aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnInplaceMul);

aclnnStatus aclnnMulsGetWorkspaceSize(const aclTensor *self, const aclScalar *other, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnMuls);

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other, const aclScalar *alpha,
                                     aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnAdd);

aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
                                        int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnMatmul);

aclnnStatus aclnnMmGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out, int8_t cubeMathType,
                                    uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnMm);

aclnnStatus aclnnBatchMatMulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
                                             int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnBatchMatMul);

aclnnStatus aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *weight, const aclTensor *antiquantScale,
    const aclTensor *antiquantOffsetOptional, const aclTensor *quantScaleOptional,
    const aclTensor *quantOffsetOptional, const aclTensor *biasOptional, int antiquantGroupSize, const aclTensor *y,
    uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnWeightQuantBatchMatmulV2);

aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor *x, const aclTensor *cos,
                                                         const aclTensor *sin, int64_t mode, aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnRotaryPositionEmbedding);

aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim, aclTensor *out,
                                         uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnSoftmax);

aclnnStatus aclnnSiluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnSilu);

aclnnStatus aclnnCosGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnCos);

aclnnStatus aclnnSinGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnSin);

aclnnStatus aclnnSwiGluGetWorkspaceSize(const aclTensor *x, int64_t dim, const aclTensor *out,
                                        uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnSwiGlu);

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnCast);

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef, const aclTensor *src, uint64_t *workspaceSize,
                                             aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnInplaceCopy);

aclnnStatus aclnnInplaceIndexCopyGetWorkspaceSize(aclTensor *selfRef, int64_t dim, const aclTensor *index,
                                                  const aclTensor *source, uint64_t *workspaceSize,
                                                  aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnInplaceIndexCopy);

aclnnStatus aclnnGatherV2GetWorkspaceSize(const aclTensor *self, int64_t dim, const aclTensor *index,
                                          aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnGatherV2);

aclnnStatus aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensorList *key, const aclTensorList *value, const aclTensor *pseShiftOptional,
    const aclTensor *attenMaskOptional, const aclIntArray *actualSeqLengthsOptional,
    const aclIntArray *actualSeqLengthsKvOptional, const aclTensor *deqScale1Optional,
    const aclTensor *quantScale1Optional, const aclTensor *deqScale2Optional, const aclTensor *quantScale2Optional,
    const aclTensor *quantOffset2Optional, const aclTensor *antiquantScaleOptional,
    const aclTensor *antiquantOffsetOptional, const aclTensor *blockTableOptional,
    const aclTensor *queryPaddingSizeOptional, const aclTensor *kvPaddingSizeOptional,
    const aclTensor *keyAntiquantScaleOptional, const aclTensor *keyAntiquantOffsetOptional,
    const aclTensor *valueAntiquantScaleOptional, const aclTensor *valueAntiquantOffsetOptional,
    const aclTensor *keySharedPrefixOptional, const aclTensor *valueSharedPrefixOptional,
    const aclIntArray *actualSharedPrefixLenOptional, int64_t numHeads, double scaleValue, int64_t preTokens,
    int64_t nextTokens, char *inputLayout, int64_t numKeyValueHeads, int64_t sparseMode, int64_t innerPrecise,
    int64_t blockSize, int64_t antiquantMode, bool softmaxLseFlag, int64_t keyAntiquantMode,
    int64_t valueAntiquantMode, const aclTensor *attentionOut, const aclTensor *softmaxLse,
    uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnFusedInferAttentionScoreV2);

aclnnStatus aclnnInplaceAddGetWorkspaceSize(aclTensor *selfRef, const aclTensor *other, const aclScalar *alpha,
                                            uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnInplaceAdd);

aclnnStatus aclnnDivGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnDiv);

aclnnStatus aclnnCatGetWorkspaceSize(const aclTensorList *tensors, int64_t dim, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnCat);

/* The operators of the newer architectures' ops (runtime/acl/recipes_arch.go). */
aclnnStatus aclnnGeluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnGelu);

aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self, const aclIntArray *dims, bool keepDims,
                                           aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
                                           aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnReduceSum);

aclnnStatus aclnnTopkGetWorkspaceSize(const aclTensor *self, int64_t k, int64_t dim, bool largest, bool sorted,
                                      aclTensor *valuesOut, aclTensor *indicesOut, uint64_t *workspaceSize,
                                      aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnTopk);

aclnnStatus aclnnGeScalarGetWorkspaceSize(const aclTensor *self, const aclScalar *other, aclTensor *out,
                                          uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnGeScalar);

aclnnStatus aclnnInplaceMaskedFillScalarGetWorkspaceSize(aclTensor *selfRef, const aclTensor *mask,
                                                         const aclScalar *value, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnInplaceMaskedFillScalar);

/* The operators of the q8_0 activation quantisation (Options.QuantMatmul "ggml"). */
aclnnStatus aclnnAbsGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnAbs);

aclnnStatus aclnnAmaxGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnAmax);

aclnnStatus aclnnRoundGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                       aclOpExecutor **executor);
IRT_ACLNN_RUN(aclnnRound);

/* ---- the resolved function table ----
 * X(name, required): required functions must resolve when the libraries are
 * loaded; kernels may be missing from an older toolkit and fail only when a
 * program uses them. */
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
	X(aclDestroyTensorList, 1)                    \
	X(aclnnRmsNormGetWorkspaceSize, 0)            \
	X(aclnnRmsNorm, 0)                            \
	X(aclnnAddRmsNormGetWorkspaceSize, 0)         \
	X(aclnnAddRmsNorm, 0)                         \
	X(aclnnMulGetWorkspaceSize, 0)                \
	X(aclnnMul, 0)                                \
	X(aclnnInplaceMulGetWorkspaceSize, 0)         \
	X(aclnnInplaceMul, 0)                         \
	X(aclnnMulsGetWorkspaceSize, 0)               \
	X(aclnnMuls, 0)                               \
	X(aclnnAddGetWorkspaceSize, 0)                \
	X(aclnnAdd, 0)                                \
	X(aclnnMatmulGetWorkspaceSize, 0)             \
	X(aclnnMatmul, 0)                             \
	X(aclnnMmGetWorkspaceSize, 0)                 \
	X(aclnnMm, 0)                                 \
	X(aclnnBatchMatMulGetWorkspaceSize, 0)        \
	X(aclnnBatchMatMul, 0)                        \
	X(aclnnWeightQuantBatchMatmulV2GetWorkspaceSize, 0) \
	X(aclnnWeightQuantBatchMatmulV2, 0)           \
	X(aclnnRotaryPositionEmbeddingGetWorkspaceSize, 0) \
	X(aclnnRotaryPositionEmbedding, 0)            \
	X(aclnnSoftmaxGetWorkspaceSize, 0)            \
	X(aclnnSoftmax, 0)                            \
	X(aclnnSiluGetWorkspaceSize, 0)               \
	X(aclnnSilu, 0)                               \
	X(aclnnCosGetWorkspaceSize, 0)                \
	X(aclnnCos, 0)                                \
	X(aclnnSinGetWorkspaceSize, 0)                \
	X(aclnnSin, 0)                                \
	X(aclnnSwiGluGetWorkspaceSize, 0)             \
	X(aclnnSwiGlu, 0)                             \
	X(aclnnCastGetWorkspaceSize, 0)               \
	X(aclnnCast, 0)                               \
	X(aclnnInplaceCopyGetWorkspaceSize, 0)        \
	X(aclnnInplaceCopy, 0)                        \
	X(aclnnInplaceIndexCopyGetWorkspaceSize, 0)   \
	X(aclnnInplaceIndexCopy, 0)                   \
	X(aclnnGatherV2GetWorkspaceSize, 0)           \
	X(aclnnGatherV2, 0)                           \
	X(aclnnFusedInferAttentionScoreV2GetWorkspaceSize, 0) \
	X(aclnnFusedInferAttentionScoreV2, 0) \
	X(aclnnInplaceAddGetWorkspaceSize, 0)         \
	X(aclnnInplaceAdd, 0)                         \
	X(aclnnDivGetWorkspaceSize, 0)                \
	X(aclnnDiv, 0)                                \
	X(aclnnCatGetWorkspaceSize, 0)                \
	X(aclnnCat, 0)                                \
	X(aclnnGeluGetWorkspaceSize, 0)               \
	X(aclnnGelu, 0)                               \
	X(aclnnReduceSumGetWorkspaceSize, 0)          \
	X(aclnnReduceSum, 0)                          \
	X(aclnnTopkGetWorkspaceSize, 0)               \
	X(aclnnTopk, 0)                               \
	X(aclnnGeScalarGetWorkspaceSize, 0)           \
	X(aclnnGeScalar, 0)                           \
	X(aclnnInplaceMaskedFillScalarGetWorkspaceSize, 0) \
	X(aclnnInplaceMaskedFillScalar, 0)                \
	X(aclnnAbsGetWorkspaceSize, 0)                \
	X(aclnnAbs, 0)                                \
	X(aclnnAmaxGetWorkspaceSize, 0)               \
	X(aclnnAmax, 0)                               \
	X(aclnnRoundGetWorkspaceSize, 0)              \
	X(aclnnRound, 0)

#ifdef __cplusplus
}
#endif

#endif /* IRTOOL_ACL_H */
