/*
 * fakeacl.c: the runtime of irtool's emulator of libascendcl + libnnopbase
 * + libopapi for the runtime/acl binding. The binding's tests and users
 * (scripts/fakeacl.sh DIR, then IRTOOL_ACL_LIBS=DIR) load it exactly as
 * they would load CANN.
 *
 * What it does (aclnn.c has the aclnn objects and phase 1's machinery, the
 * ops_<family>.c files the operators):
 *   - implements the runtime of runtime/acl/irtool_acl.h over host memory:
 *     device memory is one posix_memalign'd host allocation per
 *     aclrtMalloc, copies are memcpy, streams and model run instances are
 *     host objects; streams run in order (a launch computes when enqueued);
 *   - phase 2 of every aclnn operator (fake_run) checks the executor and
 *     the workspace and runs the operator's kernel through fake_ops, the
 *     table generated from IRT_ACLNN_OPS (kernel.c), or, on a capturing
 *     stream, records it; aclmdlRIExecuteAsync recomputes the recorded
 *     kernels in order at the addresses bound at capture;
 *   - traces every call with its arguments (tensor shapes, strides,
 *     offsets, addresses, workspace sizes, capture begin/end, executes,
 *     destroys) as one JSON object per line (trace.c, irtfake_trace());
 *   - refuses what CANN documents as refused during capture, with CANN's
 *     codes (CANN's aclmdlRI capture API): a sync of a capturing stream
 *     (107027), a sync memcpy while a GLOBAL capture is active (107030,
 *     invalidating the capture so End returns 507903), an async copy from
 *     pageable host memory into a capture (107030), the default stream
 *     (107031), End without Begin (107036), End on another thread (107038),
 *     destroying a model that is still running (107037), a second Begin on
 *     a capturing stream (107027);
 *   - checks the aclnn contracts: executors are single use and belong to
 *     their operator, the workspace passed to phase 2 is at least what
 *     phase 1 asked for and lies in device memory; a kernel touching memory
 *     outside every allocation is an AI core exception (507015) naming the
 *     operator.
 *
 * Control (tests only, resolved by runtime/acl/internal/fakectl):
 *   irtfake_reset, irtfake_set, irtfake_set_soc, irtfake_fail,
 *   irtfake_trace, irtfake_free, irtfake_stat.
 */
#define _GNU_SOURCE
#include "fakeacl.h"

#include <errno.h>
#include <math.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&mu)
#define UNLOCK() pthread_mutex_unlock(&mu)

void fake_lock(void) { LOCK(); }
void fake_unlock(void) { UNLOCK(); }

/* ---------------- configuration ---------------- */

static long long cfg_device_count = 1;
static long long cfg_total_mem = 1LL << 32; /* 4 GiB of "HBM" */
static long long cfg_capture_supported = 1;
static long long cfg_arith = -1; /* -1: IRTFAKE_ARITH decides */
static char cfg_soc[64] = "Ascend910B3";

#define MAX_WS_RULES 64
static struct {
	char op[64];
	long long bytes;
} ws_rules[MAX_WS_RULES];
static int n_ws_rules;

/* ---------------- error text (per thread, as CANN keeps it) ---------------- */

static __thread char errmsg[512];
static __thread char errmsg_out[512];

#define set_err(...) fake_set_err(__VA_ARGS__)
#define tr(...) fake_tr(__VA_ARGS__)
#define tr_begin(fn) fake_tr_begin(fn)
#define tr_end(rc) fake_tr_end(rc)
#define injected(fn) fake_injected(fn)

void fake_set_err(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof errmsg, fmt, ap);
	va_end(ap);
}

const char *aclGetRecentErrMsg(void) {
	if (errmsg[0] == 0) return NULL;
	memcpy(errmsg_out, errmsg, sizeof errmsg);
	errmsg[0] = 0; /* returns and clears */
	return errmsg_out;
}

/* ---------------- init & devices ---------------- */

static int initialized;
static __thread int cur_device = -1;

