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
// Profiles (Get; irtool targets prints them):
//
//	ascend910b   Atlas A2 (Ascend 910B), generic: the 910B3's profile
//	ascend910b1  one profile per SKU, 910B1 … 910B4 (sku.go, with sources)
//	ascend310p   Atlas 300I Pro/Duo (Ascend 310P), one chip
//	ascend310b   Atlas 200I/500 A2 inference products (Ascend 310B)
//	cpu          the host alone; every op runs through the CPU kernels
//
// A profile is also data (File, ParseFile): a target file read under its
// own name, registered with Rules.RegisterTarget.
//
// Op support follows llama.cpp's CANN backend (ggml_backend_cann_supports_op
// and the aclnn calls of ggml_cann_compute_forward, summarised in
// ggml-cann's supports_op and compute_forward) and, for the 310B, the product-support tables
// of Huawei's CANN operator reference ("Atlas 200I/500 A2 推理产品" column).
// docs/LOWERING.md lists every rule with its source.
//
// The cost model is explicit and calibrated: a device kernel costs a
// per-call floor plus its class's time (KernelCost: a GEMV or quantised
// GEMV streams its weight, a WQBMM adds its antiquant, a matmul follows an
// efficiency curve in its FLOPs, vector kernels stream their bytes); an
// eager launch adds a per-aclnn-call host cost; a captured graph pays one
// replay launch instead. Peak compute and bandwidth are public figures or
// stated assumptions (cited on each Profile); the per-call overheads and
// efficiencies (Calibration, calibration.go) are fitted by scripts/costfit
// on public measurements, and docs/LOWERING.md ("Calibration") lists every
// figure with its residual.
package target
