package device_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
)

// A custom op on the simulated device: the device runs the CPU kernel its
// KernelSet holds for the op (here "double", with the aclnnMuls recipe a
// target rule would give it, as in lower/cann's Example_customOp); a
// device with the default set refuses the launch, naming the op.
func ExampleNewSimDevice_customOp() {
	ks := eval.NewKernelSet()
	if err := ks.Register("double", func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
		return kernels.Scale(dst, args[0], 2)
	}); err != nil {
		fmt.Println(err)
		return
	}
	for _, set := range []*eval.KernelSet{ks, nil} {
		dev, _ := device.NewSimDevice(device.SimOptions{MemoryBytes: 1 << 20, KernelSet: set})
		dev.SetDevice(0)
		s, _ := dev.CreateStream()
		x, _ := dev.Malloc(16)
		y, _ := dev.Malloc(16)
		dev.MemcpyH2D(x, f32s(1, 2, 3, 4))
		desc := func(p device.Ptr) device.TensorDesc {
			ne := [4]int64{4, 1, 1, 1}
			return device.TensorDesc{DType: ir.F32, Ne: ne, Nb: ir.ContiguousStrides(ir.F32, ne), Addr: p}
		}
		err := dev.Launch(s, &device.KernelLaunch{Name: "aclnnMuls", Op: "double",
			Inputs: []device.TensorDesc{desc(x)}, Output: desc(y)})
		if err != nil {
			fmt.Println("default kernels:", err)
			continue
		}
		dev.SynchronizeStream(s)
		out := make([]byte, 16)
		dev.MemcpyD2H(out, y)
		var vals []float32
		for i := 0; i < 4; i++ {
			vals = append(vals, math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])))
		}
		fmt.Println("custom kernels:", vals)
	}
	// Output:
	// custom kernels: [2 4 6 8]
	// default kernels: aclnnMuls: error 207000 (ACL_ERROR_RT_FEATURE_NOT_SUPPORT): no kernel for op "double" (node 0)
}
