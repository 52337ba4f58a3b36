/*
 * hccl.c: irtool's emulator of CANN's libhccl.so (the HCCL C API of
 * runtime/acl/irtool_hccl.h) over host memory, built by scripts/fakeacl.sh as
 * DIR/libhccl.so on top of the emulated libascendcl.so.
 *
 * A communicator's ranks meet in one shared memory segment: a header (a
 * process-shared robust mutex and condition variable, one slot per rank,
 * one mailbox per ordered pair of ranks) followed by one staging buffer of
 * HCCL_BUFFSIZE MB (default 200, as HCCL's) per rank. HcclCommInitAll maps
 * it anonymously for the ranks of one process (one thread each);
 * HcclGetRootInfo creates it as a POSIX shared memory object (/dev/shm)
 * whose name is the root info, so that ranks in other processes, or other
 * threads, join it with HcclCommInitRootInfo; the name is unlinked once
 * every rank has joined.
 *
 * Semantics:
 *   - every collective of a rank takes the communicator's next sequence
 *     number; the calls of all ranks with one number meet: each rank copies
 *     its input to its staging buffer and posts the call's description,
 *     waits for every rank's, checks that they agree (the call, count,
 *     dtype, reduction op, root), computes its output from the staging
 *     buffers and waits until every rank has read them. Sends and receives
 *     meet by (sender, receiver, the pair's own number); the receiver
 *     checks count and dtype;
 *   - reductions are taken in rank order: for float32, 0.0f + rank 0 +
 *     rank 1 + ..., each addition rounded; float16 and bfloat16 are widened,
 *     summed in float32 in rank order and rounded once; integers wrap;
 *   - a mismatch, a rank that destroys its communicator or dies (its
 *     process is gone) while others wait, or a rank that does not arrive
 *     within HCCL_EXEC_TIMEOUT seconds (CANN's range and default, see
 *     timeout_ms; HCCL_CONNECT_TIMEOUT for HcclCommInitRootInfo) fails the
 *     communicator: every rank's pending and later calls return an error
 *     whose text (aclGetRecentErrMsg) names the call, its number and the
 *     ranks;
 *   - a collective is a task of its stream: on a stream being captured
 *     (aclmdlRICaptureBegin) it is recorded and runs, taking a new sequence
 *     number, each time aclmdlRIExecuteAsync replays the capture; buffers
 *     must lie in device memory (aclrtMalloc);
 *   - a rank joining checks the segment its root info names before mapping
 *     it (a regular object at least a header long, fstat; then the magic
 *     and layout version; then the size the ranks' staging buffers need),
 *     and a rank count differing from the first joiner's fails every rank
 *     at once, naming both; irtfake_hccl_release_root (the emulator's own)
 *     lets the root give up a root info it could not hand out.
 */
#define _GNU_SOURCE
#include "../fakeacl.h"
#include "irtool_hccl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAXR 64
#define SHM_MAGIC 0x4843434cU /* "HCCL" */
#define SHM_VERSION 2         /* the layout of struct shared */
#define COMM_MAGIC 0x434f4d4dU
#define ROOT_TAG "irtool-fakehccl-v1 "
#define SHM_PREFIX "/irtool-fakehccl-"

enum { K_NONE, K_ALLREDUCE, K_ALLGATHER, K_REDUCESCATTER, K_BROADCAST, K_SEND, K_RECV };
static const char *kname[] = {"none", "HcclAllReduce", "HcclAllGather", "HcclReduceScatter", "HcclBroadcast",
                              "HcclSend", "HcclRecv"};

typedef struct {
	int32_t kind, dtype, op, root;
	uint64_t count;
} desc;

struct slot {
	int64_t posted; /* number of the last collective this rank posted */
	int64_t done;   /* number of the last collective whose inputs it has read */
	desc d;
	int32_t state; /* 0 absent, 1 joined, 2 destroyed */
	int32_t pid;
	int32_t device;
	char last[160]; /* its last call, for error texts */
};

struct mailbox { /* sender -> receiver */
	int64_t sent, acked;
	uint64_t count;
	int32_t dtype;
};

struct shared {
	uint32_t magic;
	uint32_t version;
	uint32_t nranks;
	int32_t nranks_by; /* the rank that set nranks */
	uint64_t cap;      /* staging bytes per rank */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int32_t joined;
	int32_t failed;
	int32_t fail_code;
	char err[640];
	struct slot slot[MAXR];
	struct mailbox box[MAXR][MAXR];
};

#define HDR_BYTES ((sizeof(struct shared) + 4095) & ~(size_t)4095)

typedef struct mapping {
	struct shared *sh;
	size_t len;
	int refs; /* communicators of this process on it */
} mapping;

typedef struct comm {
	unsigned magic;
	mapping *m;
	uint32_t rank, n;
	int device;
	int64_t seq;
	int64_t sends[MAXR], recvs[MAXR];
} comm;

static pthread_mutex_t local_mu = PTHREAD_MUTEX_INITIALIZER; /* mapping refs */

static char *staging(comm *c, uint32_t r) { return (char *)c->m->sh + HDR_BYTES + (size_t)r * c->m->sh->cap; }

static long env_long(const char *name, long def) {
	const char *v = getenv(name);
	if (!v || !*v) return def;
	char *end;
	long x = strtol(v, &end, 10);
	return (*end || x <= 0) ? def : x;
}

/* env_int reads whole number variable name into *out: def when unset or
 * empty, an error text (naming the variable and the range) when it is not
 * a decimal integer in [lo, hi]. */
static __thread char env_err[160];
static int env_int(const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
	const char *v = getenv(name);
	*out = def;
	if (!v || !*v) return 0;
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi) {
		snprintf(env_err, sizeof env_err, "%s=%.40s: want a whole number in [%lld, %lld]", name, v, (long long)lo,
		         (long long)hi);
		fake_set_err("%s", env_err);
		return -1;
	}
	*out = x;
	return 0;
}