aclError aclInit(const char *configPath) {
	LOCK();
	int rc = injected("aclInit");
	if (!rc && initialized) {
		rc = ACL_ERROR_REPEAT_INITIALIZE;
		set_err("aclInit: repeated initialisation");
	}
	if (!rc) initialized = 1;
	tr_begin("aclInit");
	tr(",\"config\":%s", configPath ? "\"set\"" : "null");
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclFinalize(void) {
	LOCK();
	int rc = initialized ? 0 : ACL_ERROR_UNINITIALIZE;
	initialized = 0;
	tr_begin("aclFinalize");
	tr_end(rc);
	UNLOCK();
	return rc;
}

/* IRTFAKE_DEVICE_COUNT, when set (1..64), is how many devices the emulator
 * has, e.g. one per rank of a tensor-parallel run; else device_count
 * (irtfake_set), default 1. Any other value is an error (-1, the text
 * set): the device calls fail with ACL_ERROR_INVALID_PARAM. */
static long long device_count(void) {
	const char *n = getenv("IRTFAKE_DEVICE_COUNT");
	if (!n || !*n) return cfg_device_count;
	char *end;
	errno = 0;
	long long v = strtoll(n, &end, 10);
	if (errno || *end || end == n || v < 1 || v > 64) {
		set_err("IRTFAKE_DEVICE_COUNT=%.40s: want a whole number of devices in [1, 64]", n);
		return -1;
	}
	return v;
}

/* The arithmetic of the operators (kernel.h): IRTFAKE_ARITH=ggml makes
 * every executor made from then on compute with ggml-cpu's arithmetic
 * instead of the device's documented one; irtfake_set("arith", 1 or 0)
 * overrides the variable (-1 hands the choice back to it). Emulator only:
 * CANN has nothing like it. */
int fake_arith(void) {
	if (cfg_arith >= 0) return cfg_arith == 1 ? ARITH_GGML : ARITH_CANN;
	const char *a = getenv("IRTFAKE_ARITH");
	return a && strcmp(a, "ggml") == 0 ? ARITH_GGML : ARITH_CANN;
}

#define NEED_INIT(name)                                                        \
	if (!rc && !initialized) {                                             \
		rc = ACL_ERROR_UNINITIALIZE;                                   \
		set_err("%s: aclInit has not been called", name);              \
	}

aclError aclrtGetDeviceCount(uint32_t *count) {
	LOCK();
	int rc = injected("aclrtGetDeviceCount");
	NEED_INIT("aclrtGetDeviceCount");
	long long ndev = rc ? 0 : device_count();
	if (ndev < 0) rc = ACL_ERROR_INVALID_PARAM;
	if (!rc) *count = (uint32_t)ndev;
	tr_begin("aclrtGetDeviceCount");
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtSetDevice(int32_t id) {
	LOCK();
	int rc = injected("aclrtSetDevice");
	NEED_INIT("aclrtSetDevice");
	long long ndev = rc ? 0 : device_count();
	if (ndev < 0) rc = ACL_ERROR_INVALID_PARAM;
	if (!rc && (id < 0 || id >= ndev)) {
		rc = ACL_ERROR_RT_INVALID_DEVICEID;
		set_err("aclrtSetDevice: device %d does not exist (%lld devices)", id, ndev);
	}
	if (!rc) cur_device = id;
	tr_begin("aclrtSetDevice");
	tr(",\"device\":%d", id);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtResetDevice(int32_t id) {
	LOCK();
	int rc = injected("aclrtResetDevice");
	if (!rc && (id < 0 || id >= device_count())) rc = ACL_ERROR_RT_INVALID_DEVICEID;
	if (!rc && cur_device == id) cur_device = -1;
	tr_begin("aclrtResetDevice");
	tr(",\"device\":%d", id);
	tr_end(rc);
	UNLOCK();
	return rc;
}

const char *aclrtGetSocName(void) {
	LOCK();
	tr_begin("aclrtGetSocName");
	tr_end(0);
	UNLOCK();
	return initialized ? cfg_soc : NULL;
}

/* ---------------- memory ---------------- */

typedef struct alloc {
	char *p;
	size_t n;
	int host; /* 1: aclrtMallocHost (pinned host memory) */
	struct alloc *next;
} alloc;
static alloc *allocs;
static long long dev_used;

static alloc *find_alloc(const void *p, size_t n, int host) {
	for (alloc *a = allocs; a; a = a->next)
		if (a->host == host && (const char *)p >= a->p && (const char *)p + n <= a->p + a->n) return a;
	return NULL;
}

/* for the other files (called with the lock held) */
int fake_in_device(const void *p, size_t n) { return find_alloc(p, n, 0) != NULL; }
const char *fake_soc(void) { return cfg_soc; }

static int capture_active_global(void); /* below */
static int capture_blocks_malloc(void); /* below */
static void invalidate_unsafe(const char *fn);
static int compute(const aclOpExecutor *e, void *workspace, uint64_t wsSize);

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
	LOCK();
	int rc = injected("aclrtMalloc");
	NEED_INIT("aclrtMalloc");
	if (!rc && cur_device < 0) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtMalloc: no device set on this thread");
	}
	if (!rc && (devPtr == NULL || size == 0)) {
		rc = ACL_ERROR_INVALID_PARAM;
		set_err("aclrtMalloc: size must be > 0");
	}
	/* irtool allocates every device byte before it captures: an
	 * allocation while a stream of this device captures, in any mode, or
	 * while any stream captures in global mode, fails the run */
	if (!rc && capture_blocks_malloc()) {
		rc = ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;
		set_err("aclrtMalloc: device memory allocated while a stream is being captured (allocate before capture)");
	}
	/* rounded up to 32 B plus 32 B, as documented */
	size_t rounded = (size + 31) / 32 * 32 + 32;
	if (!rc && dev_used + (long long)rounded > cfg_total_mem) {
		rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
		set_err("aclrtMalloc: out of device memory: %zu B requested, %lld B free", size,
		        cfg_total_mem - dev_used);
	}
	void *p = NULL;
	if (!rc && posix_memalign(&p, 64, rounded) != 0) {
		rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
		set_err("aclrtMalloc: host allocation of %zu B failed", rounded);
	}
	if (!rc) {
		alloc *a = calloc(1, sizeof *a);
		a->p = p;
		a->n = size;
		a->next = allocs;
		allocs = a;
		dev_used += (long long)rounded;
		*devPtr = p;
	}
	tr_begin("aclrtMalloc");
	tr(",\"size\":%zu,\"policy\":%d,\"addr\":%llu", size, (int)policy, (unsigned long long)(uintptr_t)p);
	tr_end(rc);
	UNLOCK();
	return rc;
}

static int free_alloc(void *p, int host) {
	for (alloc **pa = &allocs; *pa; pa = &(*pa)->next) {
		if ((*pa)->p == p && (*pa)->host == host) {
			alloc *a = *pa;
			*pa = a->next;
			if (!host) dev_used -= (long long)((a->n + 31) / 32 * 32 + 32);
			free(a->p);
			free(a);
			return 0;
		}
	}
	return -1;
}

aclError aclrtFree(void *devPtr) {
	LOCK();
	int rc = injected("aclrtFree");
	if (!rc && free_alloc(devPtr, 0) != 0) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtFree: %p is not a device allocation", devPtr);
	}
	tr_begin("aclrtFree");
	tr(",\"addr\":%llu", (unsigned long long)(uintptr_t)devPtr);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
	LOCK();
	int rc = injected("aclrtMallocHost");
	NEED_INIT("aclrtMallocHost");
	if (!rc && (hostPtr == NULL || size == 0)) rc = ACL_ERROR_INVALID_PARAM;
	void *p = NULL;
	if (!rc && posix_memalign(&p, 128, (size + 127) / 128 * 128) != 0) rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
	if (!rc) {
		alloc *a = calloc(1, sizeof *a);
		a->p = p;
		a->n = size;
		a->host = 1;
		a->next = allocs;
		allocs = a;
		*hostPtr = p;
	}
	tr_begin("aclrtMallocHost");
	tr(",\"size\":%zu,\"addr\":%llu", size, (unsigned long long)(uintptr_t)p);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtFreeHost(void *hostPtr) {
	LOCK();
	int rc = injected("aclrtFreeHost");
	if (!rc && free_alloc(hostPtr, 1) != 0) rc = ACL_ERROR_RT_PARAM_INVALID;
	tr_begin("aclrtFreeHost");
	tr(",\"addr\":%llu", (unsigned long long)(uintptr_t)hostPtr);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *freeMem, size_t *total) {
	LOCK();
	int rc = injected("aclrtGetMemInfo");
	NEED_INIT("aclrtGetMemInfo");
	if (!rc && cur_device < 0) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtGetMemInfo: no device set on this thread");
	}
	if (!rc) {
		*freeMem = (size_t)(cfg_total_mem - dev_used);
		*total = (size_t)cfg_total_mem;
	}
	tr_begin("aclrtGetMemInfo");
	tr(",\"attr\":%d", (int)attr);
	tr_end(rc);
	UNLOCK();
	return rc;
}

