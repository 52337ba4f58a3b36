package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
)

// refGeneration reads llama.cpp's greedy continuation of stories260K.
func refGeneration(t *testing.T) (prompt, tokens []int32, text string) {
	t.Helper()
	ref := testmodel.LoadRun(t, testref.Shared(t, "llamacpp/stories260K.llamacpp.json"))
	return ref.Prompt.Tokens, ref.Generation.Tokens, ref.Generation.Text
}

type runOut struct {
	Model        string      `json:"model"`
	Backend      string      `json:"backend"`
	PromptTokens []int32     `json:"prompt_tokens"`
	Tokens       []int32     `json:"tokens"`
	Text         *string     `json:"text"`
	Logits       [][]float32 `json:"logits"`
	Timing       struct {
		LoadMS           *float64 `json:"load_ms"`
		PrefillMS        *float64 `json:"prefill_ms"`
		DecodeTokensPerS *float64 `json:"decode_tokens_per_s"`
	} `json:"timing"`
}

func runJSONCmd(t *testing.T, args ...string) runOut {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"run"}, args...), &out, &errb); code != 0 {
		t.Fatalf("irtool run %v: exit %d: %s", args, code, errb.String())
	}
	var r runOut
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("irtool run %v: bad JSON: %v\n%s", args, err, out.String())
	}
	return r
}

func eqIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRunMatchesLlamaCpp checks the run command's JSON contract against
// llama.cpp's greedy generation on stories260K, with the model path and
// flags in several orders.
func TestRunMatchesLlamaCpp(t *testing.T) {
	prompt, want, wantText := refGeneration(t)
	model := testref.Testdata("stories260K.gguf")
	ids := "1,403,407,261,378"
	for _, args := range [][]string{
		{model, "--tokens", ids, "-n", "32", "--json"},
		{"--tokens", ids, model, "-n", "32", "--json", "--backend", "cpu"},
		{"-n", "32", "--json", "--tokens", ids}, // embedded model
		{"-p", "Once upon a time", "-n", "32", "--json"},
		{"-p", "Once upon a time", "-n", "32", "--json", "--kv-write", "cpy", "--kv-type", "f32"},
	} {
		r := runJSONCmd(t, args...)
		if !eqIDs(r.PromptTokens, prompt) {
			t.Errorf("%v: prompt_tokens %v, want %v", args, r.PromptTokens, prompt)
		}
		if !eqIDs(r.Tokens, want) {
			t.Errorf("%v: tokens\n got %v\nwant %v", args, r.Tokens, want)
		}
		if r.Text == nil || *r.Text != wantText {
			t.Errorf("%v: text %v, want %q", args, r.Text, wantText)
		}
		if r.Timing.LoadMS == nil || r.Timing.PrefillMS == nil || r.Timing.DecodeTokensPerS == nil {
			t.Errorf("%v: timing fields missing", args)
		}
	}
}

func TestRunLogits(t *testing.T) {
	r := runJSONCmd(t, "--tokens", "1,403,407", "-n", "3", "--json", "--logits")
	if len(r.Logits) != 3 {
		t.Fatalf("%d logit rows for 3 tokens", len(r.Logits))
	}
	for i, row := range r.Logits {
		if len(row) != 512 {
			t.Fatalf("row %d has %d logits, want n_vocab 512", i, len(row))
		}
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if int32(best) != r.Tokens[i] {
			t.Errorf("token %d is %d but its logits' argmax is %d", i, r.Tokens[i], best)
		}
	}
}

func TestRunText(t *testing.T) {
	_, _, wantText := refGeneration(t)
	var out, errb bytes.Buffer
	if code := run([]string{"run", "-p", "Once upon a time", "-n", "32"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got, want := out.String(), "Once upon a time"+wantText+"\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if !strings.Contains(errb.String(), "tok/s") {
		t.Errorf("stderr lacks the timing line: %q", errb.String())
	}
}

func TestRunErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-p", "x", "--tokens", "1", "-n", "4"}, 2, "at most one of -p"},
		{[]string{"--tokens", "1,x"}, 2, "not a token id"},
		{[]string{"--tokens", "1,99999", "-n", "2"}, 2, "id 99999 is outside the vocabulary"},
		{[]string{"--tokens", "1,,2"}, 2, "id 2 is empty"},
		{[]string{"--tokens", "1,2,"}, 2, "id 3 is empty"},
		{[]string{"--tokens", "1", "--ctx", "-1"}, 2, "--ctx -1"},
		{[]string{"--tokens", "1", "--ubatch", "0"}, 2, "--ubatch 0"},
		{[]string{"--tokens", "1", "--threads", "-2"}, 2, "--threads -2"},
		{[]string{"--tokens", "1", "--backend", "sim", "-t", "2"}, 2, "-t applies to --backend cpu only"},
		{[]string{"--tokens", "1", "--backend", "sim", "--check-numerics"}, 2, "--check-numerics applies to --backend cpu"},
		{[]string{"--tokens", "1", "--logits"}, 2, "--logits needs --json"},
		{[]string{"--tokens", "1", "--kv-type", "q8"}, 2, "--kv-type"},
		{[]string{"--tokens", "1", "--passes", "no-such-pass"}, 2, "--passes"},
		{[]string{"--tokens", "1", "-n", "3000"}, 2, "need 3000 KV cells, more than the default --ctx (the model's context_length)=2048"},
		{[]string{"--tokens", "1", "-n", "3000", "-c", "0"}, 2, "need 3000 KV cells, more than the model's context_length=2048"},
		{[]string{"-m"}, 2, `flag needs an argument: -m` + "\nrun \"irtool help run\" for the flags\n"},
		{[]string{"--tokens", "1", "--backend", "gpu"}, 2, "backend"},
		{[]string{"--tokens", "1", "--kv-write", "bogus"}, 2, "bogus"},
		{[]string{"--tokens", "1", "-n", "600", "--ctx", "256"}, 2, "need 600 KV cells, more than --ctx=256"},
		{[]string{"/no/such/model.gguf", "--tokens", "1"}, 1, "no/such/model.gguf"},
		{[]string{"-p", "ok \xff"}, 1, "UTF-8"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"run"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("run %q: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errb.String(), c.code, c.msg)
		}
	}
}
