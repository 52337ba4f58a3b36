package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/ir"
)

// Outputs that name an input, flags out of range and hostile IR text
// (docs/CLI.md, "Outputs"; docs/IR.md, "Limits"): each is refused with
// one line before any work, and the input's bytes stay as they were.

func TestOutputNeverAnInput(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, irtool.EmbeddedModel, 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("m.gguf", filepath.Join(dir, "link.gguf")))
	must(os.Symlink("m.gguf", filepath.Join(dir, "link.dot")))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.Link(model, filepath.Join(dir, "hard.html")))
	irFile := filepath.Join(dir, "m.ir")
	if code, _, stderr := runCLI(t, "ir", model, "-o", irFile); code != 0 {
		t.Fatalf("ir -o: %s", stderr)
	}
	outDir := filepath.Join(dir, "out")
	must(os.Mkdir(outDir, 0o755))
	must(os.Symlink(model, filepath.Join(outDir, "program.json")))
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"ir -o the model", []string{"ir", model, "-o", model}},
		{"ir -o a symlink to it", []string{"ir", model, "-o", p("link.gguf")}},
		{"ir -o through ..", []string{"ir", model, "-o", p("sub/../m.gguf")}},
		{"ir -o the IR itself", []string{"ir", irFile, "-o", irFile}},
		{"ir -o the IR's weights", []string{"ir", irFile, "-o", model}},
		{"passes -o", []string{"passes", model, "-o", model}},
		{"compile --report", []string{"compile", model, "--report", model}},
		{"compile --report a hard link", []string{"compile", model, "--report", p("hard.html")}},
		{"compile --export-buffers", []string{"compile", model, "--export-buffers", p("link.gguf")}},
		{"compile IR --report its weights", []string{"compile", irFile, "--report", model}},
		{"compile --out holding a link to it", []string{"compile", model, "--out", outDir}},
		{"viz -o", []string{"viz", model, "-o", p("link.dot")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code == 0 || !strings.Contains(stderr, "is the same file as") || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want a refusal naming both files", code, stdout, stderr)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("want one line, got %q", stderr)
			}
			b, err := os.ReadFile(model)
			if err != nil || !bytes.Equal(b, irtool.EmbeddedModel) {
				t.Fatalf("the model changed (%v)", err)
			}
		})
	}
}

func TestOutputsCheckedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"virtual file system", []string{"compile", "--report", "/proc/irtool-r.html"}, "cannot create a file in directory /proc (its file system takes no new files)"},
		{"existing file there", []string{"compile", "--report", "/proc/version"}, "cannot create a file in directory /proc"},
		{"missing directory", []string{"compile", "--report", filepath.Join(dir, "no/r.html")}, "does not exist"},
		{"a directory", []string{"compile", "--export-buffers", dir}, "is a directory"},
		{"two outputs, one file", []string{"compile", "--report", filepath.Join(dir, "x"), "--export-buffers", filepath.Join(dir, ".", "x")}, "name the same file"},
		{"ir -o", []string{"ir", "-o", "/proc/irtool.ir"}, "cannot create a file"},
		{"passes -o", []string{"passes", "testdata/../../testdata/stories260K.gguf", "-o", "/proc/irtool.ir"}, "cannot create a file"},
		{"viz -o", []string{"viz", "-o", "/proc/irtool.dot"}, "cannot create a file"},
		{"--dump-dir", []string{"compile", "--dump-dir", "/proc/irtool-dumps"}, "cannot create a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(strings.Join(tc.args, " "), "/proc/") {
				if _, err := os.Stat("/proc/version"); err != nil {
					t.Skip("no /proc")
				}
			}
			code, stdout, stderr := runCLI(t, tc.args...)
			if code == 0 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "irtool compile: passes") {
				t.Errorf("exit %d, stdout %q, stderr %q; want %q before any stage", code, stdout, stderr, tc.want)
			}
			if strings.Contains(stderr, "no such file") {
				t.Errorf("says %q", stderr)
			}
		})
	}
}

// The tensor-parallel split is checked before the first stage:
// stories260K's 8 heads do not split over 3 ranks.
func TestSplitCheckedBeforeStages(t *testing.T) {
	for _, args := range [][]string{{"compile", "--tp", "3", "--json"}, {"compile", "--tp", "3"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code == 0 || stdout != "" || !strings.Contains(stderr, "n_head 8 is not a multiple of 3") || strings.Contains(stderr, "irtool compile: passes") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the refusal before any stage", args, code, stdout, stderr)
		}
	}
}

