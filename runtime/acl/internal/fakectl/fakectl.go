//go:build cann

// Package fakectl builds and drives the CANN test double of package acl
// (runtime/acl/fakeacl): it compiles the C sources into a shared
// library with the system C compiler and reaches the double's control
// functions (irtfake_*) through dlopen. dlopen of the path package acl
// loaded returns the same library, so both see one state.
//
// It exists for tests: nothing in the binding imports it.
package fakectl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef void (*reset_fn)(void);
typedef void (*set_fn)(const char *, long long);
typedef void (*soc_fn)(const char *);
typedef void (*fail_fn)(const char *, int, int, const char *);
typedef char *(*trace_fn)(void);
typedef void (*free_fn)(void *);
typedef long long (*stat_fn)(const char *);

static void *fk_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
static const char *fk_error(void) { return dlerror(); }
static void *fk_sym(void *h, const char *name) { return dlsym(h, name); }
static void fk_reset(void *f) { ((reset_fn)f)(); }
static void fk_set(void *f, const char *k, long long v) { ((set_fn)f)(k, v); }
static void fk_soc(void *f, const char *s) { ((soc_fn)f)(s); }
static void fk_fail(void *f, const char *fn, int nth, int code, const char *msg) { ((fail_fn)f)(fn, nth, code, msg); }
static char *fk_trace(void *f) { return ((trace_fn)f)(); }
static void fk_free(void *f, void *p) { ((free_fn)f)(p); }
static long long fk_stat(void *f, const char *k) { return ((stat_fn)f)(k); }
*/
import "C"

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"unsafe"
)

// Build runs scripts/fakeacl.sh (script) to build the double's libraries
// into outDir and returns the path of libascendcl.so, which holds it all.
func Build(script, outDir string) (string, error) {
	if b, err := exec.Command("bash", script, outDir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("fakectl: %s %s: %v\n%s", script, outDir, err, b)
	}
	return filepath.Join(outDir, "libascendcl.so"), nil
}

// Lib is the loaded test double.
type Lib struct {
	h                                     unsafe.Pointer
	reset, set, soc, fail, trace, fr, sta unsafe.Pointer
}

// Open loads the double at path and resolves its control functions.
func Open(path string) (*Lib, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	h := C.fk_open(cp)
	if h == nil {
		return nil, fmt.Errorf("fakectl: dlopen %s: %s", path, C.GoString(C.fk_error()))
	}
	l := &Lib{h: h}
	for _, s := range []struct {
		name string
		dst  *unsafe.Pointer
	}{{"irtfake_reset", &l.reset}, {"irtfake_set", &l.set}, {"irtfake_set_soc", &l.soc}, {"irtfake_fail", &l.fail},
		{"irtfake_trace", &l.trace}, {"irtfake_free", &l.fr}, {"irtfake_stat", &l.sta}} {
		cs := C.CString(s.name)
		*s.dst = C.fk_sym(h, cs)
		C.free(unsafe.Pointer(cs))
		if *s.dst == nil {
			return nil, fmt.Errorf("fakectl: %s does not export %s (not the test double?)", path, s.name)
		}
	}
	return l, nil
}

// Reset clears the trace, the injected failures and the workspace sizes.
func (l *Lib) Reset() { C.fk_reset(l.reset) }

// Set sets a configuration value: "device_count", "total_mem",
// "capture_supported", "arith" (1: the operators made from then on
// compute with ggml-cpu's arithmetic, 0: the device's, -1: what
// IRTFAKE_ARITH says), or "workspace:<aclnn op>" (the size phase 1
// reports for that operator).
func (l *Lib) Set(key string, v int64) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	C.fk_set(l.set, ck, C.longlong(v))
}

// SetSoC sets what aclrtGetSocName returns.
func (l *Lib) SetSoC(name string) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.fk_soc(l.soc, cs)
}

// Fail makes the nth next call of fn (1-based; 0: every call) fail with
// code, and aclGetRecentErrMsg return msg.
func (l *Lib) Fail(fn string, nth, code int, msg string) {
	cf, cm := C.CString(fn), C.CString(msg)
	defer C.free(unsafe.Pointer(cf))
	defer C.free(unsafe.Pointer(cm))
	C.fk_fail(l.fail, cf, C.int(nth), C.int(code), cm)
}

// Stat reads a counter: live_tensors, live_scalars, live_lists,
// live_executors, live_allocs, live_ris, live_streams, dev_used.
func (l *Lib) Stat(key string) int64 {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	return int64(C.fk_stat(l.sta, ck))
}

// Call is one recorded call.
type Call struct {
	Seq  int64
	Fn   string
	RC   int64
	Args map[string]any // every other field; numbers are json.Number
}

// Int returns an integer argument (0 when absent).
func (c Call) Int(key string) int64 {
	if n, ok := c.Args[key].(json.Number); ok {
		v, _ := n.Int64()
		return v
	}
	return 0
}

// Uint returns an unsigned integer argument, such as an address.
func (c Call) Uint(key string) uint64 {
	if n, ok := c.Args[key].(json.Number); ok {
		var v uint64
		fmt.Sscan(n.String(), &v)
		return v
	}
	return 0
}

// Float returns a floating-point argument.
func (c Call) Float(key string) float64 {
	if n, ok := c.Args[key].(json.Number); ok {
		v, _ := n.Float64()
		return v
	}
	return 0
}

// Bool returns a boolean argument.
func (c Call) Bool(key string) bool {
	b, _ := c.Args[key].(bool)
	return b
}

// Ints returns an integer-array argument.
func (c Call) Ints(key string) []int64 {
	a, _ := c.Args[key].([]any)
	out := make([]int64, 0, len(a))
	for _, x := range a {
		if n, ok := x.(json.Number); ok {
			v, _ := n.Int64()
			out = append(out, v)
		}
	}
	return out
}

// Trace returns the calls recorded since the last Reset.
func (l *Lib) Trace() ([]Call, error) {
	p := C.fk_trace(l.trace)
	s := C.GoString(p)
	C.fk_free(l.fr, unsafe.Pointer(p))
	var calls []Call
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("fakectl: trace line %q: %v", sc.Text(), err)
		}
		c := Call{Fn: fmt.Sprint(m["fn"]), Args: m}
		c.Seq = c.Int("seq")
		c.RC = c.Int("rc")
		delete(m, "fn")
		delete(m, "seq")
		delete(m, "rc")
		calls = append(calls, c)
	}
	return calls, sc.Err()
}
