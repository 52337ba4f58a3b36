/*
 * fakeacl.c: irtool's emulator of libascendcl + libnnopbase + libopapi for
 * the runtime/acl binding, the runtime half (kernels.c computes). The
 * binding's tests and users (scripts/fakeacl.sh DIR, then
 * IRTOOL_ACL_LIBS=DIR) load it exactly as they would load CANN.
 *
 * What it does:
 *   - implements every function declared in runtime/acl/irtool_acl.h over host
 *     memory: device memory is one posix_memalign'd host allocation per
 *     aclrtMalloc, copies are memcpy, streams and model run instances are
 *     host objects; streams run in order (a launch computes when enqueued);
 *   - phase 1 of every aclnn operator checks its documented argument rules
 *     and snapshots the arguments into the executor (CANN binds the
 *     descriptors, and so the addresses, then); phase 2 checks the
 *     workspace and runs the operator's kernel (kernels.c), or, on a
 *     capturing stream, records it; aclmdlRIExecuteAsync recomputes the
 *     recorded kernels in order at the addresses bound at capture;
 *   - records every call with its arguments (tensor shapes, strides,
 *     offsets, addresses, workspace sizes, capture begin/end, executes,
 *     destroys) as one JSON object per line, read back with irtfake_trace();
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
 *     phase 1 asked for and lies in device memory, tensors lie inside one
 *     device allocation with non-negative strides and offset; a kernel
 *     touching memory outside every allocation is an AI core exception
 *     (507015) naming the operator.
 *
 * Control (tests only, resolved by runtime/acl/internal/fakectl):
 *   irtfake_reset, irtfake_set, irtfake_set_soc, irtfake_fail,
 *   irtfake_trace, irtfake_free, irtfake_stat.
 */
#define _GNU_SOURCE
#include "fakeacl.h"
#include "ops.h"

#include <errno.h>
#include <math.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER; /* LOCK and UNLOCK: ops.h */

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

#define MAX_FAIL_RULES 32
static struct {
	char fn[64];
	int nth; /* 1-based index of the failing call from now; 0 = every call */
	int seen;
	int code;
	char msg[256];
} fail_rules[MAX_FAIL_RULES];
static int n_fail_rules;

/* ---------------- error text (per thread, as CANN keeps it) ---------------- */

static __thread char errmsg[512];
static __thread char errmsg_out[512];

static void set_err(const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof errmsg, fmt, ap);
	va_end(ap);
}

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

/* ---------------- the trace ---------------- */

static char *trace;
static size_t trace_len, trace_cap;
static long long seq;

static void tr_raw(const char *s, size_t n) {
	if (trace_len + n + 1 > trace_cap) {
		size_t c = trace_cap ? trace_cap * 2 : 1 << 16;
		while (c < trace_len + n + 1) c *= 2;
		trace = realloc(trace, c);
		trace_cap = c;
	}
	memcpy(trace + trace_len, s, n);
	trace_len += n;
	trace[trace_len] = 0;
}

void tr(const char *fmt, ...) {
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof buf) {
		char *big = malloc((size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		tr_raw(big, (size_t)n);
		free(big);
		return;
	}
	tr_raw(buf, (size_t)n);
}

static void tr_begin(const char *fn) {
	seq++;
	tr("{\"seq\":%lld,\"fn\":\"%s\"", seq, fn);
}
static void tr_end(int rc) { tr(",\"rc\":%d}\n", rc); }

static void tr_i64s(const char *key, const int64_t *v, uint64_t n) {
	tr(",\"%s\":[", key);
	for (uint64_t i = 0; i < n; i++) tr(i ? ",%lld" : "%lld", (long long)v[i]);
	tr("]");
}

/* injected failures: returns the code to fail with, or 0 */
static int injected(const char *fn) {
	for (int i = 0; i < n_fail_rules; i++) {
		if (strcmp(fail_rules[i].fn, fn) != 0) continue;
		fail_rules[i].seen++;
		if (fail_rules[i].nth == 0 || fail_rules[i].nth == fail_rules[i].seen) {
			set_err("%s", fail_rules[i].msg);
			return fail_rules[i].code;
		}
	}
	return 0;
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

/* The arithmetic of the operators (kernels.c): IRTFAKE_ARITH=ggml makes
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

/* for kernels.c (called with the lock held) */
int fake_in_device(const void *p, size_t n) { return find_alloc(p, n, 0) != NULL; }
const char *fake_soc(void) { return cfg_soc; }

static int capture_active_global(void); /* below */
static void invalidate_unsafe(const char *fn);

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

void fake_trace_call(const char *fn, int rc, const char *fields_fmt, ...) {
	char buf[1024];
	va_list ap;
	va_start(ap, fields_fmt);
	vsnprintf(buf, sizeof buf, fields_fmt, ap);
	va_end(ap);
	LOCK();
	tr_begin(fn);
	tr("%s", buf);
	tr_end(rc);
	UNLOCK();
}

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
				int krc = fake_compute(t->ex, t->ws, t->wsSize);
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

/* ---------------- aclnn objects ---------------- */

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
static long long tensor_ids, live_tensors, live_scalars, live_arrays, live_lists;

static int dtype_size(aclDataType t) {
	switch (t) {
	case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
	case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
	case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
	case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: return 8;
	case ACL_INT4: return 1; /* two per byte: extents in bytes are halved where it matters */
	default: return 0;
	}
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
	LOCK();
	aclTensor *t = NULL;
	int rc = injected("aclCreateTensor");
	int es = dtype_size(dataType);
	if (!rc && (viewDimsNum > 8 || storageDimsNum > 8 || (viewDimsNum && (!viewDims || !stride)))) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: at most 8 dims, with strides");
	}
	if (!rc && es == 0) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: unsupported data type %d", (int)dataType);
	}
	if (!rc && offset < 0) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: negative storage offset %lld", (long long)offset);
	}
	int64_t reach = offset; /* last element index + 1 */
	int empty = 0;
	for (uint64_t i = 0; !rc && i < viewDimsNum; i++) {
		if (viewDims[i] < 0 || stride[i] < 0) {
			rc = ACLNN_ERR_PARAM_INVALID;
			set_err("aclCreateTensor: dim %llu has shape %lld stride %lld (must be >= 0)", (unsigned long long)i,
			        (long long)viewDims[i], (long long)stride[i]);
		}
		if (viewDims[i] == 0) empty = 1;
		reach += (viewDims[i] - 1) * stride[i];
	}
	reach += 1;
	int64_t storage = 1;
	for (uint64_t i = 0; i < storageDimsNum; i++) storage *= storageDims[i];
	if (!rc && !empty && storage < reach) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: view reaches element %lld but the storage holds %lld", (long long)reach,
		        (long long)storage);
	}
	if (!rc && !empty && tensorData == NULL) {
		rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("aclCreateTensor: null data");
	}
	int64_t bytes = dataType == ACL_INT4 ? (storage + 1) / 2 : storage * es;
	if (!rc && !empty && !find_alloc(tensorData, (size_t)bytes, 0)) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: storage [%p,+%lld B) is not inside one device allocation", tensorData,
		        (long long)bytes);
	}
	/* "tensorData must be 32-byte aligned, otherwise undefined errors may
	 * occur" (aclCreateTensor, CANN 9.0.0): refused here, so that a view
	 * into a buffer passes the aligned address and an element offset. */
	if (!rc && !empty && ((uintptr_t)tensorData & 31)) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclCreateTensor: tensorData %p is not 32-byte aligned", tensorData);
	}
	if (!rc) {
		t = calloc(1, sizeof *t);
		t->magic = TENSOR_MAGIC;
		t->id = ++tensor_ids;
		t->ndim = (int)viewDimsNum;
		for (uint64_t i = 0; i < viewDimsNum; i++) {
			t->dims[i] = viewDims[i];
			t->strides[i] = stride[i];
		}
		t->nstorage = (int)storageDimsNum;
		for (uint64_t i = 0; i < storageDimsNum; i++) t->storage[i] = storageDims[i];
		t->offset = offset;
		t->dtype = dataType;
		t->format = format;
		t->data = tensorData;
		live_tensors++;
	}
	tr_begin("aclCreateTensor");
	tr(",\"tensor\":%lld,\"dtype\":%d,\"format\":%d", t ? t->id : 0LL, (int)dataType, (int)format);
	tr_i64s("shape", viewDims, viewDims ? viewDimsNum : 0);
	tr_i64s("strides", stride, stride ? viewDimsNum : 0);
	tr(",\"offset\":%lld", (long long)offset);
	tr_i64s("storage", storageDims, storageDims ? storageDimsNum : 0);
	tr(",\"addr\":%llu", (unsigned long long)(uintptr_t)tensorData);
	tr_end(rc);
	UNLOCK();
	return t;
}