/* checks the device side of a copy; 0 if fine */
static int check_copy(const char *fn, void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
	if (count > destMax) {
		set_err("%s: count %zu exceeds destMax %zu", fn, count, destMax);
		return ACL_ERROR_INVALID_PARAM;
	}
	int dd = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
	int sd = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
	if (kind < 0 || kind > ACL_MEMCPY_DEVICE_TO_DEVICE) {
		set_err("%s: bad copy kind %d", fn, (int)kind);
		return ACL_ERROR_INVALID_PARAM;
	}
	if (dd && !find_alloc(dst, count, 0)) {
		set_err("%s: destination [%p,+%zu) is not inside one device allocation", fn, dst, count);
		return ACL_ERROR_INVALID_PARAM;
	}
	if (sd && !find_alloc(src, count, 0)) {
		set_err("%s: source [%p,+%zu) is not inside one device allocation", fn, src, count);
		return ACL_ERROR_INVALID_PARAM;
	}
	return 0;
}

/* ---------------- streams, capture, model run instances ---------------- */

#define STREAM_MAGIC 0x5354524dU
#define RI_MAGIC 0x52494d44U

struct task {
	int kind; /* 0 kernel, 1 async copy, 2 host task (a collective of libhccl.so) */
	char op[64];
	void *dst;
	const void *src;
	size_t n;
	int64_t lo[16], hi[16]; /* address ranges the kernel touches */
	int nranges;
	aclOpExecutor *ex; /* kernel: a copy of the executor, bound at capture */
	void *ws;          /* kernel: the workspace given at capture */
	uint64_t wsSize;
	fake_host_fn fn; /* host task */
	void *arg;
	void (*free_arg)(void *);
};

static void free_tasks(struct task *ts, int n) {
	for (int i = 0; i < n; i++) {
		free(ts[i].ex);
		if (ts[i].free_arg) ts[i].free_arg(ts[i].arg);
	}
	free(ts);
}

typedef struct ri {
	unsigned magic;
	long long id;
	struct task *tasks;
	int ntasks, cap;
	void *running_on; /* stream it was executed on and not yet synced */
	struct ri *next;
} ri;
static ri *ris;
static long long ri_ids;

