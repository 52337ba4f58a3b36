/*
 * ops.h: what an operator file of the CANN emulator (ops_<family>.c) uses
 * from the two halves: phase 1's argument checking and tracing (fakeacl.c)
 * and the kernels' element access (kernels.c). The functions are hidden:
 * libascendcl.so exports only the CANN API.
 */
#ifndef IRTOOL_FAKEACL_OPS_H
#define IRTOOL_FAKEACL_OPS_H

#include "fakeacl.h"

#include <pthread.h>

#define FAKE_HIDDEN __attribute__((visibility("hidden")))

/* ---- phase 1 (fakeacl.c) ---- */

/* the emulator's lock: held by phase 1 from LOCK() to call_end */
FAKE_HIDDEN extern pthread_mutex_t fake_mu;
#define LOCK() pthread_mutex_lock(&fake_mu)
#define UNLOCK() pthread_mutex_unlock(&fake_mu)

/* One phase-1 call under construction: tensors are checked and traced. */
typedef struct {
	const char *fn;
	int rc;
	aclOpExecutor *ex;
} call;

/* appends to the trace record of the call */
FAKE_HIDDEN void tr(const char *fmt, ...);
FAKE_HIDDEN void call_begin(call *c, const char *fn);
/* records tensor argument key; required tensors must be live */
FAKE_HIDDEN const aclTensor *arg(call *c, const char *key, const aclTensor *t, int required);
FAKE_HIDDEN void list_arg(call *c, const char *key, const aclTensorList *l);
/* fails the call with ACLNN_ERR_PARAM_INVALID and the message unless cond */
FAKE_HIDDEN void check(call *c, int cond, const char *fmt, ...);
FAKE_HIDDEN int same_shape(const aclTensor *a, const aclTensor *b);
/* ends phase 1: the executor and its workspace size, or the error */
FAKE_HIDDEN aclnnStatus call_end(call *c, const char *op, uint64_t *workspaceSize, aclOpExecutor **executor);
/* phase 2, the same for every operator */
FAKE_HIDDEN aclnnStatus run(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                            aclrtStream s);

#define RUN(name) \
	IRT_ACLNN_RUN(name) { return run(#name, workspace, workspaceSize, executor, stream); }

/* ---- kernels (kernels.c) ---- */

/* what a kernel computes with: the executor's snapshot and its workspace */
typedef struct {
	const aclOpExecutor *e;
	void *ws;
	uint64_t wsz;
} kctx;

#define T(k) (&c->e->t[k])
#define HAS(k) (c->e->t[k].magic != 0)

FAKE_HIDDEN extern float h2f_tab[65536];
/* float16 -> float32 (exact) */
static inline float h2f(uint16_t h) { return h2f_tab[h]; }
/* float32 -> float16, round to nearest even, overflow to infinity */
FAKE_HIDDEN uint16_t f2h(float f);
FAKE_HIDDEN float round_h(float f);
/* element e (storage offset included) of t, and its store (rounded to t's
 * dtype) */
FAKE_HIDDEN double ld(const aclTensor *t, int64_t e);
FAKE_HIDDEN void st(const aclTensor *t, int64_t e, double v);
/* the element offset in t of coordinates c of an nd-dim iteration space,
 * t's dims right-aligned to it; t's dims of size 1 broadcast */
FAKE_HIDDEN int64_t toff(const aclTensor *t, const int64_t *c, int nd);

/* the kernels of the operator files, named irt_kernel_<ID> after the
 * operator's IRT_ACLNN_OPS id */
FAKE_HIDDEN int irt_kernel_FIA(kctx *c);

#endif
