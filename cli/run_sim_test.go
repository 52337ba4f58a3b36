package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// simRunOut is run --json with the sim backend's stats.
type simRunOut struct {
	Backend string  `json:"backend"`
	Tokens  []int32 `json:"tokens"`
	Stats   *struct {
		Mode    string                   `json:"mode"`
		Prefill map[string]float64       `json:"prefill"`
		Decode  map[string]float64       `json:"decode"`
		Pool    struct{ LiveBlocks int } `json:"pool"`
		Cache   map[string]float64       `json:"cache"`
		Device  map[string]float64       `json:"device"`
	} `json:"stats"`
}

func runSimJSON(t *testing.T, env map[string]string, args ...string) simRunOut {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	if code := run(append([]string{"run", "--json"}, args...), &out, &errb); code != 0 {
		t.Fatalf("irtool run %v: exit %d: %s", args, code, errb.String())
	}
	var r simRunOut
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("irtool run %v: bad JSON: %v\n%s", args, err, out.String())
	}
	return r
}

// run --backend sim gives the cpu backend's tokens on every model, with
// graph mode on and off, set_rows and cpy, and its stats show ggml-cann's
// cache behaviour.
func TestRunSimBackend(t *testing.T) {
	const ids = "1,403,407,261,378"
	for _, model := range []string{"stories260K", "synth-llama-F32", "synth-llama-F16", "synth-llama-Q8_0", "synth-llama-Q4_0"} {
		path := testref.Testdata(model + ".gguf")
		want := runSimJSON(t, nil, path, "--tokens", ids, "-n", "24", "--backend", "cpu")
		if want.Stats != nil {
			t.Fatalf("%s: the cpu backend printed sim stats", model)
		}
		for _, tc := range []struct {
			args []string
			env  map[string]string
			mode string
		}{
			{args: []string{"--graph", "on"}, mode: "graph"},
			{args: []string{"--graph", "off"}, mode: "eager"},
			{env: map[string]string{"IRTOOL_ACL_GRAPH": "0"}, mode: "eager"},
			{args: []string{"--kv-write", "cpy", "--graph-cache", "4"}, mode: "graph"},
			{args: []string{"--prefill-graph", "--passes", "none"}, mode: "graph"},
		} {
			t.Run(model+" "+strings.Join(tc.args, " ")+envString(tc.env), func(t *testing.T) {
				args := append([]string{path, "--tokens", ids, "-n", "24", "--backend", "sim"}, tc.args...)
				got := runSimJSON(t, tc.env, args...)
				if !eqIDs(got.Tokens, want.Tokens) {
					t.Errorf("%s %v: tokens %v, cpu %v", model, tc.args, got.Tokens, want.Tokens)
				}
				st := got.Stats
				if st == nil {
					t.Fatalf("%s %v: no stats", model, tc.args)
				}
				for _, key := range []string{"captures", "replays", "cache_hits", "cache_misses", "evictions", "kernel_launches", "host_dispatch_ns_per_token"} {
					if _, ok := st.Decode[key]; !ok {
						t.Errorf("%s %v: stats.decode lacks %q", model, tc.args, key)
					}
					if _, ok := st.Prefill[key]; !ok {
						t.Errorf("%s %v: stats.prefill lacks %q", model, tc.args, key)
					}
				}
				if st.Mode != tc.mode {
					t.Errorf("%s %v: mode %q, want %q", model, tc.args, st.Mode, tc.mode)
				}
				steps := st.Decode["steps"]
				switch {
				case tc.mode == "eager":
					if st.Decode["captures"] != 0 || st.Decode["replays"] != 0 || st.Decode["kernel_launches"] == 0 {
						t.Errorf("%s %v: eager decode %v", model, tc.args, st.Decode)
					}
				case strings.Contains(strings.Join(tc.args, " "), "cpy"):
					if st.Decode["cache_hits"] != 0 || st.Decode["cache_misses"] < steps {
						t.Errorf("%s %v: cpy decode should miss every step: %v", model, tc.args, st.Decode)
					}
				default:
					// Decode positions 5..27 lie in one n_kv bucket.
					if st.Decode["cache_hits"] == 0 || st.Decode["captures"] != st.Decode["cache_misses"] ||
						st.Decode["replays"] != st.Decode["cache_hits"]+st.Decode["cache_misses"] ||
						st.Decode["cache_hits"] < (steps-1)*st.Decode["cache_misses"] {
						t.Errorf("%s %v: graph decode %v", model, tc.args, st.Decode)
					}
				}
				if strings.Contains(strings.Join(tc.args, " "), "prefill-graph") && st.Prefill["captures"] == 0 {
					t.Errorf("%s %v: prefill not captured: %v", model, tc.args, st.Prefill)
				}
			})
		}
	}
}

func envString(env map[string]string) string {
	var parts []string
	for k, v := range env {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

func TestRunSimErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		code int
		msg  string
	}{
		{args: []string{"--tokens", "1", "--graph", "off"}, code: 2, msg: "--backend sim only"},
		// Backend flags are checked before the model is read (usage errors).
		{args: []string{"--tokens", "1", "--backend", "sim", "--graph", "maybe"}, code: 2, msg: "--graph"},
		{args: []string{"--tokens", "1", "--backend", "sim", "--graph-cache", "0"}, code: 2, msg: "--graph-cache"},
		{args: []string{"--tokens", "1", "--backend", "sim", "--target", "tpu"}, code: 2, msg: "tpu"},
		{args: []string{"--tokens", "1", "--backend", "sim"}, env: map[string]string{"IRTOOL_GRAPH_CACHE_CAPACITY": "lots"}, code: 2, msg: "IRTOOL_GRAPH_CACHE_CAPACITY"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errs := runCLI(t, append([]string{"run"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Errorf("run %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, tc.code, tc.msg)
			}
		})
	}
}
