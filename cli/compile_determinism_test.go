package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// stripTiming removes every object member whose name ends in _ms or _us
// (the wall times, and the cost model's microseconds) and re-encodes the
// rest; encoding/json writes object members in a fixed order.
func stripTiming(t *testing.T, raw string) []byte {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("compile --json: %v\n%s", err, raw)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "_us") {
					delete(x, k)
					continue
				}
				if k == "ms" || k == "us" || strings.HasSuffix(k, "_time") || strings.Contains(k, "duration") {
					t.Errorf("compile --json: timing field %q is not named *_ms or *_us", k)
				}
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, err := json.MarshalIndent(walk(v), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompileJSONDeterministic: compile --json gives the same bytes, timing
// fields aside, on two runs and whatever the number of threads the
// planner's search may use (--threads, and GOMAXPROCS, which sizes the
// exact search's portfolio by default), with the default strategy (best,
// whose search runs concurrently).
func TestCompileJSONDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two models five times each")
	}
	for _, c := range []struct {
		model  string
		target string
	}{
		{"", "ascend910b"},
		{"../testdata/synth-llamamoe-Q4_0.gguf", "ascend310b-strict"},
	} {
		args := []string{"compile", "--json", "--target", c.target}
		if c.model != "" {
			args = append(args, c.model)
		}
		var first []byte
		for i, run := range []struct {
			procs   int
			threads string
		}{{2, "0"}, {2, "0"}, {1, "0"}, {2, "1"}, {2, "2"}} {
			old := runtime.GOMAXPROCS(run.procs)
			code, out, stderr := runCLI(t, append(args, "--threads", run.threads)...)
			runtime.GOMAXPROCS(old)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			got := stripTiming(t, out)
			if !bytes.Contains(got, []byte(`"arena_bytes"`)) || !bytes.Contains(got, []byte(`"kernels_by_name"`)) {
				t.Fatalf("%v: the stripped JSON lost the plans or the program:\n%s", args, got)
			}
			if i == 0 {
				first = got
				continue
			}
			if !bytes.Equal(got, first) {
				t.Errorf("%v, run %d (GOMAXPROCS %d, --threads %s): JSON differs from run 1 beyond timing fields:\n%s", args, i+1, run.procs, run.threads, firstDiff(first, got))
			}
		}
	}
}

// firstDiff shows the first differing line of a and b.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return "first difference: " + strings.TrimSpace(la[i]) + "\n                vs " + strings.TrimSpace(lb[i])
		}
	}
	return "lengths differ"
}