static int64_t now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* HCCL_CONNECT_TIMEOUT and HCCL_EXEC_TIMEOUT are in seconds, with the
 * ranges and defaults of CANN's environment variable reference
 * (HCCL_CONNECT_TIMEOUT: [120, 7200], default 120; HCCL_EXEC_TIMEOUT on
 * Atlas A2: [0, 2147483647], default 1836, 0 never times out);
 * IRTFAKE_HCCL_TIMEOUT_MS (1..2147483647 ms) overrides both (tests).
 * timeout_ms sets *ms (INT64_MAX: none) or the error text and returns
 * -1; runtime/acl/hcclenv.go reads them the same way. */
#define CONNECT_MIN 120
#define CONNECT_MAX 7200
#define CONNECT_DEFAULT 120
#define EXEC_MAX 2147483647
#define EXEC_DEFAULT 1836
static int timeout_ms(const char *env, int64_t *ms) {
	int64_t v;
	if (env_int("IRTFAKE_HCCL_TIMEOUT_MS", 0, 1, 2147483647, &v) != 0) return -1;
	if (v > 0) {
		*ms = v;
		return 0;
	}
	int connect = strcmp(env, "HCCL_CONNECT_TIMEOUT") == 0;
	if (env_int(env, connect ? CONNECT_DEFAULT : EXEC_DEFAULT, connect ? CONNECT_MIN : 0,
	            connect ? CONNECT_MAX : EXEC_MAX, &v) != 0)
		return -1;
	*ms = v == 0 ? INT64_MAX : v * 1000; /* at most 2147483647000: no overflow */
	return 0;
}

static int dtype_bytes(int dt) {
	switch (dt) {
	case HCCL_DATA_TYPE_INT8:
	case HCCL_DATA_TYPE_UINT8: return 1;
	case HCCL_DATA_TYPE_INT16:
	case HCCL_DATA_TYPE_UINT16:
	case HCCL_DATA_TYPE_FP16:
	case HCCL_DATA_TYPE_BFP16: return 2;
	case HCCL_DATA_TYPE_INT32:
	case HCCL_DATA_TYPE_UINT32:
	case HCCL_DATA_TYPE_FP32: return 4;
	case HCCL_DATA_TYPE_INT64:
	case HCCL_DATA_TYPE_UINT64:
	case HCCL_DATA_TYPE_FP64: return 8;
	}
	return 0;
}

static const char *dtype_name(int dt) {
	static const char *n[] = {"int8", "int16", "int32", "float16", "float32", "int64", "uint64",
	                          "uint8", "uint16", "uint32", "float64", "bfloat16", "int128"};
	return dt >= 0 && dt <= 12 ? n[dt] : "?";
}
static const char *op_name(int op) {
	static const char *n[] = {"sum", "prod", "max", "min"};
	return op >= 0 && op <= 3 ? n[op] : "?";
}

static void describe(char *buf, size_t n, const desc *d) {
	switch (d->kind) {
	case K_ALLREDUCE:
	case K_REDUCESCATTER:
		snprintf(buf, n, "%s(count %llu, %s, %s)", kname[d->kind], (unsigned long long)d->count,
		         dtype_name(d->dtype), op_name(d->op));
		break;
	case K_BROADCAST:
		snprintf(buf, n, "%s(count %llu, %s, root %d)", kname[d->kind], (unsigned long long)d->count,
		         dtype_name(d->dtype), d->root);
		break;
	case K_SEND:
	case K_RECV:
		snprintf(buf, n, "%s(count %llu, %s, %s rank %d)", kname[d->kind], (unsigned long long)d->count,
		         dtype_name(d->dtype), d->kind == K_SEND ? "to" : "from", d->root);
		break;
	default:
		snprintf(buf, n, "%s(count %llu, %s)", kname[d->kind], (unsigned long long)d->count,
		         dtype_name(d->dtype));
	}
}

/* ---------------- the shared mutex ---------------- */

static void sh_fail(struct shared *sh, int code, const char *fmt, ...);

static void sh_lock(struct shared *sh) {
	if (pthread_mutex_lock(&sh->mu) == EOWNERDEAD) {
		pthread_mutex_consistent(&sh->mu);
		sh_fail(sh, HCCL_E_REMOTE, "a rank died holding the communicator's lock");
	}
}
static void sh_unlock(struct shared *sh) { pthread_mutex_unlock(&sh->mu); }

/* sh_fail: the first failure of a communicator wins; the caller holds the
 * lock. */
static void sh_fail(struct shared *sh, int code, const char *fmt, ...) {
	if (sh->failed) return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sh->err, sizeof sh->err, fmt, ap);
	va_end(ap);
	sh->failed = 1;
	sh->fail_code = code;
	pthread_cond_broadcast(&sh->cv);
}

/* the communicator's failure as this call's result */
static int failed_rc(comm *c, const char *fn) {
	fake_set_err("%s (rank %u of %u): %s", fn, c->rank, c->n, c->m->sh->err);
	return c->m->sh->fail_code;
}

static void init_shared(struct shared *sh) {
	memset(sh, 0, sizeof *sh);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&sh->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sh->cv, &ca);
	pthread_condattr_destroy(&ca);
	sh->version = SHM_VERSION;
	sh->nranks_by = -1;
	sh->magic = SHM_MAGIC;
}

/* a process that has exited (gone, or a zombie not yet reaped) */
static int process_gone(int pid) {
	if (kill(pid, 0) != 0) return errno == ESRCH;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f) return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* "pid (comm) S ..." */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* wait (holding the lock) until ready(c, arg) returns -1, or fail the
 * communicator: ready returns the rank still awaited otherwise. */
typedef int (*ready_fn)(comm *c, void *arg);

