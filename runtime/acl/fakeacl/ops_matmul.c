/*
 * ops_matmul.c: the emulator's matrix products aclnnMatmul, aclnnMm and
 * aclnnBatchMatMul (phase 1 and the kernels).
 *
 * The products accumulate in float32 over k in order; with cubeMathType
 * ALLOW_FP32_DOWN_PRECISION (1) float32 inputs are rounded to HF32 (11
 * mantissa bits) on Atlas A2/A3 and to float16 elsewhere, USE_FP16 (2)
 * rounds them to float16, USE_HF32 (3) to HF32, and KEEP_DTYPE (0) keeps
 * float32 (refused for float32 on parts whose cube unit lacks it, in phase
 * 1). Under ggml's arithmetic (kernel.h) each output is ggml's dot product
 * instead (gg_dot).
 */
#include "kernel.h"

/* the SoC is an Atlas A2/A3 part (910B, 910_93), whose cube unit has HF32
 * and FP32 */
static int a2_or_a3(void) {
	const char *s = fake_soc();
	return strncmp(s, "Ascend910B", 10) == 0 || strncmp(s, "Ascend910_93", 12) == 0;
}

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
		check(&c, a2_or_a3() || self->dtype != ACL_FLOAT || (cubeMathType != 0 && cubeMathType != 3),
		      "cubeMathType %d with FLOAT inputs is not supported on %s", (int)cubeMathType, fake_soc());
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

/* the dot product of x and y (k values each) that ggml's mul_mat computes
 * for operands of this kind: f16 (FLOAT16 operands, exact products: plain
 * adds) or f32 (fused multiply-adds); vec: ggml_vec_dot_* (a single row,
 * or k not a multiple of 8), else tinyBLAS */
static float gg_dot(const float *x, const float *y, int64_t k, int f16, int vec) {
	if (vec) {
		int64_t np = k & ~(int64_t)31;
		float red = 0;
		if (np > 0) {
			float g[4][8] = {{0}};
			for (int64_t i = 0; i < np; i += 32)
				for (int q = 0; q < 4; q++)
					for (int e = 0; e < 8; e++) {
						int64_t j = i + 8 * q + e;
						g[q][e] = f16 ? g[q][e] + x[j] * y[j] : fmaf(x[j], y[j], g[q][e]);
					}
			float v[8];
			for (int e = 0; e < 8; e++) v[e] = (g[0][e] + g[2][e]) + (g[1][e] + g[3][e]);
			float t0 = v[0] + v[4], t1 = v[1] + v[5], t2 = v[2] + v[6], t3 = v[3] + v[7];
			red = (t0 + t1) + (t2 + t3);
		}
		if (f16) {
			double sum = red;
			for (int64_t i = np; i < k; i++) sum += (double)(x[i] * y[i]);
			return (float)sum;
		}
		for (int64_t i = np; i < k; i++) red += x[i] * y[i];
		return red;
	}
	float s[8] = {0};
	int64_t i = 0;
	for (; i + 8 <= k; i += 8)
		for (int e = 0; e < 8; e++) s[e] = f16 ? s[e] + x[i + e] * y[i + e] : fmaf(x[i + e], y[i + e], s[e]);
	float sum = gg_hsum8(s);
	for (; i < k; i++) sum = f16 ? sum + x[i] * y[i] : fmaf(x[i], y[i], sum);
	return sum;
}

/* what the cube unit sees of a float32 input under cubeMathType (a2: the
 * SoC is Atlas A2/A3) */
static float cube_in(float v, aclDataType t, int cube, int a2) {
	if (t != ACL_FLOAT) return v;
	switch (cube) {
	case 0: return v;
	case 1: return a2 ? round_hf32(v) : round_h(v);
	case 3: return round_hf32(v);
	default: return round_h(v);
	}
}

/* matmul_views indexes 1-D matmul operands as 2-D ones: self as one row,
 * mat2 as one column, out as whichever of the two it is */
