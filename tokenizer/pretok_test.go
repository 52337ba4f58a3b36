package tokenizer

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPretokenizeGolden checks the hand-written pre-tokenizers against the
// splits that Python's regex module computes from llama.cpp's regex strings
// (testdata/gen_pretok_golden.py).
func TestPretokenizeGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/pretok_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Text   string
			Splits map[string][]string
		}
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 60 {
		t.Fatalf("only %d golden cases", len(g.Cases))
	}
	for i, c := range g.Cases {
		for pre, want := range c.Splits {
			info, ok := preTypes[pre]
			if !ok {
				t.Fatalf("golden pre-tokenizer %q unknown", pre)
			}
			var got []string
			for _, w := range pretokenize(info.kind, c.Text) {
				got = append(got, c.Text[w[0]:w[1]])
			}
			if want == nil {
				want = []string{}
			}
			if got == nil {
				got = []string{}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("case %d %q, pre %s: (-want +got)\n%s", i, c.Text, pre, d)
			}
		}
	}
}
