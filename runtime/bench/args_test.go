package bench_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/runtime/bench"
)

// TestParseRange: llama-bench's list elements, and the ones it refuses.
func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"7", []int{7}}, {"0", []int{0}}, {"1-4", []int{1, 2, 3, 4}}, {"1-8+3", []int{1, 4, 7}},
		{"1-16*2", []int{1, 2, 4, 8, 16}}, {"5-5", []int{5}}, {"64-600*2", []int{64, 128, 256, 512}},
	} {
		got, err := bench.ParseRange(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseRange(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"-1", "x", "4-1", "1-8+0", "1-8*1", "0-8*2", "1-100000"} {
		if got, err := bench.ParseRange(in); err == nil {
			t.Errorf("ParseRange(%q) = %v, want an error", in, got)
		}
	}
}

// TestParseList: comma-separated elements, bounded.
func TestParseList(t *testing.T) {
	got, err := bench.ParseList("1, 4-6,8-32*2", bench.MaxListLen)
	if want := []int{1, 4, 5, 6, 8, 16, 32}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseList = %v, %v; want %v", got, err, want)
	}
	if _, err := bench.ParseList("1-4,5", 4); err == nil || !strings.Contains(err.Error(), "more than 1024 values") {
		t.Errorf("ParseList over the limit: %v", err)
	}
}

// TestParsePair: -pg's PP,TG.
func TestParsePair(t *testing.T) {
	if p, err := bench.ParsePair("512, 128"); err != nil || p != [2]int{512, 128} {
		t.Errorf("ParsePair = %v, %v", p, err)
	}
	for _, in := range []string{"8", "8,4,2", "-1,2", "a,b"} {
		if _, err := bench.ParsePair(in); err == nil {
			t.Errorf("ParsePair(%q): no error", in)
		}
	}
}

// TestWriteTable: llama-bench's markdown columns, with n_ubatch on demand.
func TestWriteTable(t *testing.T) {
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs := []bench.Result{{Test: "pp4", Threads: 2, UBatch: 512, TokS: 1234.5, Stddev: 6.25}}
	var buf bytes.Buffer
	bench.WriteTable(&buf, f, "m.gguf", false, rs)
	want := "| model | size | params | backend | threads | test | t/s |\n| --- | ---: | ---: | --- | ---: | ---: | ---: |\n" +
		"| m.gguf | 1.12 MiB | 0.29 M | irtool cpu | 2 | pp4 | 1234.50 ± 6.25 |\n"
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	bench.WriteTable(&buf, f, "m.gguf", true, rs)
	if !strings.Contains(buf.String(), "| threads | n_ubatch | test |") || !strings.Contains(buf.String(), "| 2 | 512 | pp4 |") {
		t.Errorf("table with n_ubatch:\n%s", buf.String())
	}
}