static int wait_ranks(comm *c, ready_fn ready, void *arg, int64_t limit_ms, const char *what) {
	struct shared *sh = c->m->sh;
	int64_t t0 = now_ms();
	int64_t deadline = limit_ms > INT64_MAX - t0 ? INT64_MAX : t0 + limit_ms;
	for (;;) {
		int k = ready(c, arg);
		if (k < 0) return 0;
		if (sh->failed) return -1;
		struct slot *s = &sh->slot[k];
		if (s->state == 2) {
			sh_fail(sh, HCCL_E_REMOTE, "%s: rank %d destroyed its communicator (its last call: %s)", what, k,
			        s->last[0] ? s->last : "none");
			return -1;
		}
		if (s->state == 1 && s->pid != getpid() && process_gone(s->pid)) {
			sh_fail(sh, HCCL_E_REMOTE, "%s: rank %d (process %d) has died (its last call: %s)", what, k,
			        (int)s->pid, s->last[0] ? s->last : "none");
			return -1;
		}
		int64_t t = now_ms();
		if (t >= deadline) {
			sh_fail(sh, HCCL_E_TIMEOUT, "%s: rank %d did not arrive within %lld ms (its last call: %s)", what, k,
			        (long long)limit_ms, s->state == 0 ? "not joined" : s->last[0] ? s->last : "none");
			return -1;
		}
		/* wake at least every 100 ms to look for dead processes */
		int64_t until = t + 100 < deadline ? t + 100 : deadline;
		struct timespec ts = {.tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000};
		if (pthread_cond_timedwait(&sh->cv, &sh->mu, &ts) == EOWNERDEAD) {
			pthread_mutex_consistent(&sh->mu);
			sh_fail(sh, HCCL_E_REMOTE, "%s: a rank died holding the communicator's lock", what);
		}
	}
}

/* ---------------- root info and communicators ---------------- */

static int shm_counter;

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) {
	if (!rootInfo) {
		fake_set_err("HcclGetRootInfo: rootInfo is NULL");
		return HCCL_E_PTR;
	}
	char name[96];
	pthread_mutex_lock(&local_mu);
	int k = ++shm_counter;
	pthread_mutex_unlock(&local_mu);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof name, SHM_PREFIX "%d-%d-%lld", (int)getpid(), k,
	         (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) {
		fake_set_err("HcclGetRootInfo: shm_open %s: %s", name, strerror(errno));
		return HCCL_E_SYSCALL;
	}
	if (ftruncate(fd, (off_t)HDR_BYTES) != 0) {
		fake_set_err("HcclGetRootInfo: ftruncate %s: %s", name, strerror(errno));
		close(fd);
		shm_unlink(name);
		return HCCL_E_SYSCALL;
	}
	void *p = mmap(NULL, HDR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fake_set_err("HcclGetRootInfo: mmap %s: %s", name, strerror(errno));
		shm_unlink(name);
		return HCCL_E_SYSCALL;
	}
	init_shared(p);
	munmap(p, HDR_BYTES);
	memset(rootInfo, 0, sizeof *rootInfo);
	snprintf(rootInfo->internal, sizeof rootInfo->internal, "%s%s", ROOT_TAG, name);
	fake_trace_call("HcclGetRootInfo", 0, ",\"name\":\"%s\"", name);
	return HCCL_SUCCESS;
}

static uint64_t staging_cap(void) { return (uint64_t)env_long("HCCL_BUFFSIZE", 200) << 20; }

static comm *new_comm(mapping *m, uint32_t rank, uint32_t n) {
	comm *c = calloc(1, sizeof *c);
	c->magic = COMM_MAGIC;
	c->m = m;
	c->rank = rank;
	c->n = n;
	c->device = fake_thread_device();
	return c;
}

static int joined_all(comm *c, void *arg) {
	for (uint32_t k = 0; k < c->n; k++)
		if (c->m->sh->slot[k].state == 0) return (int)k;
	return -1;
}

static void join_slot(struct shared *sh, uint32_t rank, int device) {
	struct slot *s = &sh->slot[rank];
	s->state = 1;
	s->pid = getpid();
	s->device = device;
	s->posted = s->done = 0;
	sh->joined++;
}

/* the name of the segment rootInfo names, the arguments checked; NULL
 * with *rc and the error text set otherwise */
static const char *root_segment(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, int *rc) {
	if (!rootInfo) {
		fake_set_err("HcclCommInitRootInfo: NULL argument");
		*rc = HCCL_E_PTR;
		return NULL;
	}
	if (nRanks < 1 || nRanks > MAXR || rank >= nRanks) {
		fake_set_err("HcclCommInitRootInfo: rank %u of %u ranks (the emulator has at most %d)", rank, nRanks, MAXR);
		*rc = HCCL_E_PARA;
		return NULL;
	}
	if (fake_thread_device() < 0) {
		fake_set_err("HcclCommInitRootInfo: no device set on this thread (aclrtSetDevice)");
		*rc = HCCL_E_RUNTIME;
		return NULL;
	}
	const char *info = rootInfo->internal;
	size_t tl = strlen(ROOT_TAG);
	if (strncmp(info, ROOT_TAG, tl) != 0 || memchr(info, 0, sizeof rootInfo->internal) == NULL) {
		fake_set_err("HcclCommInitRootInfo: root info was not made by this library's HcclGetRootInfo");
		*rc = HCCL_E_PARA;
		return NULL;
	}
	const char *name = info + tl;
	if (strncmp(name, SHM_PREFIX, strlen(SHM_PREFIX)) != 0 || strchr(name + 1, '/') != NULL) {
		fake_set_err("HcclCommInitRootInfo: root info names %.80s, not a segment of this library's "
		             "HcclGetRootInfo",
		             name);
		*rc = HCCL_E_PARA;
		return NULL;
	}
	return name;
}

/* opens segment name and maps its header (*fd, *hdr), checked before it
 * is read; 0 or an error with the text set */
