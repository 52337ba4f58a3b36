#!/usr/bin/env bash
# scripts/fakeacl.sh DIR: builds irtool's emulated CANN runtime into DIR.
#
# The emulator (runtime/acl/fakeacl, see its README.md) implements the part of
# libascendcl, libnnopbase and libopapi that irtool calls, on the host:
# device memory is host memory, every aclnn operator the CANN lowering uses
# computes its documented result (docs/RUNTIME.md, "Trying the CANN path
# without an NPU"). DIR receives libascendcl.so, which holds the whole
# emulator, and libnnopbase.so and libopapi.so, which only depend on it, so
# that DIR looks like a toolkit's lib64 to irtool:
#
#   go build -tags cann ./cmd/irtool
#   scripts/fakeacl.sh /tmp/fakeacl
#   IRTOOL_ACL_LIBS=/tmp/fakeacl ./irtool doctor
#   IRTOOL_ACL_LIBS=/tmp/fakeacl ./irtool run --backend cann -p "Once upon a time" -n 16
#
# Needs a C compiler ($CC, default gcc); nothing from CANN.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)
cc=${CC:-gcc}
mkdir -p "$dir"
# No FMA contraction: the emulated kernels round after every operation, as
# the comment of runtime/acl/fakeacl/kernel.h says.
flags=(-shared -fPIC -O2 -ffp-contract=off -Wall -Werror -Wno-unused-parameter)
# -z defs: an undefined symbol fails the link. The operator table
# (fakeacl/kernel.c) names the kernel irt_kernel_<ID> and both phases of
# every entry of IRT_ACLNN_OPS, so an operator missing any of them does not
# build ("undefined reference to `irt_kernel_ABS'").
"$cc" "${flags[@]}" -I "$root/runtime/acl" -o "$dir/libascendcl.so" \
  "$root"/runtime/acl/fakeacl/*.c -Wl,-z,defs -lpthread -lm
# The emulated HCCL (runtime/acl/fakeacl/hccl): collectives on the
# emulator's streams, between threads or processes (shared memory).
"$cc" "${flags[@]}" -I "$root/runtime/acl" -o "$dir/libhccl.so" \
  "$root/runtime/acl/fakeacl/hccl/hccl.c" -L "$dir" -Wl,--no-as-needed -lascendcl -Wl,-rpath,'$ORIGIN' -lpthread -lrt
for lib in nnopbase opapi; do
  printf '/* the emulator is libascendcl.so */\n' | "$cc" -shared -fPIC -x c - -o "$dir/lib$lib.so" \
    -L "$dir" -Wl,--no-as-needed -lascendcl -Wl,-rpath,'$ORIGIN'
done
# The emulator's self-test (runtime/acl/fakeacl/selftest/selftest.c) checks
# its operators against their documented formulas through the C API alone;
# DIR/fakeacl-selftest prints one line per check and exits 1 on a failure.
"$cc" -O1 -Wall -Werror -I "$root/runtime/acl" -o "$dir/fakeacl-selftest" \
  "$root/runtime/acl/fakeacl/selftest/selftest.c" "$dir/libascendcl.so" -Wl,-rpath,'$ORIGIN' -lm
# DIR/fakehccl-selftest checks libhccl.so the same way (threads, processes,
# capture, failures).
"$cc" -O1 -Wall -Werror -I "$root/runtime/acl" -o "$dir/fakehccl-selftest" \
  "$root/runtime/acl/fakeacl/selftest/hccl_selftest.c" "$dir/libhccl.so" "$dir/libascendcl.so" -Wl,-rpath,'$ORIGIN' -lpthread
echo "$dir: libascendcl.so libnnopbase.so libopapi.so libhccl.so (irtool's CANN emulator), fakeacl-selftest, fakehccl-selftest"