static void matmul_views(const aclTensor *a, const aclTensor *b, const aclTensor *out, aclTensor *A, aclTensor *B, aclTensor *O) {
	*A = *a, *B = *b, *O = *out;
	if (A->ndim == 1) {
		A->ndim = 2;
		A->dims[1] = A->dims[0], A->strides[1] = A->strides[0];
		A->dims[0] = 1, A->strides[0] = 0;
	}
	if (B->ndim == 1) {
		B->ndim = 2;
		B->dims[1] = 1, B->strides[1] = 0;
	}
	if (O->ndim == 1) {
		O->ndim = 2;
		if (a->ndim == 1) {
			O->dims[1] = O->dims[0], O->strides[1] = O->strides[0];
			O->dims[0] = 1, O->strides[0] = 0;
		} else {
			O->dims[1] = 1, O->strides[1] = 0;
		}
	}
}

/* One matmul launch as its threads see it: the operands (1-D ones viewed
 * as 2-D: A, B, O), out[..., m, n] = Σ_k self[..., m, k] · mat2[..., k, n]
 * with the batch dims (bdims) broadcast. Every output is computed whole by
 * one thread, in the single thread's order, so the threads (fake_split)
 * never change a bit. */
typedef struct {
	const aclTensor *a, *b, *out;
	aclTensor A, B, O;
	int cube, a2, nd;
	int64_t M, K, N, batches, bdims[8];
	/* ggml's arithmetic: batch bi's rows of self and columns of mat2 in
	 * float32, and the kind of dot product (gg_dot) */
	int64_t bi;
	float *rows, *cols;
	int f16, vec;
} mm;

/* the most outputs of k products a thread is given fewer than */
static int64_t mm_min(int64_t k) { return 1 + (1 << 16) / (k > 0 ? k : 1); }

static int mm_split(mm *p, int64_t n, int64_t min, fake_range_fn fn) {
	const aclTensor *in[2] = {p->a, p->b};
	return fake_split(n, min, fn, p, p->out, in, 2);
}

/* ggml's arithmetic, batch p->bi: columns [lo, hi) of every row */
static int mm_ggml_range(void *arg, int64_t lo, int64_t hi) {
	const mm *p = arg;
	int64_t cc[8], K = p->K;
	int nd = p->nd;
	coords(p->bi, p->bdims, nd - 2, cc);
	for (int64_t m = 0; m < p->M; m++)
		for (int64_t n = lo; n < hi; n++) {
			cc[nd - 2] = m, cc[nd - 1] = n;
			st(&p->O, toff(&p->O, cc, nd), gg_dot(p->rows + m * K, p->cols + n * K, K, p->f16, p->vec));
		}
	return 0;
}

/* the matmul with ggml's dot products (gg_dot): per batch, self's rows and
 * mat2's columns gathered into float32 buffers (no cubeMathType rounding),
 * then the columns split over the threads */
static int matmul_ggml(kctx *c, mm *p) {
	int nd = p->nd;
	int64_t M = p->M, K = p->K, N = p->N, cc[8], ca[8], cb[8];
	p->f16 = p->a->dtype == ACL_FLOAT16 && p->b->dtype == ACL_FLOAT16, p->vec = M < 2 || K % 8 != 0;
	size_t kk = (size_t)(K ? K : 1);
	p->rows = malloc(sizeof(float) * kk * (size_t)(M ? M : 1)), p->cols = malloc(sizeof(float) * kk * (size_t)(N ? N : 1));
	int rc = 0;
	if (!p->rows || !p->cols) {
		fake_set_err("%s: out of host memory", c->e->op);
		rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
	}
	for (int64_t bi = 0; !rc && bi < p->batches; bi++) {
		coords(bi, p->bdims, nd - 2, cc);
		memcpy(ca, cc, sizeof cc);
		memcpy(cb, cc, sizeof cc);
		for (int64_t m = 0; m < M; m++)
			for (int64_t k = 0; k < K; k++) {
				ca[nd - 2] = m, ca[nd - 1] = k;
				p->rows[m * K + k] = (float)ld(&p->A, toff(&p->A, ca, nd));
			}
		for (int64_t n = 0; n < N; n++)
			for (int64_t k = 0; k < K; k++) {
				cb[nd - 2] = k, cb[nd - 1] = n;
				p->cols[n * K + k] = (float)ld(&p->B, toff(&p->B, cb, nd));
			}
		p->bi = bi;
		rc = mm_split(p, N, mm_min(M * K), mm_ggml_range);
	}
	free(p->rows);
	free(p->cols);
	return rc;
}

