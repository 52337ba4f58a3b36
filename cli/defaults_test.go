package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
)

// longContextModel writes the embedded model with its context_length set
// to n (a model trained on a long context, as Qwen2.5-0.5B's 32768).
func longContextModel(t *testing.T, n uint32) string {
	t.Helper()
	f, err := gguf.Parse(irtool.EmbeddedModel, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key == "llama.context_length" {
			w.SetKV(kv.Key, gguf.U32(n))
			continue
		}
		w.SetKV(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Shape(), data); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "long.gguf")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestResolveCtx: --ctx as llama.cpp's n_ctx: 4096 by default, capped by
// the training context; 0 the training context; a given value as given.
func TestResolveCtx(t *testing.T) {
	for _, c := range []struct {
		ctx   int64
		given bool
		train int64
		want  int64
		warn  bool
	}{
		{defaultCtx, false, 2048, 2048, false},
		{defaultCtx, false, 32768, 4096, false},
		{0, true, 32768, 32768, false},
		{0, false, 2048, 2048, false},
		{4096, true, 2048, 4096, true},
		{1000000, true, 32768, 1000000, true},
		{64, true, 2048, 64, false},
	} {
		got := resolveCtx(c.ctx, c.given, c.train)
		w := ctxWarning(got, c.train)
		if got != c.want || (w != "") != c.warn {
			t.Errorf("resolveCtx(%d, %v, %d) = %d, warning %q; want %d, warning %v", c.ctx, c.given, c.train, got, w, c.want, c.warn)
		}
	}
}

// TestContextDefaults: what compile plans and run accepts without -c, with
// -c 0 and with a -c past the training context (a warning, not an error).
func TestContextDefaults(t *testing.T) {
	long := longContextModel(t, 32768)
	for _, c := range []struct {
		name     string
		args     []string
		bindings string // the worst case compile plans
		warn     string // on stderr, "" for none
	}{
		{"embedded default", []string{"compile"}, "n_kv=2048,n_outputs=512,n_tokens=512", ""},
		{"embedded -c 0", []string{"compile", "-c", "0"}, "n_kv=2048,n_outputs=512,n_tokens=512", ""},
		{"small -c caps ubatch", []string{"compile", "-c", "100"}, "n_kv=100,n_outputs=100,n_tokens=100", ""},
		{"embedded past training", []string{"compile", "-c", "4096"}, "n_kv=4096,n_outputs=512,n_tokens=512", "-c 4096 exceeds the model's training context 2048"},
		{"long default", []string{"compile", long}, "n_kv=4096,n_outputs=512,n_tokens=512", ""},
		{"long -c 0", []string{"compile", long, "-c", "0"}, "n_kv=32768,n_outputs=512,n_tokens=512", ""},
		{"long --ubatch", []string{"compile", long, "-c", "0", "--ubatch", "64"}, "n_kv=32768,n_outputs=64,n_tokens=64", ""},
		{"long past training", []string{"compile", long, "-c", "1000000"}, "n_kv=1000000,n_outputs=512,n_tokens=512", "-c 1000000 exceeds the model's training context 32768"},
		{"run long past training", []string{"run", long, "--tokens", "1", "-n", "2", "-c", "1000000"}, "", "-c 1000000 exceeds the model's training context 32768"},
		{"run 300 tokens without -c", []string{"run", "-p", "Once", "-n", "300"}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{}, c.args...)
			if args[0] == "compile" {
				args = append(args, "--json", "--target", "cpu", "--strategy", "greedy-size")
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			if c.warn == "" && strings.Contains(stderr, "warning: -c") || c.warn != "" && !strings.Contains(stderr, "warning: "+c.warn) {
				t.Errorf("%v: stderr %q, want warning %q", args, stderr, c.warn)
			}
			if c.bindings != "" {
				var out struct {
					Memory struct {
						Bindings string `json:"bindings"`
					} `json:"memory"`
				}
				if err := json.Unmarshal([]byte(stdout), &out); err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(out.Memory.Bindings, c.bindings) {
					t.Errorf("%v: planned %q, want %q", args, out.Memory.Bindings, c.bindings)
				}
			}
		})
	}
}

// TestRunReportLines: run's progress and summary lines in words: the
// compiled op count of the graphs it steps (one graph, each rank's, each
// stage's), singular and plural counts, how the weights are held, the
// pipeline's stages without Go's map syntax.
func TestRunReportLines(t *testing.T) {
	embedded := filepath.Join("..", "testdata", "stories260K.gguf")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"plain", []string{"--tokens", "1", "-n", "1"}, []string{"llama, 5 layers, 120 ops; prefill of 1 token, then 0 greedy steps on cpu", "embedded weights"}},
		{"file", []string{embedded, "--tokens", "1", "-n", "2"}, []string{"120 ops; prefill of 1 token, then 1 greedy step on cpu", "memory-mapped weights"}},
		{"tp", []string{"--tp", "2", "--tokens", "1", "-n", "2"}, []string{"2 ranks of 131 ops; prefill"}},
		{"pp", []string{"--pp", "2", "--tokens", "1", "-n", "2"}, []string{"2 stages of 71+52 ops; prefill",
			"pipeline of 2 stages: stage 0: layers 0-2, 1 recv, 1 send per step; stage 1: layers 3-4, 1 recv, 1 send per step"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"run"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("run %v: no %q in\n%s", c.args, w, stderr)
				}
			}
			if strings.Contains(stderr, "map[") || strings.Contains(stderr, "[[") {
				t.Errorf("run %v: Go syntax in\n%s", c.args, stderr)
			}
		})
	}
}

// TestReadmeWritesIntoOut: every file README's commands write goes into
// out/, which .gitignore ignores, so the tour leaves the clone clean.
func TestReadmeWritesIntoOut(t *testing.T) {
	readme := string(readFile(t, "../README.md"))
	outFlag := regexp.MustCompile(`(?:^|\s)(?:-o|--report|--out|--export-buffers|--dump-dir)[ =](\S+)`)
	n := 0
	for _, line := range strings.Split(readme, "\n") {
		if !strings.HasPrefix(line, "    ") || !strings.Contains(line, "irtool") {
			continue
		}
		for _, m := range outFlag.FindAllStringSubmatch(line, -1) {
			n++
			if p := m[1]; !strings.HasPrefix(p, "out/") && !strings.HasPrefix(p, "/tmp/") && p != "./cmd/irtool" {
				t.Errorf("README writes %s outside out/: %s", p, strings.TrimSpace(line))
			}
		}
	}
	if n < 6 {
		t.Errorf("found %d output paths in README's commands", n)
	}
	if !strings.Contains(string(readFile(t, "../.gitignore")), "/out/") {
		t.Error(".gitignore does not ignore out/")
	}
}
