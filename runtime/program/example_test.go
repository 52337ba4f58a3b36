package program_test

import (
	"fmt"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// A session compiles the model for the simulated Ascend device and
// generates greedily; decode steps after the first of each shape bucket
// replay a captured ACL graph.
func ExampleNewRunner() {
	// The model embedded in the module; gguf.Open("model.gguf") reads a file.
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	m, _ := models.Build(f, models.Options{NCtx: 256})
	dev, _ := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20})
	s, err := program.NewRunner(m, f, dev, program.Options{Policy: device.DefaultGraphPolicy()})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := s.Generate([]int32{1, 403, 407, 261, 378}, 8, false, nil)
	fmt.Println(res.Tokens)
	st := s.Stats().Decode
	fmt.Printf("decode: %d steps, hit rate %.1f%%\n", st.Steps, 100*st.HitRate)
	s.Close()
	fmt.Println("live blocks after close:", dev.Stats().Pools[0].LiveBlocks)
	// Output:
	// [432 383 286 261 376 298 315 421]
	// decode: 7 steps, hit rate 85.7%
	// live blocks after close: 0
}
