//go:build cann

package acl

/*
#cgo CFLAGS: -I${SRCDIR} -O2
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// LibraryNames are the CANN libraries the binding opens, in order:
// libascendcl (runtime, capture), libnnopbase (aclCreateTensor & co.) and
// libopapi (the aclnn operators).
var LibraryNames = []string{"libascendcl.so", "libnnopbase.so", "libopapi.so"}

// EnvToolkit is the variable CANN's set_env.sh sets to the toolkit root;
// the libraries are in its lib64 directory.
const EnvToolkit = "ASCEND_TOOLKIT_HOME"

// EnvLibs overrides the library list: paths separated by ':', each a
// library or a directory holding LibraryNames (scripts/fakeacl.sh DIR
// builds irtool's CANN emulator into such a directory).
const EnvLibs = "IRTOOL_ACL_LIBS"

// DefaultLibraries returns the libraries to open: $IRTOOL_ACL_LIBS if set
// (see DefaultLibrariesFrom), else LibraryNames under
// $ASCEND_TOOLKIT_HOME/lib64.
func DefaultLibraries() ([]string, error) {
	if v := os.Getenv(EnvLibs); v != "" {
		return DefaultLibrariesFrom(filepath.SplitList(v)...)
	}
	home := os.Getenv(EnvToolkit)
	if home == "" {
		return nil, fmt.Errorf("acl: %s is not set: source CANN's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) or set %s", EnvToolkit, EnvLibs)
	}
	libs := make([]string, len(LibraryNames))
	for i, n := range LibraryNames {
		libs[i] = filepath.Join(home, "lib64", n)
	}
	return libs, nil
}

// DefaultLibrariesFrom expands a library list: a directory stands for the
// LibraryNames in it that exist (libascendcl.so must), a file for itself.
func DefaultLibrariesFrom(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			out = append(out, p) // a missing file is reported by Load
			continue
		}
		found := 0
		for _, n := range LibraryNames {
			f := filepath.Join(p, n)
			if _, err := os.Stat(f); err == nil {
				out = append(out, f)
				found++
			} else if n == LibraryNames[0] {
				return nil, fmt.Errorf("acl: %s: directory without %s (%s names CANN's lib64 or a directory made by scripts/fakeacl.sh)", p, n, EnvLibs)
			}
		}
	}
	return out, nil
}

// Emulated reports whether the loaded libascendcl is irtool's host
// emulator (scripts/fakeacl.sh) rather than CANN.
func Emulated() bool { return C.irt_emulated() != 0 }

var lib struct {
	mu     sync.Mutex
	asked  string   // $IRTOOL_ACL_LIBS when the libraries were loaded from it
	paths  []string // the libraries loaded, nil before
	err    error    // the failure of the first load, sticky
	inited bool
}

// Load opens the libraries (nil: DefaultLibraries), resolves every declared
// function and calls aclInit. ACL is initialised once per process, so Load
// succeeds again only with the same libraries.
func Load(libs []string) error {
	asked := ""
	if libs == nil {
		// The same $IRTOOL_ACL_LIBS as the first load is the same request,
		// even if its directory has gone since (the libraries stay mapped).
		asked = os.Getenv(EnvLibs)
		lib.mu.Lock()
		same := asked != "" && lib.paths != nil && lib.asked == asked
		err := lib.err
		lib.mu.Unlock()
		if same {
			return err
		}
		var derr error
		if libs, derr = DefaultLibraries(); derr != nil {
			return derr
		}
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.paths != nil {
		switch {
		case lib.err != nil:
			return fmt.Errorf("acl: loading %s failed earlier in this process: %w", strings.Join(lib.paths, ":"), lib.err)
		case !slices.Equal(lib.paths, libs):
			return fmt.Errorf("acl: already loaded from %s; cannot switch to %s in one process", strings.Join(lib.paths, ":"), strings.Join(libs, ":"))
		}
		return nil
	}
	if len(libs) == 0 {
		return errors.New("acl: no libraries to load")
	}
	lib.paths = slices.Clone(libs)
	lib.asked = asked
	lib.err = load(libs)
	if lib.err == nil {
		openHCCLNear(libs) // hccl.go
	}
	return lib.err
}

func load(libs []string) error {
	var buf [512]C.char
	for _, p := range libs {
		cp := C.CString(p)
		rc := C.irt_dlopen(cp, &buf[0], C.int(len(buf)))
		C.free(unsafe.Pointer(cp))
		if rc != 0 {
			return fmt.Errorf("acl: loading %s: %s", p, C.GoString(&buf[0]))
		}
	}
	if m := C.irt_missing_required(); m != nil {
		return fmt.Errorf("acl: %s is not exported by %s (is this a CANN toolkit?)", C.GoString(m), strings.Join(libs, ", "))
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if rc := C.irt_aclInit(); rc != 0 {
		return newError("aclInit", "", int32(rc))
	}
	lib.inited = true
	return nil
}

// Loaded returns the libraries loaded, or nil.
func Loaded() []string {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.err != nil {
		return nil
	}
	return slices.Clone(lib.paths)
}

// Has reports whether a declared function was resolved in the loaded
// libraries (false before Load).
func Has(fn string) bool {
	c := C.CString(fn)
	defer C.free(unsafe.Pointer(c))
	return C.irt_has(c) != 0
}

// CaptureSupported reports whether the loaded runtime exports the model
// run instance (ACL graph) calls. Whether the SoC accepts a capture is
// only known by trying one (Probe does).
func CaptureSupported() bool {
	for _, fn := range []string{"aclmdlRICaptureBegin", "aclmdlRICaptureEnd", "aclmdlRIExecuteAsync", "aclmdlRIDestroy"} {
		if !Has(fn) {
			return false
		}
	}
	return true
}

// DeviceCount is aclrtGetDeviceCount.
func DeviceCount() (int, error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var n C.uint32_t
	if rc := C.irt_aclrtGetDeviceCount(&n); rc != 0 {
		return 0, newError("aclrtGetDeviceCount", "", int32(rc))
	}
	return int(n), nil
}

// Info is what Probe finds out about one device.
type Info struct {
	Libraries  []string `json:"libraries"`
	Devices    int      `json:"devices"`
	Device     int      `json:"device"`
	SoC        string   `json:"soc"`
	FreeBytes  int64    `json:"free_bytes"`
	TotalBytes int64    `json:"total_bytes"`
	// CaptureAPI: the runtime exports aclmdlRICapture*; Capture: a
	// capture of an empty stream succeeded on this device, and
	// CaptureError says why not.
	CaptureAPI   bool     `json:"capture_api"`
	Capture      bool     `json:"capture"`
	CaptureError string   `json:"capture_error,omitempty"`
	Missing      []string `json:"missing_kernels,omitempty"` // aclnn operators the libraries lack
	// Emulated: the libraries are irtool's host emulator of CANN
	// (scripts/fakeacl.sh), not a toolkit: no NPU computes.
	Emulated bool `json:"emulated"`
}

// Probe loads the libraries (see Load) and inspects device id: its SoC
// name, free and total HBM, and whether an (empty) ACL graph capture
// succeeds on it.
func Probe(libs []string, id int) (Info, error) {
	if err := Load(libs); err != nil {
		return Info{}, err
	}
	info := Info{Libraries: Loaded(), Device: id, CaptureAPI: CaptureSupported(), Emulated: Emulated()}
	n, err := DeviceCount()
	if err != nil {
		return info, err
	}
	info.Devices = n
	for op := C.int(0); op < C.IRT_NOPS; op++ {
		if C.irt_op_available(op) == 0 {
			info.Missing = append(info.Missing, opName(op))
		}
	}
	if id < 0 || id >= n {
		return info, fmt.Errorf("acl: device %d does not exist (%d devices)", id, n)
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if rc := C.irt_ensure_device(C.int32_t(id)); rc != 0 {
		return info, newError("aclrtSetDevice", "", int32(rc))
	}
	if s := C.irt_aclrtGetSocName(); s != nil {
		info.SoC = C.GoString(s)
	}
	var free, total C.size_t
	if rc := C.irt_aclrtGetMemInfo(&free, &total); rc != 0 {
		return info, newError("aclrtGetMemInfo", "", int32(rc))
	}
	info.FreeBytes, info.TotalBytes = int64(free), int64(total)
	if info.CaptureAPI {
		if err := probeCapture(); err != nil {
			info.CaptureError = err.Error()
		} else {
			info.Capture = true
		}
	}
	return info, nil
}

// probeCapture captures an empty stream and destroys the graph.
func probeCapture() error {
	var s C.uintptr_t
	if rc := C.irt_aclrtCreateStream(&s); rc != 0 {
		return newError("aclrtCreateStream", "", int32(rc))
	}
	defer C.irt_aclrtDestroyStream(s)
	if rc := C.irt_aclmdlRICaptureBegin(s, C.int(0)); rc != 0 {
		return newError("aclmdlRICaptureBegin", "", int32(rc))
	}
	var ri C.uintptr_t
	if rc := C.irt_aclmdlRICaptureEnd(s, &ri); rc != 0 {
		return newError("aclmdlRICaptureEnd", "", int32(rc))
	}
	if rc := C.irt_aclmdlRIDestroy(ri); rc != 0 {
		return newError("aclmdlRIDestroy", "", int32(rc))
	}
	return nil
}
