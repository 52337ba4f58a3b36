/*
 * kernel.c: the table of the emulator's operators, generated from
 * IRT_ACLNN_OPS (irtool_acl.h), and the float16 table the kernels read.
 *
 * fake_ops[FAKE_OP_<ID>] names operator X(ID, name, …)'s kernel
 * irt_kernel_<ID> (kernel.h declares one per entry) and its two phases
 * (irtool_acl.h declares them): an entry whose kernel or phase no file
 * defines leaves an undefined reference, which scripts/fakeacl.sh's link
 * refuses (-z defs), naming it. The runtime (fakeacl.c) runs a kernel
 * through this table only.
 */
#include "kernel.h"

#define FAKE_OP_ROW(id, name, params, args)                                                               \
	[FAKE_OP_##id] = {#name, irt_kernel_##id, (void (*)(void))name##GetWorkspaceSize, (void (*)(void))name},
const fake_op fake_ops[FAKE_NOPS] = {IRT_ACLNN_OPS(FAKE_OP_ROW)};
#undef FAKE_OP_ROW

float fake_h2f_calc(uint16_t h) {
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	if (e == 0) {
		if (m == 0) {
			bits = s;
		} else { /* subnormal */
			e = 127 - 15 + 1;
			while (!(m & 0x400)) {
				m <<= 1;
				e--;
			}
			bits = s | (e << 23) | ((m & 0x3ff) << 13);
		}
	} else if (e == 31) {
		bits = s | 0x7f800000u | (m << 13);
	} else {
		bits = s | ((e + 127 - 15) << 23) | (m << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/* h2f(h) is fake_h2f_calc(h) tabulated once when the library loads */
float fake_h2f_tab[65536];

__attribute__((constructor)) static void h2f_init(void) {
	for (uint32_t h = 0; h < 65536; h++) fake_h2f_tab[h] = fake_h2f_calc((uint16_t)h);
}

/* t's view maps distinct coordinates to distinct elements: its dims of
 * more than one element, by stride, each stride past the previous dims'
 * extent */
static int one_to_one(const aclTensor *t) {
	int64_t d[8], s[8];
	int n = 0;
	for (int i = 0; i < t->ndim; i++) {
		if (t->dims[i] < 2) continue;
		int j = n++;
		for (; j > 0 && s[j - 1] > t->strides[i]; j--) d[j] = d[j - 1], s[j] = s[j - 1];
		d[j] = t->dims[i], s[j] = t->strides[i];
	}
	for (int j = 0; j < n; j++)
		if (s[j] < 1 || (j > 0 && s[j] < s[j - 1] * d[j - 1])) return 0;
	return 1;
}

static int same_view(const aclTensor *a, const aclTensor *b) {
	if (a->data != b->data || a->offset != b->offset || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->dims[i] != b->dims[i] || a->strides[i] != b->strides[i]) return 0;
	return 1;
}

int fake_split(int64_t n, int64_t min_per_thread, fake_range_fn fn, void *arg, const aclTensor *out,
               const aclTensor *const *in, int nin) {
	int ok = out->dtype != ACL_INT4 && one_to_one(out);
	int64_t olo, ohi, lo, hi;
	byte_range(out, &olo, &ohi);
	for (int k = 0; ok && k < nin; k++) {
		if (!in[k] || !in[k]->magic || same_view(in[k], out)) continue;
		byte_range(in[k], &lo, &hi);
		ok = hi <= olo || ohi <= lo;
	}
	if (!ok) return n > 0 ? fn(arg, 0, n) : 0;
	return fake_parallel(n, min_per_thread, fn, arg);
}
