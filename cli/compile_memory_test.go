package cli

import (
	"encoding/json"
	"github.com/irtool/irtool/compiler/summary"
	"path/filepath"
	"strings"
	"testing"
)

// compileMemory runs compile --json and decodes its memory objects.
func compileMemory(t *testing.T, args ...string) (worst, decode summary.Memory) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"compile", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("compile %v: exit %d: %s", args, code, stderr)
	}
	var out struct {
		Memory       summary.Memory `json:"memory"`
		MemoryDecode summary.Memory `json:"memory_decode"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, stdout)
	}
	return out.Memory, out.MemoryDecode
}

func TestCompileMemory(t *testing.T) {
	// llama.cpp's own graph and placement rules: its compute buffer for
	// stories260K at n_ctx = n_ubatch = 256 is 2,624,512 bytes.
	worst, decode := compileMemory(t, "--target", "cpu", "--kv-write", "cpy", "--passes", "none", "--ctx", "256")
	if worst.GgmlCPUBytes != 2624512 {
		t.Errorf("ggml_cpu_bytes %d, llama.cpp reserves 2624512", worst.GgmlCPUBytes)
	}
	for _, m := range []summary.Memory{worst, decode} {
		if m.ArenaBytes != m.LowerBoundBytes || m.ArenaBytes >= m.GgmlCPUBytes || m.Requested != "best" ||
			m.Align != 32 || m.Policy != "cpu" || m.Strategies["gallocr"] < m.ArenaBytes || m.Strategies["greedy-size"] == 0 ||
			m.NaiveBytes <= m.ArenaBytes || m.InPlace == 0 || m.WorkspaceBytes != 0 {
			t.Errorf("memory %+v", m)
		}
	}
	if worst.Bindings != "kv_head=0,n_kv=256,n_outputs=256,n_tokens=256" || decode.Bindings != "kv_head=0,n_kv=256,n_outputs=1,n_tokens=1" {
		t.Errorf("bindings %q, %q", worst.Bindings, decode.Bindings)
	}
	if decode.ArenaBytes >= worst.ArenaBytes {
		t.Errorf("decode arena %d not below the worst case's %d", decode.ArenaBytes, worst.ArenaBytes)
	}

	// NPU default: 64-byte alignment, element-wise in-place only, kernel
	// workspaces in the arena; a smaller ubatch shrinks the worst case.
	npu, _ := compileMemory(t, "--ctx", "256", "--ubatch", "64", "--strategy", "greedy-size")
	if npu.Align != 64 || npu.Policy != "npu" || npu.WorkspaceBytes == 0 || npu.Requested != "greedy-size" ||
		len(npu.Strategies) != 1 || npu.Bindings != "n_kv=256,n_outputs=64,n_tokens=64" || npu.ArenaBytes >= worst.ArenaBytes {
		t.Errorf("npu memory %+v", npu)
	}
	if a, _ := compileMemory(t, "--align", "256", "--target", "cpu"); a.Align != 256 || a.ArenaBytes%256 != 0 {
		t.Errorf("--align 256: %+v", a)
	}
}

// The exported CSV is the same instance: irtool plan scores it with the
// same lower bound and arena.
func TestCompileExportBuffers(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "stories.csv")
	worst, _ := compileMemory(t, "--target", "cpu", "--export-buffers", csv)
	p := planJSON(t, csv, "--json")
	if p.Buffers != worst.Buffers || p.LowerBound != worst.LowerBoundBytes || p.Arena != worst.ArenaBytes {
		t.Errorf("plan %s: %+v; compile: %+v", csv, p, worst)
	}
}

func TestCompileMemoryErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "magic"}, `unknown --strategy "magic"`},
		{[]string{"--align", "-1"}, "--align -1: want a power of two"},
		{[]string{"--align", "3"}, "--align 3: want a power of two"},
		{[]string{"--requant", "q5_0"}, `--requant "q5_0"`},
		{[]string{"--out", "/dev/null"}, "--out /dev/null: exists and is not a directory"},
		{[]string{"--budget", "0s"}, "--budget must be positive"},
		{[]string{"--export-buffers", "/nonexistent/dir/x.csv"}, "--export-buffers"},
	} {
		code, _, stderr := runCLI(t, append([]string{"compile", "--json"}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, stderr, c.want)
		}
	}
}
