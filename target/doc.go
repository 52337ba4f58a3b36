// Package target describes the machines irtool compiles for: which IR ops
// and dtypes the NPU runs (and as which aclnn call), what each op costs, and
// what the device can do as a whole (ACL graph capture, memory alignment).
//
// Why a package of its own: the partition pass, the lowering and the
// performance prediction must agree on one description of the hardware. If
// the partitioner believed an op ran on the NPU while the lowering had no
// aclnn call for it, the program would fail at run time on a machine we do
// not have. Keeping support, kernel names and costs in one table makes that
// disagreement impossible by construction.
//
// Profiles (Get):
//
//	ascend910b  Atlas A2 training/inference series (Ascend 910B)
//	ascend310b  Atlas 200I/500 A2 inference products (Ascend 310B)
//	cpu         the host alone; every op runs through the CPU kernels
//
// Op support follows llama.cpp's CANN backend (ggml_backend_cann_supports_op
// and the aclnn calls of ggml_cann_compute_forward, summarised in
// ggml-cann's supports_op and compute_forward) and, for the 310B, the product-support tables
// of Huawei's CANN operator reference ("Atlas 200I/500 A2 推理产品" column).
// docs/LOWERING.md lists every rule with its source.
//
// The cost model is deliberately simple and fully explicit: a device kernel
// costs a fixed per-task floor plus the larger of its FLOPs over peak compute
// and its bytes over memory bandwidth; an eager launch adds a per-aclnn-call
// host cost; a captured graph pays one replay launch instead. Peak compute
// and bandwidth are public specifications (cited on each Profile); the
// per-call host and device overheads are stated assumptions, not
// measurements, and docs/LOWERING.md shows how the predictions move with
// them.
package target
