package layout

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// DequantizeRows expands an N×K matrix of ggml blocks of any type gguf
// dequantises to float32, with ggml's dequantize_row_* arithmetic.
func DequantizeRows(t ir.DType, blocks []byte, K, N int64) ([]float32, error) {
	bs := t.BlockSize()
	if !t.Quantized() || bs == 0 || K%bs != 0 || int64(len(blocks)) != N*K/bs*t.TypeSize() {
		return nil, fmt.Errorf("dequantize %s: %d bytes for a %d×%d matrix", t, len(blocks), N, K)
	}
	out := make([]float32, N*K)
	if err := gguf.Dequantize(gguf.GGMLType(t), blocks, out); err != nil {
		return nil, fmt.Errorf("dequantize %s: %w", t, err)
	}
	return out, nil
}
