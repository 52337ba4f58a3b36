/*
 * hccl_selftest.c: checks the emulated libhccl.so (runtime/acl/fakeacl/hccl)
 * through the public C API only: the collectives' documented results (HCCL
 * API reference: HcclAllReduce, HcclAllGather, HcclReduceScatter,
 * HcclBroadcast, HcclSend/HcclRecv) with ranks as threads (HcclCommInitAll
 * and HcclCommInitRootInfo) and as processes (a root info passed in a file),
 * float32 sums in rank order, collectives captured in an ACL graph and
 * replayed, and failures: a mismatch fails every rank naming the call and
 * the rank, a missing rank times out, a dead process is noticed. Prints one
 * line per check and exits 1 if any failed.
 */
#include "irtool_hccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void irtfake_set(const char *key, long long value);

static int failures;

static void ok(int cond, const char *what, const char *detail) {
	printf("%s %s%s%s\n", cond ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
	fflush(stdout);
	if (!cond) failures++;
}

static void *dev(size_t n) {
	void *p = NULL;
	if (aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST) != 0) {
		printf("FAIL aclrtMalloc %zu\n", n);
		exit(1);
	}
	return p;
}

#define N 8
/* rank r's input element i: chosen so that the order of a float32 sum
 * matters (1e8 + 1 - 1e8 is 0 in rank order, 1 in another) */
static float input(int r, int i) {
	static const float v[3] = {1e8f, 1.0f, -1e8f};
	return r < 3 ? v[r] * (float)(i + 1) : (float)(r * 100 + i);
}

typedef struct {
	int rank, nranks, device;
	HcclComm comm;
	const HcclRootInfo *root;
	int mode; /* 0 eager collectives, 1 captured, 2 mismatch, 3 rank 1 absent */
	int rc[8];
	float out[8][N * 4];
	char err[8][512];
} worker;

static void note(worker *w, int k, int rc) {
	w->rc[k] = rc;
	const char *m = aclGetRecentErrMsg();
	snprintf(w->err[k], sizeof w->err[k], "%s", rc && m ? m : "");
}

