/*
 * parallel.c: the emulator's host threads. A kernel whose outputs are
 * independent (one output column per task, say) splits them over
 * fake_threads() threads with fake_parallel; each output is computed by one
 * thread with the same arithmetic in the same order as a single thread
 * would, so the bits never depend on the thread count.
 *
 * IRTFAKE_THREADS (1..64) sets the count; unset, it is the number of online
 * processors (at most 64). A value outside 1..64 or not a number is refused
 * the first time a kernel asks: the kernel fails with the variable's range
 * in its message (fake_threads returns 0). irtfake_set("threads", N)
 * overrides the variable (0 hands the choice back to it).
 *
 * fake_simd says whether kernels may take their vector paths (AVX2/F16C
 * where the host has them): IRTFAKE_SIMD=0 or irtfake_set("simd", 0)
 * forces the scalar loops, so tests can compare the two (same bits).
 */
#include "fakeacl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_n;

static void threads_init(void) {
	const char *v = getenv("IRTFAKE_THREADS");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);
		threads_n = (*end == 0 && n >= 1 && n <= 64) ? (int)n : 0;
		return;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	threads_n = n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static volatile int cfg_threads = 0, cfg_simd = -1;
static long long splits; /* calls of fake_parallel that ran on more than one thread */

int fake_parallel_stat(const char *key, long long *v) {
	if (strcmp(key, "parallel_splits") != 0) return 0;
	*v = __atomic_load_n(&splits, __ATOMIC_RELAXED);
	return 1;
}

int fake_threads(void) {
	if (cfg_threads > 0) return cfg_threads;
	pthread_once(&threads_once, threads_init);
	return threads_n;
}

int fake_simd(void) {
	if (cfg_simd >= 0) return cfg_simd;
	const char *v = getenv("IRTFAKE_SIMD");
	return !(v && strcmp(v, "0") == 0);
}

int fake_parallel_set(const char *key, long long value) {
	if (strcmp(key, "threads") == 0) {
		cfg_threads = value >= 1 && value <= 64 ? (int)value : 0;
		return 1;
	}
	if (strcmp(key, "simd") == 0) {
		cfg_simd = value < 0 ? -1 : value != 0;
		return 1;
	}
	return 0;
}

typedef struct {
	fake_range_fn fn;
	void *arg;
	int64_t lo, hi;
	int rc;
} par_task;

static void *par_run(void *p) {
	par_task *t = p;
	t->rc = t->fn(t->arg, t->lo, t->hi);
	return NULL;
}

int fake_parallel(int64_t n, int64_t min_per_thread, fake_range_fn fn, void *arg) {
	int nt = fake_threads();
	if (nt == 0) {
		fake_set_err("IRTFAKE_THREADS=%s: want a whole number in 1..64", getenv("IRTFAKE_THREADS"));
		return ACL_ERROR_INVALID_PARAM;
	}
	if (min_per_thread < 1) min_per_thread = 1;
	if (n / min_per_thread < nt) nt = (int)(n / min_per_thread);
	if (nt <= 1) return n > 0 ? fn(arg, 0, n) : 0;
	__atomic_fetch_add(&splits, 1, __ATOMIC_RELAXED);
	par_task tasks[64];
	pthread_t th[64];
	int started[64];
	for (int i = 0; i < nt; i++) {
		tasks[i] = (par_task){fn, arg, n * i / nt, n * (i + 1) / nt, 0};
		started[i] = 0;
	}
	for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, par_run, &tasks[i]) == 0;
	for (int i = 0; i < nt; i++) /* a thread that could not start runs here */
		if (i == 0 || !started[i]) par_run(&tasks[i]);
	int rc = 0;
	for (int i = 0; i < nt; i++) {
		if (i > 0 && started[i]) pthread_join(th[i], NULL);
		if (tasks[i].rc && !rc) rc = tasks[i].rc;
	}
	return rc;
}