typedef struct stream {
	unsigned magic;
	long long id;
	int capturing;
	int mode;
	int invalidated;
	int device; /* the device current on the creating thread */
	pthread_t thread;
	ri *building;
	struct stream *next;
} stream;
static stream *streams;
static long long stream_ids;

static stream *as_stream(aclrtStream s) {
	for (stream *p = streams; p; p = p->next)
		if ((void *)p == s && p->magic == STREAM_MAGIC) return p;
	return NULL;
}
static ri *as_ri(aclmdlRI r) {
	for (ri *p = ris; p; p = p->next)
		if ((void *)p == r && p->magic == RI_MAGIC) return p;
	return NULL;
}

static int capture_active_global(void) {
	for (stream *p = streams; p; p = p->next) {
		if (!p->capturing) continue;
		if (p->mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL) return 1;
		if (p->mode == ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL && pthread_equal(p->thread, pthread_self()))
			return 1;
	}
	return 0;
}

/* another rank's thread-local capture on another device does not stop this
 * thread's allocations: ranks load and capture concurrently */
static int capture_blocks_malloc(void) {
	for (stream *p = streams; p; p = p->next) {
		if (!p->capturing) continue;
		if (p->mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL || p->device == cur_device) return 1;
	}
	return 0;
}

/* an unsafe call during a capture invalidates the capture */
static void invalidate_unsafe(const char *fn) {
	for (stream *p = streams; p; p = p->next) {
		if (!p->capturing) continue;
		if (p->mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL ||
		    (p->mode == ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL && pthread_equal(p->thread, pthread_self())))
			p->invalidated = 1;
	}
	set_err("%s: not allowed while a stream is being captured in this mode", fn);
}