static int open_header(const char *name, uint32_t rank, int *fd, struct shared **hdr) {
	*fd = shm_open(name, O_RDWR, 0600);
	if (*fd < 0) {
		fake_set_err("HcclCommInitRootInfo: rank %u: the root's segment %s is gone (%s): every rank must join "
		             "before any has finished initialising, and only once",
		             rank, name, strerror(errno));
		return HCCL_E_NOT_FOUND;
	}
	/* The object's size before mapping it: a page of the mapping past the
	 * object's end would raise SIGBUS when touched. */
	struct stat st;
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)HDR_BYTES) {
		fake_set_err("HcclCommInitRootInfo: %s is not a communicator segment (%lld B, a header is %zu B)", name,
		             (long long)st.st_size, (size_t)HDR_BYTES);
		close(*fd);
		return HCCL_E_PARA;
	}
	*hdr = mmap(NULL, HDR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (*hdr == MAP_FAILED || (*hdr)->magic != SHM_MAGIC || (*hdr)->version != SHM_VERSION) {
		if (*hdr == MAP_FAILED)
			fake_set_err("HcclCommInitRootInfo: mmap %s: %s", name, strerror(errno));
		else
			fake_set_err("HcclCommInitRootInfo: %s is not a communicator segment of this library (magic "
			             "%#x version %u, want %#x version %u)",
			             name, (*hdr)->magic, (*hdr)->version, SHM_MAGIC, SHM_VERSION);
		if (*hdr != MAP_FAILED) munmap(*hdr, HDR_BYTES);
		close(*fd);
		return HCCL_E_PARA;
	}
	return 0;
}

/* Under the header's lock: the first rank to come sets the rank count and
 * sizes the segment, the others must agree; rank must not have joined.
 * *len is the segment's size. 0 or an error with the text set. */
static int claim_rank(struct shared *hdr, int fd, const char *name, uint32_t nRanks, uint32_t rank, size_t *len) {
	struct stat st = {0};
	fstat(fd, &st); /* its size as it joins, for the message below */
	sh_lock(hdr);
	int rc = 0;
	if (hdr->failed) {
		rc = hdr->fail_code;
		fake_set_err("HcclCommInitRootInfo (rank %u of %u): %s", rank, nRanks, hdr->err);
	} else if (hdr->nranks == 0) {
		hdr->nranks = nRanks;
		hdr->nranks_by = (int32_t)rank;
		hdr->cap = staging_cap();
		if (ftruncate(fd, (off_t)(HDR_BYTES + nRanks * hdr->cap)) != 0) {
			rc = HCCL_E_SYSCALL;
			fake_set_err("HcclCommInitRootInfo: ftruncate %s: %s", name, strerror(errno));
			hdr->nranks = 0;
		}
	} else if (hdr->nranks != nRanks) {
		/* Every rank fails at once, the ranks waiting for the others too. */
		rc = HCCL_E_PARA;
		sh_fail(hdr, HCCL_E_PARA, "rank %u says %u ranks, rank %d said %u: every rank needs the same count",
		        rank, nRanks, (int)hdr->nranks_by, hdr->nranks);
		fake_set_err("HcclCommInitRootInfo (rank %u of %u): %s", rank, nRanks, hdr->err);
	}
	if (!rc && hdr->slot[rank].state != 0) {
		rc = HCCL_E_PARA;
		fake_set_err("HcclCommInitRootInfo: rank %u joined twice: process %d has already joined as rank %u", rank,
		             (int)hdr->slot[rank].pid, rank);
	}
	*len = HDR_BYTES + nRanks * hdr->cap;
	if (!rc && (hdr->cap > ((uint64_t)1 << 40) || fstat(fd, &st) != 0 || st.st_size < (off_t)*len)) {
		rc = HCCL_E_PARA;
		fake_set_err("HcclCommInitRootInfo: %s is not a communicator segment of %u ranks (%lld B, want %zu B)",
		             name, nRanks, (long long)st.st_size, *len);
	}
	sh_unlock(hdr);
	return rc;
}

/* maps the whole segment (len bytes of fd, closed here), joins it as rank
 * and waits up to limit ms for the other ranks: the communicator, or NULL
 * with *rc and the error text set */
static comm *join_segment(int fd, const char *name, size_t len, uint32_t nRanks, uint32_t rank, int64_t limit,
                          int *rc) {
	struct shared *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (sh == MAP_FAILED) {
		fake_set_err("HcclCommInitRootInfo: mmap %s: %s", name, strerror(errno));
		*rc = HCCL_E_SYSCALL;
		return NULL;
	}
	mapping *m = calloc(1, sizeof *m);
	m->sh = sh;
	m->len = len;
	m->refs = 1;
	comm *c = new_comm(m, rank, nRanks);
	sh_lock(sh);
	join_slot(sh, rank, c->device);
	snprintf(sh->slot[rank].last, sizeof sh->slot[rank].last, "HcclCommInitRootInfo");
	pthread_cond_broadcast(&sh->cv);
	char what[64];
	snprintf(what, sizeof what, "HcclCommInitRootInfo (rank %u)", rank);
	if (wait_ranks(c, joined_all, NULL, limit, what) != 0) *rc = failed_rc(c, "HcclCommInitRootInfo");
	/* Every rank has mapped the segment; its name can go (the last to
	 * join, or the first to see the failure, unlinks it). */
	if (*rc || sh->joined == (int32_t)nRanks) shm_unlink(name);
	sh_unlock(sh);
	fake_trace_call("HcclCommInitRootInfo", *rc, ",\"ranks\":%u,\"rank\":%u,\"device\":%d", nRanks, rank,
	                c->device);
	if (*rc) {
		sh_lock(sh);
		sh->slot[rank].state = 2;
		sh_unlock(sh);
		munmap(sh, len);
		free(m);
		c->magic = 0;
		free(c);
		return NULL;
	}
	return c;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank, HcclComm *comm_out) {
	int rc = 0;
	if (!comm_out) {
		fake_set_err("HcclCommInitRootInfo: NULL argument");
		return HCCL_E_PTR;
	}
	const char *name = root_segment(nRanks, rootInfo, rank, &rc);
	if (!name) return rc;
	int64_t limit;
	if (timeout_ms("HCCL_CONNECT_TIMEOUT", &limit) != 0) return HCCL_E_PARA;
	int fd;
	struct shared *hdr;
	if ((rc = open_header(name, rank, &fd, &hdr)) != 0) return rc;
	size_t len;
	rc = claim_rank(hdr, fd, name, nRanks, rank, &len);
	munmap(hdr, HDR_BYTES);
	if (rc) {
		close(fd);
		return rc;
	}
	comm *c = join_segment(fd, name, len, nRanks, rank, limit, &rc);
	if (!c) return rc;
	*comm_out = c;
	return HCCL_SUCCESS;
}

