package cli

import (
	"encoding/json"
	"github.com/irtool/irtool/compiler/summary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/lower/cann"
)

type lowerOut struct {
	Partition summary.Partition `json:"partition"`
	Program   summary.Program   `json:"program"`
	Predicted summary.Predicted `json:"predicted"`
}

func compileLower(t *testing.T, args ...string) lowerOut {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"compile", "--json", "--strategy", "greedy-size"}, args...)...)
	if code != 0 {
		t.Fatalf("compile %v: exit %d: %s", args, code, stderr)
	}
	var out lowerOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bad JSON: %v\n%.2000s", err, stdout)
	}
	return out
}

func TestCompileLower(t *testing.T) {
	// 910B: everything on the NPU in one capturable decode segment; replay
	// beats eager launches.
	o := compileLower(t, "--target", "ascend910b")
	if o.Partition.NPUNodes == 0 || o.Partition.Segments == 0 || o.Program.Kernels != o.Partition.NPUNodes+o.Partition.CPUNodes {
		t.Errorf("910b partition %+v program %+v", o.Partition, o.Program)
	}
	if o.Program.CapturableSegments == 0 || o.Program.KernelsByName["aclnnMm"] == 0 || o.Program.Bucket != "n_kv=2048,n_outputs=1,n_tokens=1" {
		t.Errorf("910b program %+v", o.Program)
	}
	if p := o.Predicted; p.GraphUSPerToken <= 0 || p.EagerUSPerToken <= p.GraphUSPerToken || p.GraphLaunches >= p.Launches {
		t.Errorf("910b predicted %+v", p)
	}
	// 310B: RoPE and fused attention fall back, with copies and their bytes;
	// nothing is captured.
	o = compileLower(t, "--target", "ascend310b")
	if o.Partition.CPUNodes == 0 || o.Partition.Copies == 0 || o.Partition.CopyBytes == 0 || len(o.Partition.Fallbacks) != o.Partition.CPUNodes {
		t.Errorf("310b partition %+v", o.Partition)
	}
	rope := false
	for _, f := range o.Partition.Fallbacks {
		if strings.Contains(f.Reason, "aclnnRotaryPositionEmbedding") {
			rope = true
		}
	}
	if !rope || o.Program.CapturableSegments != 0 || len(o.Program.Blockers) == 0 || o.Predicted.EagerUSPerToken != o.Predicted.GraphUSPerToken {
		t.Errorf("310b: rope fallback %v, program %+v, predicted %+v", rope, o.Program, o.Predicted)
	}
	// cpu: one CPU segment, no copies.
	o = compileLower(t, "--target", "cpu", "--passes", "none")
	if o.Partition.NPUNodes != 0 || o.Partition.Copies != 0 || o.Program.Segments != 1 || o.Program.KernelsByName["cpu.mul_mat"] == 0 {
		t.Errorf("cpu: %+v %+v", o.Partition, o.Program)
	}
}

func TestCompileLowerOut(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "compile", "--target", "ascend310b", "--strategy", "greedy-size", "--kv-write", "cpy", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"partition (ascend310b", "lower (", "predicted decode step", "wrote " + filepath.Join(dir, "program.json")} {
		if !strings.Contains(stdout+stderr, want) {
			t.Errorf("output lacks %q:\n%s%s", want, stdout, stderr)
		}
	}
	f, err := os.Open(filepath.Join(dir, "program.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prog, err := cann.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if prog.Target != "ascend310b" || prog.KVWrite != "cpy" || prog.Kernels() == 0 || !strings.Contains(prog.Bucket, "kv_head=0") {
		t.Errorf("program target %s kv %s kernels %d bucket %s", prog.Target, prog.KVWrite, prog.Kernels(), prog.Bucket)
	}
	for _, name := range []string{"partition.dot", "segments.dot"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "digraph") || !strings.Contains(string(b), "npu") || !strings.Contains(string(b), "cpu") {
			t.Errorf("%s: %.300s", name, b)
		}
	}
	seg, _ := os.ReadFile(filepath.Join(dir, "segments.dot"))
	if !strings.Contains(string(seg), "segment") || !strings.Contains(string(seg), "eager") {
		t.Errorf("segments.dot has no segment captions: %.300s", seg)
	}
}

func TestCompileRequant(t *testing.T) {
	// The embedded model is f32: nothing needs converting, and the report
	// says so.
	o := compileLower(t, "--target", "ascend910b", "--requant", "q8_0")
	if o.Partition.Requant == nil || len(o.Partition.Requant.Tensors) != 0 || o.Partition.Requant.To != "q8_0" {
		t.Errorf("requant %+v", o.Partition.Requant)
	}
	code, _, stderr := runCLI(t, "compile", "--requant", "q4_k")
	if code == 0 || !strings.Contains(stderr, "want q8_0 or q4_0") {
		t.Errorf("--requant q4_k: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "compile", "--target", "gpu")
	if code == 0 || !strings.Contains(stderr, "unknown target") {
		t.Errorf("--target gpu: exit %d: %s", code, stderr)
	}
}
