//go:build cgo && linux

package hostlibm

/*
#cgo LDFLAGS: -lm
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>

static void batch_sincosf(const float *x, float *s, float *c, int n) {
	for (int i = 0; i < n; i++) sincosf(x[i], &s[i], &c[i]);
}
static void batch_powf(const float *x, const float *y, float *r, int n) {
	for (int i = 0; i < n; i++) r[i] = powf(x[i], y[i]);
}
static void batch_expf(const float *x, float *e, int n) {
	for (int i = 0; i < n; i++) e[i] = expf(x[i]);
}
*/
import "C"

import "unsafe"

// Sincosf fills sin and cos with the host's sincosf of every x.
func Sincosf(x, sin, cos []float32) {
	if len(x) == 0 {
		return
	}
	_, _ = sin[len(x)-1], cos[len(x)-1]
	C.batch_sincosf((*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&sin[0])), (*C.float)(unsafe.Pointer(&cos[0])), C.int(len(x)))
}

// Expf fills e with the host's expf of every x.
func Expf(x, e []float32) {
	if len(x) == 0 {
		return
	}
	_ = e[len(x)-1]
	C.batch_expf((*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&e[0])), C.int(len(x)))
}

// Powf fills r with the host's powf(x[i], y[i]).
func Powf(x, y, r []float32) {
	if len(x) == 0 {
		return
	}
	_, _ = y[len(x)-1], r[len(x)-1]
	C.batch_powf((*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&y[0])), (*C.float)(unsafe.Pointer(&r[0])), C.int(len(x)))
}
