//go:build cann

package acl

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestOperatorList: IRT_ACLNN_OPS (irtool_acl.h) is the one list of
// the aclnn operators the binding calls. Every entry has a distinct aclnn
// name, the binding resolved both of its phases from the emulator (which
// defines each operator against the prototypes the list declares), and
// Probe reports none missing. An operator added to the list without its
// emulation fails here, naming it; so does the other way round, an
// operator the emulator defines (fakeacl/*.c) that the list lacks.
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
	srcs, err := filepath.Glob(filepath.Join("fakeacl", "*.c"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("the emulator's sources: %v %v", srcs, err)
	}
	def := regexp.MustCompile(`(?m)^aclnnStatus (aclnn\w+)GetWorkspaceSize\(`)
	var extra []string
	for _, src := range srcs {
		text, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(text), -1) {
			if !seen[m[1]] {
				extra = append(extra, m[1]+" ("+filepath.Base(src)+")")
			}
		}
	}
	sort.Strings(extra)
	if len(extra) != 0 {
		t.Errorf("the emulator defines operators IRT_ACLNN_OPS does not list: %v", extra)
	}
	info, err := Probe(fakeLibs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Missing) != 0 {
		t.Errorf("Probe: missing %v", info.Missing)
	}
}
