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
