/*
 * fakeacl.h: the CANN emulator's runtime, as its other files see it.
 *
 * fakeacl.c is the runtime (error state, devices, memory, streams, capture
 * and replay, executors and phase 2, the trace and the test controls);
 * aclnn.c holds the aclnn objects (tensors, scalars, int arrays, tensor
 * lists) and phase 1's machinery; each ops_<family>.c holds the phase 1 and
 * the kernel of the operators of one family, written against kernel.h.
 * The runtime runs a kernel through fake_ops, the table kernel.c generates
 * from IRT_ACLNN_OPS; hccl/hccl.c (libhccl.so) enqueues its collectives
 * through fake_enqueue_host. Headers: irtool_acl.h <- fakeacl.h <- kernel.h.
 */
#ifndef IRTOOL_FAKEACL_H
#define IRTOOL_FAKEACL_H

#include "irtool_acl.h"

#define TENSOR_MAGIC 0x54454e53U
#define EXEC_MAGIC 0x45584543U
#define SCALAR_MAGIC 0x5343414cU
#define INTARRAY_MAGIC 0x494e5441U
#define TENSORLIST_MAGIC 0x4c495354U

/* ---------------- aclnn objects (aclnn.c) ---------------- */

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
struct aclScalar {
	unsigned magic;
	aclDataType dtype;
	double v;
};
struct aclIntArray {
	unsigned magic;
	uint64_t n;
	int64_t v[64];
};
struct aclTensorList {
	unsigned magic;
	uint64_t n;
	aclTensor *v[16];
};

/* bytes per element (INT4: 1, two values per byte where extents matter) */
static inline int dtype_size(aclDataType t) {
	switch (t) {
	case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
	case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
	case ACL_INT8: case ACL_UINT8: case ACL_BOOL: case ACL_INT4: return 1;
	case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: return 8;
	default: return 0;
	}
}

static inline int64_t numel(const aclTensor *t) {
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
	return n;
}

/* the addresses [*lo, *hi) t's view touches */
static inline void byte_range(const aclTensor *t, int64_t *lo, int64_t *hi) {
	int es = dtype_size(t->dtype);
	int64_t reach = t->offset;
	for (int i = 0; i < t->ndim; i++) reach += (t->dims[i] - 1) * t->strides[i];
	if (t->dtype == ACL_INT4) { /* two values per byte */
		*lo = (int64_t)(uintptr_t)t->data + t->offset / 2;
		*hi = (int64_t)(uintptr_t)t->data + reach / 2 + 1;
		return;
	}
	*lo = (int64_t)(uintptr_t)t->data + t->offset * es;
	*hi = (int64_t)(uintptr_t)t->data + (reach + 1) * es;
}

/* t if it is a live tensor, else NULL */
aclTensor *fake_live_tensor(const aclTensor *t);
/* irtfake_stat's counters of live aclnn objects; 1 if key is one */
int fake_objects_stat(const char *key, long long *v);

/* ---------------- operators and executors ---------------- */

/* the operators of IRT_ACLNN_OPS: FAKE_OP_<ID> */
enum fake_op_id {
#define FAKE_OP_ENUM(id, name, params, args) FAKE_OP_##id,
	IRT_ACLNN_OPS(FAKE_OP_ENUM)
#undef FAKE_OP_ENUM
	FAKE_NOPS
};

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
	int opid; /* FAKE_OP_<ID> */
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
	 * ARITH_CANN, or ARITH_GGML (ggml-cpu's, kernel.h) */
	int arith;
};

enum { ARITH_CANN = 0, ARITH_GGML = 1 };

/* What a kernel runs with: its executor and the workspace phase 2 got. */
typedef struct kctx {
	const aclOpExecutor *e;
	void *ws;
	uint64_t wsz;
} kctx;

/* One operator of IRT_ACLNN_OPS as the emulator implements it (kernel.c
 * generates the table, indexed by FAKE_OP_<ID>): its aclnn name, its
 * kernel irt_kernel_<ID> (phase 2's computation: reads the executor's
 * snapshot, writes the outputs, returns 0 or an error code after
 * fake_set_err), and its two phases, named so that the library does not
 * link without them. */
typedef struct fake_op {
	const char *name;
	int (*kernel)(kctx *c);
	void (*phase1)(void);
	void (*phase2)(void);
} fake_op;
extern const fake_op fake_ops[FAKE_NOPS];

/* ---------------- the runtime (fakeacl.c) ---------------- */

/* the emulator's lock: every API call holds it (phase 1 from its LOCK()
 * to call_end) */
void fake_lock(void);
void fake_unlock(void);

/* the error text aclGetRecentErrMsg returns (per thread) */
void fake_set_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 if [p, p+n) lies in one live device allocation (with the lock held) */
int fake_in_device(const void *p, size_t n);
const char *fake_soc(void);
/* the arithmetic new executors take: irtfake_set("arith", …) when set,
 * else IRTFAKE_ARITH ("ggml" or "cann", default "cann") */
int fake_arith(void);

/* ---------------- the trace and injected failures (trace.c) ---------------- */

/* the code an injected failure of fn returns (irtfake_fail), or 0 */
int fake_injected(const char *fn);
/* the trace: fake_tr_begin appends {"seq":…,"fn":fn; fake_tr more fields,
 * fake_tr_end ,"rc":rc}\n */
void fake_tr_begin(const char *fn);
void fake_tr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fake_tr_i64s(const char *key, const int64_t *v, uint64_t n);
void fake_tr_end(int rc);
/* appends {"fn":fn,<fields>,"rc":rc} to the trace (takes the lock) */
void fake_trace_call(const char *fn, int rc, const char *fields_fmt, ...) __attribute__((format(printf, 3, 4)));
/* clears the trace and the injected failures (irtfake_reset) */
void fake_trace_reset(void);

/* ---------------- executors and streams (fakeacl.c) ---------------- */

/* makes ex a live executor of operator op (FAKE_OP_<ID> by name) with the
 * workspace size irtfake_set gave op; 0, or an error code with the text
 * set (fn names the phase-1 call) */
int fake_exec_register(aclOpExecutor *ex, const char *fn, const char *op);
/* phase 2 of operator op, the same for every operator: checks the
 * executor, the workspace and the stream, then computes now or records
 * the launch in a capture (RUN in kernel.h) */
aclnnStatus fake_run(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                     aclrtStream s);

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

/* ---------------- host threads (parallel.c) ---------------- */

/* fn(arg, lo, hi) computes tasks [lo, hi) and returns 0 or an ACL error;
 * fake_parallel splits [0, n) into contiguous ranges of at least
 * min_per_thread tasks over fake_threads() threads (IRTFAKE_THREADS) and
 * returns the first error. The caller's results must not depend on the
 * split (each task computed wholly by one thread). */
typedef int (*fake_range_fn)(void *arg, int64_t lo, int64_t hi);
int fake_threads(void);
int fake_simd(void);
/* irtfake_set's "threads" and "simd" keys; 1 when key is one of them */
int fake_parallel_set(const char *key, long long value);
/* irtfake_stat's "parallel_splits" (calls that ran on more than one
 * thread); 1 when key is it */
int fake_parallel_stat(const char *key, long long *v);
int fake_parallel(int64_t n, int64_t min_per_thread, fake_range_fn fn, void *arg);

#endif