static aclTensor *live_tensor(const aclTensor *t) {
	return (t && t->magic == TENSOR_MAGIC) ? (aclTensor *)t : NULL;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
	LOCK();
	aclTensor *t = live_tensor(tensor);
	int rc = injected("aclDestroyTensor");
	if (!rc && !t) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclDestroyTensor: not a live tensor");
	}
	if (!rc && t->in_list) {
		rc = ACLNN_ERR_PARAM_INVALID;
		set_err("aclDestroyTensor: tensor %lld belongs to a tensor list; destroy the list", t->id);
	}
	long long id = t ? t->id : 0;
	if (!rc) {
		t->magic = 0;
		free(t);
		live_tensors--;
	}
	tr_begin("aclDestroyTensor");
	tr(",\"tensor\":%lld", id);
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
	LOCK();
	aclScalar *s = NULL;
	if (value && dtype_size(dataType)) {
		s = calloc(1, sizeof *s);
		s->magic = 0x5343414cU;
		s->dtype = dataType;
		switch (dataType) {
		case ACL_FLOAT: s->v = *(float *)value; break;
		case ACL_DOUBLE: s->v = *(double *)value; break;
		case ACL_INT32: s->v = *(int32_t *)value; break;
		case ACL_INT64: s->v = (double)*(int64_t *)value; break;
		default: s->v = 0;
		}
		live_scalars++;
	} else {
		set_err("aclCreateScalar: null value or bad type");
	}
	tr_begin("aclCreateScalar");
	/* JSON has no infinities or NaN: those values are traced as strings */
	if (!s || isfinite(s->v)) tr(",\"dtype\":%d,\"value\":%.17g", (int)dataType, s ? s->v : 0.0);
	else tr(",\"dtype\":%d,\"value\":\"%g\"", (int)dataType, s->v);
	tr_end(s ? 0 : ACLNN_ERR_PARAM_INVALID);
	UNLOCK();
	return s;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
	LOCK();
	int rc = (scalar && scalar->magic == 0x5343414cU) ? 0 : ACLNN_ERR_PARAM_INVALID;
	if (!rc) {
		((aclScalar *)scalar)->magic = 0;
		free((void *)scalar);
		live_scalars--;
	}
	tr_begin("aclDestroyScalar");
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
	LOCK();
	aclIntArray *a = NULL;
	if ((value || size == 0) && size <= 64) {
		a = calloc(1, sizeof *a);
		a->magic = 0x494e5441U;
		a->n = size;
		for (uint64_t i = 0; i < size; i++) a->v[i] = value[i];
		live_arrays++;
	}
	tr_begin("aclCreateIntArray");
	tr_i64s("value", value, value ? size : 0);
	tr_end(a ? 0 : ACLNN_ERR_PARAM_INVALID);
	UNLOCK();
	return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
	LOCK();
	int rc = (array && array->magic == 0x494e5441U) ? 0 : ACLNN_ERR_PARAM_INVALID;
	if (!rc) {
		((aclIntArray *)array)->magic = 0;
		free((void *)array);
		live_arrays--;
	}
	tr_begin("aclDestroyIntArray");
	tr_end(rc);
	UNLOCK();
	return rc;
}

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
	LOCK();
	aclTensorList *l = NULL;
	int ok = value && size > 0 && size <= 16;
	for (uint64_t i = 0; ok && i < size; i++) ok = live_tensor(value[i]) != NULL;
	if (ok) {
		l = calloc(1, sizeof *l);
		l->magic = 0x4c495354U;
		l->n = size;
		for (uint64_t i = 0; i < size; i++) {
			l->v[i] = (aclTensor *)value[i];
			l->v[i]->in_list = 1;
		}
		live_lists++;
	} else {
		set_err("aclCreateTensorList: 1..16 live tensors required");
	}
	tr_begin("aclCreateTensorList");
	tr(",\"tensors\":[");
	for (uint64_t i = 0; ok && i < size; i++) tr(i ? ",%lld" : "%lld", value[i]->id);
	tr("]");
	tr_end(l ? 0 : ACLNN_ERR_PARAM_INVALID);
	UNLOCK();
	return l;
}

aclnnStatus aclDestroyTensorList(const aclTensorList *array) {
	LOCK();
	int rc = (array && array->magic == 0x4c495354U) ? 0 : ACLNN_ERR_PARAM_INVALID;
	if (!rc) {
		/* a list owns its tensors */
		for (uint64_t i = 0; i < array->n; i++) {
			array->v[i]->magic = 0;
			free(array->v[i]);
			live_tensors--;
		}
		((aclTensorList *)array)->magic = 0;
		free((void *)array);
		live_lists--;
	}
	tr_begin("aclDestroyTensorList");
	tr_end(rc);
	UNLOCK();
	return rc;
}

