package cann

import (
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/target"
)

// BenchmarkPartitionQwen25 times the partition pass (placement, local
// search, transfers, ordering, cycle check) on the Qwen2.5-0.5B-shaped
// graph for the 310B, where the search has the most to do.
func BenchmarkPartitionQwen25(b *testing.B) {
	m := qwen25(b, 4096)
	prof, _ := target.Get("ascend310b")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := partition.Run(m.Graph, prof, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLowerQwen25Decode times specialise + plan (greedy-size) + lower
// of one decode bucket: what a runtime pays once per new shape bucket.
func BenchmarkLowerQwen25Decode(b *testing.B) {
	m := qwen25(b, 4096)
	prof, _ := target.Get("ascend910b")
	pg, part, err := partition.Run(m.Graph, prof, nil)
	if err != nil {
		b.Fatal(err)
	}
	bind := ir.Bindings{"n_tokens": 1, "n_outputs": 1, "n_kv": 256}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := lowerStep(pg, part, prof, bind, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
