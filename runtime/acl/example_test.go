//go:build cann

package acl_test

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/acl"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// Running a model on an Ascend NPU: the binding is a device.Device, so
// the program session of the simulated device runs on it unchanged. (Not
// run by go test: it needs CANN; the package tests use the test double.)
func Example() {
	f, err := gguf.Open("model.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 512})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Libraries from $ASCEND_TOOLKIT_HOME/lib64; a 2 GiB pool on device 0.
	dev, err := acl.New(acl.Options{PoolBytes: 2 << 30, WorkspaceReserve: 64 << 20})
	if err != nil {
		fmt.Println(err) // e.g. ASCEND_TOOLKIT_HOME is not set
		return
	}
	defer dev.Close()
	s, err := program.NewRunner(m, f, dev, program.Options{Policy: device.DefaultGraphPolicy()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	res, err := s.Generate([]int32{1, 15043}, 16, false, nil)
	if err != nil {
		fmt.Println(device.ErrorCode(err), err) // ACL's code, the call, the kernel, CANN's message
		return
	}
	fmt.Println(res.Tokens)
}

// Sizing a device pool: the bytes the binding adds for a q8_0 output
// projection of Qwen2.5's shape (896 columns, 151936 rows) in each
// QuantMatmul mode: the int8 values and f16 scales of
// aclnnWeightQuantBatchMatmulV2, or an f32 copy.
func ExamplePlacedBytes() {
	for _, mode := range []string{acl.QuantMatmulWQBMM, acl.QuantMatmulGGML} {
		fmt.Printf("%s: %d B\n", mode, acl.PlacedBytes(ir.Q8_0, 896, 151936, mode))
	}
	// Output:
	// wqbmm: 144643072 B
	// ggml: 561555456 B
}
