//go:build cann

package acl

import (
	"context"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// TestWeightBytesMatchCompile: the device bytes a runner's weights take
// on the emulator (the ggml bytes it writes to the weights region, plus
// the copies the device converts at load) are what compile predicts
// (partition.Result.DeviceWeightBytes), and each weight is held once: a
// q8_0, q4_0 or q5_0 layout over its blocks, a q4_K weight in its
// converted copies alone, its blocks never uploaded.
func TestWeightBytesMatchCompile(t *testing.T) {
	for _, c := range []struct {
		file     string
		inPlace  bool // no converted copy beside the blocks (a q4_0 table's get_rows runs on the CPU)
		noBlocks bool // every quantised weight taken: fewer ggml bytes than the file's
	}{
		{"synth-llama-Q8_0.gguf", true, false},
		{"synth-qwen2-tied-Q4_0.gguf", true, false},
		{"synth-llama256-Q4_K.gguf", false, true},
		{"synth-llama-Q5_0.gguf", true, false}, // int4 + high bits, as large as its blocks
	} {
		t.Run(strings.TrimSuffix(c.file, ".gguf"), func(t *testing.T) {
			f, m := testmodel.Build(t, testref.Testdata(c.file), models.Options{NCtx: 64})
			opts := compiler.Options{Target: "ascend910b"}
			r, err := compiler.Compile(context.Background(), m.Graph, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := r.Partition
			d := newDevice(t, Options{PoolBytes: 128 << 20})
			s, err := program.NewRunner(m, f, d, program.Options{Policy: device.DefaultGraphPolicy(), Compile: opts})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Step([]int32{1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			conv := d.Counters().ConvertedBytes
			if got := s.WeightBytes() + conv; got != want.DeviceWeightBytes || s.WeightBytes() != want.GGMLWeightBytes {
				t.Errorf("the runner holds %d B of weights (%d written, %d converted by the device); compile predicts %d (%d ggml, %d converted)",
					got, s.WeightBytes(), conv, want.DeviceWeightBytes, want.GGMLWeightBytes, want.ConvertedWeightBytes)
			}
			var all, quant int64
			for _, ti := range f.Tensors {
				all += int64(ti.Size)
				if ir.DType(ti.Type).Quantized() {
					quant += int64(ti.Size)
				}
			}
			if c.noBlocks && s.WeightBytes() > all-quant {
				t.Errorf("%d B written: some of the %d B of quantised blocks reached the device", s.WeightBytes(), quant)
			}
			// (Some blocks may be the CPU's: a q5_0 token table's get_rows,
			// or a matmul the partition moved there.)
			if c.inPlace && (s.WeightBytes() == 0 || conv != 0) {
				t.Errorf("%d B written, %d B converted: the q8_0/q4_0/q5_0 layouts should replace the %d B of blocks", s.WeightBytes(), conv, quant)
			}
			t.Logf("%d B written, %d B converted (file: %d B of tensors, %d B quantised)", s.WeightBytes(), conv, all, quant)
		})
	}
}
