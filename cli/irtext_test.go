package cli

import (
	"encoding/json"
	"github.com/irtool/irtool/models/modelfile"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// dropTimes removes wall-time fields ("ms", "strategy_ms", "timing") and
// the model's name from a decoded JSON document, leaving what must not
// depend on whether the model came as GGUF or as IR text.
func dropTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if k == "ms" || k == "strategy_ms" || k == "timing" || k == "model" || strings.HasSuffix(k, "_ms") {
				delete(x, k)
				continue
			}
			x[k] = dropTimes(x[k])
		}
	case []any:
		for i := range x {
			x[i] = dropTimes(x[i])
		}
	}
	return v
}

func cliJSON(t *testing.T, args ...string) any {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	require.Equal(t, 0, code, "irtool %v: %s", args, stderr)
	var v any
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), "irtool %v", args)
	return dropTimes(v)
}

// TestIRTextModels is the golden test of IR text as a model file: on every
// reference model, GGUF -> irtool ir -o FILE.ir -> parse gives the same
// text back, the same compiled graph and memory plans (compile --json),
// and the same tokens and logits (run --json --logits) as the GGUF; plan,
// viz and passes accept the file too.
func TestIRTextModels(t *testing.T) {
	for _, path := range testref.Models(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(path)
			require.NoError(t, err)
			_, err = models.Build(f, models.Options{})
			f.Close()
			if err != nil {
				t.Skipf("models cannot build %s: %v", name, err)
			}
			irPath := filepath.Join(t.TempDir(), name+".ir")
			code, _, stderr := runCLI(t, "ir", path, "-o", irPath)
			require.Equal(t, 0, code, stderr)

			text, err := os.ReadFile(irPath)
			require.NoError(t, err)
			g, err := ir.Parse(strings.NewReader(string(text)))
			require.NoError(t, err)
			var again strings.Builder
			require.NoError(t, ir.Print(&again, g))
			require.Equal(t, string(text), again.String(), "Print(Parse(text)) != text")
			require.NotEmpty(t, g.Meta[modelfile.MetaWeights])

			for _, target := range []string{"cpu", "ascend910b"} {
				args := []string{"compile", "--json", "--strategy", "greedy-size", "--target", target}
				fromGGUF := cliJSON(t, append(args, path)...)
				fromIR := cliJSON(t, append(args, irPath)...)
				require.Equal(t, fromGGUF, fromIR, "compile --target %s: GGUF and IR text differ", target)
			}

			runArgs := []string{"run", "--tokens", "1,22,33", "-n", "4", "--json", "--logits"}
			fromGGUF := cliJSON(t, append(runArgs, path)...)
			fromIR := cliJSON(t, append(runArgs, irPath)...)
			require.Equal(t, fromGGUF, fromIR, "run: GGUF and IR text differ")

			code, stdout, stderr := runCLI(t, "plan", irPath, "--strategy", "greedy-size")
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, "lower bound")

			dotGGUF := runOK(t, "viz", path, "--what", "graph", "--no-weights")
			dotIR := runOK(t, "viz", irPath, "--what", "graph", "--no-weights")
			// The title names the file drawn; the rest must be the same.
			require.True(t, dotGGUF == strings.ReplaceAll(dotIR, irPath, path), "viz: GGUF and IR text draw different graphs")

			// The optimised IR runs without passes to the same outputs.
			optPath := filepath.Join(t.TempDir(), name+".opt.ir")
			runOK(t, "passes", irPath, "-o", optPath)
			fromOpt := cliJSON(t, append(runArgs, "--passes", "none", optPath)...)
			require.Equal(t, fromGGUF, fromOpt, "run of the optimised IR differs")
		})
	}
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	require.Equal(t, 0, code, "irtool %v: %s", args, stderr)
	return stdout
}

// TestIRTextErrors checks the errors of IR files that cannot stand for
// their model.
func TestIRTextErrors(t *testing.T) {
	dir := t.TempDir()
	irPath := filepath.Join(dir, "m.ir")
	runOK(t, "ir", "-o", irPath)
	text, err := os.ReadFile(irPath)
	require.NoError(t, err)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	noWeights := write("noweights.ir", strings.Replace(string(text), `  meta weights="embedded:stories260K.gguf"`+"\n", "", 1))
	missing := write("missing.ir", strings.Replace(string(text), `embedded:stories260K.gguf`, `nothere.gguf`, 1))
	wrongShape := write("shape.ir", strings.Replace(string(text), `f32[64,512] "token_embd.weight"`, `f32[64,511] "token_embd.weight"`, 1))
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"run without weights", []string{"run", noWeights, "-n", "1", "--tokens", "1"}, 1, "names no weights file"},
		{"missing weights", []string{"compile", missing}, 1, "nothere.gguf"},
		{"weight shape", []string{"compile", wrongShape}, 1, `weight "token_embd.weight"`},
		{"ctx differs", []string{"compile", irPath, "--ctx", "512"}, 1, "n_ctx=2048"},
		{"run past n_ctx", []string{"run", irPath, "--tokens", "1", "-n", "3000"}, 2, "n_ctx=2048"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			require.Equal(t, c.code, code, stderr)
			require.Contains(t, stderr, c.want)
		})
	}
	// Without weights, compile still works on the graph alone.
	runOK(t, "compile", noWeights, "--target", "cpu")
}

// TestIRTextSim runs IR text through the whole pipeline on the simulated
// Ascend device: the same tokens as from the GGUF.
func TestIRTextSim(t *testing.T) {
	path := testref.Testdata("synth-llama-Q4_0.gguf")
	irPath := filepath.Join(t.TempDir(), "m.ir")
	runOK(t, "ir", path, "-o", irPath)
	args := []string{"run", "--backend", "sim", "--tokens", "1,22,33", "-n", "6", "--json"}
	gg := cliJSON(t, append(args, path)...).(map[string]any)
	fromIR := cliJSON(t, append(args, irPath)...).(map[string]any)
	require.Equal(t, gg["tokens"], fromIR["tokens"])
	require.NotEmpty(t, gg["tokens"])
}