/* ---------------- operator helpers ---------------- */

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


void call_begin(call *c, const char *fn) {
	c->fn = fn;
	c->rc = injected(fn);
	c->ex = calloc(1, sizeof *c->ex);
	c->ex->arith = fake_arith();
	tr_begin(fn);
}

static void byte_range(const aclTensor *t, int64_t *lo, int64_t *hi) {
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

/* records tensor argument key; required tensors must be live */
const aclTensor *arg(call *c, const char *key, const aclTensor *t, int required) {
	aclTensor *lt = live_tensor(t);
	tr(",\"%s\":%lld", key, lt ? lt->id : 0LL);
	if (c->rc) return lt;
	if (t && !lt) {
		c->rc = ACLNN_ERR_PARAM_INVALID;
		set_err("%s: %s is not a live tensor (destroyed?)", c->fn, key);
	} else if (!t && required) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: required tensor %s is null", c->fn, key);
	}
	if (lt && c->ex->nranges < 16) {
		byte_range(lt, &c->ex->lo[c->ex->nranges], &c->ex->hi[c->ex->nranges]);
		c->ex->nranges++;
	}
	/* the snapshot phase 2 computes on: the descriptor as it is now */
	if (c->ex->nt < EX_TENSORS) {
		aclTensor *slot = &c->ex->t[c->ex->nt++];
		if (lt) *slot = *lt;
		else memset(slot, 0, sizeof *slot);
	} else if (!c->rc) {
		c->rc = ACLNN_ERR_INNER;
		set_err("%s: more tensor arguments than the emulator keeps", c->fn);
	}
	return lt;
}

void list_arg(call *c, const char *key, const aclTensorList *l) {
	int ok = l && l->magic == 0x4c495354U;
	tr(",\"%s\":[", key);
	for (uint64_t i = 0; ok && i < l->n; i++) {
		tr(i ? ",%lld" : "%lld", l->v[i]->id);
		int which = strcmp(key, "value") == 0;
		if (i < EX_LIST) {
			c->ex->l[which][i] = *l->v[i];
			c->ex->nl[which] = (int)i + 1;
		} else if (!c->rc) {
			c->rc = ACLNN_ERR_INNER;
			set_err("%s: %s has more tensors than the emulator keeps", c->fn, key);
		}
		if (c->ex->nranges < 16) {
			byte_range(l->v[i], &c->ex->lo[c->ex->nranges], &c->ex->hi[c->ex->nranges]);
			c->ex->nranges++;
		}
	}
	tr("]");
	if (!c->rc && !ok) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: %s is not a tensor list", c->fn, key);
	}
}

void check(call *c, int cond, const char *fmt, ...) {
	if (c->rc || cond) return;
	c->rc = ACLNN_ERR_PARAM_INVALID;
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	set_err("%s: %s", c->fn, buf);
}

static int64_t numel(const aclTensor *t) {
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
	return n;
}

int same_shape(const aclTensor *a, const aclTensor *b) {
	if (!a || !b || a->ndim != b->ndim) return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->dims[i] != b->dims[i]) return 0;
	return 1;
}

/* b broadcasts to out (numpy rules, right-aligned) */
static int broadcasts(const aclTensor *b, const aclTensor *out) {
	if (!b || !out || b->ndim > out->ndim) return 0;
	for (int i = 1; i <= b->ndim; i++) {
		int64_t x = b->dims[b->ndim - i], y = out->dims[out->ndim - i];
		if (x != y && x != 1) return 0;
	}
	return 1;
}

aclnnStatus call_end(call *c, const char *op, uint64_t *workspaceSize, aclOpExecutor **executor) {
	if (!c->rc && (!workspaceSize || !executor)) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: workspaceSize and executor must not be null", c->fn);
	}
	if (!c->rc && !exec_add(c->ex)) {
		c->rc = ACLNN_ERR_INNER;
		set_err("%s: out of host memory", c->fn);
	}
	if (!c->rc) {
		c->ex->magic = EXEC_MAGIC;
		c->ex->id = ++exec_ids;
		snprintf(c->ex->op, sizeof c->ex->op, "%s", op);
		c->ex->ws = ws_for(op);
		*workspaceSize = c->ex->ws;
		*executor = c->ex;
		live_execs++;
		tr(",\"exec\":%lld,\"ws\":%llu", c->ex->id, (unsigned long long)c->ex->ws);
	} else {
		free(c->ex);
	}
	tr_end(c->rc);
	UNLOCK();
	return c->rc;
}