/* irtfake_hccl_release_root (the emulator's own, not HCCL's): the root
 * that made rootInfo with HcclGetRootInfo gives it up, e.g. when it
 * cannot hand it to the other ranks or is interrupted while they join:
 * the ranks joining it fail at once with why, and the segment's name is
 * unlinked (the mappings of the ranks that joined stay valid). On CANN a
 * root info lives in its process and ends with it. */
HcclResult irtfake_hccl_release_root(const HcclRootInfo *rootInfo, const char *why) {
	if (!rootInfo) return HCCL_E_PTR;
	const char *info = rootInfo->internal;
	size_t tl = strlen(ROOT_TAG);
	if (strncmp(info, ROOT_TAG, tl) != 0 || memchr(info, 0, sizeof rootInfo->internal) == NULL ||
	    strncmp(info + tl, SHM_PREFIX, strlen(SHM_PREFIX)) != 0 || strchr(info + tl + 1, '/') != NULL) {
		fake_set_err("irtfake_hccl_release_root: root info was not made by this library's HcclGetRootInfo");
		return HCCL_E_PARA;
	}
	const char *name = info + tl;
	int fd = shm_open(name, O_RDWR, 0600);
	if (fd < 0) return HCCL_SUCCESS; /* every rank has joined, or it was released */
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)HDR_BYTES) {
		struct shared *sh = mmap(NULL, HDR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (sh != MAP_FAILED) {
			if (sh->magic == SHM_MAGIC && sh->version == SHM_VERSION) {
				sh_lock(sh);
				sh_fail(sh, HCCL_E_REMOTE, "%s", why && *why ? why : "the root gave up its root info");
				sh_unlock(sh);
			}
			munmap(sh, HDR_BYTES);
		}
	}
	close(fd);
	shm_unlink(name);
	fake_trace_call("irtfake_hccl_release_root", 0, ",\"name\":\"%s\"", name);
	return HCCL_SUCCESS;
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t *devices, HcclComm *comms) {
	if (!devices || !comms) {
		fake_set_err("HcclCommInitAll: NULL argument");
		return HCCL_E_PTR;
	}
	if (ndev < 1 || ndev > MAXR) {
		fake_set_err("HcclCommInitAll: %u devices (the emulator has at most %d)", ndev, MAXR);
		return HCCL_E_PARA;
	}
	for (uint32_t i = 0; i < ndev; i++)
		for (uint32_t j = 0; j < i; j++)
			if (devices[i] == devices[j]) {
				fake_set_err("HcclCommInitAll: device %d is listed twice", devices[i]);
				return HCCL_E_PARA;
			}
	uint64_t cap = staging_cap();
	size_t len = HDR_BYTES + ndev * cap;
	struct shared *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (sh == MAP_FAILED) {
		fake_set_err("HcclCommInitAll: mmap of %zu B: %s", len, strerror(errno));
		return HCCL_E_MEMORY;
	}
	init_shared(sh);
	sh->nranks = ndev;
	sh->cap = cap;
	mapping *m = calloc(1, sizeof *m);
	m->sh = sh;
	m->len = len;
	m->refs = (int)ndev;
	for (uint32_t i = 0; i < ndev; i++) {
		comm *c = new_comm(m, i, ndev);
		c->device = devices[i];
		join_slot(sh, i, devices[i]);
		comms[i] = c;
	}
	fake_trace_call("HcclCommInitAll", 0, ",\"ranks\":%u", ndev);
	return HCCL_SUCCESS;
}

static comm *as_comm(HcclComm h) {
	comm *c = h;
	return c && c->magic == COMM_MAGIC ? c : NULL;
}

HcclResult HcclCommDestroy(HcclComm h) {
	comm *c = as_comm(h);
	if (!c) {
		fake_set_err("HcclCommDestroy: not a communicator");
		return HCCL_E_PARA;
	}
	struct shared *sh = c->m->sh;
	sh_lock(sh);
	sh->slot[c->rank].state = 2;
	pthread_cond_broadcast(&sh->cv);
	sh_unlock(sh);
	fake_trace_call("HcclCommDestroy", 0, ",\"rank\":%u", c->rank);
	pthread_mutex_lock(&local_mu);
	int last = --c->m->refs == 0;
	pthread_mutex_unlock(&local_mu);
	if (last) {
		munmap(c->m->sh, c->m->len);
		free(c->m);
	}
	c->magic = 0;
	free(c);
	return HCCL_SUCCESS;
}

HcclResult HcclGetRankSize(HcclComm h, uint32_t *rankSize) {
	comm *c = as_comm(h);
	if (!c || !rankSize) {
		fake_set_err("HcclGetRankSize: not a communicator");
		return HCCL_E_PARA;
	}
	*rankSize = c->n;
	return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm h, uint32_t *rank) {
	comm *c = as_comm(h);
	if (!c || !rank) {
		fake_set_err("HcclGetRankId: not a communicator");
		return HCCL_E_PARA;
	}
	*rank = c->rank;
	return HCCL_SUCCESS;
}

const char *HcclGetErrorString(HcclResult code) {
	static const char *s[] = {"success", "parameter error", "empty pointer", "memory error", "internal error",
	                          "not supported", "not found", "resource unavailable", "system call error",
	                          "timeout", "open file failure", "tcp connect failure", "roce connect failure",
	                          "tcp transfer failure", "roce transfer failure", "runtime error", "driver error",
	                          "profiling error", "cce error", "network error", "try again", "remote error",
	                          "communicator suspending"};
	return code >= 0 && code <= HCCL_E_SUSPENDING ? s[code] : "unknown HCCL error";
}

/* ---------------- arithmetic ---------------- */

