//go:build cann

package acl

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
)

// TestSoftplusRecipe: softplus on the emulated NPU (aclnnSoftplus, beta 1,
// threshold 20) gives the CPU kernel's values bit for bit, across the
// threshold and the range where exp overflows.
func TestSoftplusRecipe(t *testing.T) {
	var xs []float32
	for v := float32(-100); v <= 100; v += 0.37 {
		xs = append(xs, v)
	}
	xs = append(xs, 20, math.Nextafter32(20, 21), 0, -0, 1e-30, -1e-30, 88.7, 89)
	n := int64(len(xs))
	d := newDevice(t, Options{})
	buf := malloc(t, d, 8*n+4096)
	in := make([]byte, 4*n)
	for i, v := range xs {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(v))
	}
	if err := d.MemcpyH2D(buf, in); err != nil {
		t.Fatal(err)
	}
	k := &device.KernelLaunch{Name: "aclnnSoftplus", Op: ir.OpSoftplus, Node: 1,
		Inputs: []device.TensorDesc{f32(buf, n)}, Output: f32(buf+device.Ptr(4*n), n)}
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(device.DefaultStream); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := d.MemcpyD2H(out, buf+device.Ptr(4*n)); err != nil {
		t.Fatal(err)
	}
	src, _ := kernels.NewTensor(gguf.TypeF32, n)
	copy(src.Data, in)
	dst, _ := kernels.NewTensor(gguf.TypeF32, n)
	if err := kernels.Softplus(dst, src); err != nil {
		t.Fatal(err)
	}
	for i, x := range xs {
		got := binary.LittleEndian.Uint32(out[4*i:])
		want := binary.LittleEndian.Uint32(dst.Data[4*i:])
		if got != want {
			t.Errorf("softplus(%g): emulated NPU %g, CPU %g", x, math.Float32frombits(got), math.Float32frombits(want))
		}
	}
}