/* phase 2, the same for every operator */
aclnnStatus run(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
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
		 * enqueued, so an eager launch computes now (kernels.c). */
		rc = fake_compute(ex, workspace, workspaceSize);
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


/* ---------------- norm ---------------- */

aclnnStatus aclnnRmsNormGetWorkspaceSize(const aclTensor *x, const aclTensor *gamma, double epsilon,
                                         const aclTensor *yOut, const aclTensor *rstdOut, uint64_t *workspaceSize,
                                         aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnRmsNormGetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	gamma = arg(&c, "gamma", gamma, 1);
	yOut = arg(&c, "yOut", yOut, 1);
	rstdOut = arg(&c, "rstdOut", rstdOut, 1);
	tr(",\"epsilon\":%.17g", epsilon);
	c.ex->f[0] = epsilon;
	check(&c, same_shape(x, yOut), "yOut must have the shape of x");
	check(&c, x && (x->dtype == ACL_FLOAT || x->dtype == ACL_FLOAT16 || x->dtype == ACL_BF16),
	      "x must be FLOAT, FLOAT16 or BFLOAT16");
	if (!c.rc && x && gamma) {
		int ok = gamma->ndim <= x->ndim;
		for (int i = 1; ok && i <= gamma->ndim; i++) ok = gamma->dims[gamma->ndim - i] == x->dims[x->ndim - i];
		check(&c, ok, "gamma must match the trailing dims of x");
		check(&c, rstdOut && numel(rstdOut) * numel(gamma) == numel(x), "rstd * gamma must cover x");
	}
	return call_end(&c, "aclnnRmsNorm", workspaceSize, executor);
}
RUN(aclnnRmsNorm)

aclnnStatus aclnnAddRmsNormGetWorkspaceSize(const aclTensor *x1, const aclTensor *x2, const aclTensor *gamma,
                                            double epsilon, const aclTensor *yOut, const aclTensor *rstdOut,
                                            const aclTensor *xOut, uint64_t *workspaceSize,
                                            aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnAddRmsNormGetWorkspaceSize");
	x1 = arg(&c, "x1", x1, 1);
	x2 = arg(&c, "x2", x2, 1);
	gamma = arg(&c, "gamma", gamma, 1);
	yOut = arg(&c, "yOut", yOut, 1);
	rstdOut = arg(&c, "rstdOut", rstdOut, 1);
	xOut = arg(&c, "xOut", xOut, 1);
	tr(",\"epsilon\":%.17g", epsilon);
	c.ex->f[0] = epsilon;
	check(&c, same_shape(x1, x2) && same_shape(x1, yOut) && same_shape(x1, xOut),
	      "x1, x2, yOut and xOut must have one shape");
	check(&c, x1 && (x1->dtype == ACL_FLOAT || x1->dtype == ACL_FLOAT16 || x1->dtype == ACL_BF16),
	      "x1 must be FLOAT, FLOAT16 or BFLOAT16");
	return call_end(&c, "aclnnAddRmsNorm", workspaceSize, executor);
}
RUN(aclnnAddRmsNorm)

/* ---------------- elementwise ---------------- */

static aclnnStatus unary(const char *fn, const char *op, const aclTensor *self, aclTensor *out, uint64_t *ws,
                         aclOpExecutor **ex) {
	call c;
	call_begin(&c, fn);
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	check(&c, same_shape(self, out), "out must have the shape of self");
	return call_end(&c, op, ws, ex);
}

static aclnnStatus binary(const char *fn, const char *op, const aclTensor *self, const aclTensor *other,
                          const aclScalar *alpha, aclTensor *out, uint64_t *ws, aclOpExecutor **ex) {
	call c;
	call_begin(&c, fn);
	self = arg(&c, "self", self, 1);
	other = arg(&c, "other", other, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	if (alpha) tr(",\"alpha\":%.17g", alpha->v);
	c.ex->f[0] = alpha ? alpha->v : 1;
	check(&c, broadcasts(self, out) && broadcasts(other, out), "self and other must broadcast to out");
	return call_end(&c, op, ws, ex);
}

aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	return binary("aclnnMulGetWorkspaceSize", "aclnnMul", self, other, NULL, out, workspaceSize, executor);
}
RUN(aclnnMul)

aclnnStatus aclnnInplaceMulGetWorkspaceSize(aclTensor *selfRef, const aclTensor *other, uint64_t *workspaceSize,
                                            aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceMulGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	other = arg(&c, "other", other, 1);
	check(&c, broadcasts(other, selfRef), "other must broadcast to selfRef");
	return call_end(&c, "aclnnInplaceMul", workspaceSize, executor);
}
RUN(aclnnInplaceMul)

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other, const aclScalar *alpha,
                                     aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	if (!alpha || alpha->magic != 0x5343414cU) {
		call c;
		call_begin(&c, "aclnnAddGetWorkspaceSize");
		if (!c.rc) {
			c.rc = ACLNN_ERR_PARAM_NULLPTR;
			set_err("aclnnAddGetWorkspaceSize: alpha is not a scalar");
		}
		return call_end(&c, "aclnnAdd", workspaceSize, executor);
	}
	return binary("aclnnAddGetWorkspaceSize", "aclnnAdd", self, other, alpha, out, workspaceSize, executor);
}
RUN(aclnnAdd)

aclnnStatus aclnnMulsGetWorkspaceSize(const aclTensor *self, const aclScalar *other, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnMulsGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = other && other->magic == 0x5343414cU;
	tr(",\"other\":%.17g", ok ? other->v : 0.0);
	c.ex->f[0] = ok ? other->v : 0.0;
	check(&c, ok, "other must be a scalar");
	check(&c, same_shape(self, out), "out must have the shape of self");
	return call_end(&c, "aclnnMuls", workspaceSize, executor);
}
RUN(aclnnMuls)

aclnnStatus aclnnSiluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
	LOCK();
	return unary("aclnnSiluGetWorkspaceSize", "aclnnSilu", self, out, workspaceSize, executor);
}
RUN(aclnnSilu)

aclnnStatus aclnnCosGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor) {
	LOCK();
	return unary("aclnnCosGetWorkspaceSize", "aclnnCos", self, out, workspaceSize, executor);
}
RUN(aclnnCos)

aclnnStatus aclnnSinGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor) {
	LOCK();
	return unary("aclnnSinGetWorkspaceSize", "aclnnSin", self, out, workspaceSize, executor);
}
RUN(aclnnSin)

aclnnStatus aclnnSwiGluGetWorkspaceSize(const aclTensor *x, int64_t dim, const aclTensor *out,
                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnSwiGluGetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	out = arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	if (!c.rc) {
		int d = (int)(dim < 0 ? dim + x->ndim : dim);
		check(&c, d >= 0 && d < x->ndim && x->dims[d] % 2 == 0, "dim %lld must exist and be even", (long long)dim);
		check(&c, out->ndim == x->ndim && numel(out) * 2 == numel(x), "out must be half of x along dim");
	}
	return call_end(&c, "aclnnSwiGlu", workspaceSize, executor);
}
RUN(aclnnSwiGlu)

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnCastGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dtype\":%d", (int)dtype);
	c.ex->i[0] = dtype;
	check(&c, same_shape(self, out), "out must have the shape of self");
	check(&c, out && out->dtype == dtype, "out's type must be dtype");
	return call_end(&c, "aclnnCast", workspaceSize, executor);
}
RUN(aclnnCast)

aclnnStatus aclnnInplaceCopyGetWorkspaceSize(aclTensor *selfRef, const aclTensor *src, uint64_t *workspaceSize,
                                             aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceCopyGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	src = arg(&c, "src", src, 1);
	check(&c, broadcasts(src, selfRef), "src must broadcast to selfRef");
	return call_end(&c, "aclnnInplaceCopy", workspaceSize, executor);
}
RUN(aclnnInplaceCopy)

aclnnStatus aclnnInplaceAddGetWorkspaceSize(aclTensor *selfRef, const aclTensor *other, const aclScalar *alpha,
                                            uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceAddGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	other = arg(&c, "other", other, 1);
	int ok = alpha && alpha->magic == 0x5343414cU;
	tr(",\"alpha\":%.17g", ok ? alpha->v : 0.0);
	c.ex->f[0] = ok ? alpha->v : 1;
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("aclnnInplaceAddGetWorkspaceSize: alpha is not a scalar");
	}
	check(&c, broadcasts(other, selfRef), "other must broadcast to selfRef");
	return call_end(&c, "aclnnInplaceAdd", workspaceSize, executor);
}
RUN(aclnnInplaceAdd)

aclnnStatus aclnnDivGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	return binary("aclnnDivGetWorkspaceSize", "aclnnDiv", self, other, NULL, out, workspaceSize, executor);
}
RUN(aclnnDiv)

