/*
 * irtool_hccl.h: the part of CANN's HCCL C API (libhccl.so, hccl/hccl.h and
 * hccl/hccl_types.h) that irtool calls, declared from the documented
 * signatures and enum values (hiascend.com CANN API reference, "HCCL API":
 * HcclGetRootInfo, HcclCommInitRootInfo, HcclCommInitAll, HcclAllReduce,
 * HcclAllGather, HcclReduceScatter, HcclBroadcast, HcclSend, HcclRecv,
 * HcclCommDestroy, HcclGetRankSize, HcclGetRankId, HcclGetErrorString, and
 * the data types HcclResult, HcclDataType, HcclReduceOp, HcclRootInfo).
 *
 * The binding resolves IRT_HCCL_FUNCS from libhccl.so with dlopen, like
 * IRT_ACL_FUNCS (irtool_acl.h); irtool's emulator (fakeacl/hccl) defines
 * them. The enum values are HCCL's ABI and must not change.
 */
#ifndef IRTOOL_HCCL_H
#define IRTOOL_HCCL_H

#include "irtool_acl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
	HCCL_SUCCESS = 0,
	HCCL_E_PARA = 1,
	HCCL_E_PTR = 2,
	HCCL_E_MEMORY = 3,
	HCCL_E_INTERNAL = 4,
	HCCL_E_NOT_SUPPORT = 5,
	HCCL_E_NOT_FOUND = 6,
	HCCL_E_UNAVAIL = 7,
	HCCL_E_SYSCALL = 8,
	HCCL_E_TIMEOUT = 9,
	HCCL_E_OPEN_FILE_FAILURE = 10,
	HCCL_E_TCP_CONNECT = 11,
	HCCL_E_ROCE_CONNECT = 12,
	HCCL_E_TCP_TRANSFER = 13,
	HCCL_E_ROCE_TRANSFER = 14,
	HCCL_E_RUNTIME = 15,
	HCCL_E_DRV = 16,
	HCCL_E_PROFILING = 17,
	HCCL_E_CCE = 18,
	HCCL_E_NETWORK = 19,
	HCCL_E_AGAIN = 20,
	HCCL_E_REMOTE = 21,
	HCCL_E_SUSPENDING = 22,
	HCCL_E_RESERVED
} HcclResult;

typedef enum {
	HCCL_DATA_TYPE_INT8 = 0,
	HCCL_DATA_TYPE_INT16 = 1,
	HCCL_DATA_TYPE_INT32 = 2,
	HCCL_DATA_TYPE_FP16 = 3,
	HCCL_DATA_TYPE_FP32 = 4,
	HCCL_DATA_TYPE_INT64 = 5,
	HCCL_DATA_TYPE_UINT64 = 6,
	HCCL_DATA_TYPE_UINT8 = 7,
	HCCL_DATA_TYPE_UINT16 = 8,
	HCCL_DATA_TYPE_UINT32 = 9,
	HCCL_DATA_TYPE_FP64 = 10,
	HCCL_DATA_TYPE_BFP16 = 11,
	HCCL_DATA_TYPE_INT128 = 12,
	HCCL_DATA_TYPE_RESERVED
} HcclDataType;

typedef enum {
	HCCL_REDUCE_SUM = 0,
	HCCL_REDUCE_PROD = 1,
	HCCL_REDUCE_MAX = 2,
	HCCL_REDUCE_MIN = 3,
	HCCL_REDUCE_RESERVED
} HcclReduceOp;

#define HCCL_ROOT_INFO_BYTES 4108
typedef struct HcclRootInfoDef {
	char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

typedef void *HcclComm;

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo);
HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm);
HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms);
HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream);
HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream);
HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream);
HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream);
HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream);
HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream);
HcclResult HcclCommDestroy(HcclComm comm);
HcclResult HcclGetRankSize(HcclComm comm, uint32_t *rankSize);
HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank);
const char *HcclGetErrorString(HcclResult code);

/* The functions the binding resolves from libhccl.so: X(name, required). */
#define IRT_HCCL_FUNCS(X)          \
	X(HcclGetRootInfo, 1)      \
	X(HcclCommInitRootInfo, 1) \
	X(HcclCommInitAll, 1)      \
	X(HcclAllReduce, 1)        \
	X(HcclAllGather, 1)        \
	X(HcclReduceScatter, 1)    \
	X(HcclBroadcast, 0)        \
	X(HcclSend, 1)             \
	X(HcclRecv, 1)             \
	X(HcclCommDestroy, 1)      \
	X(HcclGetRankSize, 1)      \
	X(HcclGetRankId, 1)        \
	X(HcclGetErrorString, 0)

#ifdef __cplusplus
}
#endif

#endif