aclError aclrtCreateStream(aclrtStream *s) {
	LOCK();
	int rc = injected("aclrtCreateStream");
	NEED_INIT("aclrtCreateStream");
	if (!rc && cur_device < 0) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtCreateStream: no device set on this thread");
	}
	stream *p = NULL;
	if (!rc) {
		p = calloc(1, sizeof *p);
		p->magic = STREAM_MAGIC;
		p->id = ++stream_ids;
		p->device = cur_device;
		p->next = streams;
		streams = p;
		*s = p;
	}
	tr_begin("aclrtCreateStream");
	tr(",\"stream\":%lld", p ? p->id : 0LL);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtDestroyStream(aclrtStream s) {
	LOCK();
	int rc = injected("aclrtDestroyStream");
	stream *p = as_stream(s);
	long long id = p ? p->id : 0;
	if (!rc && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtDestroyStream: not a stream");
	}
	if (!rc && p->capturing) {
		rc = ACL_ERROR_RT_STREAM_CAPTURED;
		set_err("aclrtDestroyStream: stream %lld is being captured", id);
	}
	if (!rc) {
		for (stream **pp = &streams; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		for (ri *r = ris; r; r = r->next)
			if (r->running_on == p) r->running_on = NULL;
		p->magic = 0;
		free(p);
	}
	tr_begin("aclrtDestroyStream");
	tr(",\"stream\":%lld", id);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtSynchronizeStream(aclrtStream s) {
	LOCK();
	int rc = injected("aclrtSynchronizeStream");
	stream *p = s ? as_stream(s) : NULL;
	if (!rc && s && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtSynchronizeStream: not a stream");
	}
	if (!rc && p && p->capturing) {
		rc = ACL_ERROR_RT_STREAM_CAPTURED;
		p->invalidated = 1;
		set_err("aclrtSynchronizeStream: not allowed to synchronize captured stream %lld", p->id);
	}
	if (!rc)
		for (ri *r = ris; r; r = r->next)
			if (r->running_on == (void *)p || (s == NULL)) r->running_on = NULL;
	tr_begin("aclrtSynchronizeStream");
	tr(",\"stream\":%lld", p ? p->id : 0LL);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtSynchronizeDevice(void) {
	LOCK();
	int rc = injected("aclrtSynchronizeDevice");
	for (stream *p = streams; !rc && p; p = p->next)
		if (p->capturing) {
			rc = ACL_ERROR_RT_STREAM_CAPTURED;
			p->invalidated = 1;
			set_err("aclrtSynchronizeDevice: not allowed while stream %lld is being captured", p->id);
		}
	if (!rc)
		for (ri *r = ris; r; r = r->next) r->running_on = NULL;
	tr_begin("aclrtSynchronizeDevice");
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
	LOCK();
	int rc = injected("aclrtMemcpy");
	if (!rc && capture_active_global()) {
		rc = ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;
		invalidate_unsafe("aclrtMemcpy");
	}
	if (!rc) rc = check_copy("aclrtMemcpy", dst, destMax, src, count, kind);
	if (!rc && count) memmove(dst, src, count);
	tr_begin("aclrtMemcpy");
	tr(",\"kind\":%d,\"dst\":%llu,\"src\":%llu,\"count\":%zu", (int)kind, (unsigned long long)(uintptr_t)dst,
	   (unsigned long long)(uintptr_t)src, count);
	tr_end(rc);
	UNLOCK();
	return rc;
}

static void add_task(ri *r, struct task *t) {
	if (r->ntasks == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->tasks = realloc(r->tasks, (size_t)r->cap * sizeof *r->tasks);
	}
	r->tasks[r->ntasks++] = *t;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream s) {
	LOCK();
	int rc = injected("aclrtMemcpyAsync");
	stream *p = s ? as_stream(s) : NULL;
	int captured = 0;
	if (!rc && s && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclrtMemcpyAsync: not a stream");
	}
	if (!rc) rc = check_copy("aclrtMemcpyAsync", dst, destMax, src, count, kind);
	if (!rc && capture_active_global()) {
		/* host memory touched by a captured async copy must be pinned */
		const void *host = kind == ACL_MEMCPY_HOST_TO_DEVICE ? src : kind == ACL_MEMCPY_DEVICE_TO_HOST ? dst : NULL;
		if (host && !find_alloc(host, count, 1)) {
			rc = ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;
			invalidate_unsafe("aclrtMemcpyAsync (pageable host memory)");
		}
	}
	if (!rc && p && p->capturing) {
		struct task t = {0};
		t.kind = 1;
		t.dst = dst;
		t.src = src;
		t.n = count;
		add_task(p->building, &t);
		captured = 1;
	} else if (!rc && count) {
		memmove(dst, src, count);
	}
	tr_begin("aclrtMemcpyAsync");
	tr(",\"kind\":%d,\"dst\":%llu,\"src\":%llu,\"count\":%zu,\"stream\":%lld,\"captured\":%s", (int)kind,
	   (unsigned long long)(uintptr_t)dst, (unsigned long long)(uintptr_t)src, count, p ? p->id : 0LL,
	   captured ? "true" : "false");
	tr_end(rc);
	UNLOCK();
	return rc;
}

int fake_enqueue_host(aclrtStream s, const char *op, fake_host_fn fn, void *arg, void (*free_arg)(void *),
                      int nranges, const int64_t *lo, const int64_t *hi, int *captured) {
	LOCK();
	int rc = 0;
	stream *p = s ? as_stream(s) : NULL;
	*captured = 0;
	if (s && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("%s: not a stream", op);
	}
	if (!rc && nranges > 16) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("%s: %d buffers", op, nranges);
	}
	for (int k = 0; !rc && k < nranges; k++)
		if (hi[k] > lo[k] && !find_alloc((void *)(uintptr_t)lo[k], (size_t)(hi[k] - lo[k]), 0)) {
			rc = ACL_ERROR_RT_PARAM_INVALID;
			set_err("%s: buffer [%p,+%lld B) is not inside one device allocation", op, (void *)(uintptr_t)lo[k],
			        (long long)(hi[k] - lo[k]));
		}
	if (!rc && p && p->capturing) {
		struct task t = {0};
		t.kind = 2;
		snprintf(t.op, sizeof t.op, "%s", op);
		t.nranges = nranges;
		for (int k = 0; k < nranges; k++) {
			t.lo[k] = lo[k];
			t.hi[k] = hi[k];
		}
		t.fn = fn;
		t.arg = arg;
		t.free_arg = free_arg;
		add_task(p->building, &t);
		*captured = 1;
	}
	UNLOCK();
	return rc;
}

int fake_thread_device(void) { return cur_device; }

aclError aclmdlRICaptureBegin(aclrtStream s, aclmdlRICaptureMode mode) {
	LOCK();
	int rc = injected("aclmdlRICaptureBegin");
	stream *p = s ? as_stream(s) : NULL;
	if (!rc && !cfg_capture_supported) {
		rc = ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
		set_err("aclmdlRICaptureBegin: feature not supported on %s", cfg_soc);
	}
	if (!rc && s == NULL) {
		rc = ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT;
		set_err("aclmdlRICaptureBegin: the default stream cannot be captured");
	}
	if (!rc && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclmdlRICaptureBegin: not a stream");
	}
	if (!rc && p->capturing) {
		rc = ACL_ERROR_RT_STREAM_CAPTURED;
		set_err("aclmdlRICaptureBegin: stream %lld is already being captured", p->id);
	}
	if (!rc && (mode < 0 || mode > ACL_MODEL_RI_CAPTURE_MODE_RELAXED)) {
		rc = ACL_ERROR_INVALID_PARAM;
		set_err("aclmdlRICaptureBegin: bad mode %d", (int)mode);
	}
	if (!rc) {
		p->capturing = 1;
		p->mode = mode;
		p->invalidated = 0;
		p->thread = pthread_self();
		p->building = calloc(1, sizeof(ri));
		p->building->magic = RI_MAGIC;
	}
	tr_begin("aclmdlRICaptureBegin");
	tr(",\"stream\":%lld,\"mode\":%d", p ? p->id : 0LL, (int)mode);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclmdlRICaptureGetInfo(aclrtStream s, aclmdlRICaptureStatus *status, aclmdlRI *modelRI) {
	LOCK();
	int rc = injected("aclmdlRICaptureGetInfo");
	stream *p = s ? as_stream(s) : NULL;
	if (!rc && !p) rc = ACL_ERROR_RT_PARAM_INVALID;
	if (!rc) {
		*status = !p->capturing ? ACL_MODEL_RI_CAPTURE_STATUS_NONE
		          : p->invalidated ? ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED
		                           : ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE;
		if (modelRI) *modelRI = p->capturing ? p->building : NULL;
	}
	tr_begin("aclmdlRICaptureGetInfo");
	tr(",\"stream\":%lld", p ? p->id : 0LL);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclmdlRICaptureEnd(aclrtStream s, aclmdlRI *modelRI) {
	LOCK();
	int rc = injected("aclmdlRICaptureEnd");
	stream *p = s ? as_stream(s) : NULL;
	ri *r = NULL;
	int ntasks = 0;
	if (!rc && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclmdlRICaptureEnd: not a stream");
	}
	if (!rc && !p->capturing) {
		rc = ACL_ERROR_RT_STREAM_CAPTURE_WRONG_END;
		set_err("aclmdlRICaptureEnd: stream %lld is not being captured", p->id);
	}
	if (!rc && p->mode != ACL_MODEL_RI_CAPTURE_MODE_RELAXED && !pthread_equal(p->thread, pthread_self())) {
		rc = ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD;
		set_err("aclmdlRICaptureEnd: capture of stream %lld began on another thread", p->id);
	}
	if (!rc) {
		r = p->building;
		p->building = NULL;
		p->capturing = 0;
		ntasks = r->ntasks;
		if (p->invalidated) {
			p->invalidated = 0;
			free_tasks(r->tasks, r->ntasks);
			free(r);
			r = NULL;
			rc = ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED;
			set_err("aclmdlRICaptureEnd: capture of stream %lld was invalidated by an unsafe call", p->id);
		} else {
			r->id = ++ri_ids;
			r->next = ris;
			ris = r;
			*modelRI = r;
		}
	}
	tr_begin("aclmdlRICaptureEnd");
	tr(",\"stream\":%lld,\"ri\":%lld,\"tasks\":%d", p ? p->id : 0LL, r ? r->id : 0LL, ntasks);
	tr_end(rc);
	UNLOCK();
	return rc;
}

static int dangling(ri *r) {
	int n = 0;
	for (int i = 0; i < r->ntasks; i++) {
		struct task *t = &r->tasks[i];
		for (int j = 0; j < t->nranges; j++)
			if (t->hi[j] > t->lo[j] && !find_alloc((void *)(uintptr_t)t->lo[j], (size_t)(t->hi[j] - t->lo[j]), 0))
				n++;
	}
	return n;
}

aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream s) {
	LOCK();
	int rc = injected("aclmdlRIExecuteAsync");
	ri *r = as_ri(modelRI);
	stream *p = s ? as_stream(s) : NULL;
	int kernels = 0, dang = 0;
	if (!rc && !r) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclmdlRIExecuteAsync: not a model run instance (destroyed?)");
	}
	if (!rc && s && !p) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclmdlRIExecuteAsync: not a stream");
	}
	if (!rc && p && p->capturing) {
		rc = ACL_ERROR_RT_STREAM_CAPTURED;
		set_err("aclmdlRIExecuteAsync: stream %lld is being captured", p->id);
	}
	if (!rc) {
		/* The stream runs the model's tasks in capture order, on the
		 * addresses bound at capture. */
		dang = dangling(r);
		for (int i = 0; !rc && i < r->ntasks; i++) {
			struct task *t = &r->tasks[i];
			if (t->kind == 1 && t->n) {
				if (!find_alloc(t->dst, t->n, 0) && !find_alloc(t->dst, t->n, 1)) {
					rc = ACL_ERROR_RT_AICORE_EXCEPTION;
					set_err("aclmdlRIExecuteAsync: task %d (aclrtMemcpyAsync): destination [%p,+%zu) is no longer allocated", i, t->dst, t->n);
					break;
				}
				memmove(t->dst, t->src, t->n);
			}
			if (t->kind == 2) {
				/* a collective waits for the other ranks, whose
				 * streams need the lock meanwhile */
				UNLOCK();
				int hrc = t->fn(t->arg);
				LOCK();
				if (hrc) {
					char inner[512];
					snprintf(inner, sizeof inner, "%s", errmsg);
					set_err("aclmdlRIExecuteAsync: task %d (%s): %s", i, t->op, inner);
					rc = hrc;
				}
			}
			if (t->kind == 0) {
				kernels++;
				int krc = compute(t->ex, t->ws, t->wsSize);
				if (krc) {
					char inner[512];
					snprintf(inner, sizeof inner, "%s", errmsg);
					set_err("aclmdlRIExecuteAsync: task %d (%s): %s", i, t->op, inner);
					rc = krc;
				}
			}
		}
		r->running_on = p ? (void *)p : (void *)1;
	}
	tr_begin("aclmdlRIExecuteAsync");
	tr(",\"ri\":%lld,\"stream\":%lld,\"tasks\":%d,\"kernels\":%d,\"dangling\":%d", r ? r->id : 0LL,
	   p ? p->id : 0LL, r ? r->ntasks : 0, kernels, dang);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclError aclmdlRIDestroy(aclmdlRI modelRI) {
	LOCK();
	int rc = injected("aclmdlRIDestroy");
	ri *r = as_ri(modelRI);
	long long id = r ? r->id : 0;
	if (!rc && !r) {
		rc = ACL_ERROR_RT_PARAM_INVALID;
		set_err("aclmdlRIDestroy: not a model run instance");
	}
	if (!rc && r->running_on) {
		rc = ACL_ERROR_RT_MODEL_RUNNING;
		set_err("aclmdlRIDestroy: model %lld is still running; synchronize its stream first", id);
	}
	if (!rc) {
		for (ri **pp = &ris; *pp; pp = &(*pp)->next)
			if (*pp == r) {
				*pp = r->next;
				break;
			}
		r->magic = 0;
		free_tasks(r->tasks, r->ntasks);
		free(r);
	}
	tr_begin("aclmdlRIDestroy");
	tr(",\"ri\":%lld", id);
	tr_end(rc);
	UNLOCK();
	return rc;
}


/* ---------------- executors and phase 2 ---------------- */

static long long exec_ids, live_execs;

/* The live executors, so that phase 2 recognises one without reading the
 * memory of an executor it already freed (a second run of a single-use
 * executor). Under mu. */
static aclOpExecutor **live_set;
static size_t live_len, live_cap;

static int exec_add(aclOpExecutor *ex) {
	if (live_len == live_cap) {
		size_t cap = live_cap ? 2 * live_cap : 64;
		aclOpExecutor **p = realloc(live_set, cap * sizeof *p);
		if (!p) return 0;
		live_set = p, live_cap = cap;
	}
	live_set[live_len++] = ex;
	return 1;
}

/* ex if it is live (newest first: phase 2 usually runs the latest), else NULL */
static aclOpExecutor *exec_live(const aclOpExecutor *ex) {
	for (size_t i = live_len; i-- > 0;)
		if (live_set[i] == ex) return live_set[i];
	return NULL;
}

static void exec_remove(const aclOpExecutor *ex) {
	for (size_t i = live_len; i-- > 0;)
		if (live_set[i] == ex) {
			live_set[i] = live_set[--live_len];
			return;
		}
}

static uint64_t ws_for(const char *op) {
	for (int i = 0; i < n_ws_rules; i++)
		if (strcmp(ws_rules[i].op, op) == 0) return (uint64_t)ws_rules[i].bytes;
	return 0;
}

/* the operator of IRT_ACLNN_OPS named op, or -1 */
static int op_id(const char *op) {
	for (int i = 0; i < FAKE_NOPS; i++)
		if (strcmp(fake_ops[i].name, op) == 0) return i;
	return -1;
}

int fake_exec_register(aclOpExecutor *ex, const char *fn, const char *op) {
	int id = op_id(op);
	if (id < 0) {
		set_err("%s: %s is not an operator of IRT_ACLNN_OPS", fn, op);
		return ACLNN_ERR_INNER;
	}
	if (!exec_add(ex)) {
		set_err("%s: out of host memory", fn);
		return ACLNN_ERR_INNER;
	}
	ex->magic = EXEC_MAGIC;
	ex->id = ++exec_ids;
	ex->opid = id;
	snprintf(ex->op, sizeof ex->op, "%s", op);
	ex->ws = ws_for(op);
	live_execs++;
	return 0;
}

aclnnStatus fake_run(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                     aclrtStream s) {
	LOCK();
	int rc = injected(op);
	aclOpExecutor *ex = exec_live(executor);
	stream *p = s ? as_stream(s) : NULL;
	long long exid = ex ? ex->id : 0;
	if (!rc && !ex) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: executor is not live (executors are single-use)", op);
	}
	if (!rc && strcmp(ex->op, op) != 0) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: executor %lld was made by %sGetWorkspaceSize", op, exid, ex->op);
	}
	if (!rc && workspaceSize < ex->ws) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: workspace of %llu B given, %llu B required", op, (unsigned long long)workspaceSize,
		        (unsigned long long)ex->ws);
	}
	if (!rc && ex->ws > 0 && !find_alloc(workspace, ex->ws, 0)) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: workspace [%p,+%llu B) is not inside one device allocation", op, workspace,
		        (unsigned long long)ex->ws);
	}
	if (!rc && s && !p) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: not a stream", op);
	}
	int captured = 0, consumed = 0;
	if (!rc && p && p->capturing) {
		struct task t = {0};
		snprintf(t.op, sizeof t.op, "%s", op);
		t.nranges = ex->nranges;
		memcpy(t.lo, ex->lo, sizeof t.lo);
		memcpy(t.hi, ex->hi, sizeof t.hi);
		t.ex = malloc(sizeof *ex);
		memcpy(t.ex, ex, sizeof *ex);
		t.ws = workspace;
		t.wsSize = workspaceSize;
		add_task(p->building, &t);
		captured = 1;
	} else if (!rc) {
		/* Streams run in order and the emulator runs each task when it is
		 * enqueued, so an eager launch computes now. */
		rc = compute(ex, workspace, workspaceSize);
		consumed = 1;
	}
	if (ex && (!rc || consumed)) {
		ex->magic = 0;
		exec_remove(ex);
		free(ex);
		live_execs--;
	}
	tr_begin(op);
	tr(",\"exec\":%lld,\"ws_addr\":%llu,\"ws_size\":%llu,\"stream\":%lld,\"captured\":%s", exid,
	   (unsigned long long)(uintptr_t)workspace, (unsigned long long)workspaceSize, p ? p->id : 0LL,
	   captured ? "true" : "false");
	tr_end(rc);
	UNLOCK();
	return rc;
}

