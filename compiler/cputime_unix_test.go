//go:build unix

package compiler_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user plus system CPU time (0 when unknown):
// benchmarks report it per op because the wall time of a shared machine
// says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
