package eval

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Kernel computes node n into dst from its operands' views. o carries the
// numeric options of the executor. A kernel must not keep the views after
// it returns.
type Kernel func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, o kernels.Options) error

// KernelSet maps ops to CPU kernels. The package's default set
// (DefaultKernels) holds the kernel of every op package ir defines and is
// what the package-level RegisterKernel, LookupKernel, HasKernel and
// KernelOps use; NewKernelSet makes one layered over it, whose
// registrations no other set sees (ExecOptions.KernelSet runs a graph with
// it). A KernelSet is safe for concurrent use.
type KernelSet struct {
	parent *KernelSet
	mu     sync.RWMutex
	m      map[ir.Op]Kernel
}

var defaultKernels = &KernelSet{m: map[ir.Op]Kernel{}}

// DefaultKernels returns the package's default kernel set.
func DefaultKernels() *KernelSet { return defaultKernels }

// NewKernelSet returns an empty set layered over DefaultKernels.
func NewKernelSet() *KernelSet { return &KernelSet{parent: defaultKernels, m: map[ir.Op]Kernel{}} }

// Register installs the CPU kernel of an op in s. Registering an op twice
// (here or in a parent set) is an error.
func (s *KernelSet) Register(op ir.Op, k Kernel) error {
	if k == nil {
		return fmt.Errorf("eval: kernel for op %q is nil", op)
	}
	if _, dup := s.Lookup(op); dup {
		return fmt.Errorf("eval: kernel for op %q registered twice", op)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.m[op]; dup {
		return fmt.Errorf("eval: kernel for op %q registered twice", op)
	}
	s.m[op] = k
	return nil
}

// Lookup returns the kernel of op in s or in the set it is layered over.
func (s *KernelSet) Lookup(op ir.Op) (Kernel, bool) {
	for x := s; x != nil; x = x.parent {
		x.mu.RLock()
		k, ok := x.m[op]
		x.mu.RUnlock()
		if ok {
			return k, true
		}
	}
	return nil, false
}

// Ops lists the ops with a kernel in s, sorted.
func (s *KernelSet) Ops() []ir.Op {
	var out []ir.Op
	for x := s; x != nil; x = x.parent {
		x.mu.RLock()
		for op := range x.m {
			if !slices.Contains(out, op) {
				out = append(out, op)
			}
		}
		x.mu.RUnlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// RegisterKernel installs the CPU kernel of an op in the default set.
// Registering an op twice is an error.
func RegisterKernel(op ir.Op, k Kernel) error { return defaultKernels.Register(op, k) }

// HasKernel reports whether the default set has a kernel for op.
func HasKernel(op ir.Op) bool { _, ok := defaultKernels.Lookup(op); return ok }

// KernelOps lists the ops with a kernel in the default set, sorted.
func KernelOps() []ir.Op { return defaultKernels.Ops() }

// LookupKernel returns the CPU kernel of op in the default set. The
// executor, the simulated device and the CPU segments of lowered programs
// all run these kernels.
func LookupKernel(op ir.Op) (Kernel, bool) { return defaultKernels.Lookup(op) }

// mustKernel registers a built-in kernel. Each op family's file
// (copy.go, elementwise.go, norm.go, matmul.go, rope.go, attention.go,
// moe.go: the families of package ir's files) registers the kernels of its
// ops, reading their attributes through package ir's typed accessors
// (ir.Attrs.Eps, ir.Attrs.Rope, ...). A fused op's kernel computes bit for
// bit the unfused chain it replaces; the arithmetic itself lives in package
// kernels (docs/KERNELS.md).
func mustKernel(op ir.Op, k Kernel) {
	if err := RegisterKernel(op, k); err != nil {
		panic(err)
	}
}