aclnnStatus aclnnCatGetWorkspaceSize(const aclTensorList *tensors, int64_t dim, aclTensor *out,
                                     uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnCatGetWorkspaceSize");
	list_arg(&c, "tensors", tensors);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	if (!c.rc) {
		int nd = out->ndim, d = (int)(dim < 0 ? dim + nd : dim);
		check(&c, d >= 0 && d < nd, "dim %lld out of range", (long long)dim);
		int64_t sum = 0;
		for (uint64_t k = 0; !c.rc && k < tensors->n; k++) {
			const aclTensor *t = tensors->v[k];
			check(&c, t->ndim == nd && t->dtype == out->dtype, "tensor %llu must have out's rank and dtype",
			      (unsigned long long)k);
			for (int i = 0; !c.rc && i < nd; i++)
				check(&c, i == d || t->dims[i] == out->dims[i], "tensor %llu differs from out outside dim %d",
				      (unsigned long long)k, d);
			if (!c.rc) sum += t->dims[d];
		}
		check(&c, sum == out->dims[d], "the tensors' dim %d sums to %lld, out has %lld", d, (long long)sum,
		      (long long)out->dims[d]);
	}
	return call_end(&c, "aclnnCat", workspaceSize, executor);
}
RUN(aclnnCat)

aclnnStatus aclnnGeluGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnGeluGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	check(&c, same_shape(self, out), "out must have the shape of self");
	check(&c, self && out && self->dtype == out->dtype, "out must have the dtype of self");
	check(&c, self && (self->dtype == ACL_FLOAT || self->dtype == ACL_FLOAT16 || self->dtype == ACL_BF16),
	      "self must be FLOAT, FLOAT16 or BFLOAT16");
	return call_end(&c, "aclnnGelu", workspaceSize, executor);
}
RUN(aclnnGelu)

/* aclnnAbs: out = |self| */
aclnnStatus aclnnAbsGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                     aclOpExecutor **executor) {
	LOCK();
	return unary("aclnnAbsGetWorkspaceSize", "aclnnAbs", self, out, workspaceSize, executor);
}
RUN(aclnnAbs)

/* aclnnRound: self rounded to the nearest integer, ties to even (torch.round) */
aclnnStatus aclnnRoundGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                       aclOpExecutor **executor) {
	LOCK();
	return unary("aclnnRoundGetWorkspaceSize", "aclnnRound", self, out, workspaceSize, executor);
}
RUN(aclnnRound)

/* aclnnInplaceAddcmul: selfRef = selfRef + value·tensor1·tensor2, tensor1
 * and tensor2 broadcasting to selfRef (aclnnAddcmul&aclnnInplaceAddcmul) */
aclnnStatus aclnnInplaceAddcmulGetWorkspaceSize(const aclTensor *selfRef, const aclTensor *tensor1,
                                                const aclTensor *tensor2, const aclScalar *value,
                                                uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceAddcmulGetWorkspaceSize");
	selfRef = arg(&c, "selfRef", selfRef, 1);
	tensor1 = arg(&c, "tensor1", tensor1, 1);
	tensor2 = arg(&c, "tensor2", tensor2, 1);
	int ok = value && value->magic == 0x5343414cU;
	tr(",\"value\":%.17g", ok ? value->v : 0.0);
	c.ex->f[0] = ok ? value->v : 1;
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("aclnnInplaceAddcmulGetWorkspaceSize: value is not a scalar");
	}
	check(&c, broadcasts(tensor1, selfRef) && broadcasts(tensor2, selfRef),
	      "tensor1 and tensor2 must broadcast to selfRef");
	check(&c, selfRef && tensor1 && tensor2 &&
	              (selfRef->dtype == ACL_FLOAT || selfRef->dtype == ACL_FLOAT16 || selfRef->dtype == ACL_BF16) &&
	              tensor1->dtype == selfRef->dtype && tensor2->dtype == selfRef->dtype,
	      "selfRef, tensor1 and tensor2 must be FLOAT, FLOAT16 or BFLOAT16 of one dtype");
	return call_end(&c, "aclnnInplaceAddcmul", workspaceSize, executor);
}
RUN(aclnnInplaceAddcmul)

/* a scalar's value; non-finite values are traced as strings (JSON has no
 * infinities) */
static int scalar_arg(call *c, const char *key, const aclScalar *v, double *out) {
	int ok = v && v->magic == 0x5343414cU;
	if (ok && isfinite(v->v)) tr(",\"%s\":%.17g", key, v->v);
	else if (ok) tr(",\"%s\":\"%g\"", key, v->v);
	*out = ok ? v->v : 0;
	if (!c->rc && !ok) {
		c->rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("%s: %s is not a scalar", c->fn, key);
	}
	return ok;
}

aclnnStatus aclnnGeScalarGetWorkspaceSize(const aclTensor *self, const aclScalar *other, aclTensor *out,
                                          uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnGeScalarGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	scalar_arg(&c, "other", other, &c.ex->f[0]);
	check(&c, same_shape(self, out), "out must have the shape of self");
	check(&c, out && out->dtype == ACL_BOOL, "out must be BOOL");
	return call_end(&c, "aclnnGeScalar", workspaceSize, executor);
}
RUN(aclnnGeScalar)

aclnnStatus aclnnInplaceMaskedFillScalarGetWorkspaceSize(aclTensor *selfRef, const aclTensor *mask,
                                                         const aclScalar *value, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceMaskedFillScalarGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	mask = arg(&c, "mask", mask, 1);
	scalar_arg(&c, "value", value, &c.ex->f[0]);
	check(&c, mask && mask->dtype == ACL_BOOL, "mask must be BOOL");
	check(&c, broadcasts(mask, selfRef), "mask must broadcast to selfRef");
	return call_end(&c, "aclnnInplaceMaskedFillScalar", workspaceSize, executor);
}
RUN(aclnnInplaceMaskedFillScalar)

/* ---------------- reductions ---------------- */

aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim, aclTensor *out,
                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnSoftmaxGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	check(&c, same_shape(self, out), "out must have the shape of self");
	check(&c, self && dim >= -self->ndim && dim < self->ndim, "dim %lld out of range", (long long)dim);
	return call_end(&c, "aclnnSoftmax", workspaceSize, executor);
}
RUN(aclnnSoftmax)

/* the executor keeps the reduced dims as i[0] = count, i[1..8] = dims,
 * i[9] keepDims, i[10] dtype */
aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self, const aclIntArray *dims, bool keepDims,
                                           aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
                                           aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnReduceSumGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = dims && dims->magic == 0x494e5441U;
	tr_i64s("dims", ok ? dims->v : NULL, ok ? dims->n : 0);
	tr(",\"keepDims\":%s,\"dtype\":%d", keepDims ? "true" : "false", (int)dtype);
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("aclnnReduceSumGetWorkspaceSize: dims is not an int array");
	}
	if (!c.rc) {
		check(&c, dims->n <= 8, "at most 8 dims");
		c.ex->i[0] = (int64_t)dims->n;
		for (uint64_t k = 0; !c.rc && k < dims->n; k++) {
			int64_t d = dims->v[k];
			check(&c, d >= -self->ndim && d < self->ndim, "dim %lld out of range", (long long)d);
			c.ex->i[1 + k] = d < 0 ? d + self->ndim : d;
		}
		c.ex->i[9] = keepDims, c.ex->i[10] = dtype;
		check(&c, out->dtype == dtype, "out's type must be dtype");
		/* out's shape is self's with the reduced dims 1 (keepDims) or gone */
		int64_t want[8];
		int nw = 0;
		for (int i = 0; i < self->ndim; i++) {
			int red = 0;
			for (uint64_t k = 0; k < dims->n; k++) red |= c.ex->i[1 + k] == i;
			if (!red) want[nw++] = self->dims[i];
			else if (keepDims) want[nw++] = 1;
		}
		int same = nw == out->ndim;
		for (int i = 0; same && i < nw; i++) same = want[i] == out->dims[i];
		check(&c, same, "out's shape must be self's reduced over dims");
	}
	return call_end(&c, "aclnnReduceSum", workspaceSize, executor);
}
RUN(aclnnReduceSum)

/* aclnnAmax: the maximum of self over dim (an aclIntArray), keepDim as
 * aclnnReduceSum's keepDims; out has self's dtype. The executor keeps the
 * dims as aclnnReduceSum's does. */
aclnnStatus aclnnAmaxGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim, aclTensor *out,
                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnAmaxGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	int ok = dim && dim->magic == 0x494e5441U;
	tr_i64s("dim", ok ? dim->v : NULL, ok ? dim->n : 0);
	tr(",\"keepDim\":%s", keepDim ? "true" : "false");
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		set_err("aclnnAmaxGetWorkspaceSize: dim is not an int array");
	}
	if (!c.rc) {
		check(&c, dim->n <= 8, "at most 8 dims");
		c.ex->i[0] = (int64_t)dim->n;
		for (uint64_t k = 0; !c.rc && k < dim->n; k++) {
			int64_t d = dim->v[k];
			check(&c, d >= -self->ndim && d < self->ndim, "dim %lld out of range", (long long)d);
			c.ex->i[1 + k] = d < 0 ? d + self->ndim : d;
		}
		c.ex->i[9] = keepDim, c.ex->i[10] = self->dtype;
		check(&c, out->dtype == self->dtype, "out must have the dtype of self");
		check(&c, self->dtype == ACL_FLOAT || self->dtype == ACL_FLOAT16 || self->dtype == ACL_BF16,
		      "self must be FLOAT, FLOAT16 or BFLOAT16");
		int64_t want[8];
		int nw = 0;
		for (int i = 0; i < self->ndim; i++) {
			int red = 0;
			for (uint64_t k = 0; k < dim->n; k++) red |= c.ex->i[1 + k] == i;
			if (!red) want[nw++] = self->dims[i];
			else if (keepDim) want[nw++] = 1;
		}
		int same = nw == out->ndim;
		for (int i = 0; same && i < nw; i++) same = want[i] == out->dims[i];
		check(&c, same, "out's shape must be self's reduced over dim");
	}
	return call_end(&c, "aclnnAmax", workspaceSize, executor);
}
RUN(aclnnAmax)

aclnnStatus aclnnTopkGetWorkspaceSize(const aclTensor *self, int64_t k, int64_t dim, bool largest, bool sorted,
                                      aclTensor *valuesOut, aclTensor *indicesOut, uint64_t *workspaceSize,
                                      aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnTopkGetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	valuesOut = (aclTensor *)arg(&c, "valuesOut", valuesOut, 1);
	indicesOut = (aclTensor *)arg(&c, "indicesOut", indicesOut, 1);
	tr(",\"k\":%lld,\"dim\":%lld,\"largest\":%s,\"sorted\":%s", (long long)k, (long long)dim,
	   largest ? "true" : "false", sorted ? "true" : "false");
	c.ex->i[0] = k, c.ex->i[2] = largest, c.ex->i[3] = sorted;
	if (!c.rc) {
		int d = (int)(dim < 0 ? dim + self->ndim : dim);
		c.ex->i[1] = d;
		check(&c, d >= 0 && d < self->ndim, "dim %lld out of range", (long long)dim);
		check(&c, !c.rc && k >= 0 && k <= self->dims[d], "k %lld outside [0, self.size(dim)]", (long long)k);
		/* CANN 8.x: "sorted currently supports True only" */
		check(&c, sorted, "sorted must be true");
		check(&c, valuesOut->dtype == self->dtype, "valuesOut must have self's dtype");
		check(&c, indicesOut->dtype == ACL_INT64, "indicesOut must be INT64");
		int shp = valuesOut->ndim == self->ndim && indicesOut->ndim == self->ndim;
		for (int i = 0; shp && i < self->ndim; i++)
			shp = valuesOut->dims[i] == (i == d ? k : self->dims[i]) && indicesOut->dims[i] == valuesOut->dims[i];
		check(&c, shp, "valuesOut and indicesOut must be self's shape with k along dim");
	}
	return call_end(&c, "aclnnTopk", workspaceSize, executor);
}
RUN(aclnnTopk)

/* ---------------- matrix products ---------------- */

