/*
 * fakeacl.h: what the two halves of the CANN emulator share. fakeacl.c is
 * the runtime (devices, memory, streams, capture, aclnn objects, phase 1 of
 * every operator); kernels.c computes each operator's documented result on
 * the host when phase 2 runs (or when a captured model replays it).
 */
#ifndef IRTOOL_FAKEACL_H
#define IRTOOL_FAKEACL_H

#include "irtool_acl.h"

#define TENSOR_MAGIC 0x54454e53U
#define EXEC_MAGIC 0x45584543U

struct aclTensor {
	unsigned magic;
	long long id;
	int ndim;
	int64_t dims[8], strides[8], storage[8];
	int nstorage;
	int64_t offset;
	aclDataType dtype;
	aclFormat format;
	char *data;
	int in_list;
};

/* One operator's phase-2 computation: reads the executor's snapshot of its
 * arguments, writes its outputs; returns 0 or an error code after setting
 * the error text (kerr). */
struct kdef;

#define EX_TENSORS 12
#define EX_LIST 8

/* An executor is what phase 1 returns: the operator, its workspace size and
 * a snapshot of its arguments as phase 1 saw them (CANN binds descriptors,
 * and so the addresses, when the executor is made). Tensors are kept in the
 * order the operator's phase 1 names them, absent optional ones with magic
 * 0; lists (key/value of attention, the inputs of Cat) apart. */
struct aclOpExecutor {
	unsigned magic;
	long long id;
	char op[64];
	uint64_t ws;
	int nranges;
	int64_t lo[16], hi[16];
	int nt;
	aclTensor t[EX_TENSORS];
	int nl[2];
	aclTensor l[2][EX_LIST];
	double f[4];
	int64_t i[12];
	char s[16];
	/* the arithmetic phase 2 computes with (fake_arith at phase 1):
	 * ARITH_CANN, or ARITH_GGML (ggml-cpu's, kernels.c) */
	int arith;
};

enum { ARITH_CANN = 0, ARITH_GGML = 1 };

/* shared helpers of fakeacl.c */
int fake_in_device(const void *p, size_t n);
void fake_set_err(const char *fmt, ...);
const char *fake_soc(void);
/* the arithmetic new executors take: irtfake_set("arith", …) when set,
 * else IRTFAKE_ARITH ("ggml" or "cann", default "cann") */
int fake_arith(void);

/* Host tasks on streams, for the emulated libhccl.so (fakeacl/hccl): a
 * collective is a task of its stream like a kernel. fake_enqueue_host
 * checks stream s and [lo[k], hi[k]) (device memory); on a capturing stream
 * it records fn(arg) in the capture, which then owns arg (free_arg frees it
 * with the model) and *captured is 1; otherwise *captured is 0 and the
 * caller runs fn(arg) now, outside the emulator's lock.
 * aclmdlRIExecuteAsync runs a recorded fn(arg) in order with the other
 * tasks, without holding the lock while it waits for the other ranks. fn
 * returns 0 or an error code after fake_set_err. Returns 0 or an ACL error
 * code with the error text set. */
typedef int (*fake_host_fn)(void *arg);
int fake_enqueue_host(aclrtStream s, const char *op, fake_host_fn fn, void *arg, void (*free_arg)(void *),
                      int nranges, const int64_t *lo, const int64_t *hi, int *captured);
/* the device set on this thread (aclrtSetDevice), -1 if none */
int fake_thread_device(void);
/* appends {"fn":fn,<fields>,"rc":rc} to the trace */
void fake_trace_call(const char *fn, int rc, const char *fields_fmt, ...);

/* kernels.c: runs executor ex (op name ex->op) with its workspace; 0 or an
 * error code with the error text set. */
int fake_compute(const aclOpExecutor *ex, void *workspace, uint64_t wsSize);
/* kernels.c: 1 if an emulated kernel exists for op. */
int fake_has_kernel(const char *op);

/* parallel.c: fn(arg, lo, hi) computes tasks [lo, hi) and returns 0 or an
 * ACL error; fake_parallel splits [0, n) into contiguous ranges of at
 * least min_per_thread tasks over fake_threads() threads (IRTFAKE_THREADS)
 * and returns the first error. The caller's results must not depend on the
 * split (each task computed wholly by one thread). */
typedef int (*fake_range_fn)(void *arg, int64_t lo, int64_t hi);
int fake_threads(void);
int fake_simd(void);
/* irtfake_set's "threads" and "simd" keys; 1 when key is one of them */
int fake_parallel_set(const char *key, long long value);
int fake_parallel(int64_t n, int64_t min_per_thread, fake_range_fn fn, void *arg);

#endif
