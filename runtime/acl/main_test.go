//go:build cann

package acl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/runtime/acl/internal/fakectl"
	"github.com/irtool/irtool/runtime/device"
)

// fake is the test double every test of the package runs against: built
// from fakeacl/ with gcc by TestMain and loaded in place of CANN.
var (
	fake     *fakectl.Lib
	fakePath string   // libascendcl.so of the double
	fakeLibs []string // the libraries loaded: the double's directory expanded
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeacl")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		// The libraries are built by the script users run
		// (scripts/fakeacl.sh) and loaded as a directory, as
		// IRTOOL_ACL_LIBS=DIR does.
		if fakePath, err = fakectl.Build(filepath.Join("..", "..", "scripts", "fakeacl.sh"), dir); err != nil {
			fmt.Fprintln(os.Stderr, "acl tests: building the CANN test double:", err)
			return 1
		}
		fakeLibs, err = DefaultLibrariesFrom(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "acl tests:", err)
			return 1
		}
		if err := Load(fakeLibs); err != nil {
			fmt.Fprintln(os.Stderr, "acl tests:", err)
			return 1
		}
		if fake, err = fakectl.Open(fakePath); err != nil {
			fmt.Fprintln(os.Stderr, "acl tests:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// newDevice returns a device on device 0 with a 64 MiB pool, closed at
// the end of the test, and a fresh trace. In the "ggml" QuantMatmul mode
// the emulator computes with ggml-cpu's arithmetic (fakeacl/README.md,
// "Arithmetic"; fake.Set("arith", 1)), so that the mode means llama.cpp's
// arithmetic throughout; otherwise with the device's documented one.
func newDevice(t *testing.T, opts Options) *Device {
	t.Helper()
	fake.Reset()
	if opts.QuantMatmul == QuantMatmulGGML {
		fake.Set("arith", 1)
	} else {
		fake.Set("arith", 0)
	}
	if opts.PoolBytes == 0 {
		opts.PoolBytes = 64 << 20
	}
	opts.Libraries = fakeLibs
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetDevice(0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fake.Set("arith", -1)
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, k := range []string{"live_allocs", "live_ris", "live_tensors", "live_scalars", "live_lists"} {
			if v := fake.Stat(k); v != 0 {
				t.Errorf("after Close: %s = %d, want 0", k, v)
			}
		}
	})
	return d
}

func trace(t *testing.T) []fakectl.Call {
	t.Helper()
	calls, err := fake.Trace()
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// fns lists the function names of calls, optionally only those with one
// of the prefixes. aclrtSetDevice is left out: the binding calls it when a
// goroutine runs on an OS thread that has not set the device yet (ACL
// binds the device per thread), which the scheduler decides.
func fns(calls []fakectl.Call, prefixes ...string) []string {
	var out []string
	for _, c := range calls {
		if c.Fn == "aclrtSetDevice" {
			continue
		}
		if len(prefixes) == 0 {
			out = append(out, c.Fn)
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(c.Fn, p) {
				out = append(out, c.Fn)
				break
			}
		}
	}
	return out
}

func count(calls []fakectl.Call, fn string) int {
	n := 0
	for _, c := range calls {
		if c.Fn == fn {
			n++
		}
	}
	return n
}

func malloc(t *testing.T, d *Device, n int64) device.Ptr {
	t.Helper()
	p, err := d.Malloc(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
