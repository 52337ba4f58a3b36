// Tests of the scripts in this directory. scripts/fakeacl.sh builds the C
// emulator of CANN (runtime/acl/fakeacl, its README.md), which the tests
// of package runtime/acl run with -tags cann; its build is tested here, so
// that it runs without the tag.
package scripts_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMissingKernelFailsTheBuild: the emulator's operator table
// (kernel.c) is generated from IRT_ACLNN_OPS and names the kernel
// irt_kernel_<ID> of every entry, and scripts/fakeacl.sh links with
// -z defs, so an operator without its kernel does not build: the link
// fails naming the kernel (it is not error 561000 at run time). The test
// builds a copy of the sources with one kernel's definition removed.
func TestMissingKernelFailsTheBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("scripts/fakeacl.sh builds with GNU ld's -z defs (linux)")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("needs a C compiler (%s): %v", cc, err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("needs bash for scripts/fakeacl.sh: %v", err)
	}
	root := ".."
	emu := filepath.Join(root, "runtime", "acl", "fakeacl")
	tmp := t.TempDir()
	for _, f := range []string{"scripts/fakeacl.sh", "runtime/acl/irtool_acl.h", "runtime/acl/irtool_hccl.h"} {
		copyFile(t, filepath.Join(root, f), filepath.Join(tmp, f))
	}
	err := filepath.WalkDir(emu, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".c") && !strings.HasSuffix(p, ".h") {
			return err
		}
		rel, err := filepath.Rel(emu, p)
		if err != nil {
			return err
		}
		copyFile(t, p, filepath.Join(tmp, "runtime", "acl", "fakeacl", rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	const file, kernel = "ops_elementwise.c", "irt_kernel_ABS"
	path := filepath.Join(tmp, "runtime", "acl", "fakeacl", file)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	removed := 0
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "int "+kernel+"(kctx *c) {") && strings.HasSuffix(line, "}") {
			removed++
			continue
		}
		kept = append(kept, line)
	}
	if removed != 1 {
		t.Fatalf("%s: %d one-line definitions of %s, want 1", file, removed, kernel)
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command("bash", filepath.Join(tmp, "scripts", "fakeacl.sh"), filepath.Join(tmp, "lib")).CombinedOutput()
	if err == nil {
		t.Fatalf("the emulator built without %s:\n%s", kernel, out)
	}
	if !strings.Contains(string(out), "undefined reference to `"+kernel+"'") {
		t.Fatalf("the build failed, but not naming the missing %s:\n%s", kernel, out)
	}
	t.Logf("without %s: %s", kernel, firstLine(string(out), kernel))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstLine returns the first line of out that mentions what.
func firstLine(out, what string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, what) {
			return l
		}
	}
	return ""
}
