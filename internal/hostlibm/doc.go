// Package hostlibm calls the host C library's single-precision sincosf,
// expf and powf (with cgo, on Linux), for the test that checks kernels'
// ports of GNU libc's algorithms against the real thing:
//
//	go test -tags hostlibm ./kernels -run 'LibmMatchesHost|PowfMatchesHost' -libm-step 1
//
// It is not used by any non-test code.
package hostlibm