/* A kernel's view of memory: each tensor of the executor must lie inside
 * one live device allocation when it runs, or it is an AI core exception
 * naming the operator and the tensor, and nothing is written. */
static int check_access(const aclOpExecutor *e, const aclTensor *t, const char *what) {
	if (!t->magic || numel(t) == 0) return 0;
	int64_t lo, hi;
	byte_range(t, &lo, &hi);
	if (!fake_in_device((const void *)(uintptr_t)lo, (size_t)(hi - lo))) {
		set_err("%s: %s [%p,+%lld B) is outside every device allocation (freed, or never allocated)", e->op, what,
		        (void *)(uintptr_t)lo, (long long)(hi - lo));
		return ACL_ERROR_RT_AICORE_EXCEPTION;
	}
	return 0;
}

/* runs executor e's kernel (fake_ops[e->opid]) with its workspace; 0 or an
 * error code with the error text set */
static int compute(const aclOpExecutor *e, void *workspace, uint64_t wsSize) {
	char what[32];
	for (int i = 0; i < e->nt; i++) {
		snprintf(what, sizeof what, "tensor argument %d", i);
		int rc = check_access(e, &e->t[i], what);
		if (rc) return rc;
	}
	for (int l = 0; l < 2; l++)
		for (int i = 0; i < e->nl[l]; i++) {
			snprintf(what, sizeof what, "tensor %d of list %d", i, l);
			int rc = check_access(e, &e->l[l][i], what);
			if (rc) return rc;
		}
	if (e->ws > 0 && !fake_in_device(workspace, (size_t)e->ws)) {
		set_err("%s: workspace [%p,+%llu B) is outside every device allocation", e->op, workspace,
		        (unsigned long long)e->ws);
		return ACL_ERROR_RT_AICORE_EXCEPTION;
	}
	kctx c = {e, workspace, wsSize};
	int rc = fake_ops[e->opid].kernel(&c);
	/* The workspace is the operator's scratch: it holds nothing afterwards,
	 * which the emulator makes visible by leaving garbage in it. */
	if (!rc && e->ws > 0) memset(workspace, 0xff, (size_t)e->ws);
	return rc;
}

