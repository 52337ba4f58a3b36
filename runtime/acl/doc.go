// Package acl binds irtool's device.Device to Huawei's CANN runtime
// (libascendcl, libnnopbase, libopapi), for users who own Ascend hardware.
//
// The package is built only with the "cann" build tag; without it only this
// comment is compiled and the default build stays pure Go (no cgo, no SDK).
// With the tag it needs cgo and a C compiler, but not the CANN toolkit: the
// ACL and aclnn functions it calls are declared in irtool_acl.h
// from CANN's documented signatures, and the libraries are opened with
// dlopen at run time from $ASCEND_TOOLKIT_HOME/lib64 (as CANN's set_env.sh
// sets it) or from the paths in $IRTOOL_ACL_LIBS. A binary built with the
// tag therefore starts on a machine without CANN and says so when asked.
//
// Why a dlopen binding rather than linking: `irtool doctor` must be able to
// report that CANN is missing instead of failing to start, and the tests
// load a test double in place of libascendcl through the very same code
// path as production.
//
// What the Device does (see device.Device for the contract):
//
//   - Memory: one aclrtMalloc(ACL_MEM_MALLOC_HUGE_FIRST) pool per device,
//     taken at SetDevice, carved by device.MemPool (mLLM's Ascend pool). The
//     runtime binds the planned arena, weights, KV caches and constant
//     tables to it before any capture.
//   - Tensors: each device.TensorDesc (ggml order, byte strides) becomes an
//     aclCreateTensor descriptor: dims and strides reversed, strides in
//     elements, ND format, a 1-D storage shape covering the view.
//     Descriptors are built once per distinct kernel and cached, so a
//     repeated eager launch creates nothing and a replay calls nothing but
//     aclmdlRIExecuteAsync.
//   - Kernels: each launch runs the aclnn call sequence of its IR op, each
//     call two-phase (GetWorkspaceSize, then the kernel with the planned
//     workspace). Scratch the sequence needs (rstd rows, f16 staging) is
//     carved from the kernel's planned workspace; the operator's own
//     workspace must fit in what is left (plus an optional per-stream
//     reserve taken before any capture). A larger request is an error
//     naming the kernel, never an allocation.
//   - Capture: aclmdlRICaptureBegin/End on the calling OS thread (the
//     goroutine is locked to it in between, as GLOBAL mode requires),
//     aclmdlRIExecuteAsync, and aclmdlRIDestroy after synchronising the
//     stream the graph last ran on.
//   - Errors: every non-zero status becomes an *Error carrying the call,
//     the code, aclGetRecentErrMsg() and the kernel; nothing aborts.
//
// The tests run against fakeacl/, irtool's emulator of the three
// libraries, built by scripts/fakeacl.sh (which users run to try the CANN
// path without an NPU: IRTOOL_ACL_LIBS=DIR). It records every call,
// refuses what CANN refuses during capture, and computes: each aclnn
// operator the recipes call produces its documented result on the host
// (descriptors, dtypes, promotion, cube math and antiquant rules as CANN
// defines them), captured models replay their launches at the addresses
// bound at capture, and an access outside device memory is an AI core
// exception naming the operator. So the tests prove the call sequence, the
// descriptors, the addresses and the numbers of a lowered program against
// llama.cpp's. Nothing here has been run on Ascend hardware by the authors;
// docs/RUNTIME.md ("Real hardware") says what to expect.
package acl
