//go:build cann

package cli

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCannRunKeepsToThePlan: run --backend cann of stories260K with a
// ~290-token prompt at -c 512 allocates compile's
// device_memory.pool_bytes at load and nothing after it, and reports the
// aclnn calls by operator.
func TestCannRunKeepsToThePlan(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found: the CANN emulator (scripts/fakeacl.sh) needs a C compiler")
	}
	fakeCANN(t)
	code, out, errOut := runCLI(t, "compile", "-c", "512", "--json")
	if code != 0 {
		t.Fatalf("compile: exit %d: %s", code, errOut)
	}
	var c deviceMemoryOut
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.DeviceMemory == nil {
		t.Fatalf("compile --json: %v", err)
	}
	prompt := strings.Repeat("Once upon a time there was a little girl named Lily. ", 21)
	code, out, errOut = runCLI(t, "run", "--backend", "cann", "-c", "512", "-p", prompt, "-n", "4", "--json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	var r struct {
		Prompt []int32 `json:"prompt_tokens"`
		Stats  struct {
			Pool struct {
				Capacity        int64 `json:"capacity"`
				AllocsAfterLoad int64 `json:"allocs_after_load"`
				Allocs          int64 `json:"allocs"`
			} `json:"pool"`
			Device struct {
				CallsByName map[string]int64 `json:"calls_by_name"`
			} `json:"device"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Prompt); n < 280 || n > 300 {
		t.Errorf("prompt of %d tokens, want about 290", n)
	}
	want := c.DeviceMemory.PoolBytes
	if got := r.Stats.Pool.Capacity; math.Abs(float64(got-want)) > 0.01*float64(want) {
		t.Errorf("pool %d B, compile's device_memory.pool_bytes %d B", got, want)
	}
	if r.Stats.Pool.AllocsAfterLoad != 0 || r.Stats.Pool.Allocs == 0 {
		t.Errorf("%d allocations after load (of %d)", r.Stats.Pool.AllocsAfterLoad, r.Stats.Pool.Allocs)
	}
	if r.Stats.Device.CallsByName["aclnnMm"] == 0 || r.Stats.Device.CallsByName["aclnnRmsNorm"] == 0 {
		t.Errorf("calls_by_name %v", r.Stats.Device.CallsByName)
	}
}

// TestCannRunQuantisedPool: on files whose quantised weights the device
// holds converted (in place for q8_0 and q4_0, the converted copy alone
// for q4_K and q5_0), compile's device_memory.weights_bytes is
// partition.device_weight_bytes (the blocks of a weight held converted
// are not planned beside its copy), and run --backend cann allocates
// device_memory.pool_bytes and runs in it with no allocation after load.
func TestCannRunQuantisedPool(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found: the CANN emulator (scripts/fakeacl.sh) needs a C compiler")
	}
	fakeCANN(t)
	for _, file := range []string{"synth-llama-Q8_0.gguf", "synth-llama-Q5_0.gguf", "synth-llama256-Q4_K.gguf", "synth-qwen2-tied-Q4_0.gguf"} {
		t.Run(file, func(t *testing.T) {
			model := filepath.Join("..", "testdata", file)
			code, out, errOut := runCLI(t, "compile", model, "-c", "64", "--json")
			if code != 0 {
				t.Fatalf("compile: exit %d: %s", code, errOut)
			}
			var c struct {
				deviceMemoryOut
				Partition struct {
					DeviceWeightBytes int64 `json:"device_weight_bytes"`
				} `json:"partition"`
			}
			if err := json.Unmarshal([]byte(out), &c); err != nil || c.DeviceMemory == nil {
				t.Fatalf("compile --json: %v", err)
			}
			if c.DeviceMemory.WeightsBytes != c.Partition.DeviceWeightBytes {
				t.Errorf("device_memory.weights_bytes %d, partition.device_weight_bytes %d", c.DeviceMemory.WeightsBytes, c.Partition.DeviceWeightBytes)
			}
			code, out, errOut = runCLI(t, "run", "--backend", "cann", "-m", model, "-c", "64", "-p", "Once upon a time", "-n", "4", "--json")
			if code != 0 {
				t.Fatalf("run: exit %d: %s", code, errOut)
			}
			var r struct {
				Stats struct {
					Pool struct {
						Capacity        int64 `json:"capacity"`
						AllocsAfterLoad int64 `json:"allocs_after_load"`
					} `json:"pool"`
				} `json:"stats"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			p := r.Stats.Pool
			want := c.DeviceMemory.PoolBytes
			if math.Abs(float64(p.Capacity-want)) > 0.01*float64(want) || p.AllocsAfterLoad != 0 {
				t.Errorf("pool %d B (compile's device_memory.pool_bytes %d B), %d allocations after load", p.Capacity, want, p.AllocsAfterLoad)
			}
			t.Logf("pool %d B, weights %d B", p.Capacity, c.DeviceMemory.WeightsBytes)
		})
	}
}