static void *run_worker(void *arg) {
	worker *w = arg;
	aclrtSetDevice(w->device);
	if (w->root) {
		int rc = HcclCommInitRootInfo((uint32_t)w->nranks, w->root, (uint32_t)w->rank, &w->comm);
		note(w, 7, rc);
		if (rc) return NULL;
	}
	aclrtStream s;
	aclrtCreateStream(&s);
	float *in = dev(sizeof(float) * N * 4), *out = dev(sizeof(float) * N * 4);
	float host[N * 4];
	for (int i = 0; i < N * 4; i++) host[i] = input(w->rank, i);
	aclrtMemcpy(in, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
	switch (w->mode) {
	case 0:
		note(w, 0, HcclAllReduce(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, w->comm, s));
		aclrtMemcpy(w->out[0], sizeof(float) * N, out, sizeof(float) * N, ACL_MEMCPY_DEVICE_TO_HOST);
		note(w, 1, HcclAllGather(in, out, N, HCCL_DATA_TYPE_FP32, w->comm, s));
		aclrtMemcpy(w->out[1], sizeof(float) * N * w->nranks, out, sizeof(float) * N * w->nranks,
		            ACL_MEMCPY_DEVICE_TO_HOST);
		note(w, 2, HcclReduceScatter(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, w->comm, s));
		aclrtMemcpy(w->out[2], sizeof(float) * N, out, sizeof(float) * N, ACL_MEMCPY_DEVICE_TO_HOST);
		note(w, 3, HcclBroadcast(in, N, HCCL_DATA_TYPE_FP32, 1, w->comm, s));
		aclrtMemcpy(w->out[3], sizeof(float) * N, in, sizeof(float) * N, ACL_MEMCPY_DEVICE_TO_HOST);
		/* a ring: rank r sends its input to r+1 and receives r-1's */
		aclrtMemcpy(in, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
		if (w->rank % 2 == 0) {
			note(w, 4, HcclSend(in, N, HCCL_DATA_TYPE_FP32, (uint32_t)((w->rank + 1) % w->nranks), w->comm, s));
			note(w, 5, HcclRecv(out, N, HCCL_DATA_TYPE_FP32, (uint32_t)((w->rank + w->nranks - 1) % w->nranks),
			                    w->comm, s));
		} else {
			note(w, 5, HcclRecv(out, N, HCCL_DATA_TYPE_FP32, (uint32_t)((w->rank + w->nranks - 1) % w->nranks),
			                    w->comm, s));
			note(w, 4, HcclSend(in, N, HCCL_DATA_TYPE_FP32, (uint32_t)((w->rank + 1) % w->nranks), w->comm, s));
		}
		aclrtMemcpy(w->out[5], sizeof(float) * N, out, sizeof(float) * N, ACL_MEMCPY_DEVICE_TO_HOST);
		break;
	case 1: {
		/* captured once, replayed twice with new inputs */
		aclmdlRI ri = NULL;
		int rc = aclmdlRICaptureBegin(s, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL);
		if (!rc) rc = HcclAllReduce(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, w->comm, s);
		int rc2 = aclmdlRICaptureEnd(s, &ri);
		note(w, 0, rc ? rc : rc2);
		if (rc || rc2) break;
		for (int k = 0; k < 2; k++) {
			for (int i = 0; i < N; i++) host[i] = input(w->rank, i) * (float)(k + 2);
			aclrtMemcpy(in, sizeof(float) * N, host, sizeof(float) * N, ACL_MEMCPY_HOST_TO_DEVICE);
			note(w, 1 + k, aclmdlRIExecuteAsync(ri, s));
			aclrtSynchronizeStream(s);
			aclrtMemcpy(w->out[1 + k], sizeof(float) * N, out, sizeof(float) * N, ACL_MEMCPY_DEVICE_TO_HOST);
		}
		aclmdlRIDestroy(ri);
		break;
	}
	case 2:
		note(w, 0, HcclAllReduce(in, out, w->rank == 1 ? N / 2 : N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, w->comm, s));
		note(w, 1, HcclAllReduce(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, w->comm, s));
		break;
	case 3:
		if (w->rank != 1) note(w, 0, HcclAllReduce(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, w->comm, s));
		else w->rc[0] = -1;
		break;
	}
	aclrtFree(in);
	aclrtFree(out);
	aclrtDestroyStream(s);
	if (w->root) HcclCommDestroy(w->comm);
	return NULL;
}

static float sum_in_rank_order(int n, int i) {
	float s = 0.0f;
	for (int r = 0; r < n; r++) s += input(r, i);
	return s;
}

static void run_ranks(worker *ws, int n) {
	pthread_t t[8];
	for (int r = 0; r < n; r++) pthread_create(&t[r], NULL, run_worker, &ws[r]);
	for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
}

static void check_results(worker *ws, int n, const char *how) {
	char what[128];
	int good = 1;
	for (int r = 0; r < n; r++)
		for (int k = 0; k < 6; k++)
			if (ws[r].rc[k]) {
				printf("     rank %d call %d: %d %s\n", r, k, ws[r].rc[k], ws[r].err[k]);
				good = 0;
			}
	snprintf(what, sizeof what, "%s: every call succeeds on every rank", how);
	ok(good, what, NULL);
	int ar = 1, ag = 1, rs = 1, bc = 1, p2p = 1;
	for (int r = 0; r < n; r++)
		for (int i = 0; i < N; i++) {
			if (memcmp(&ws[r].out[0][i], &(float){sum_in_rank_order(n, i)}, 4)) ar = 0;
			if (ws[r].out[2][i] != sum_in_rank_order(n, r * N + i)) rs = 0;
			if (ws[r].out[3][i] != input(1, i)) bc = 0;
			if (ws[r].out[5][i] != input((r + n - 1) % n, i)) p2p = 0;
			for (int q = 0; q < n; q++)
				if (ws[r].out[1][q * N + i] != input(q, i)) ag = 0;
		}
	snprintf(what, sizeof what, "%s: HcclAllReduce sums float32 in rank order (0 + r0 + r1 + ...)", how);
	ok(ar, what, NULL);
	snprintf(what, sizeof what, "%s: HcclAllGather concatenates the ranks' inputs in rank order", how);
	ok(ag, what, NULL);
	snprintf(what, sizeof what, "%s: HcclReduceScatter gives rank r block r of the sum", how);
	ok(rs, what, NULL);
	snprintf(what, sizeof what, "%s: HcclBroadcast copies root 1's buffer to every rank", how);
	ok(bc, what, NULL);
	snprintf(what, sizeof what, "%s: HcclSend/HcclRecv around a ring", how);
	ok(p2p, what, NULL);
}

static void test_threads(void) {
	/* HcclCommInitAll: the ranks of one process, one thread each */
	for (int n = 2; n <= 3; n++) {
		int32_t devs[3] = {0, 1, 2};
		HcclComm comms[3];
		int rc = HcclCommInitAll((uint32_t)n, devs, comms);
		ok(rc == 0, "HcclCommInitAll", NULL);
		if (rc) return;
		uint32_t size = 0, id = 9;
		HcclGetRankSize(comms[1], &size);
		HcclGetRankId(comms[1], &id);
		ok(size == (uint32_t)n && id == 1, "HcclGetRankSize / HcclGetRankId", NULL);
		worker ws[3];
		memset(ws, 0, sizeof ws);
		for (int r = 0; r < n; r++) ws[r] = (worker){.rank = r, .nranks = n, .device = r, .comm = comms[r]};
		run_ranks(ws, n);
		check_results(ws, n, n == 2 ? "threads, 2 ranks (HcclCommInitAll)" : "threads, 3 ranks (HcclCommInitAll)");
		for (int r = 0; r < n; r++) HcclCommDestroy(comms[r]);
	}
	/* HcclCommInitRootInfo from threads */
	HcclRootInfo root;
	ok(HcclGetRootInfo(&root) == 0, "HcclGetRootInfo", NULL);
	worker ws[2];
	memset(ws, 0, sizeof ws);
	for (int r = 0; r < 2; r++) ws[r] = (worker){.rank = r, .nranks = 2, .device = r, .root = &root};
	run_ranks(ws, 2);
	ok(ws[0].rc[7] == 0 && ws[1].rc[7] == 0, "threads: HcclCommInitRootInfo", ws[0].err[7]);
	check_results(ws, 2, "threads, 2 ranks (HcclCommInitRootInfo)");
}

static void test_capture(void) {
	int32_t devs[2] = {0, 1};
	HcclComm comms[2];
	HcclCommInitAll(2, devs, comms);
	worker ws[2];
	memset(ws, 0, sizeof ws);
	for (int r = 0; r < 2; r++) ws[r] = (worker){.rank = r, .nranks = 2, .device = r, .comm = comms[r], .mode = 1};
	run_ranks(ws, 2);
	ok(!ws[0].rc[0] && !ws[1].rc[0], "capture: HcclAllReduce is recorded between aclmdlRICaptureBegin and End",
	   ws[0].err[0]);
	int good = 1;
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 2; k++) {
			if (ws[r].rc[1 + k]) good = 0;
			for (int i = 0; i < N; i++) {
				float want = 0.0f;
				want += input(0, i) * (float)(k + 2);
				want += input(1, i) * (float)(k + 2);
				if (ws[r].out[1 + k][i] != want) good = 0;
			}
		}
	ok(good, "capture: each aclmdlRIExecuteAsync reruns the all-reduce on the buffers' current contents",
	   ws[0].err[1]);
	for (int r = 0; r < 2; r++) HcclCommDestroy(comms[r]);
}

static void test_failures(void) {
	int32_t devs[2] = {0, 1};
	HcclComm comms[2];
	HcclCommInitAll(2, devs, comms);
	worker ws[2];
	memset(ws, 0, sizeof ws);
	for (int r = 0; r < 2; r++) ws[r] = (worker){.rank = r, .nranks = 2, .device = r, .comm = comms[r], .mode = 2};
	run_ranks(ws, 2);
	int named = 1;
	for (int r = 0; r < 2; r++)
		if (!strstr(ws[r].err[0], "HcclAllReduce") || !strstr(ws[r].err[0], "rank 1") ||
		    !strstr(ws[r].err[0], "mismatch"))
			named = 0;
	ok(ws[0].rc[0] == HCCL_E_PARA && ws[1].rc[0] == HCCL_E_PARA && named,
	   "a count mismatch fails every rank with HCCL_E_PARA, naming the call and the rank", ws[0].err[0]);
	ok(ws[0].rc[1] != 0 && ws[1].rc[1] != 0, "a failed communicator fails the later calls", ws[1].err[1]);
	for (int r = 0; r < 2; r++) HcclCommDestroy(comms[r]);

	setenv("IRTFAKE_HCCL_TIMEOUT_MS", "300", 1);
	HcclCommInitAll(2, devs, comms);
	memset(ws, 0, sizeof ws);
	for (int r = 0; r < 2; r++) ws[r] = (worker){.rank = r, .nranks = 2, .device = r, .comm = comms[r], .mode = 3};
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	run_ranks(ws, 2);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	ok(ws[0].rc[0] == HCCL_E_TIMEOUT && strstr(ws[0].err[0], "rank 1") && secs < 5,
	   "a rank that never arrives: HCCL_E_TIMEOUT after the timeout, naming the rank", ws[0].err[0]);
	for (int r = 0; r < 2; r++) HcclCommDestroy(comms[r]);
	unsetenv("IRTFAKE_HCCL_TIMEOUT_MS");
}

/* ranks as processes: the root info goes through a file */
static void test_processes(void) {
	char path[] = "/tmp/fakehccl-rootinfo-XXXXXX";
	int fd = mkstemp(path);
	HcclRootInfo root;
	HcclGetRootInfo(&root);
	ssize_t w = write(fd, &root, sizeof root);
	close(fd);
	ok(w == (ssize_t)sizeof root, "root info written to a file", NULL);
	/* long enough that a dead rank is noticed before it times out */
	setenv("IRTFAKE_HCCL_TIMEOUT_MS", "20000", 1);
	for (int dead = 0; dead <= 1; dead++) {
		if (dead) {
			HcclGetRootInfo(&root);
			fd = open(path, O_WRONLY | O_TRUNC);
			w = write(fd, &root, sizeof root);
			close(fd);
		}
		pid_t pid = fork();
		if (pid == 0) {
			HcclRootInfo mine;
			int f = open(path, O_RDONLY);
			ssize_t got = read(f, &mine, sizeof mine);
			close(f);
			if (got != (ssize_t)sizeof mine) _exit(3);
			aclrtSetDevice(1);
			HcclComm c;
			if (HcclCommInitRootInfo(2, &mine, 1, &c) != 0) _exit(4);
			if (dead) _exit(0); /* dies without a word */
			aclrtStream s;
			aclrtCreateStream(&s);
			float *in = dev(sizeof(float) * N), *out = dev(sizeof(float) * N), host[N];
			for (int i = 0; i < N; i++) host[i] = input(1, i);
			aclrtMemcpy(in, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
			if (HcclAllReduce(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c, s) != 0) _exit(5);
			aclrtMemcpy(host, sizeof host, out, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST);
			for (int i = 0; i < N; i++)
				if (host[i] != sum_in_rank_order(2, i)) _exit(6);
			HcclCommDestroy(c);
			_exit(0);
		}
		aclrtSetDevice(0);
		HcclComm c;
		int rc = HcclCommInitRootInfo(2, &root, 0, &c);
		ok(rc == 0, dead ? "processes: rank 0 joins (rank 1 will die)" : "processes: HcclCommInitRootInfo", aclGetRecentErrMsg());
		aclrtStream s;
		aclrtCreateStream(&s);
		float *in = dev(sizeof(float) * N), *out = dev(sizeof(float) * N), host[N];
		for (int i = 0; i < N; i++) host[i] = input(0, i);
		aclrtMemcpy(in, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
		if (dead) usleep(200000);
		rc = HcclAllReduce(in, out, N, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, c, s);
		int st = 0;
		waitpid(pid, &st, 0);
		if (!dead) {
			aclrtMemcpy(host, sizeof host, out, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST);
			int good = rc == 0;
			for (int i = 0; i < N; i++)
				if (host[i] != sum_in_rank_order(2, i)) good = 0;
			ok(good && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			   "processes: HcclAllReduce across two processes, the same sum on both", aclGetRecentErrMsg());
		} else {
			const char *m = aclGetRecentErrMsg();
			ok(rc == HCCL_E_REMOTE && m && strstr(m, "rank 1") && strstr(m, "died"),
			   "processes: a dead rank fails the collective (HCCL_E_REMOTE), naming it", m);
		}
		HcclCommDestroy(c);
		aclrtFree(in);
		aclrtFree(out);
		aclrtDestroyStream(s);
	}
	unsetenv("IRTFAKE_HCCL_TIMEOUT_MS");
	unlink(path);
	char shm[4200];
	snprintf(shm, sizeof shm, "/dev/shm%s", root.internal + strlen("irtool-fakehccl-v1 "));
	ok(access(shm, F_OK) != 0, "the root's shared memory object is unlinked once every rank has joined", shm);
}

int main(void) {
	if (aclInit(NULL) != 0) {
		printf("FAIL init\n");
		return 1;
	}
	irtfake_set("device_count", 4);
	if (aclrtSetDevice(0) != 0) {
		printf("FAIL aclrtSetDevice\n");
		return 1;
	}
	test_threads();
	test_capture();
	test_failures();
	test_processes();
	printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
