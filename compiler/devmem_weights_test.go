package compiler_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/lower/cann"
)

// envShapeDir names a directory of generated real-shape files (for
// example the Qwen2.5-0.5B-shaped Q4_0, Q4_K_M and Q8_0 files of
// docs/RUNTIME.md, "Qwen2.5-0.5B-shaped files on the emulator"), each of
// whose *.gguf TestDeviceWeightsOnce also checks when it is set.
const envShapeDir = "IRTOOL_QWEN_SHAPE_DIR"

// TestDeviceWeightsOnce: on every reference model (and the generated
// shapes of $IRTOOL_QWEN_SHAPE_DIR, each also at most 1.1× its file),
// device_memory's weights_bytes is
// partition's device_weight_bytes: the lowered weights region holds each
// NPU weight as the device does (its blocks, or only its converted copy),
// no converted weight's blocks beside it, and the region is that sum
// padded to the target's alignment.
func TestDeviceWeightsOnce(t *testing.T) {
	files := append(testref.Models(t), mustGlob(t, filepath.Join(testref.Root(), "testdata", "*.gguf"))...)
	if dir := os.Getenv(envShapeDir); dir != "" {
		files = append(files, mustGlob(t, filepath.Join(dir, "*.gguf"))...)
	}
	shapes := map[string]bool{}
	if dir := os.Getenv(envShapeDir); dir != "" {
		for _, p := range mustGlob(t, filepath.Join(dir, "*.gguf")) {
			shapes[p] = true
		}
	}
	seen := map[string]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		if seen[name] {
			continue
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			m, _ := build(t, path, 64)
			r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: "ascend910b", Ctx: 64, UBatch: 32,
				Until: compiler.StagePartition, NoMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			dm, err := r.DeviceMemory()
			if err != nil {
				t.Fatal(err)
			}
			if dm.WeightsBytes != r.Partition.DeviceWeightBytes {
				t.Errorf("device_memory.weights_bytes %d, partition.device_weight_bytes %d (%d ggml + %d converted)",
					dm.WeightsBytes, r.Partition.DeviceWeightBytes, r.Partition.GGMLWeightBytes, r.Partition.ConvertedWeightBytes)
			}
			prog, _, err := r.Lower(compiler.RunBindings(32, 64))
			if err != nil {
				t.Fatal(err)
			}
			var n, held int64
			for _, w := range prog.Weights {
				if w.Addr.Region == cann.RegionWeights {
					n++
					held += max(w.Bytes, w.DeviceBytes)
				}
			}
			region := int64(0)
			if rg := prog.Region(cann.RegionWeights); rg != nil {
				region = rg.Bytes
			}
			align := max(r.Profile.Align, 1)
			if region < held || n > 0 && region >= held+n*align {
				t.Errorf("weights region %d B for %d weights holding %d B (alignment %d)", region, n, held, align)
			}
			// A generated real shape holds each weight once, within 1.1×
			// the file (the Q4_0, Q4_K_M, Q8_0 and F16 Qwen2.5-0.5B shapes).
			if fi, err := os.Stat(path); err == nil && shapes[path] && float64(r.Partition.DeviceWeightBytes) > 1.1*float64(fi.Size()) {
				t.Errorf("device_weight_bytes %d: %.3f× the file's %d B (at most 1.1×)", r.Partition.DeviceWeightBytes, float64(r.Partition.DeviceWeightBytes)/float64(fi.Size()), fi.Size())
			}
			t.Logf("weights %d B (%d ggml + %d converted), region %d B", dm.WeightsBytes, r.Partition.GGMLWeightBytes, r.Partition.ConvertedWeightBytes, region)
		})
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}
