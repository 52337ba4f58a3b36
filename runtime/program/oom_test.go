package program_test

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// TestDeviceOutOfMemory runs a model on a simulated NPU too small for it:
// loading or the first step must fail with ACL's allocation error naming
// the region that did not fit, never panic.
func TestDeviceOutOfMemory(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	s, err := program.NewRunner(m, f, dev, program.Options{})
	if err == nil {
		_, err = s.Step([]int32{1, 403, 407})
		if cerr := s.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
	}
	if err == nil {
		t.Fatal("a 1.1 MiB model ran on a 256 KiB device")
	}
	if device.ErrorCode(err) != device.ACLErrMemoryAllocation {
		t.Errorf("error code %v, want ACL_ERROR_RT_MEMORY_ALLOCATION: %v", device.ErrorCode(err), err)
	}
	if !strings.Contains(err.Error(), "weights") && !strings.Contains(err.Error(), "region") {
		t.Errorf("the error does not say what did not fit: %v", err)
	}
	t.Logf("%v", err)
}
