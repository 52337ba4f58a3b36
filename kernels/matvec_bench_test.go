//go:build linux

package kernels

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMatVecF16Stream runs the decode product of F16 weights
// (matVecF16) over a 512 MiB matrix of 896-wide rows, far larger than the
// caches, on 1 and 2 goroutines that claim chunks of 64-row tasks as the
// matmul jobs do. It reports the weight bytes streamed per second of CPU
// time of the goroutines' locked threads ("GB/cpu-s"): on a shared
// machine, wall time mostly measures the other work. The sub-benchmarks
// kernel=rows1 and kernel=rows2 force either F16 decode kernel (tune), the
// CPU's own choice runs as kernel=auto; -count N alternates them.
func BenchmarkMatVecF16Stream(b *testing.B) {
	const n, rt = 896, 64
	stride := 2 * n
	rows := (512 << 20) / stride
	a := make([]byte, rows*stride)
	for i := 0; i+1 < len(a); i += 2 {
		binary.LittleEndian.PutUint16(a[i:], uint16(uint32(i)*2654435761>>20)&0x3bff)
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = roundF16(float32(i%17) / 16)
	}
	out := make([]float32, rows)
	tasks := (rows + rt - 1) / rt
	for _, threads := range []int{1, 2} {
		for _, kern := range []string{"auto", "rows1", "rows2"} {
			b.Run(fmt.Sprintf("threads=%d/kernel=%s", threads, kern), func(b *testing.B) {
				defer func(t tuning) { tune = t }(tune)
				switch kern {
				case "rows1":
					tune.f16GEMV2 = false
				case "rows2":
					tune.f16GEMV2 = true
				}
				var cpu time.Duration
				for b.Loop() {
					var next, ns atomic.Int64
					var wg sync.WaitGroup
					chunk := (tasks + 8*threads - 1) / (8 * threads)
					for range threads {
						wg.Add(1)
						go func() {
							defer wg.Done()
							runtime.LockOSThread()
							defer runtime.UnlockOSThread()
							c0 := threadCPU()
							for {
								lo := int(next.Add(int64(chunk))) - chunk
								if lo >= tasks {
									break
								}
								r0, r1 := lo*rt, min(rows, (lo+chunk)*rt)
								matVecF16(a[r0*stride:], stride, x, out[r0:r1])
							}
							ns.Add(int64(threadCPU() - c0))
						}()
					}
					wg.Wait()
					cpu += time.Duration(ns.Load())
				}
				b.ReportMetric(float64(len(a))*float64(b.N)/(cpu.Seconds()/float64(threads))/1e9, "GB/cpu-s")
			})
		}
	}
}
