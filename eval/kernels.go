package eval

import (
	"fmt"

	"github.com/irtool/irtool/internal/registry"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Kernel computes node n into dst from its operands' views. o carries the
// numeric options of the executor. A kernel must not keep the views after
// it returns.
type Kernel func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, o kernels.Options) error

// Prepare binds the kernel of node n to its storage once, for an
// Executable: dst and args are the node's result and operands where the
// executable keeps them, o the executor's options (o.Packs set to the
// workers' repacked weights) and threads the number of workers. It
// returns a kernels.Job, whose phases the workers split by rows and which
// computes bit for bit what the op's Kernel computes, or a nil Job when
// this node runs through the Kernel at every run instead (its operands
// change in a way the job cannot follow: a rope whose factors the graph
// computes).
type Prepare func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error)

// KernelDef is an op's CPU kernels: Run, the reference kernel that the
// executor, constant folding, the simulated device and CPU segments call,
// and Prepare, the optional multi-threaded job an Executable runs instead
// (an optimisation: an op without one runs Run on the calling goroutine).
type KernelDef struct {
	Run     Kernel
	Prepare Prepare
}

// KernelSet maps ops to CPU kernels. The package's default set
// (DefaultKernels) holds the kernel of every op package ir defines and is
// what the package-level RegisterKernel, LookupKernel, HasKernel and
// KernelOps use; NewKernelSet makes one layered over it, whose
// registrations no other set sees (ExecOptions.KernelSet runs a graph with
// it). A KernelSet is safe for concurrent use.
type KernelSet struct {
	r *registry.Layered[ir.Op, KernelDef]
}

var defaultKernels = &KernelSet{registry.New[ir.Op, KernelDef](nil)}

// DefaultKernels returns the package's default kernel set.
func DefaultKernels() *KernelSet { return defaultKernels }

// NewKernelSet returns an empty set layered over DefaultKernels.
func NewKernelSet() *KernelSet { return newKernelSet(defaultKernels) }

func newKernelSet(parent *KernelSet) *KernelSet {
	return &KernelSet{registry.New(parent.r)}
}

// Register installs the CPU kernel of an op in s. Registering an op twice
// (here or in a parent set) is an error.
func (s *KernelSet) Register(op ir.Op, k Kernel) error {
	return s.RegisterDef(op, KernelDef{Run: k})
}

// RegisterDef installs the CPU kernels of an op in s: Run is required,
// Prepare optional. Registering an op twice (here or in a parent set) is an
// error.
func (s *KernelSet) RegisterDef(op ir.Op, d KernelDef) error {
	if d.Run == nil {
		return fmt.Errorf("eval: kernel for op %q is nil", op)
	}
	if !s.r.Add(op, d) {
		return fmt.Errorf("eval: kernel for op %q registered twice", op)
	}
	return nil
}

// Lookup returns the kernel of op in s or in the set it is layered over.
func (s *KernelSet) Lookup(op ir.Op) (Kernel, bool) {
	d, ok := s.r.Lookup(op)
	return d.Run, ok
}

// LookupDef returns the kernels of op (its Run and its Prepare, if any) in
// s or in the set it is layered over.
func (s *KernelSet) LookupDef(op ir.Op) (KernelDef, bool) { return s.r.Lookup(op) }

// Ops lists the ops with a kernel in s, sorted.
func (s *KernelSet) Ops() []ir.Op { return s.r.Keys() }

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

// mustKernel registers a built-in kernel and, when prep is not nil, its
// prepared job. Each op family's file (copy.go, elementwise.go, norm.go,
// matmul.go, rope.go, attention.go, moe.go: the families of package ir's
// files) registers the kernels of its ops, reading their attributes
// through package ir's typed accessors (ir.Attrs.Eps, ir.Attrs.Rope, ...).
// A fused op's kernel computes bit for bit the unfused chain it replaces;
// the arithmetic itself lives in package kernels (docs/KERNELS.md).
func mustKernel(op ir.Op, k Kernel, prep Prepare) {
	if err := defaultKernels.RegisterDef(op, KernelDef{Run: k, Prepare: prep}); err != nil {
		panic(err)
	}
}

// PreparedOp reports whether an Executable runs op (of the default set) as
// a prepared kernel split across its workers (its registration carries a
// Prepare; the others run through the kernel table).
func PreparedOp(op ir.Op) bool {
	d, _ := defaultKernels.LookupDef(op)
	return d.Prepare != nil
}