static float f16_to_f32(uint16_t h) {
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	if (e == 0x1f) bits = s | 0x7f800000 | (m << 13);
	else if (e == 0) {
		if (m == 0) bits = s;
		else { /* subnormal: normalise */
			int sh = 0;
			while (!(m & 0x400)) {
				m <<= 1;
				sh++;
			}
			m &= 0x3ff;
			bits = s | ((uint32_t)(127 - 15 + 1 - sh) << 23) | (m << 13);
		}
	} else
		bits = s | ((e - 15 + 127) << 23) | (m << 13);
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* round to nearest even, overflow to infinity, subnormals kept */
static uint16_t f32_to_f16(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t s = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
	if (ax >= 0x7f800000) return (uint16_t)(s | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0));
	if (ax >= 0x477ff000) return (uint16_t)(s | 0x7c00); /* rounds to >= 65520: inf */
	if (ax < 0x38800000) {                               /* below the smallest normal half */
		if (ax < 0x33000000) return (uint16_t)s;         /* < 2^-25: rounds to 0 */
		/* q = value / 2^-24, value = m * 2^(e - 150) */
		uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
		int shift = 126 - (int)e;
		uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rest > half || (rest == half && (q & 1))) q++;
		return (uint16_t)(s | q);
	}
	uint32_t q = ((ax >> 23) - 127 + 15) << 10 | ((ax >> 13) & 0x3ff), rest = ax & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (q & 1))) q++;
	return (uint16_t)(s | q);
}