func TestFlagRanges(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "-r", "99999999999999"}, "-r 99999999999999: want 1..10000"},
		{[]string{"bench", "-r", "1000000000"}, "-r 1000000000: want 1..10000"},
		{[]string{"bench", "-t", "1000000"}, "-t 1000000: want 0 (the physical cores) or 1..1024"},
		{[]string{"bench", "-p", "-1"}, `flag -p: "-1" is not a number >= 0`},
		{[]string{"run", "-t", "1000000"}, "--threads 1000000: want 0 (the physical cores) or 1..1024"},
		{[]string{"compile", "--threads", "1000000"}, "--threads 1000000: want 0 (GOMAXPROCS) or 1..1024"},
		{[]string{"run", "--pp", "0"}, "--pp 0: want 1..1024"},
		{[]string{"compile", "--pp", "0"}, "--pp 0: want 1..1024"},
		{[]string{"viz", "--pp", "0"}, "--pp 0: want 1..1024"},
		{[]string{"compile", "--tp", "0"}, "--tp 0: want 1..1024"},
		{[]string{"run", "--backend", "cann", "--device", "99999999999999"}, "--device 99999999999999: want 0..2147483647"},
		{[]string{"run", "--backend", "cann", "--acl-pool", "-1"}, "--acl-pool -1: want 0..1099511627776"},
		{[]string{"doctor", "--device", "99999999999999"}, "--device 99999999999999: want 0..2147483647"},
		{[]string{"run", "--backend", "sim", "--graph-cache", "0"}, "--graph-cache 0: want 1..1048576"},
		{[]string{"run", "-n", "-1"}, "-n -1: want 0..16777216"},
		{[]string{"run", "--ubatch", "0"}, "--ubatch 0: want 1..16777216"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			start := time.Now()
			code, _, stderr := runCLI(t, tc.args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != 2 || !strings.Contains(first, tc.want) || strings.Contains(stderr, "goroutine") {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// writeIR writes IR text with body lines between the header and outputs.
func writeIR(t *testing.T, path string, body func(w *bytes.Buffer)) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("graph \"g\" {\n")
	body(&b)
	b.WriteString("}\n")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skip("getrusage:", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A chain of 100 000 views that do nothing compiles in time linear in
// its length (the noop pass forwards the chain in one sweep; its
// worklist driver alone took 19 s), and an IR past the node cap is refused
// before it is parsed.
func TestLargeIR(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 10 MB IR file")
	}
	dir := t.TempDir()
	chain := filepath.Join(dir, "chain.ir")
	const n = 100000
	writeIR(t, chain, func(b *bytes.Buffer) {
		b.WriteString("  %0 = input() : f32[64] \"x\"\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(b, "  %%%d = view(%%%d) {nb=[4,256,256,256], offset=dim(0)} : f32[64] \"v%d\"\n", i, i-1, i)
		}
		fmt.Fprintf(b, "  %%%d = scale(%%%d) {scale=2.0} : f32[64] \"y\"\n  outputs(%%%d)\n", n+1, n, n+1)
	})
	before := cpuTime(t)
	code, stdout, stderr := runCLI(t, "compile", chain, "--target", "cpu", "--json")
	used := cpuTime(t) - before
	if code != 0 || !strings.Contains(stdout, `"nodes_after": 1`) {
		t.Fatalf("compile: exit %d, %s", code, stderr)
	}
	t.Logf("compile of %d chained views: %v of CPU", n, used)
	if used > 8*time.Second {
		t.Errorf("compile of %d chained views used %v of CPU; the passes are not linear", n, used)
	}

	wide := filepath.Join(dir, "wide.ir")
	writeIR(t, wide, func(b *bytes.Buffer) {
		for i := 0; i <= ir.MaxNodes; i++ {
			fmt.Fprintf(b, "  %%%d = input() : f32[64] \"i%d\"\n", i, i)
		}
		b.WriteString("  outputs(%0)\n")
	})
	for _, cmd := range []string{"ir", "compile", "plan", "viz"} {
		before := cpuTime(t)
		code, _, stderr := runCLI(t, cmd, wide)
		used := cpuTime(t) - before
		want := fmt.Sprintf("wide.ir:%d:1: more than %d nodes (the limit of IR text)", ir.MaxNodes+2, ir.MaxNodes)
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", cmd, code, stderr, want)
		}
		if used > time.Second {
			t.Errorf("%s: refusing took %v of CPU; want the count before parsing", cmd, used)
		}
	}
}

func TestHostileIRMeta(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("root:x:0:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, weights, want, not string
	}{
		{"NUL in meta weights", `a\x00b.gguf`, `:2: meta weights="a\x00b.gguf": a control character ('\x00' at byte 1)`, "\x00"},
		{"not a GGUF file", secret, `not a GGUF file (its first 4 bytes are not the magic "GGUF")`, "root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "m.ir")
			w := tc.weights
			if !strings.Contains(w, `\x`) {
				w = strings.ReplaceAll(w, `\`, `\\`)
			}
			writeIR(t, path, func(b *bytes.Buffer) {
				fmt.Fprintf(b, "  meta weights=\"%s\"\n  %%0 = input() : f32[4] \"x\"\n  outputs(%%0)\n", w)
			})
			for _, cmd := range []string{"ir", "compile", "viz", "plan"} {
				code, _, stderr := runCLI(t, cmd, path)
				if code == 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, tc.not) {
					t.Errorf("%s: exit %d, stderr %q; want %q without %q", cmd, code, stderr, tc.want, tc.not)
				}
			}
		})
	}
}

// IR text on a FIFO (as on a pipe or /dev/stdin) is read as IR text.
func TestIRTextOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	code, text, stderr := runCLI(t, "ir")
	if code != 0 {
		t.Fatal(stderr)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(text)
			f.Close()
		}
		done <- err
	}()
	code, out, stderr := runCLI(t, "ir", fifo)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != text {
		t.Errorf("ir FIFO: exit %d, stderr %q; want the IR back", code, stderr)
	}
}

// A GGUF model on a FIFO (as on a pipe or /dev/stdin) builds and runs:
// the stream's source carries the invocation's registries like a file's.
func TestGGUFOnAFIFORuns(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(irtool.EmbeddedModel)
			f.Close()
		}
		done <- err
	}()
	code, out, stderr := runCLI(t, "run", "-n", "2", "--tokens", "1", fifo)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(stderr, "weights read into memory") {
		t.Errorf("run FIFO: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