static aclnnStatus matmul(const char *fn, const char *op, int rank, const aclTensor *self, const aclTensor *mat2,
                          aclTensor *out, int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor) {
	call c;
	call_begin(&c, fn);
	self = arg(&c, "self", self, 1);
	mat2 = arg(&c, "mat2", mat2, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"cubeMathType\":%d", (int)cubeMathType);
	c.ex->i[0] = cubeMathType;
	if (!c.rc) {
		check(&c, rank == 0 || (self->ndim == rank && mat2->ndim == rank && out->ndim == rank),
		      "%s takes %d-D operands", op, rank);
		int64_t k1 = self->ndim ? self->dims[self->ndim - 1] : 1;
		int64_t k2 = mat2->ndim >= 2 ? mat2->dims[mat2->ndim - 2] : mat2->ndim ? mat2->dims[0] : 1;
		check(&c, k1 == k2, "reduce dims differ: self has %lld, mat2 has %lld", (long long)k1, (long long)k2);
		check(&c, out->ndim >= 1 && out->dims[out->ndim - 1] == (mat2->ndim ? mat2->dims[mat2->ndim - 1] : 1),
		      "out's last dim must be mat2's");
		check(&c, out->ndim < 2 || self->ndim < 2 || out->dims[out->ndim - 2] == self->dims[self->ndim - 2],
		      "out's rows must be self's");
		check(&c, cubeMathType >= 0 && cubeMathType <= 3, "cubeMathType %d is not 0..3", (int)cubeMathType);
		/* KEEP_DTYPE and USE_HF32 with FLOAT need the HF32/FP32 cube of
		 * Atlas A2/A3 (aclnnMatmul, cubeMathType) */
		int a2 = strncmp(cfg_soc, "Ascend910B", 10) == 0 || strncmp(cfg_soc, "Ascend910_93", 12) == 0;
		check(&c, a2 || self->dtype != ACL_FLOAT || (cubeMathType != 0 && cubeMathType != 3),
		      "cubeMathType %d with FLOAT inputs is not supported on %s", (int)cubeMathType, cfg_soc);
		/* mixed float types promote (FLOAT16 with FLOAT computes in FLOAT) */
		int fs = self->dtype == ACL_FLOAT || self->dtype == ACL_FLOAT16 || self->dtype == ACL_BF16;
		int fm = mat2->dtype == ACL_FLOAT || mat2->dtype == ACL_FLOAT16 || mat2->dtype == ACL_BF16;
		check(&c, fs && fm, "self and mat2 must be FLOAT, FLOAT16 or BFLOAT16");
	}
	return call_end(&c, op, workspaceSize, executor);
}

aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
                                        int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	return matmul("aclnnMatmulGetWorkspaceSize", "aclnnMatmul", 0, self, mat2, out, cubeMathType, workspaceSize,
	              executor);
}
RUN(aclnnMatmul)

aclnnStatus aclnnMmGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out, int8_t cubeMathType,
                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	return matmul("aclnnMmGetWorkspaceSize", "aclnnMm", 2, self, mat2, out, cubeMathType, workspaceSize, executor);
}
RUN(aclnnMm)

aclnnStatus aclnnBatchMatMulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
                                             int8_t cubeMathType, uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	return matmul("aclnnBatchMatMulGetWorkspaceSize", "aclnnBatchMatMul", 3, self, mat2, out, cubeMathType,
	              workspaceSize, executor);
}
RUN(aclnnBatchMatMul)

aclnnStatus aclnnWeightQuantBatchMatmulV2GetWorkspaceSize(
    const aclTensor *x, const aclTensor *weight, const aclTensor *antiquantScale,
    const aclTensor *antiquantOffsetOptional, const aclTensor *quantScaleOptional,
    const aclTensor *quantOffsetOptional, const aclTensor *biasOptional, int antiquantGroupSize, const aclTensor *y,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnWeightQuantBatchMatmulV2GetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	weight = arg(&c, "weight", weight, 1);
	antiquantScale = arg(&c, "antiquantScale", antiquantScale, 1);
	const aclTensor *antiquantOffset = arg(&c, "antiquantOffset", antiquantOffsetOptional, 0);
	arg(&c, "quantScale", quantScaleOptional, 0);
	arg(&c, "quantOffset", quantOffsetOptional, 0);
	arg(&c, "bias", biasOptional, 0);
	y = arg(&c, "y", y, 1);
	tr(",\"antiquantGroupSize\":%d", antiquantGroupSize);
	c.ex->i[0] = antiquantGroupSize;
	/* The Atlas A2/A3 rules of the operator's page (aclnnWeightQuantBatchMatmulV2,
	 * parameter descriptions and constraints), which CANN's argument checks
	 * (ops-nn, op_api/aclnn_weight_quant_batch_matmul_v2.cpp) enforce. */
	check(&c, x && x->ndim == 2, "x must be 2-D (m, k)");
	check(&c, x && (x->dtype == ACL_FLOAT16 || x->dtype == ACL_BF16), "x must be FLOAT16 or BFLOAT16");
	check(&c, weight && (weight->dtype == ACL_INT8 || weight->dtype == ACL_INT4), "weight must be INT8 or INT4");
	check(&c, x && weight && weight->ndim == 2 && weight->dims[0] == x->dims[1], "weight must be (k, n)");
	/* CANN also takes FRACTAL_NZ under conditions; the emulator computes ND only */
	check(&c, weight && weight->format == ACL_FORMAT_ND, "weight: only ND is emulated (format %d)",
	      weight ? (int)weight->format : -1);
	if (!c.rc) {
		int64_t m = x->dims[0], k = x->dims[1], n = weight->dims[1];
		int xt = x->strides[0] == 1 && x->strides[1] == m && m > 1; /* x stored (k, m) */
		check(&c, k >= 1 && k <= 65535, "weight: k = %lld outside [1, 65535] (Atlas A2/A3)", (long long)k);
		check(&c, n >= 1 && n <= 65535, "weight: n = %lld outside [1, 65535] (Atlas A2/A3)", (long long)n);
		check(&c, m >= 1 && m <= (xt ? 65535 : 2147483647LL), "x: m = %lld outside [1, %lld]%s", (long long)m,
		      xt ? 65535LL : 2147483647LL, xt ? " (x transposed)" : "");
		/* contiguous (k, n), or the transposed view of a contiguous (n, k) */
		int wc = weight->strides[1] == 1 && (weight->strides[0] == n || k == 1);
		int wt = weight->strides[0] == 1 && (weight->strides[1] == k || n == 1);
		check(&c, wc || wt, "weight: strides (%lld, %lld) are neither (k, n) contiguous nor its transpose",
		      (long long)weight->strides[0], (long long)weight->strides[1]);
		check(&c, x->strides[1] == 1 || xt, "x: non-contiguous only when transposed");
		/* INT4: the inner (stored last) axis must be even */
		check(&c, weight->dtype != ACL_INT4 || (wt && !wc ? k % 2 == 0 : n % 2 == 0),
		      "weight: INT4 with an odd inner axis (%s = %lld)", wt && !wc ? "k" : "n",
		      (long long)(wt && !wc ? k : n));
		check(&c, antiquantGroupSize == 0 || (antiquantGroupSize >= 32 && antiquantGroupSize % 32 == 0 &&
		                                      antiquantGroupSize <= k - 1),
		      "antiquantGroupSize = %d: must be 0 or a multiple of 32 in [32, k-1] = [32, %lld]", antiquantGroupSize,
		      (long long)(k - 1));
		check(&c, y->dtype == x->dtype && y->ndim == 2 && y->dims[0] == m && y->dims[1] == n,
		      "y must be (m, n) of x's dtype");
		check(&c, antiquantScale->dtype == x->dtype, "antiquantScale must have x's dtype");
		const aclTensor *s = antiquantScale;
		if (antiquantGroupSize > 0) {
			int64_t groups = (k + antiquantGroupSize - 1) / antiquantGroupSize;
			check(&c, s->ndim == 2 && s->dims[0] == groups && s->dims[1] == n,
			      "per-group antiquantScale must be (ceil(k/%d), n) = (%lld, %lld)", antiquantGroupSize,
			      (long long)groups, (long long)n);
		} else {
			/* per-tensor (1,) / (1, 1), per-channel (n,) / (1, n) */
			int ok = (s->ndim == 1 && (s->dims[0] == 1 || s->dims[0] == n)) ||
			         (s->ndim == 2 && s->dims[0] == 1 && (s->dims[1] == 1 || s->dims[1] == n));
			check(&c, ok, "antiquantScale without groups must be (1,), (1, 1), (n,) or (1, n) with n = %lld",
			      (long long)n);
		}
		const aclTensor *o = antiquantOffset;
		check(&c, !o || same_shape(o, s), "antiquantOffset must have antiquantScale's shape");
		check(&c, !o || o->dtype == s->dtype, "antiquantOffset must have antiquantScale's dtype");
		const aclTensor *bias = live_tensor(biasOptional);
		check(&c, !bias || (bias->dtype == (x->dtype == ACL_FLOAT16 ? ACL_FLOAT16 : ACL_FLOAT) &&
		                    ((bias->ndim == 1 && bias->dims[0] == n) ||
		                     (bias->ndim == 2 && bias->dims[0] == 1 && bias->dims[1] == n))),
		      "bias must be (n,) or (1, n), FLOAT16 with FLOAT16 x, FLOAT with BFLOAT16 x");
		check(&c, !quantScaleOptional && !quantOffsetOptional,
		      "quantScale/quantOffset (INT8 output) are not emulated");
	}
	return call_end(&c, "aclnnWeightQuantBatchMatmulV2", workspaceSize, executor);
}
RUN(aclnnWeightQuantBatchMatmulV2)

