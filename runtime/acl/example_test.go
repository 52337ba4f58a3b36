//go:build cann

package acl_test

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
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
