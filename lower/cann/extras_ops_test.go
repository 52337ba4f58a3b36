package cann

import (
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// TestKernelExtrasOps checks the lowering's table keyed by op name against
// package ir's registry: every op with kernel extras is a computing op of
// ir whose default target rule can put it on the NPU (extras complete NPU
// kernels only), so a renamed or removed op fails here, naming it.
func TestKernelExtrasOps(t *testing.T) {
	if len(kernelExtras) == 0 {
		t.Fatal("no kernel extras registered")
	}
	for op := range kernelExtras {
		info, ok := ir.Lookup(op)
		if !ok {
			t.Errorf("kernel extras of op %q, which package ir does not define", op)
			continue
		}
		if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
			t.Errorf("kernel extras of op %q, which computes nothing (a %s op)", op, info.Kind)
		}
		if r, ok := target.DefaultRules().Lookup(op); !ok || r.NPU == nil {
			t.Errorf("kernel extras of op %q, which no default target rule puts on the NPU", op)
		}
	}
}
