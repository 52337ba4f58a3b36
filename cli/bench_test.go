package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestBenchJSON checks the bench command's JSON contract on the embedded
// model: one record per combination of the lists, in llama-bench's order
// (-ub, then -t; the -p tests, then -n, then -pg). Figures are not
// checked: they are timings.
func TestBenchJSON(t *testing.T) {
	type rec struct {
		Test    string   `json:"test"`
		NPrompt int      `json:"n_prompt"`
		NGen    int      `json:"n_gen"`
		Threads int      `json:"threads"`
		UBatch  int      `json:"ubatch"`
		TokS    float64  `json:"tok_s"`
		Stddev  *float64 `json:"stddev"`
	}
	for _, c := range []struct {
		args []string
		want []string // test/threads/ubatch of each record
	}{
		{[]string{"-p", "8", "-n", "4", "-r", "2", "-t", "2"}, []string{"pp8/2/512", "tg4/2/512"}},
		{[]string{"-p", "8", "-n", "4", "-r", "2", "--reference", "--passes", "none", "-t", "1"}, []string{"pp8/1/512", "tg4/1/512"}},
		{[]string{"-p", "4,8", "-n", "2", "-t", "1,2", "-r", "1"}, []string{"pp4/1/512", "pp8/1/512", "tg2/1/512", "pp4/2/512", "pp8/2/512", "tg2/2/512"}},
		{[]string{"-p", "8", "-p", "16", "-n", "0", "-ub", "4,512", "-t", "1", "-r", "1"}, []string{"pp8/1/4", "pp16/1/4", "pp8/1/512", "pp16/1/512"}},
		{[]string{"-p", "2-6+2", "-n", "1-4*2", "-t", "1", "-r", "1"}, []string{"pp2/1/512", "pp4/1/512", "pp6/1/512", "tg1/1/512", "tg2/1/512", "tg4/1/512"}},
		{[]string{"-p", "0", "-n", "0", "-pg", "8,4", "-pg", "4,2", "-t", "1", "-r", "1"}, []string{"pp8+tg4/1/512", "pp4+tg2/1/512"}},
	} {
		code, out, errb := runCLI(t, append([]string{"bench", "--json"}, c.args...)...)
		if code != 0 {
			t.Fatalf("bench %v: exit %d: %s", c.args, code, errb)
		}
		var got struct {
			Model       string `json:"model"`
			Repetitions int    `json:"repetitions"`
			Results     []rec  `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("bench %v: %v\n%s", c.args, err, out)
		}
		if got.Model != "embedded:stories260K.gguf" || got.Repetitions < 1 {
			t.Errorf("bench %v: header %+v", c.args, got)
		}
		var tests []string
		for _, r := range got.Results {
			tests = append(tests, fmt.Sprintf("%s/%d/%d", r.Test, r.Threads, r.UBatch))
			want := fmt.Sprintf("pp%d", r.NPrompt)
			switch {
			case r.NPrompt == 0:
				want = fmt.Sprintf("tg%d", r.NGen)
			case r.NGen > 0:
				want += fmt.Sprintf("+tg%d", r.NGen)
			}
			if r.Test != want || r.TokS <= 0 || r.Stddev == nil {
				t.Errorf("bench %v: record %+v", c.args, r)
			}
		}
		if !slices.Equal(tests, c.want) {
			t.Errorf("bench %v: records %q, want %q", c.args, tests, c.want)
		}
	}
}

func TestBenchTableAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "-p", "4,8", "-n", "0", "-r", "1", "-t", "1"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "| 1 | pp4 |") || !strings.Contains(s, "| 1 | pp8 |") || strings.Contains(s, "tg") || strings.Contains(s, "n_ubatch") {
		t.Errorf("table:\n%s", s)
	}
	out.Reset()
	if code := run([]string{"bench", "-p", "4", "-n", "0", "-r", "1", "-t", "1", "-ub", "2"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "| n_ubatch |") || !strings.Contains(s, "| 1 | 2 | pp4 |") {
		t.Errorf("table with -ub 2:\n%s", s)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-p", "0", "-n", "0"}, "nothing to measure"},
		{[]string{"-r", "0"}, "-r 0"},
		{[]string{"-t", "-1"}, `"-1" is not a number`},
		{[]string{"-t", "2000"}, "-t 2000"},
		{[]string{"-p", "8,x"}, `"x" is not a number`},
		{[]string{"-p", "1,,2"}, `"" is not a number`},
		{[]string{"-p", "8-4"}, "first <= last"},
		{[]string{"-p", "1-8+0"}, "step must be a positive"},
		{[]string{"-p", "1-8*1"}, "multiplier must be at least 2"},
		{[]string{"-p", "1-100000"}, "more than 1024"},
		{[]string{"-ub", "0"}, "--ubatch 0"},
		{[]string{"-pg", "8"}, "want PP,TG"},
		{[]string{"-pg", "8,4,2"}, "want PP,TG"},
		{[]string{"a.gguf", "b.gguf"}, "at most one model"},
	} {
		errb.Reset()
		if code := run(append([]string{"bench"}, c.args...), &out, &errb); code != 2 || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("bench %v: exit %d, %q; want 2 and %q", c.args, code, errb.String(), c.msg)
		}
	}
}
