package wqconv_test

import (
	"fmt"
	"log"
	"math"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
)

// Convert a q4_0 matrix of 2 rows × 64 columns for
// aclnnWeightQuantBatchMatmulV2 and check the device arithmetic against
// ggml's dequantisation.
func ExampleConvert() {
	x := make([]float32, 2*64)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	raw, err := gguf.QuantizeQ4_0(x)
	if err != nil {
		log.Fatal(err)
	}
	w, err := wqconv.Convert(gguf.TypeQ4_0, raw, 2, 64)
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Check(); err != nil {
		log.Fatal(err)
	}
	ggml := make([]float32, len(x))
	if err := gguf.Dequantize(gguf.TypeQ4_0, raw, ggml); err != nil {
		log.Fatal(err)
	}
	same := true
	for i, v := range wqconv.Dequant(w) {
		same = same && v == ggml[i]
	}
	fmt.Printf("%s values, %d scales, antiquantGroupSize %d, offset %v\n", w.Dtype, len(w.Scale), w.GroupSize(), w.Offset != nil)
	fmt.Printf("%d device bytes (%g per weight), %s, equal to ggml: %v\n", w.DeviceBytes(), w.BytesPerWeight(), w.Accuracy, same)
	// Output:
	// int4 values, 4 scales, antiquantGroupSize 32, offset false
	// 72 device bytes (0.5625 per weight), exact, equal to ggml: true
}

// The layout of each type, without data: what the cost model and the
// device budget need.
func ExampleLayoutOf() {
	for _, t := range []gguf.GGMLType{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ3_K} {
		l, err := wqconv.LayoutOf(t)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s, %d per scale, offset %v, %s, %d bytes for 4096×4096\n",
			t, l.Dtype, l.Span, l.Offset, l.Accuracy, l.DeviceBytes(4096, 4096))
	}
	// Output:
	// q4_K: int4, 32 per scale, offset true, rounded scale/offset, 10485760 bytes for 4096×4096
	// q6_K: int8, 32 per scale, offset false, int8 re-quantised, 17825792 bytes for 4096×4096
	// q3_K: int8, 256 per scale, offset false, exact, 16908288 bytes for 4096×4096
}
