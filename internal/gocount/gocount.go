// Package gocount counts the goroutines a piece of code creates, for the
// tests that prove a kernel, a simulated-device stream or a session runs on
// its persistent pool instead of starting goroutines per call.
package gocount

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

// Created is the process's count of goroutines created so far. It runs a
// garbage collection first: the first one starts the collector's workers,
// which must not be counted against the code measured. It skips the test
// when the runtime does not export the count.
func Created(t testing.TB) uint64 {
	t.Helper()
	runtime.GC()
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Skip("runtime/metrics has no /sched/goroutines-created")
	}
	return s[0].Value.Uint64()
}
