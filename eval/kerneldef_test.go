package eval_test

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// TestKernelDefPrepare: an op registered with a Prepare runs as a prepared
// job in an Executable (and as its Run kernel in the Executor), with the
// same result; registered with Run alone, it runs through the kernel table.
func TestKernelDefPrepare(t *testing.T) {
	ops := ir.NewOpSet()
	if err := ops.Register(ir.OpInfo{Name: "double", MinArgs: 1, ElementWise: true,
		Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }}); err != nil {
		t.Fatal(err)
	}
	g, err := ops.ParseString(`graph "g" {
  %0 = input() : f32[5,3] "x"
  %1 = double(%0) : f32[5,3] "y"
  %2 = silu(%1) : f32[5,3] "z"
  outputs(%2)
}`)
	if err != nil {
		t.Fatal(err)
	}
	run := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Scale(dst, a[0], 2)
	}
	prep := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.ScaleJob(dst, a[0], 2, threads)
	}
	in := f32Bytes(1, -2, 0.5, 3, 4, -5, 6, 7, 8, 9, 10, 11, 12, -13, 14)
	for _, c := range []struct {
		name     string
		def      eval.KernelDef
		prepared int
	}{{"run and prepare", eval.KernelDef{Run: run, Prepare: prep}, 2}, {"run alone", eval.KernelDef{Run: run}, 1}} {
		ks := eval.NewKernelSet()
		if err := ks.RegisterDef("double", c.def); err != nil {
			t.Fatal(err)
		}
		if d, ok := ks.LookupDef("double"); !ok || (d.Prepare != nil) != (c.def.Prepare != nil) {
			t.Fatalf("%s: LookupDef = %v, %v", c.name, d, ok)
		}
		w := eval.NewWorkers(2)
		x, err := eval.NewExecutable(g, nil, eval.ExecOptions{KernelSet: ks}, w)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.SetInput("x", in); err != nil {
			t.Fatal(err)
		}
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		got, _, _ := x.Output(0)
		if p, fb := x.Prepared(); p != c.prepared || p+fb != 2 {
			t.Errorf("%s: %d prepared, %d through the kernel table; want %d prepared", c.name, p, fb, c.prepared)
		}
		w.Close()
		ex, err := eval.NewExecutor(g, nil, eval.ExecOptions{KernelSet: ks})
		if err != nil {
			t.Fatal(err)
		}
		ex.SetInput("x", in)
		if err := ex.Run(); err != nil {
			t.Fatal(err)
		}
		want, _, _ := ex.Output(0)
		if !slices.Equal(got, want) {
			t.Errorf("%s: executable %v, executor %v", c.name, got, want)
		}
	}
	if err := eval.NewKernelSet().RegisterDef("double", eval.KernelDef{Prepare: prep}); err == nil {
		t.Error("a KernelDef without Run registered")
	}
	if eval.PreparedOp("double") || !eval.PreparedOp(ir.OpSilu) || eval.PreparedOp(ir.OpConcat) {
		t.Error("PreparedOp: want silu prepared, concat and an op of no default kernel not")
	}
}
