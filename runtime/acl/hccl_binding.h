//go:build cann

/*
 * hccl_binding.h: the C half of package acl's HCCL binding (hccl.go).
 * libhccl.so is opened with dlopen from the directory of the loaded
 * libascendcl.so and IRT_HCCL_FUNCS (irtool_hccl.h) resolved into a
 * table typed from the prototypes, as binding.c does for ACL.
 */
#ifndef IRTOOL_HCCL_BINDING_H
#define IRTOOL_HCCL_BINDING_H

#include <stddef.h>
#include <stdint.h>

#include "irtool_hccl.h"

int irt_hccl_dlopen(const char *path, char *err, int errlen);
const char *irt_hccl_missing(void);
int irt_hccl_has(const char *name);

int irt_HcclGetRootInfo(void *root);
/* the emulator's irtfake_hccl_release_root, or IRT_NOT_LOADED (CANN's
 * libhccl.so: a root info ends with its process) */
int irt_hccl_release_root(const void *root, const char *why);
int irt_HcclCommInitRootInfo(uint32_t n, const void *root, uint32_t rank, uintptr_t *comm);
int irt_HcclCommInitAll(uint32_t n, int32_t *devices, uintptr_t *comms);
int irt_HcclCommDestroy(uintptr_t comm);
int irt_HcclAllReduce(uintptr_t send, uintptr_t recv, uint64_t count, int dt, int op, uintptr_t comm, uintptr_t s);
int irt_HcclAllGather(uintptr_t send, uintptr_t recv, uint64_t count, int dt, uintptr_t comm, uintptr_t s);
int irt_HcclReduceScatter(uintptr_t send, uintptr_t recv, uint64_t count, int dt, int op, uintptr_t comm,
                          uintptr_t s);
int irt_HcclSend(uintptr_t send, uint64_t count, int dt, uint32_t peer, uintptr_t comm, uintptr_t s);
int irt_HcclRecv(uintptr_t recv, uint64_t count, int dt, uint32_t peer, uintptr_t comm, uintptr_t s);

/* a device-to-device aclrtMemcpyAsync (resolved from the loaded libascendcl.so) */
int irt_d2d_async(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s);

#endif
