package wqconv

import (
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// FuzzConvert feeds arbitrary bytes as blocks of each type (the first byte
// picks the type, the next two the rows and blocks per row): Convert must
// return an error or a weight whose sizes agree with its layout, never
// panic; an exact mapping must reproduce ggml's values; a lossy one must
// stay finite where ggml's values are finite.
func FuzzConvert(f *testing.F) {
	for i, typ := range Types() {
		blk := make([]byte, typ.TypeSize())
		for j := range blk {
			blk[j] = byte(j*37 + i)
		}
		f.Add(append([]byte{byte(i), 1, 1}, blk...))
		f.Add(append([]byte{byte(i), 2, 1}, append(blk, blk...)...))
	}
	types := Types()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		typ := types[int(data[0])%len(types)]
		rows, per := int(data[1]%8), int(data[2]%4)
		raw := data[3:]
		cols := per * typ.BlockSize()
		w, err := Convert(typ, raw, rows, cols)
		if err != nil {
			return
		}
		if w.DeviceBytes() != w.Layout.DeviceBytes(rows, cols) || int64(len(w.Bytes())) != w.DeviceBytes() {
			t.Fatalf("%s [%d×%d]: %d device bytes, layout says %d", typ, rows, cols, w.DeviceBytes(), w.Layout.DeviceBytes(rows, cols))
		}
		got := Dequant(w)
		want := make([]float32, rows*cols)
		if err := gguf.Dequantize(typ, raw, want); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if w.Accuracy == Exact && !sameValue(got[i], want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("%s element %d: %g, ggml %g", typ, i, got[i], want[i])
			}
			if w.Accuracy != Exact && !math.IsInf(float64(want[i]), 0) && (math.IsNaN(float64(got[i])) || math.IsInf(float64(got[i]), 0)) {
				t.Fatalf("%s element %d: %g, ggml %g", typ, i, got[i], want[i])
			}
		}
	})
}
