//go:build cann

package cli

import (
	"sync"
	"testing"
)

// fakeCANNMu serialises fakeCANN between the matrix's parallel subtests
// (the first builds the emulator and sets IRTOOL_ACL_LIBS).
var fakeCANNMu sync.Mutex

// matrixRunCANN runs the model on the CANN backend, on irtool's emulator of
// libascendcl.
func matrixRunCANN(t *testing.T, ir string) {
	t.Helper()
	fakeCANNMu.Lock()
	fakeCANN(t)
	fakeCANNMu.Unlock()
	// One run at a time: the runs share the process's emulated device, and
	// a GLOBAL-mode capture refuses every other thread's synchronous and
	// pageable copies (CANN's capture rules), so parallel runs would
	// invalidate each other's captures.
	matrixCANNRunMu.Lock()
	defer matrixCANNRunMu.Unlock()
	v := matrixJSON(t, "run", ir, "--backend", "cann", "--tokens", "1,2", "-n", "4", "--json")
	if toks, _ := v["tokens"].([]any); v != nil && len(toks) != 4 {
		t.Errorf("run --backend cann: %d tokens, want 4", len(toks))
	}
}

// matrixCANNRunMu serialises the command matrix's cann runs.
var matrixCANNRunMu sync.Mutex
