package device_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// A simulated device runs kernels for real: allocate, upload, launch,
// synchronise, read back.
func ExampleNewSimDevice() {
	dev, _ := device.NewSimDevice(device.SimOptions{MemoryBytes: 1 << 20})
	dev.SetDevice(0)
	s, _ := dev.CreateStream()
	x, _ := dev.Malloc(16)
	y, _ := dev.Malloc(16)
	dev.MemcpyH2D(x, f32s(1, 2, 3, 4))
	desc := func(p device.Ptr) device.TensorDesc {
		ne := [4]int64{4, 1, 1, 1}
		return device.TensorDesc{DType: ir.F32, Ne: ne, Nb: ir.ContiguousStrides(ir.F32, ne), Addr: p}
	}
	dev.Launch(s, &device.KernelLaunch{Name: "aclnnMuls", Op: ir.OpScale, Attrs: ir.Attrs{"scale": 0.5},
		Inputs: []device.TensorDesc{desc(x)}, Output: desc(y)})
	dev.SynchronizeStream(s)
	out := make([]byte, 16)
	dev.MemcpyD2H(out, y)
	var vals []float32
	for i := 0; i < 4; i++ {
		vals = append(vals, math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])))
	}
	fmt.Println(vals)
	fmt.Println("pool:", dev.Stats().Pools[0].LiveBlocks, "live blocks of", dev.Stats().Pools[0].UsedBytes, "bytes")
	// Output:
	// [0.5 1 1.5 2]
	// pool: 2 live blocks of 64 bytes
}

// The graph cache captures a kernel sequence the first time its
// properties are seen and replays it afterwards.
func ExampleGraphCache() {
	dev, _ := device.NewSimDevice(device.SimOptions{MemoryBytes: 1 << 20})
	dev.SetDevice(0)
	s, _ := dev.CreateStream()
	x, _ := dev.Malloc(16)
	ne := [4]int64{4, 1, 1, 1}
	d := device.TensorDesc{DType: ir.F32, Ne: ne, Nb: ir.ContiguousStrides(ir.F32, ne), Addr: x}
	seq := []device.KernelLaunch{{Name: "aclnnSilu", Op: ir.OpSilu, Inputs: []device.TensorDesc{d}, Output: d}}
	props := device.NewGraphProps(seq)
	cache, _ := device.NewGraphCache(dev, device.CacheOptions{Capacity: 12})
	for i := 0; i < 3; i++ {
		outcome, _ := cache.Execute(s, props, func(s device.Stream) error { return dev.Launch(s, &seq[0]) })
		fmt.Println(outcome)
	}
	dev.SynchronizeStream(s)
	st := cache.Stats()
	fmt.Printf("%d capture, %d hits, %d kernels executed from %d launch\n", st.Captures, st.Hits, dev.Stats().KernelsExecuted, dev.Stats().KernelLaunches)
	cache.Close()
	// Output:
	// captured
	// replayed
	// replayed
	// 1 capture, 2 hits, 3 kernels executed from 1 launch
}
