//go:build cann

package cli

import (
	"strings"
	"testing"
)

// An --acl-pool too small for the weights is refused before the device
// is touched, naming the flag to raise.
func TestCannPoolTooSmall(t *testing.T) {
	fakeCANN(t)
	code, stdout, stderr := runCLI(t, "run", "--backend", "cann", "--acl-pool", "4096", "-n", "1")
	if code == 0 || stdout != "" || !strings.Contains(stderr, "--acl-pool 4096: the model's weights need") || !strings.Contains(stderr, "raise --acl-pool") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