/* ---------------- control, for tests ---------------- */

void irtfake_reset(void) {
	LOCK();
	fake_trace_reset();
	n_ws_rules = 0;
	UNLOCK();
}

void irtfake_set(const char *key, long long value) {
	LOCK();
	if (strcmp(key, "device_count") == 0) cfg_device_count = value;
	else if (strcmp(key, "total_mem") == 0) cfg_total_mem = value;
	else if (strcmp(key, "capture_supported") == 0) cfg_capture_supported = value;
	else if (strcmp(key, "arith") == 0) cfg_arith = value;
	else if (fake_parallel_set(key, value)) /* parallel.c */;
	else if (strncmp(key, "workspace:", 10) == 0) {
		int i;
		for (i = 0; i < n_ws_rules; i++)
			if (strcmp(ws_rules[i].op, key + 10) == 0) break;
		if (i == n_ws_rules && n_ws_rules < MAX_WS_RULES) n_ws_rules++;
		if (i < MAX_WS_RULES) {
			snprintf(ws_rules[i].op, sizeof ws_rules[i].op, "%s", key + 10);
			ws_rules[i].bytes = value;
		}
	}
	UNLOCK();
}

void irtfake_set_soc(const char *name) {
	LOCK();
	snprintf(cfg_soc, sizeof cfg_soc, "%s", name);
	UNLOCK();
}

long long irtfake_stat(const char *key) {
	LOCK();
	long long v = -1;
	if (fake_objects_stat(key, &v)) /* aclnn.c */;
	else if (fake_parallel_stat(key, &v)) /* parallel.c */;
	else if (strcmp(key, "live_executors") == 0) v = live_execs;
	else if (strcmp(key, "dev_used") == 0) v = dev_used;
	else if (strcmp(key, "live_allocs") == 0) {
		v = 0;
		for (alloc *a = allocs; a; a = a->next) v += !a->host;
	} else if (strcmp(key, "live_ris") == 0) {
		v = 0;
		for (ri *r = ris; r; r = r->next) v++;
	} else if (strcmp(key, "live_streams") == 0) {
		v = 0;
		for (stream *s = streams; s; s = s->next) v++;
	}
	UNLOCK();
	return v;
}
