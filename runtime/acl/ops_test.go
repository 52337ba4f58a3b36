//go:build cann

package acl

import (
	"strings"
	"testing"
)

// TestOperatorList: IRT_ACLNN_OPS (include/irtool_acl.h) is the one list of
// the aclnn operators the binding calls. Every entry has a distinct aclnn
// name, the binding resolved both of its phases from the emulator (which
// defines each operator against the prototypes the list declares), and
// Probe reports none missing. An operator added to the list without its
// emulation fails here, naming it.
func TestOperatorList(t *testing.T) {
	names := opNames()
	if len(names) < 32 {
		t.Fatalf("IRT_ACLNN_OPS has %d operators: %v", len(names), names)
	}
	seen := map[string]bool{}
	for i, n := range names {
		if !strings.HasPrefix(n, "aclnn") || seen[n] {
			t.Errorf("operator %d: name %q (duplicate or not an aclnn operator)", i, n)
		}
		seen[n] = true
		for _, fn := range []string{n + "GetWorkspaceSize", n} {
			if !Has(fn) {
				t.Errorf("operator %d: %s is not exported by the emulator", i, fn)
			}
		}
	}
	info, err := Probe(fakeLibs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Missing) != 0 {
		t.Errorf("Probe: missing %v", info.Missing)
	}
}
