//go:build cann

#include "hccl_binding.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "binding.h"

static struct {
#define IRT_FN(name, req) __typeof__(&name) name;
	IRT_HCCL_FUNCS(IRT_FN)
#undef IRT_FN
} H;

/* the emulator's irtfake_hccl_release_root (fakeacl/hccl/hccl.c), when the
 * loaded libhccl.so is the emulator */
static int (*release_root)(const HcclRootInfo *, const char *);

int irt_hccl_dlopen(const char *path, char *err, int errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, (size_t)errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
	if (release_root == NULL) release_root = (__typeof__(release_root))dlsym(h, "irtfake_hccl_release_root");
#define IRT_FN(name, req) \
	if (H.name == NULL) H.name = (__typeof__(&name))dlsym(h, #name);
	IRT_HCCL_FUNCS(IRT_FN)
#undef IRT_FN
	return 0;
}

const char *irt_hccl_missing(void) {
#define IRT_FN(name, req) \
	if (req && H.name == NULL) return #name;
	IRT_HCCL_FUNCS(IRT_FN)
#undef IRT_FN
	return NULL;
}

int irt_hccl_has(const char *fn) {
#define IRT_FN(name, req) \
	if (strcmp(fn, #name) == 0) return H.name != NULL;
	IRT_HCCL_FUNCS(IRT_FN)
#undef IRT_FN
	return 0;
}

#define HCALL(name, ...) (H.name ? (int)H.name(__VA_ARGS__) : IRT_NOT_LOADED)
#define P(x) ((void *)(x))

int irt_HcclGetRootInfo(void *root) { return HCALL(HcclGetRootInfo, (HcclRootInfo *)root); }
int irt_hccl_release_root(const void *root, const char *why) {
	return release_root ? release_root((const HcclRootInfo *)root, why) : IRT_NOT_LOADED;
}
int irt_HcclCommInitRootInfo(uint32_t n, const void *root, uint32_t rank, uintptr_t *comm) {
	HcclComm c = NULL;
	int rc = HCALL(HcclCommInitRootInfo, n, (const HcclRootInfo *)root, rank, &c);
	*comm = (uintptr_t)c;
	return rc;
}
int irt_HcclCommInitAll(uint32_t n, int32_t *devices, uintptr_t *comms) {
	HcclComm cs[64] = {0};
	if (n > 64) return HCCL_E_PARA;
	int rc = HCALL(HcclCommInitAll, n, devices, cs);
	for (uint32_t i = 0; i < n; i++) comms[i] = (uintptr_t)cs[i];
	return rc;
}
int irt_HcclCommDestroy(uintptr_t comm) { return HCALL(HcclCommDestroy, P(comm)); }
int irt_HcclAllReduce(uintptr_t send, uintptr_t recv, uint64_t count, int dt, int op, uintptr_t comm, uintptr_t s) {
	return HCALL(HcclAllReduce, P(send), P(recv), count, (HcclDataType)dt, (HcclReduceOp)op, P(comm), P(s));
}
int irt_HcclAllGather(uintptr_t send, uintptr_t recv, uint64_t count, int dt, uintptr_t comm, uintptr_t s) {
	return HCALL(HcclAllGather, P(send), P(recv), count, (HcclDataType)dt, P(comm), P(s));
}
int irt_HcclReduceScatter(uintptr_t send, uintptr_t recv, uint64_t count, int dt, int op, uintptr_t comm,
                          uintptr_t s) {
	return HCALL(HcclReduceScatter, P(send), P(recv), count, (HcclDataType)dt, (HcclReduceOp)op, P(comm), P(s));
}
int irt_HcclSend(uintptr_t send, uint64_t count, int dt, uint32_t peer, uintptr_t comm, uintptr_t s) {
	return HCALL(HcclSend, P(send), count, (HcclDataType)dt, peer, P(comm), P(s));
}
int irt_HcclRecv(uintptr_t recv, uint64_t count, int dt, uint32_t peer, uintptr_t comm, uintptr_t s) {
	return HCALL(HcclRecv, P(recv), count, (HcclDataType)dt, peer, P(comm), P(s));
}

int irt_d2d_async(uintptr_t dst, uintptr_t src, size_t n, uintptr_t s) {
	static __typeof__(&aclrtMemcpyAsync) fn;
	if (!fn) fn = (__typeof__(&aclrtMemcpyAsync))dlsym(RTLD_DEFAULT, "aclrtMemcpyAsync");
	if (!fn) return IRT_NOT_LOADED;
	return fn(P(dst), n, (const void *)src, n, ACL_MEMCPY_DEVICE_TO_DEVICE, P(s));
}