/* 2-D float32 kept in float32, columns [lo, hi): the general loop's sums
 * (over k in order), read through pointers, column n of mat2 gathered once */
static int mm_f32_range(void *arg, int64_t lo, int64_t hi) {
	const mm *p = arg;
	const aclTensor *a = p->a, *b = p->b, *out = p->out;
	int64_t M = p->M, K = p->K;
	const float *pa = (const float *)a->data + a->offset, *pb = (const float *)b->data + b->offset;
	float *col = malloc(sizeof(float) * (size_t)(K ? K : 1));
	if (!col) {
		fake_set_err("aclnnMm: out of host memory");
		return ACL_ERROR_RT_MEMORY_ALLOCATION;
	}
	for (int64_t n = lo; n < hi; n++) {
		for (int64_t k = 0; k < K; k++) col[k] = pb[k * b->strides[0] + n * b->strides[1]];
		for (int64_t m = 0; m < M; m++) {
			const float *row = pa + m * a->strides[0];
			float acc = 0;
			for (int64_t k = 0; k < K; k++) acc += row[k * a->strides[1]] * col[k];
			st(out, out->offset + m * out->strides[0] + n * out->strides[1], acc);
		}
	}
	free(col);
	return 0;
}

/* the general loop, outputs [lo, hi) of batches × M × N in row-major order */
static int mm_range(void *arg, int64_t lo, int64_t hi) {
	const mm *p = arg;
	int nd = p->nd;
	int64_t M = p->M, N = p->N, cc[8], ca[8], cb[8];
	for (int64_t o = lo; o < hi; o++) {
		int64_t bi = o / (M * N), m = o / N % M, n = o % N;
		coords(bi, p->bdims, nd - 2, cc);
		memcpy(ca, cc, sizeof cc);
		memcpy(cb, cc, sizeof cc);
		float acc = 0;
		for (int64_t k = 0; k < p->K; k++) {
			ca[nd - 2] = m, ca[nd - 1] = k;
			cb[nd - 2] = k, cb[nd - 1] = n;
			float x = cube_in((float)ld(&p->A, toff(&p->A, ca, nd)), p->A.dtype, p->cube, p->a2);
			float y = cube_in((float)ld(&p->B, toff(&p->B, cb, nd)), p->B.dtype, p->cube, p->a2);
			acc += x * y;
		}
		cc[nd - 2] = m, cc[nd - 1] = n;
		st(&p->O, toff(&p->O, cc, nd), acc);
	}
	return 0;
}

/* out[..., m, n] = Σ_k self[..., m, k] · mat2[..., k, n], batch dims
 * broadcast; 1-D operands are a row (self) or a column (mat2) */
static int matmul_kernel(kctx *c) {
	const aclTensor *a = T(0), *b = T(1), *out = T(2);
	mm p = {.a = a, .b = b, .out = out, .cube = (int)c->e->i[0], .a2 = a2_or_a3()};
	p.nd = out->ndim < 2 ? 2 : out->ndim;
	p.M = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1, p.K = a->dims[a->ndim - 1];
	p.N = b->ndim >= 2 ? b->dims[b->ndim - 1] : 1;
	p.batches = 1;
	for (int i = 0; i < p.nd - 2; i++) {
		p.bdims[i] = out->dims[i];
		p.batches *= p.bdims[i];
	}
	matmul_views(a, b, out, &p.A, &p.B, &p.O);
	if (gg(c)) return matmul_ggml(c, &p);
	if (a->ndim == 2 && b->ndim == 2 && out->ndim == 2 && a->dtype == ACL_FLOAT && b->dtype == ACL_FLOAT && p.cube == 0)
		return mm_split(&p, p.N, mm_min(p.M * p.K), mm_f32_range);
	return mm_split(&p, p.batches * p.M * p.N, mm_min(p.K), mm_range);
}

int irt_kernel_MATMUL(kctx *c) { return matmul_kernel(c); }
int irt_kernel_MM(kctx *c) { return matmul_kernel(c); }
int irt_kernel_BMM(kctx *c) { return matmul_kernel(c); }
