/*
 * ops_elementwise.c: the emulator's elementwise operators: arithmetic
 * (Mul, InplaceMul, Muls, Add, InplaceAdd, Div, InplaceAddcmul), unary
 * functions (Silu, Cos, Sin, Abs, Round, Gelu), SwiGlu, and the masks
 * (GeScalar, InplaceMaskedFillScalar): phase 1 and the kernels.
 */
#include "kernel.h"

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
	if (!alpha || alpha->magic != SCALAR_MAGIC) {
		call c;
		call_begin(&c, "aclnnAddGetWorkspaceSize");
		if (!c.rc) {
			c.rc = ACLNN_ERR_PARAM_NULLPTR;
			fake_set_err("aclnnAddGetWorkspaceSize: alpha is not a scalar");
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
	int ok = other && other->magic == SCALAR_MAGIC;
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

aclnnStatus aclnnInplaceAddGetWorkspaceSize(aclTensor *selfRef, const aclTensor *other, const aclScalar *alpha,
                                            uint64_t *workspaceSize, aclOpExecutor **executor) {
	LOCK();
	call c;
	call_begin(&c, "aclnnInplaceAddGetWorkspaceSize");
	selfRef = (aclTensor *)arg(&c, "selfRef", selfRef, 1);
	other = arg(&c, "other", other, 1);
	int ok = alpha && alpha->magic == SCALAR_MAGIC;
	tr(",\"alpha\":%.17g", ok ? alpha->v : 0.0);
	c.ex->f[0] = ok ? alpha->v : 1;
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		fake_set_err("aclnnInplaceAddGetWorkspaceSize: alpha is not a scalar");
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
	int ok = value && value->magic == SCALAR_MAGIC;
	tr(",\"value\":%.17g", ok ? value->v : 0.0);
	c.ex->f[0] = ok ? value->v : 1;
	if (!c.rc && !ok) {
		c.rc = ACLNN_ERR_PARAM_NULLPTR;
		fake_set_err("aclnnInplaceAddcmulGetWorkspaceSize: value is not a scalar");
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

/* ---------------- kernels ---------------- */

/* ggml's silu of the value at position pos of a row of len values */
static float gg_silu(float x, int64_t pos, int64_t len) {
	if (pos < (len & ~(int64_t)7)) return x / (1.0f + gg_vexpf(-x));
	return x / (1.0f + expf(-x));
}

/* ggml_gelu_f32 (1 + a·x·x contracted to one FMA, as gcc does) */
static float gg_gelu(float x) {
	if (x <= -10.0f) return 0;
	if (x >= 10.0f) return x;
	const float a = 0.044715f, s2pi = 0.79788456080286535587989211986876f;
	float inner = fmaf(a * x, x, 1.0f);
	float t = (float)tanh((double)(s2pi * x * inner));
	return 0.5f * x * (1.0f + t);
}

/* One elementwise launch as its threads see it (fake_split): inputs a, b
 * and t as the kernel names them, the output, and the operation. */
typedef struct {
	kctx *c;
	const aclTensor *a, *b, *t, *out;
	int op;
	double alpha;
	aclDataType ct;
} ew;

/* The outputs of an elementwise kernel are independent: split over the
 * host threads (each computed as one thread would), at least 32768 to a
 * thread. */
static int ew_run(ew *w, fake_range_fn fn, int64_t n) {
	const aclTensor *in[3] = {w->a, w->b, w->t};
	return fake_split(n, 1 << 15, fn, w, w->out, in, 3);
}

enum { EW_MUL, EW_ADD, EW_DIV };

/* out = self op other (scaled by alpha for add), broadcasting; the value is
 * rounded to the promoted compute dtype, then stored in out's dtype */
static int ew_binary_range(void *arg, int64_t lo, int64_t hi) {
	const ew *w = arg;
	const aclTensor *a = w->a, *b = w->b, *out = w->out;
	int64_t cc[8];
	for (int64_t i = lo; i < hi; i++) {
		coords(i, out->dims, out->ndim, cc);
		float x = (float)ld(a, toff(a, cc, out->ndim)), y = (float)ld(b, toff(b, cc, out->ndim)), r;
		switch (w->op) {
		case EW_MUL: r = x * y; break;
		case EW_ADD: r = w->alpha == 1 ? x + y : x + (float)w->alpha * y; break;
		default: r = x / y; break;
		}
		st(out, toff(out, cc, out->ndim), round_to(w->ct, r));
	}
	return 0;
}

static int ew_binary(kctx *c, const aclTensor *a, const aclTensor *b, const aclTensor *out, int op, double alpha) {
	ew w = {c, a, b, NULL, out, op, alpha, promote(a->dtype, b->dtype)};
	return ew_run(&w, ew_binary_range, numel(out));
}

int irt_kernel_MUL(kctx *c) { return ew_binary(c, T(0), T(1), T(2), EW_MUL, 1); }
int irt_kernel_INPLACEMUL(kctx *c) { return ew_binary(c, T(0), T(1), T(0), EW_MUL, 1); }
int irt_kernel_ADD(kctx *c) { return ew_binary(c, T(0), T(1), T(2), EW_ADD, c->e->f[0]); }
int irt_kernel_INPLACEADD(kctx *c) { return ew_binary(c, T(0), T(1), T(0), EW_ADD, c->e->f[0]); }
int irt_kernel_DIV(kctx *c) { return ew_binary(c, T(0), T(1), T(2), EW_DIV, 1); }

/* aclnnInplaceAddcmul: selfRef += value·tensor1·tensor2, the product
 * rounded to the compute dtype, then the sum (CANN does not document a
 * fused rounding). Under ggml's arithmetic with value 1 it is one fused
 * multiply-add, fmaf(tensor1, tensor2, selfRef), as the FMA chains of
 * ggml-cpu's K-quant dot products (ggml_vec_dot_q*_K_q8_K) accumulate. */
static int addcmul_range(void *arg, int64_t lo, int64_t hi) {
	const ew *w = arg;
	const aclTensor *self = w->out, *a = w->a, *b = w->b;
	aclDataType ct = self->dtype;
	double value = w->alpha;
	int fused = gg(w->c) && value == 1;
	int64_t cc[8];
	for (int64_t i = lo; i < hi; i++) {
		coords(i, self->dims, self->ndim, cc);
		int64_t o = toff(self, cc, self->ndim);
		float s = (float)ld(self, o), x = (float)ld(a, toff(a, cc, self->ndim)), y = (float)ld(b, toff(b, cc, self->ndim));
		float r = fused ? fmaf(x, y, s) : s + (float)round_to(ct, (float)round_to(ct, (float)value * x) * y);
		st(self, o, round_to(ct, r));
	}
	return 0;
}

int irt_kernel_INPLACEADDCMUL(kctx *c) {
	ew w = {c, T(1), T(2), T(0), T(0), 0, c->e->f[0], T(0)->dtype};
	return ew_run(&w, addcmul_range, numel(T(0)));
}

/* aclnnMuls: a float scalar keeps a floating tensor's dtype */
static int muls_range(void *arg, int64_t lo, int64_t hi) {
	const ew *w = arg;
	const aclTensor *a = w->a, *out = w->out;
	float s = (float)w->alpha;
	int64_t cc[8];
	for (int64_t i = lo; i < hi; i++) {
		coords(i, out->dims, out->ndim, cc);
		st(out, toff(out, cc, out->ndim), round_to(w->ct, (float)ld(a, toff(a, cc, out->ndim)) * s));
	}
	return 0;
}

int irt_kernel_MULS(kctx *c) {
	ew w = {c, T(0), NULL, NULL, T(1), 0, c->e->f[0], is_float(T(0)->dtype) ? T(0)->dtype : ACL_FLOAT};
	return ew_run(&w, muls_range, numel(T(1)));
}

enum { UN_SILU, UN_COS, UN_SIN, UN_ABS, UN_ROUND };

static int ew_unary_range(void *arg, int64_t lo, int64_t hi) {
	const ew *w = arg;
	const aclTensor *a = w->a, *out = w->out;
	int g = gg(w->c);
	int64_t cc[8];
	for (int64_t i = lo; i < hi; i++) {
		coords(i, out->dims, out->ndim, cc);
		float x = (float)ld(a, toff(a, cc, out->ndim)), r;
		switch (w->op) {
		case UN_SILU:
			r = !g ? x / (1.0f + expf(-x))
			       : out->ndim ? gg_silu(x, cc[out->ndim - 1], out->dims[out->ndim - 1]) : gg_silu(x, 0, 1);
			break;
		/* The device's cos and sin are correctly rounded here; ggml-cpu
		 * calls the C library's cosf and sinf, which are not always. */
		case UN_COS: r = g ? cosf(x) : (float)cos((double)x); break;
		case UN_SIN: r = g ? sinf(x) : (float)sin((double)x); break;
		case UN_ABS: r = fabsf(x); break;
		default: r = nearbyintf(x); break; /* UN_ROUND, in the default rounding mode: ties to even */
		}
		st(out, toff(out, cc, out->ndim), round_to(a->dtype, r));
	}
	return 0;
}

static int ew_unary(kctx *c, const aclTensor *a, const aclTensor *out, int op) {
	ew w = {c, a, NULL, NULL, out, op, 0, a->dtype};
	return ew_run(&w, ew_unary_range, numel(out));
}

int irt_kernel_SILU(kctx *c) { return ew_unary(c, T(0), T(1), UN_SILU); }
int irt_kernel_COS(kctx *c) { return ew_unary(c, T(0), T(1), UN_COS); }
int irt_kernel_SIN(kctx *c) { return ew_unary(c, T(0), T(1), UN_SIN); }
int irt_kernel_ABS(kctx *c) { return ew_unary(c, T(0), T(1), UN_ABS); }
int irt_kernel_ROUND(kctx *c) { return ew_unary(c, T(0), T(1), UN_ROUND); }

/* aclnnSwiGlu: x split in halves a | b along dim (w->op), out = silu(a) * b */
static int swiglu_range(void *arg, int64_t lo, int64_t hi) {
	const ew *w = arg;
	const aclTensor *x = w->a, *out = w->out;
	int nd = x->ndim, d = w->op, g = gg(w->c);
	int64_t h = x->dims[d] / 2, cc[8];
	for (int64_t i = lo; i < hi; i++) {
		coords(i, out->dims, nd, cc);
		float a = (float)ld(x, toff(x, cc, nd));
		cc[d] += h;
		float b = (float)ld(x, toff(x, cc, nd));
		cc[d] -= h;
		float s = (float)round_to(x->dtype, g ? gg_silu(a, cc[nd - 1], out->dims[nd - 1]) : a / (1.0f + expf(-a)));
		st(out, toff(out, cc, nd), round_to(out->dtype, s * b));
	}
	return 0;
}

int irt_kernel_SWIGLU(kctx *c) {
	int nd = T(0)->ndim, d = (int)(c->e->i[0] < 0 ? c->e->i[0] + nd : c->e->i[0]);
	ew w = {c, T(0), NULL, NULL, T(1), d, 0, T(1)->dtype};
	return ew_run(&w, swiglu_range, numel(T(1)));
}

/* aclnnGelu: out = 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) (the CANN
 * page's formula), computed in float32 and rounded once to out's dtype */
static int gelu_range(void *arg, int64_t lo, int64_t hi) {
	const ew *w = arg;
	const aclTensor *a = w->a, *out = w->out;
	int table = gg(w->c) && a->dtype == ACL_FLOAT16;
	int64_t cc[8];
	const float s2pi = 0.79788456080286535588f;
	for (int64_t i = lo; i < hi; i++) {
		coords(i, out->dims, out->ndim, cc);
		float x = (float)ld(a, toff(a, cc, out->ndim));
		float r = table ? gg_gelu(x) : 0.5f * x * (1.0f + tanhf(s2pi * (x + 0.044715f * x * x * x)));
		st(out, toff(out, cc, out->ndim), round_to(out->dtype, r));
	}
	return 0;
}

int irt_kernel_GELU(kctx *c) {
	ew w = {c, T(0), NULL, NULL, T(1), 0, 0, T(1)->dtype};
	return ew_run(&w, gelu_range, numel(T(1)));
}

/* aclnnGeScalar: out = self >= other, BOOL */
int irt_kernel_GESCALAR(kctx *c) {
	const aclTensor *a = T(0), *out = T(1);
	int64_t n = numel(out), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, out->dims, out->ndim, cc);
		st(out, toff(out, cc, out->ndim), ld(a, toff(a, cc, out->ndim)) >= c->e->f[0]);
	}
	return 0;
}

/* aclnnInplaceMaskedFillScalar: selfRef = value where mask (broadcast) is
 * true; the value converted to selfRef's dtype */
int irt_kernel_MASKEDFILL(kctx *c) {
	const aclTensor *self = T(0), *mask = T(1);
	int64_t n = numel(self), cc[8];
	for (int64_t i = 0; i < n; i++) {
		coords(i, self->dims, self->ndim, cc);
		if (ld(mask, toff(mask, cc, self->ndim)) != 0) st(self, toff(self, cc, self->ndim), c->e->f[0]);
	}
	return 0;
}
