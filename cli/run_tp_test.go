package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/internal/testref"
)

type tpRunOut struct {
	Tokens []int32     `json:"tokens"`
	Logits [][]float64 `json:"logits"`
	Stats  struct {
		TP struct {
			Ranks       int            `json:"ranks"`
			Exact       bool           `json:"exact"`
			Collectives map[string]int `json:"collectives_per_step"`
		} `json:"tp"`
		Ranks []json.RawMessage `json:"ranks"`
	} `json:"stats"`
}

func runTPJSON(t *testing.T, args ...string) tpRunOut {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"run", "--json", "--logits"}, args...), &out, &errb)
	require.Equal(t, 0, code, "irtool run %v: %s", args, errb.String())
	var r tpRunOut
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	return r
}

// run --backend sim --tp 2 gives one device's tokens, with logits
// within 1e-3 of max|logit| (the partial sums are added in another
// order) and bit-identical with --tp-exact; --tp 4 on stories260K too.
func TestRunTP(t *testing.T) {
	const ids = "1,403,407,261,378"
	for _, c := range []struct {
		model string
		tp    string
	}{{"stories260K", "2"}, {"stories260K", "4"}, {"synth-llama-Q4_0", "2"}} {
		path := testref.Testdata(c.model + ".gguf")
		want := runTPJSON(t, path, "--tokens", ids, "-n", "8", "--backend", "sim")
		for _, exact := range []bool{false, true} {
			args := []string{path, "--tokens", ids, "-n", "8", "--backend", "sim", "--tp", c.tp}
			if exact {
				args = append(args, "--tp-exact")
			}
			got := runTPJSON(t, args...)
			require.Equal(t, want.Tokens, got.Tokens, "%v", args)
			require.Len(t, got.Stats.Ranks, int(c.tp[0]-'0'), "%v", args)
			require.Equal(t, exact, got.Stats.TP.Exact)
			if exact {
				require.Equal(t, 0, got.Stats.TP.Collectives["all_reduce"])
			} else {
				require.Positive(t, got.Stats.TP.Collectives["all_reduce"])
			}
			for i := range want.Logits {
				scale, worst := 0.0, 0.0
				for j, v := range want.Logits[i] {
					scale = max(scale, math.Abs(v))
					worst = max(worst, math.Abs(v-got.Logits[i][j]))
				}
				if exact {
					require.Equal(t, want.Logits[i], got.Logits[i], "%v step %d", args, i)
				} else {
					require.LessOrEqual(t, worst, 1e-3*scale, "%v step %d", args, i)
				}
			}
		}
	}
	// The cpu backend runs the ranks too.
	got := runTPJSON(t, "--tokens", ids, "-n", "8", "--tp", "2", "--tp-exact")
	want := runTPJSON(t, "--tokens", ids, "-n", "8")
	require.Equal(t, want.Logits, got.Logits)
}

// A degree the heads cannot take fails at once, naming the counts; flag
// conflicts are usage errors.
func TestRunTPRefused(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := run([]string{"run", testref.Testdata("synth-llama-Q4_0.gguf"), "--tp", "3", "-n", "4"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, errb.String(), "tensor parallel over 3 ranks: n_head 4 is not a multiple of 3 (each rank computes whole heads; n_head_kv 2)")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--tp-exact"}, "--tp-exact needs --tp N with N > 1"},
		{[]string{"run", "--tp", "0"}, "--tp 0: want 1..1024 ranks"},
		{[]string{"run", "--pp", "2", "--tp", "2", "--backend", "cann", "--root-info", "f"}, "--root-info runs --tp ranks, not --pp stages"},
		{[]string{"run", "--tp", "2", "--root-info", "f"}, "--root-info needs --backend cann"},
		{[]string{"run", "--tp", "2", "--backend", "cann", "--rank", "1"}, "--rank needs --root-info"},
		{[]string{"run", "--tp", "2", "--backend", "cann", "--rank", "2", "--root-info", "f"}, "--rank 2: want 0..1"},
		{[]string{"compile", "--tp", "2", "--requant", "q8_0"}, "--requant does not apply to --tp yet"},
	} {
		errb.Reset()
		require.Equal(t, 2, run(c.args, &out, &errb), "%v", c.args)
		require.Contains(t, errb.String(), c.want, "%v", c.args)
	}
}

// compile --tp 2 --json has a ranks array of length 2, each rank with its
// memory plans, partition, program and collectives.
func TestCompileTPJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"compile", "--tp", "2", "--json", "--strategy", "greedy-size"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var r struct {
		TP    map[string]any `json:"tp"`
		Ranks []struct {
			Rank        int            `json:"rank"`
			Collectives []string       `json:"collectives"`
			Memory      map[string]any `json:"memory"`
			Partition   map[string]any `json:"partition"`
			Program     map[string]any `json:"program"`
		} `json:"ranks"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Len(t, r.Ranks, 2)
	for i, rk := range r.Ranks {
		require.Equal(t, i, rk.Rank)
		require.Len(t, rk.Collectives, 11)
		require.True(t, strings.Contains(rk.Collectives[0], "all_reduce"), rk.Collectives[0])
		require.NotEmpty(t, rk.Memory)
		require.NotEmpty(t, rk.Partition)
		require.NotEmpty(t, rk.Program)
	}
	require.EqualValues(t, 2, r.TP["ranks"])
}

// viz --tp 2 --rank 1 draws rank 1's graph, its collectives in teal.
func TestVizTP(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"viz", "--tp", "2", "--rank", "1"}, &out, &errb), errb.String())
	dot := out.String()
	require.Contains(t, dot, `label="embedded:stories260K.gguf rank 1 of 2 (graph)"`)
	require.Contains(t, dot, ` all_reduce\n`)
	require.Contains(t, dot, `fillcolor="#ccfbf1"`)
	errb.Reset()
	require.Equal(t, 2, run([]string{"viz", "--tp", "2", "--rank", "2"}, &out, &errb))
	require.Contains(t, errb.String(), "--rank 2: want 0..1 (--tp 2)")
}

// run --pp N gives one device's tokens and logits bit for bit, with
// --tp too (in exact mode).
func TestRunPP(t *testing.T) {
	const ids = "1,403,407,261,378"
	want := runTPJSON(t, "--tokens", ids, "-n", "8", "--backend", "sim")
	for _, args := range [][]string{
		{"--tokens", ids, "-n", "8", "--backend", "sim", "--pp", "2"},
		{"--tokens", ids, "-n", "8", "--backend", "sim", "--pp", "5"},
		{"--tokens", ids, "-n", "8", "--pp", "3"},
	} {
		got := runTPJSON(t, args...)
		require.Equal(t, want.Tokens, got.Tokens, "%v", args)
		require.Equal(t, want.Logits, got.Logits, "%v", args)
	}
	// Both: 2 tensor-parallel ranks of 2 stages each; exact, so bit for bit.
	got := runTPJSON(t, "--tokens", ids, "-n", "8", "--backend", "sim", "--pp", "2", "--tp", "2", "--tp-exact")
	require.Equal(t, want.Logits, got.Logits)
	require.Len(t, got.Stats.Ranks, 4)
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"run", "--pp", "6", "-n", "2"}, &out, &errb))
	require.Contains(t, errb.String(), "pipeline over 6 stages: want 1..5 stages (the graph has 5 layers)")
}
