package partition_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/target"
)

// On the 310B the RoPE has no aclnn kernel: it runs on the CPU, and the
// pass inserts the copies around it.
func ExampleRun() {
	g, err := ir.ParseString(`graph "g" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = weight() : f32[64,64] "wq"
  %2 = input() : i32[n_tokens] "pos"
  %3 = mul_mat(%1, %0) : f32[64,n_tokens] "q"
  %4 = reshape(%3) : f32[16,4,n_tokens] "q3"
  %5 = rope(%4, %2) {freq_base=10000, freq_scale=1, mode=0, n_dims=16} : f32[16,4,n_tokens] "qr"
  %6 = scale(%5) {scale=0.5} : f32[16,4,n_tokens] "out"
  outputs(%6)
}`)
	if err != nil {
		panic(err)
	}
	p, _ := target.Get("ascend310b")
	pg, res, err := partition.RunOptions(g, p, partition.Options{Bindings: ir.Bindings{"n_tokens": 8}, NoRefine: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d npu, %d cpu, %d segments\n", res.NPUNodes, res.CPUNodes, len(res.Segments))
	for _, c := range res.Copies {
		fmt.Printf("copy %s: %s -> %s, %d B\n", pg.Nodes[c.Node].Name, c.From, c.To, c.Bytes)
	}
	for _, f := range res.Fallbacks {
		fmt.Printf("cpu: %s (%s)\n", f.Name, f.Op)
	}
	// Output:
	// 2 npu, 1 cpu, 3 segments
	// copy q3 (to cpu): npu -> cpu, 2048 B
	// copy qr (to npu): cpu -> npu, 2048 B
	// cpu: qr (rope)
}
