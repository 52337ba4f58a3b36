package device_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// Two ranks in one process sum a vector with an all-reduce: each rank on
// its own goroutine, the sum taken in rank order.
func ExampleNewGroup() {
	g, err := device.NewGroup("tp", 2, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	sums := make([][]byte, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		c, _ := g.Comm(r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			send := make([]byte, 8)
			binary.LittleEndian.PutUint32(send, math.Float32bits(float32(r+1)))
			binary.LittleEndian.PutUint32(send[4:], math.Float32bits(float32(10*(r+1))))
			sums[r] = make([]byte, 8)
			if err := c.AllReduce(send, sums[r], ir.F32); err != nil {
				g.Fail(r, err)
			}
		}()
	}
	wg.Wait()
	for r, s := range sums {
		fmt.Println("rank", r, math.Float32frombits(binary.LittleEndian.Uint32(s)), math.Float32frombits(binary.LittleEndian.Uint32(s[4:])))
	}
	// Output:
	// rank 0 3 30
	// rank 1 3 30
}
