package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchJSON checks the bench command's JSON contract on the embedded
// model (figures are not checked: they are timings).
func TestBenchJSON(t *testing.T) {
	for _, args := range [][]string{
		{"-p", "8", "-n", "4", "-r", "2", "-t", "2", "--json"},
		{"-p", "8", "-n", "4", "-r", "2", "--reference", "--json", "--passes", "none"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"bench"}, args...), &out, &errb); code != 0 {
			t.Fatalf("bench %v: exit %d: %s", args, code, errb.String())
		}
		var got struct {
			Model       string `json:"model"`
			Threads     int    `json:"threads"`
			Repetitions int    `json:"repetitions"`
			Prefill     *struct {
				N      int      `json:"n"`
				TokS   float64  `json:"tok_s"`
				Stddev *float64 `json:"stddev"`
			} `json:"prefill"`
			Decode *struct {
				N      int      `json:"n"`
				TokS   float64  `json:"tok_s"`
				Stddev *float64 `json:"stddev"`
			} `json:"decode"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("bench %v: %v\n%s", args, err, out.String())
		}
		if got.Model != "embedded:stories260K.gguf" || got.Threads < 1 || got.Repetitions != 2 {
			t.Errorf("bench %v: header %+v", args, got)
		}
		if got.Prefill == nil || got.Prefill.N != 8 || got.Prefill.TokS <= 0 || got.Prefill.Stddev == nil {
			t.Errorf("bench %v: prefill %+v", args, got.Prefill)
		}
		if got.Decode == nil || got.Decode.N != 4 || got.Decode.TokS <= 0 || got.Decode.Stddev == nil {
			t.Errorf("bench %v: decode %+v", args, got.Decode)
		}
	}
}

func TestBenchTableAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "-p", "4", "-n", "0", "-r", "1"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "| pp4 |") || strings.Contains(out.String(), "tg") {
		t.Errorf("table:\n%s", out.String())
	}
	for _, args := range [][]string{{"-p", "0", "-n", "0"}, {"-r", "0"}, {"-t", "-1"}, {"a.gguf", "b.gguf"}} {
		errb.Reset()
		if code := run(append([]string{"bench"}, args...), &out, &errb); code != 2 {
			t.Errorf("bench %v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

func TestMeanStddev(t *testing.T) {
	m, s := meanStddev([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if m != 5 || s < 2.138 || s > 2.139 { // sample sd = sqrt(32/7)
		t.Errorf("meanStddev = %v, %v", m, s)
	}
	if m, s := meanStddev([]float64{3}); m != 3 || s != 0 {
		t.Errorf("one value: %v, %v", m, s)
	}
}
