package eval

import (
	"fmt"
	"sort"
	"sync"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Kernel computes node n into dst from its operands' views. o carries the
// numeric options of the executor. A kernel must not keep the views after
// it returns.
type Kernel func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, o kernels.Options) error

var (
	kernelMu  sync.RWMutex
	kernelTab = map[ir.Op]Kernel{}
)

// RegisterKernel installs the CPU kernel of an op. Fusion passes that add
// ops to the registry (package passes) register their kernels here, so the
// reference executor can run the rewritten graph and a test can compare it
// with the original. Registering an op twice is an error.
func RegisterKernel(op ir.Op, k Kernel) error {
	kernelMu.Lock()
	defer kernelMu.Unlock()
	if _, dup := kernelTab[op]; dup {
		return fmt.Errorf("eval: kernel for op %q registered twice", op)
	}
	kernelTab[op] = k
	return nil
}

// HasKernel reports whether the executor can run op.
func HasKernel(op ir.Op) bool { _, ok := LookupKernel(op); return ok }

// KernelOps lists the ops with a CPU kernel, sorted.
func KernelOps() []ir.Op {
	kernelMu.RLock()
	defer kernelMu.RUnlock()
	out := make([]ir.Op, 0, len(kernelTab))
	for op := range kernelTab {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// LookupKernel returns the CPU kernel of op. The executor, the simulated
// device and the CPU segments of lowered programs all run these kernels.
func LookupKernel(op ir.Op) (Kernel, bool) {
	kernelMu.RLock()
	defer kernelMu.RUnlock()
	k, ok := kernelTab[op]
	return k, ok
}

func mustKernel(op ir.Op, k Kernel) {
	if err := RegisterKernel(op, k); err != nil {
		panic(err)
	}
}

func f32Attr(n *ir.Node, key string, def float64) float32 {
	if v, ok := n.Attrs.Float(key); ok {
		return float32(v)
	}
	return float32(def)
}

func intAttr(n *ir.Node, key string, def int64) int {
	if v, ok := n.Attrs.Int(key); ok {
		return int(v)
	}
	return int(def)
}

// RopeParams reads a rope node's attributes (ggml_rope_ext's parameters).
func RopeParams(n *ir.Node) kernels.RopeParams {
	return kernels.RopeParams{
		NDims:      intAttr(n, "n_dims", 0),
		Mode:       intAttr(n, "mode", 0),
		NCtxOrig:   intAttr(n, "n_ctx_orig", 0),
		FreqBase:   f32Attr(n, "freq_base", 10000),
		FreqScale:  f32Attr(n, "freq_scale", 1),
		ExtFactor:  f32Attr(n, "ext_factor", 0),
		AttnFactor: f32Attr(n, "attn_factor", 1),
		BetaFast:   f32Attr(n, "beta_fast", 32),
		BetaSlow:   f32Attr(n, "beta_slow", 1),
	}
}

func init() {
	copyKernel := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Cpy(dst, a[0])
	}
	mustKernel(ir.OpCont, copyKernel)
	mustKernel(ir.OpCast, copyKernel)
	mustKernel(ir.OpCpy, copyKernel) // dst is the view of operand 1 the result aliases
	mustKernel(ir.OpGetRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.GetRows(dst, a[0], a[1])
	})
	mustKernel(ir.OpSetRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SetRows(dst, a[1], a[2])
	})
	mustKernel(ir.OpRMSNorm, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.RMSNorm(dst, a[0], f32Attr(n, "eps", 0))
	})
	mustKernel(ir.OpMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Mul(dst, a[0], a[1])
	})
	mustKernel(ir.OpAdd, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Add(dst, a[0], a[1])
	})
	mustKernel(ir.OpScale, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Scale(dst, a[0], f32Attr(n, "scale", 1))
	})
	mustKernel(ir.OpSilu, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Silu(dst, a[0])
	})
	mustKernel(ir.OpMulMat, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMat(dst, a[0], a[1])
	})
	mustKernel(ir.OpSoftMax, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		var mask *kernels.Tensor
		if len(a) > 1 {
			mask = &a[1]
		}
		return kernels.SoftMax(dst, a[0], mask, f32Attr(n, "scale", 1), f32Attr(n, "max_bias", 0))
	})
	mustKernel(ir.OpRope, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		if len(a) > 2 {
			return kernels.RopeWithFactors(dst, a[0], a[1], a[2], RopeParams(n))
		}
		return kernels.Rope(dst, a[0], a[1], RopeParams(n))
	})
}
