package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sampledRun is run --json's tokens, text and sampling settings.
type sampledRun struct {
	Tokens   []int32 `json:"tokens"`
	Text     string  `json:"text"`
	Sampling *struct {
		Temp          float32 `json:"temp"`
		TopK          int     `json:"top_k"`
		TopP          float32 `json:"top_p"`
		MinP          float32 `json:"min_p"`
		RepeatPenalty float32 `json:"repeat_penalty"`
		RepeatLastN   int     `json:"repeat_last_n"`
		Seed          *uint64 `json:"seed"`
		SeedRandom    bool    `json:"seed_random"`
	} `json:"sampling"`
}

func runSampled(t *testing.T, args ...string) (sampledRun, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"run", "--json"}, args...), &out, &errb); code != 0 {
		t.Fatalf("irtool run %v: exit %d: %s", args, code, errb.String())
	}
	var r sampledRun
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("irtool run %v: bad JSON: %v\n%s", args, err, out.String())
	}
	return r, errb.String()
}

// runText is run's stdout without --json.
func runText(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"run"}, args...), &out, &errb); code != 0 {
		t.Fatalf("irtool run %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// The acceptance runs on the embedded model: the same seed twice gives the
// same text, another seed another, --temp 0 the greedy text, and the
// JSON reports the settings and the seed.
func TestRunSampling(t *testing.T) {
	sample := []string{"-p", "Once upon a time", "-n", "24", "--temp", "0.8", "--top-k", "40", "--top-p", "0.95"}
	a := runText(t, append(sample, "--seed", "42")...)
	if b := runText(t, append(sample, "--seed", "42")...); a != b {
		t.Errorf("seed 42 twice:\n%q\n%q", a, b)
	}
	if c := runText(t, append(sample, "--seed", "7")...); c == a {
		t.Errorf("seeds 42 and 7 gave the same text %q", a)
	}
	greedy := runText(t, "-p", "Once upon a time", "-n", "24")
	if a == greedy {
		t.Errorf("seed 42 gave the greedy text %q", a)
	}
	for _, args := range [][]string{
		{"--temp", "0"},
		{"--temp", "0", "--seed", "42", "--top-k", "2", "--top-p", "0.5", "--min-p", "0.5"},
		{"--repeat-penalty", "3", "--repeat-last-n", "0"}, // a penalty over no tokens
	} {
		if g := runText(t, append([]string{"-p", "Once upon a time", "-n", "24"}, args...)...); g != greedy {
			t.Errorf("%v: %q, want the greedy text %q", args, g, greedy)
		}
	}
	if g := runText(t, "-p", "Once upon a time", "-n", "24", "--repeat-penalty", "3"); g == greedy {
		t.Errorf("--repeat-penalty 3 left the greedy text %q", g)
	}

	r, _ := runSampled(t, append(sample, "--seed", "42", "--min-p", "0.1", "--repeat-penalty", "1.1", "--repeat-last-n", "16")...)
	s := r.Sampling
	if s == nil || s.Temp != 0.8 || s.TopK != 40 || s.TopP != 0.95 || s.MinP != 0.1 || s.RepeatPenalty != 1.1 || s.RepeatLastN != 16 ||
		s.Seed == nil || *s.Seed != 42 || s.SeedRandom {
		t.Errorf("--json sampling: %+v", s)
	}
	// Greedy runs report no seed, so their JSON stays the same run to run.
	if r, _ := runSampled(t, "-n", "4"); r.Sampling == nil || r.Sampling.Seed != nil || r.Sampling.Temp != 0 {
		t.Errorf("greedy --json sampling: %+v", r.Sampling)
	}

	// No --seed: a random one, printed on stderr and in the JSON, which
	// repeats the run.
	r1, stderr := runSampled(t, sample...)
	if r1.Sampling == nil || r1.Sampling.Seed == nil || !r1.Sampling.SeedRandom {
		t.Fatalf("no --seed: sampling %+v", r1.Sampling)
	}
	m := regexp.MustCompile(`--seed (\d+) repeats this run`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no --seed: stderr does not name the seed:\n%s", stderr)
	}
	r2, _ := runSampled(t, append(sample, "--seed", m[1])...)
	if !eqIDs(r1.Tokens, r2.Tokens) || r2.Sampling.SeedRandom {
		t.Errorf("--seed %s: %v, the random run drew %v", m[1], r2.Tokens, r1.Tokens)
	}
}

// The sampler runs on the host over each backend's logits: the same seed
// draws the same tokens on the CPU, the simulated device and split over
// ranks and stages.
func TestRunSamplingBackends(t *testing.T) {
	base := []string{"-p", "Once upon a time", "-n", "24", "--temp", "0.8", "--seed", "42", "--repeat-penalty", "1.1"}
	want, _ := runSampled(t, base...)
	for _, extra := range [][]string{
		{"--backend", "sim"},
		{"--backend", "sim", "--graph", "off"},
		{"--backend", "sim", "--tp", "2"},
		{"--backend", "sim", "--pp", "2"},
		{"--backend", "cpu", "--tp", "2"},
		{"--ubatch", "2"},
	} {
		if got, _ := runSampled(t, append(base, extra...)...); !eqIDs(got.Tokens, want.Tokens) {
			t.Errorf("%v: %v, want the cpu backend's %v", extra, got.Tokens, want.Tokens)
		}
	}
}

// -f FILE reads the prompt: the same text as -p, one trailing newline
// dropped as llama.cpp does.
func TestRunPromptFile(t *testing.T) {
	dir := t.TempDir()
	want := runText(t, "-p", "Once upon a time", "-n", "16")
	for name, content := range map[string]string{"plain.txt": "Once upon a time", "newline.txt": "Once upon a time\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, flag := range []string{"-f", "--file"} {
			if got := runText(t, flag, path, "-n", "16"); got != want {
				t.Errorf("%s %s: %q, want -p's %q", flag, name, got, want)
			}
		}
	}
}

// Bad sampling flags and -f misuse are refused before any work, in one
// line naming the flag (or file) and the range.
func TestRunSamplingRefusals(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.txt")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--top-k", "-1"}, 2, "--top-k -1: want 0 (all tokens) or a positive number"},
		{[]string{"--top-p", "0"}, 2, "--top-p 0: want a probability in (0, 1]"},
		{[]string{"--top-p", "1.5"}, 2, "--top-p 1.5: want a probability in (0, 1]"},
		{[]string{"--temp", "-0.5"}, 2, "--temp -0.5: want 0 (greedy) or a positive temperature"},
		{[]string{"--temp", "NaN"}, 2, "--temp NaN"},
		{[]string{"--min-p", "1.5"}, 2, "--min-p 1.5: want a probability in [0, 1]"},
		{[]string{"--min-keep", "-1"}, 2, "--min-keep -1"},
		{[]string{"--repeat-penalty", "0"}, 2, "--repeat-penalty 0: want a positive factor"},
		{[]string{"--repeat-last-n", "-2"}, 2, "--repeat-last-n -2: want -1 (every token), 0 (off) or a positive number"},
		{[]string{"--seed", "-2"}, 2, "--seed -2: want -1 (random)"},
		{[]string{"-f", empty, "-p", "x"}, 2, "give at most one of -p TEXT and -f FILE"},
		{[]string{"-f", empty, "--tokens", "1"}, 2, "give at most one of -f FILE and --tokens IDS"},
		{[]string{"-f", missing}, 1, "-f " + missing + ": cannot read the prompt: open " + missing + ": no such file or directory"},
		{[]string{"-f", dir}, 1, "-f " + dir + ": cannot read the prompt"},
		{[]string{"-f", empty}, 1, "-f " + empty + ": the prompt file is empty"},
		{[]string{"--backend", "cann", "--tp", "2", "--root-info", filepath.Join(dir, "ri"), "--temp", "0.8"}, 2, "--temp > 0 with --root-info needs --seed"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"run", "-n", "2"}, tc.args...), &out, &errb)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != tc.code || !strings.Contains(first, tc.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, first line %q, stdout %q; want exit %d and %q", tc.args, code, first, out.String(), tc.code, tc.want)
		}
	}
}
