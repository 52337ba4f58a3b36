package wqconv

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkConvert: host time of the load-time conversion of a 1024×4096
// matrix per type (go test ./gguf/wqconv -run '^$' -bench Convert).
func BenchmarkConvert(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, typ := range Types() {
		rows, cols := 1024, 4096
		raw := randomBlocks(r, typ, rows*cols/typ.BlockSize(), false)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(rows * cols))
			for b.Loop() {
				if _, err := Convert(typ, raw, rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