static float bf16_to_f32(uint16_t h) {
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}
static uint16_t f32_to_bf16(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* out[i] = in[0][i] op in[1][i] op ... for count elements starting at
 * element lo of every staging buffer, in rank order */
#define REDUCE_INT(T)                                                                                         \
	for (uint64_t i = 0; i < count; i++) {                                                                \
		T acc, v;                                                                                     \
		memcpy(&acc, staging(c, 0) + (lo + i) * sizeof(T), sizeof(T));                                \
		for (uint32_t r = 1; r < c->n; r++) {                                                         \
			memcpy(&v, staging(c, r) + (lo + i) * sizeof(T), sizeof(T));                          \
			switch (op) {                                                                         \
			case HCCL_REDUCE_SUM: acc = (T)(acc + v); break;                                      \
			case HCCL_REDUCE_PROD: acc = (T)(acc * v); break;                                     \
			case HCCL_REDUCE_MAX: acc = v > acc ? v : acc; break;                                 \
			default: acc = v < acc ? v : acc;                                                     \
			}                                                                                     \
		}                                                                                             \
		memcpy(out + i * sizeof(T), &acc, sizeof(T));                                                \
	}

static float fold(int op, float acc, float v) {
	switch (op) {
	case HCCL_REDUCE_SUM: return acc + v;
	case HCCL_REDUCE_PROD: return acc * v;
	case HCCL_REDUCE_MAX: return v > acc ? v : acc;
	default: return v < acc ? v : acc;
	}
}

static void reduce(comm *c, int dt, int op, uint64_t lo, uint64_t count, char *out) {
	switch (dt) {
	case HCCL_DATA_TYPE_FP32:
		for (uint64_t i = 0; i < count; i++) {
			float acc, v;
			memcpy(&acc, staging(c, 0) + (lo + i) * 4, 4);
			if (op == HCCL_REDUCE_SUM) acc = 0.0f + acc; /* 0 + rank 0 + rank 1 + ... */
			for (uint32_t r = 1; r < c->n; r++) {
				memcpy(&v, staging(c, r) + (lo + i) * 4, 4);
				acc = fold(op, acc, v);
			}
			memcpy(out + i * 4, &acc, 4);
		}
		break;
	case HCCL_DATA_TYPE_FP16:
	case HCCL_DATA_TYPE_BFP16:
		for (uint64_t i = 0; i < count; i++) {
			uint16_t h;
			memcpy(&h, staging(c, 0) + (lo + i) * 2, 2);
			float acc = dt == HCCL_DATA_TYPE_FP16 ? f16_to_f32(h) : bf16_to_f32(h);
			if (op == HCCL_REDUCE_SUM) acc = 0.0f + acc;
			for (uint32_t r = 1; r < c->n; r++) {
				memcpy(&h, staging(c, r) + (lo + i) * 2, 2);
				acc = fold(op, acc, dt == HCCL_DATA_TYPE_FP16 ? f16_to_f32(h) : bf16_to_f32(h));
			}
			h = dt == HCCL_DATA_TYPE_FP16 ? f32_to_f16(acc) : f32_to_bf16(acc);
			memcpy(out + i * 2, &h, 2);
		}
		break;
	case HCCL_DATA_TYPE_FP64:
		for (uint64_t i = 0; i < count; i++) {
			double acc, v;
			memcpy(&acc, staging(c, 0) + (lo + i) * 8, 8);
			if (op == HCCL_REDUCE_SUM) acc = 0.0 + acc;
			for (uint32_t r = 1; r < c->n; r++) {
				memcpy(&v, staging(c, r) + (lo + i) * 8, 8);
				switch (op) {
				case HCCL_REDUCE_SUM: acc = acc + v; break;
				case HCCL_REDUCE_PROD: acc = acc * v; break;
				case HCCL_REDUCE_MAX: acc = v > acc ? v : acc; break;
				default: acc = v < acc ? v : acc;
				}
			}
			memcpy(out + i * 8, &acc, 8);
		}
		break;
	case HCCL_DATA_TYPE_INT8: REDUCE_INT(int8_t) break;
	case HCCL_DATA_TYPE_UINT8: REDUCE_INT(uint8_t) break;
	case HCCL_DATA_TYPE_INT16: REDUCE_INT(int16_t) break;
	case HCCL_DATA_TYPE_UINT16: REDUCE_INT(uint16_t) break;
	case HCCL_DATA_TYPE_INT32: REDUCE_INT(int32_t) break;
	case HCCL_DATA_TYPE_UINT32: REDUCE_INT(uint32_t) break;
	case HCCL_DATA_TYPE_INT64: REDUCE_INT(int64_t) break;
	case HCCL_DATA_TYPE_UINT64: REDUCE_INT(uint64_t) break;
	}
}

/* ---------------- the calls ---------------- */

typedef struct job {
	comm *c;
	desc d;
	void *send, *recv;
} job;

static int posted_all(comm *c, void *arg) {
	int64_t s = *(int64_t *)arg;
	for (uint32_t k = 0; k < c->n; k++)
		if (c->m->sh->slot[k].posted < s) return (int)k;
	return -1;
}
static int done_all(comm *c, void *arg) {
	int64_t s = *(int64_t *)arg;
	for (uint32_t k = 0; k < c->n; k++)
		if (c->m->sh->slot[k].done < s) return (int)k;
	return -1;
}

/* a timeout variable this rank cannot read fails the communicator, so
 * that the other ranks do not wait for this one */
static int bad_env(comm *c, const char *fn) {
	struct shared *sh = c->m->sh;
	sh_lock(sh);
	sh_fail(sh, HCCL_E_PARA, "rank %u: %s", c->rank, env_err);
	int rc = failed_rc(c, fn);
	sh_unlock(sh);
	return rc;
}

/* bytes a rank stages for d */
static uint64_t in_bytes(comm *c, const desc *d) {
	uint64_t e = (uint64_t)dtype_bytes(d->dtype);
	return d->kind == K_REDUCESCATTER ? d->count * c->n * e : d->count * e;
}

static int collective(comm *c, const desc *d, const void *send, void *recv) {
	struct shared *sh = c->m->sh;
	const char *fn = kname[d->kind];
	int64_t limit;
	if (timeout_ms("HCCL_EXEC_TIMEOUT", &limit) != 0) return bad_env(c, fn);
	int64_t s = ++c->seq;
	char me[96], what[160];
	describe(me, sizeof me, d);
	snprintf(what, sizeof what, "%s #%lld", me, (long long)s);
	uint64_t nb = in_bytes(c, d), eb = (uint64_t)dtype_bytes(d->dtype);
	sh_lock(sh);
	if (sh->failed) {
		int rc = failed_rc(c, fn);
		sh_unlock(sh);
		return rc;
	}
	sh_unlock(sh);
	/* every rank has read this rank's staging buffer of call s-1 */
	if (d->kind != K_BROADCAST || (uint32_t)d->root == c->rank) memcpy(staging(c, c->rank), send, nb);
	sh_lock(sh);
	struct slot *me_slot = &sh->slot[c->rank];
	me_slot->d = *d;
	snprintf(me_slot->last, sizeof me_slot->last, "%s", what);
	me_slot->posted = s;
	pthread_cond_broadcast(&sh->cv);
	int rc = 0;
	if (wait_ranks(c, posted_all, &s, limit, what) != 0) rc = -1;
	for (uint32_t k = 0; !rc && k < c->n; k++) {
		const desc *o = &sh->slot[k].d;
		if (memcmp(o, &sh->slot[0].d, sizeof *o) != 0) {
			char d0[96], dk[96];
			describe(d0, sizeof d0, &sh->slot[0].d);
			describe(dk, sizeof dk, o);
			sh_fail(sh, HCCL_E_PARA, "collective #%lld mismatch: rank 0 calls %s, rank %u calls %s", (long long)s,
			        d0, k, dk);
			rc = -1;
		}
	}
	if (rc) {
		rc = failed_rc(c, fn);
		sh_unlock(sh);
		return rc;
	}
	sh_unlock(sh);
	char *out = recv;
	switch (d->kind) {
	case K_ALLREDUCE: reduce(c, d->dtype, d->op, 0, d->count, out); break;
	case K_REDUCESCATTER: reduce(c, d->dtype, d->op, (uint64_t)c->rank * d->count, d->count, out); break;
	case K_ALLGATHER:
		for (uint32_t r = 0; r < c->n; r++) memcpy(out + (size_t)r * nb, staging(c, r), nb);
		break;
	case K_BROADCAST:
		if ((uint32_t)d->root != c->rank) memcpy(out, staging(c, (uint32_t)d->root), d->count * eb);
		break;
	}
	sh_lock(sh);
	me_slot->done = s;
	pthread_cond_broadcast(&sh->cv);
	if (wait_ranks(c, done_all, &s, limit, what) != 0) rc = failed_rc(c, fn);
	sh_unlock(sh);
	return rc;
}

struct p2p_arg {
	struct mailbox *b;
	int64_t s;
	int recv;
	int peer;
};
static int p2p_ready(comm *c, void *arg) {
	struct p2p_arg *a = arg;
	int64_t got = a->recv ? a->b->sent : a->b->acked;
	return got >= a->s ? -1 : a->peer;
}

static int p2p(comm *c, const desc *d, void *buf) {
	struct shared *sh = c->m->sh;
	const char *fn = kname[d->kind];
	int64_t limit;
	if (timeout_ms("HCCL_EXEC_TIMEOUT", &limit) != 0) return bad_env(c, fn);
	uint32_t peer = (uint32_t)d->root;
	int send = d->kind == K_SEND;
	int64_t s = send ? ++c->sends[peer] : ++c->recvs[peer];
	char me[96], what[160];
	describe(me, sizeof me, d);
	snprintf(what, sizeof what, "%s #%lld", me, (long long)s);
	uint64_t nb = d->count * (uint64_t)dtype_bytes(d->dtype);
	struct mailbox *b = send ? &sh->box[c->rank][peer] : &sh->box[peer][c->rank];
	struct p2p_arg a = {b, s, !send, (int)peer};
	sh_lock(sh);
	if (sh->failed) {
		int rc = failed_rc(c, fn);
		sh_unlock(sh);
		return rc;
	}
	snprintf(sh->slot[c->rank].last, sizeof sh->slot[c->rank].last, "%s", what);
	int rc = 0;
	if (send) {
		sh_unlock(sh);
		memcpy(staging(c, c->rank), buf, nb);
		sh_lock(sh);
		b->count = d->count;
		b->dtype = d->dtype;
		b->sent = s;
		pthread_cond_broadcast(&sh->cv);
		if (wait_ranks(c, p2p_ready, &a, limit, what) != 0) rc = failed_rc(c, fn);
		sh_unlock(sh);
		return rc;
	}
	if (wait_ranks(c, p2p_ready, &a, limit, what) != 0) {
		rc = failed_rc(c, fn);
		sh_unlock(sh);
		return rc;
	}
	if (b->count != d->count || b->dtype != d->dtype) {
		sh_fail(sh, HCCL_E_PARA,
		        "send/recv #%lld mismatch: rank %u sends HcclSend(count %llu, %s) to rank %u, rank %u calls %s",
		        (long long)s, peer, (unsigned long long)b->count, dtype_name(b->dtype), c->rank, c->rank, me);
		rc = failed_rc(c, fn);
		sh_unlock(sh);
		return rc;
	}
	sh_unlock(sh);
	memcpy(buf, staging(c, peer), nb);
	sh_lock(sh);
	b->acked = s;
	pthread_cond_broadcast(&sh->cv);
	sh_unlock(sh);
	return 0;
}

static int run_job(void *arg) {
	job *j = arg;
	if (j->d.kind == K_SEND) return p2p(j->c, &j->d, j->send);
	if (j->d.kind == K_RECV) return p2p(j->c, &j->d, j->recv);
	return collective(j->c, &j->d, j->send, j->recv);
}

/* checks the arguments, then runs the call now or records it in the capture
 * of stream */
static HcclResult submit(HcclComm h, desc d, void *send, void *recv, aclrtStream stream) {
	const char *fn = kname[d.kind];
	comm *c = as_comm(h);
	if (!c) {
		fake_set_err("%s: not a communicator", fn);
		return HCCL_E_PARA;
	}
	int eb = dtype_bytes(d.dtype);
	if (eb == 0) {
		fake_set_err("%s: unsupported data type %d", fn, d.dtype);
		return HCCL_E_NOT_SUPPORT;
	}
	if ((d.kind == K_ALLREDUCE || d.kind == K_REDUCESCATTER) && (d.op < 0 || d.op > HCCL_REDUCE_MIN)) {
		fake_set_err("%s: unsupported reduce op %d", fn, d.op);
		return HCCL_E_PARA;
	}
	if ((d.kind == K_BROADCAST || d.kind == K_SEND || d.kind == K_RECV) && (d.root < 0 || (uint32_t)d.root >= c->n)) {
		fake_set_err("%s: rank %d is not in the communicator of %u ranks", fn, d.root, c->n);
		return HCCL_E_PARA;
	}
	if ((d.kind == K_SEND || d.kind == K_RECV) && (uint32_t)d.root == c->rank) {
		fake_set_err("%s: rank %u to itself", fn, c->rank);
		return HCCL_E_PARA;
	}
	if (d.count == 0 || (!send && d.kind != K_RECV) || (!recv && d.kind != K_SEND && d.kind != K_BROADCAST)) {
		fake_set_err("%s: %s", fn, d.count == 0 ? "count is 0" : "NULL buffer");
		return d.count == 0 ? HCCL_E_PARA : HCCL_E_PTR;
	}
	uint64_t inb = in_bytes(c, &d);
	if (inb > c->m->sh->cap) {
		fake_set_err("%s: %llu B exceed the communication buffer of %llu MB (HCCL_BUFFSIZE)", fn,
		             (unsigned long long)inb, (unsigned long long)(c->m->sh->cap >> 20));
		return HCCL_E_MEMORY;
	}
	uint64_t outb = d.kind == K_ALLGATHER ? inb * c->n : d.kind == K_REDUCESCATTER ? inb / c->n : inb;
	int64_t lo[2], hi[2];
	int nr = 0;
	if (send && d.kind != K_RECV) {
		lo[nr] = (int64_t)(uintptr_t)send;
		hi[nr++] = (int64_t)((uintptr_t)send + inb);
	}
	if (recv && d.kind != K_SEND && d.kind != K_BROADCAST) {
		lo[nr] = (int64_t)(uintptr_t)recv;
		hi[nr++] = (int64_t)((uintptr_t)recv + outb);
	}
	if (d.kind == K_SEND) recv = NULL;
	if (d.kind == K_RECV) send = NULL;
	job *j = malloc(sizeof *j);
	j->c = c;
	j->d = d;
	j->send = send;
	j->recv = d.kind == K_BROADCAST ? send : recv;
	int captured = 0;
	int rc = fake_enqueue_host(stream, fn, run_job, j, free, nr, lo, hi, &captured);
	if (rc) {
		free(j);
		fake_trace_call(fn, rc, ",\"rank\":%u", c->rank);
		return HCCL_E_RUNTIME;
	}
	if (!captured) {
		rc = run_job(j);
		free(j);
	}
	fake_trace_call(fn, rc, ",\"rank\":%u,\"count\":%llu,\"dtype\":%d,\"captured\":%s", c->rank,
	                (unsigned long long)d.count, d.dtype, captured ? "true" : "false");
	return rc;
}

HcclResult HcclAllReduce(void *sendBuf, void *recvBuf, uint64_t count, HcclDataType dataType, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream) {
	desc d = {K_ALLREDUCE, dataType, op, 0, count};
	return submit(comm, d, sendBuf, recvBuf, stream);
}

HcclResult HcclAllGather(void *sendBuf, void *recvBuf, uint64_t sendCount, HcclDataType dataType, HcclComm comm,
                         aclrtStream stream) {
	desc d = {K_ALLGATHER, dataType, 0, 0, sendCount};
	return submit(comm, d, sendBuf, recvBuf, stream);
}

HcclResult HcclReduceScatter(void *sendBuf, void *recvBuf, uint64_t recvCount, HcclDataType dataType,
                             HcclReduceOp op, HcclComm comm, aclrtStream stream) {
	desc d = {K_REDUCESCATTER, dataType, op, 0, recvCount};
	return submit(comm, d, sendBuf, recvBuf, stream);
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType dataType, uint32_t root, HcclComm comm,
                         aclrtStream stream) {
	desc d = {K_BROADCAST, dataType, 0, (int32_t)root, count};
	return submit(comm, d, buf, NULL, stream);
}

HcclResult HcclSend(void *sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank, HcclComm comm,
                    aclrtStream stream) {
	desc d = {K_SEND, dataType, 0, (int32_t)destRank, count};
	return submit(comm, d, sendBuf, NULL, stream);
}

HcclResult HcclRecv(void *recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank, HcclComm comm,
                    aclrtStream stream) {
	desc d = {K_RECV, dataType, 0, (int32_t)srcRank, count};
	return submit(comm, d, NULL, recvBuf, stream);
}