/* ---------------- rows: gather and scatter ---------------- */

aclnnStatus aclnnInplaceIndexCopyGetWorkspaceSize(aclTensor *selfRef, int64_t dim, const aclTensor *index,
                                                  const aclTensor *source, uint64_t *workspaceSize,
                                                  aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceIndexCopyGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	index = arg(&c, "index", index, 1);
	source = arg(&c, "source", source, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	check(&c, index && (index->dtype == ACL_INT64 || index->dtype == ACL_INT32) && index->ndim <= 1,
	      "index must be a 0-D or 1-D INT64/INT32 tensor");
	check(&c, selfRef && source && selfRef->ndim == source->ndim, "source must have selfRef's rank");
	check(&c, selfRef && dim >= -selfRef->ndim && dim < selfRef->ndim, "dim %lld out of range", (long long)dim);
	return call_end(&c, "aclnnInplaceIndexCopy", workspaceSize, executor);
}
RUN(aclnnInplaceIndexCopy)

aclnnStatus aclnnGatherV2GetWorkspaceSize(const aclTensor *self, int64_t dim, const aclTensor *index,
                                          aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnGatherV2GetWorkspaceSize");
	self = arg(&c, "self", self, 1);
	index = arg(&c, "index", index, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"dim\":%lld", (long long)dim);
	c.ex->i[0] = dim;
	check(&c, index && (index->dtype == ACL_INT64 || index->dtype == ACL_INT32), "index must be INT64 or INT32");
	check(&c, self && dim >= -self->ndim && dim < self->ndim, "dim %lld out of range", (long long)dim);
	return call_end(&c, "aclnnGatherV2", workspaceSize, executor);
}
RUN(aclnnGatherV2)

/* ---------------- rotary position embedding ---------------- */

aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor *x, const aclTensor *cos,
                                                         const aclTensor *sin, int64_t mode, aclTensor *out,
                                                         uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnRotaryPositionEmbeddingGetWorkspaceSize");
	x = arg(&c, "x", x, 1);
	cos = arg(&c, "cos", cos, 1);
	sin = arg(&c, "sin", sin, 1);
	out = (aclTensor *)arg(&c, "out", out, 1);
	tr(",\"mode\":%lld", (long long)mode);
	c.ex->i[0] = mode;
	check(&c, mode >= 0 && mode <= 3, "mode %lld is not 0..3", (long long)mode);
	check(&c, same_shape(x, out), "out must have the shape of x");
	check(&c, same_shape(cos, sin), "cos and sin must have one shape");
	check(&c, x && x->ndim == 4, "x must be 4-D");
	/* the formulas split the last dim in halves (quarters in mode 2) */
	check(&c, x && x->dims[3] % (mode == 2 ? 4 : 2) == 0, "x: last dim %lld is not a multiple of %d for mode %lld",
	      x ? (long long)x->dims[3] : 0LL, mode == 2 ? 4 : 2, (long long)mode);
	check(&c, x && cos && cos->dtype == x->dtype && sin->dtype == x->dtype, "cos and sin must have x's dtype");
	return call_end(&c, "aclnnRotaryPositionEmbedding", workspaceSize, executor);
}
RUN(aclnnRotaryPositionEmbedding)

/* ---------------- control, for tests ---------------- */

void irtfake_reset(void) {
	LOCK();
	trace_len = 0;
	if (trace) trace[0] = 0;
	seq = 0;
	n_fail_rules = 0;
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

void irtfake_fail(const char *fn, int nth, int code, const char *msg) {
	LOCK();
	if (n_fail_rules < MAX_FAIL_RULES) {
		int i = n_fail_rules++;
		snprintf(fail_rules[i].fn, sizeof fail_rules[i].fn, "%s", fn);
		fail_rules[i].nth = nth;
		fail_rules[i].seen = 0;
		fail_rules[i].code = code;
		snprintf(fail_rules[i].msg, sizeof fail_rules[i].msg, "%s", msg);
	}
	UNLOCK();
}

char *irtfake_trace(void) {
	LOCK();
	char *out = malloc(trace_len + 1);
	if (trace_len) memcpy(out, trace, trace_len);
	out[trace_len] = 0;
	UNLOCK();
	return out;
}

void irtfake_free(void *p) { free(p); }

long long irtfake_stat(const char *key) {
	LOCK();
	long long v = -1;
	if (strcmp(key, "live_tensors") == 0) v = live_tensors;
	else if (strcmp(key, "live_scalars") == 0) v = live_scalars;
	else if (strcmp(key, "live_arrays") == 0) v = live_arrays;
	else if (strcmp(key, "live_lists") == 0) v = live_lists;
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
