/*
 * trace.c: what the CANN emulator records and the failures tests inject:
 * the trace, every call with its arguments as one JSON object per line
 * (irtfake_trace), and irtfake_fail's rules (fake_injected). Called with
 * the emulator's lock held, but for the entry points, which take it.
 */
#include "fakeacl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FAIL_RULES 32
static struct {
	char fn[64];
	int nth; /* 1-based index of the failing call from now; 0 = every call */
	int seen;
	int code;
	char msg[256];
} fail_rules[MAX_FAIL_RULES];
static int n_fail_rules;

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

void fake_tr(const char *fmt, ...) {
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

void fake_tr_begin(const char *fn) {
	seq++;
	fake_tr("{\"seq\":%lld,\"fn\":\"%s\"", seq, fn);
}
void fake_tr_end(int rc) { fake_tr(",\"rc\":%d}\n", rc); }

void fake_tr_i64s(const char *key, const int64_t *v, uint64_t n) {
	fake_tr(",\"%s\":[", key);
	for (uint64_t i = 0; i < n; i++) fake_tr(i ? ",%lld" : "%lld", (long long)v[i]);
	fake_tr("]");
}

/* injected failures: returns the code to fail with, or 0 */
int fake_injected(const char *fn) {
	for (int i = 0; i < n_fail_rules; i++) {
		if (strcmp(fail_rules[i].fn, fn) != 0) continue;
		fail_rules[i].seen++;
		if (fail_rules[i].nth == 0 || fail_rules[i].nth == fail_rules[i].seen) {
			fake_set_err("%s", fail_rules[i].msg);
			return fail_rules[i].code;
		}
	}
	return 0;
}

void fake_trace_call(const char *fn, int rc, const char *fields_fmt, ...) {
	char buf[1024];
	va_list ap;
	va_start(ap, fields_fmt);
	vsnprintf(buf, sizeof buf, fields_fmt, ap);
	va_end(ap);
	fake_lock();
	fake_tr_begin(fn);
	fake_tr("%s", buf);
	fake_tr_end(rc);
	fake_unlock();
}

/* clears the trace and the injected failures (irtfake_reset) */
void fake_trace_reset(void) {
	trace_len = 0;
	if (trace) trace[0] = 0;
	seq = 0;
	n_fail_rules = 0;
}

void irtfake_fail(const char *fn, int nth, int code, const char *msg) {
	fake_lock();
	if (n_fail_rules < MAX_FAIL_RULES) {
		int i = n_fail_rules++;
		snprintf(fail_rules[i].fn, sizeof fail_rules[i].fn, "%s", fn);
		fail_rules[i].nth = nth;
		fail_rules[i].seen = 0;
		fail_rules[i].code = code;
		snprintf(fail_rules[i].msg, sizeof fail_rules[i].msg, "%s", msg);
	}
	fake_unlock();
}

char *irtfake_trace(void) {
	fake_lock();
	char *out = malloc(trace_len + 1);
	if (trace_len) memcpy(out, trace, trace_len);
	out[trace_len] = 0;
	fake_unlock();
	return out;
}

void irtfake_free(void *p) { free(p); }
