package cli

import (
	"errors"
	"flag"
	"github.com/irtool/irtool/internal/jsonout"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  []string
		json bool
		n    int
		p    string
	}{
		{nil, []string{}, false, 1, ""},
		{[]string{"m.gguf", "--json"}, []string{"m.gguf"}, true, 1, ""},
		{[]string{"--json", "m.gguf"}, []string{"m.gguf"}, true, 1, ""},
		{[]string{"m.gguf", "-n", "8", "text", "--json"}, []string{"m.gguf", "text"}, true, 8, ""},
		{[]string{"-n=8", "a", "b", "-json=false"}, []string{"a", "b"}, false, 8, ""},
		{[]string{"a", "--", "--json", "-n"}, []string{"a", "--json", "-n"}, false, 1, ""},
		{[]string{"-p", "--", "a", "--json"}, []string{"a"}, true, 1, "--"},
		{[]string{"-p", "-x", "-"}, []string{"-"}, false, 1, "-x"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		asJSON := fs.Bool("json", false, "")
		n := fs.Int("n", 1, "")
		p := fs.String("p", "", "")
		pos, err := parseArgs(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *asJSON != c.json || *n != c.n || *p != c.p {
			t.Errorf("%q: pos %q json %v n %d p %q err %v; want %q %v %d %q", c.args, pos, *asJSON, *n, *p, err, c.pos, c.json, c.n, c.p)
		}
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseArgs(fs, []string{"a", "-nope"}); err == nil {
		t.Error("unknown flag after a positional accepted")
	}
	if _, err := parseArgs(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// TestHelp checks that help lists every registered command in the canonical
// order and describes each one.
func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	var listed []string
	inList := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "Commands:":
			inList = true
		case inList && strings.HasPrefix(line, "  "):
			listed = append(listed, strings.Fields(line)[0])
		case inList:
			inList = false
		}
	}
	var names []string
	for _, c := range sortedCommands() {
		names = append(names, c.Name)
	}
	if !slices.Equal(listed, names) || len(names) != len(commands) {
		t.Errorf("help lists %v, registered %v", listed, names)
	}
	// Canonical commands first, in order; the rest alphabetical.
	last, rest := -1, []string{}
	for _, n := range listed {
		if i := slices.Index(canonicalOrder, n); i >= 0 {
			if i < last || len(rest) > 0 {
				t.Errorf("%s out of canonical order in %v", n, listed)
			}
			last = i
		} else {
			rest = append(rest, n)
		}
	}
	if !slices.IsSorted(rest) {
		t.Errorf("non-canonical commands not alphabetical: %v", rest)
	}
	if !slices.Contains(listed, "inspect") {
		t.Error("inspect not listed")
	}
	for _, name := range names {
		code, out, errs := runCLI(t, "help", name)
		if code != 0 || !strings.HasPrefix(out, "usage: irtool "+name) {
			t.Errorf("help %s: exit %d, %q %q", name, code, out, errs)
		}
	}
	if _, out, _ := runCLI(t, "help", "inspect"); !strings.Contains(out, "-json") {
		t.Errorf("help inspect does not list its flags:\n%s", out)
	}
	for _, h := range []string{"-h", "--help"} {
		if code, out2, _ := runCLI(t, h); code != 0 || out2 != out && !strings.Contains(out2, "Commands:") {
			t.Errorf("%s: exit %d", h, code)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "Commands:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "a", "b"}, "usage: irtool help [COMMAND]"},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", c.args, code, out, errs)
		}
		if len(c.args) == 1 && !strings.Contains(errs, "Commands:") {
			t.Errorf("%q: usage not printed on stderr", c.args)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	err := jsonout.Write(&b, struct {
		B string  `json:"b"`
		A []int   `json:"a"`
		F float32 `json:"f"`
	}{"<&>", []int{1}, 0.1})
	want := "{\n  \"b\": \"<&>\",\n  \"a\": [\n    1\n  ],\n  \"f\": 0.1\n}\n"
	if err != nil || b.String() != want {
		t.Errorf("got %q, %v", b.String(), err)
	}
	if err := jsonout.Write(io.Discard, make(chan int)); err == nil {
		t.Error("unencodable value accepted")
	}
}

func TestOpenModelEmbedded(t *testing.T) {
	f, err := openModel("")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Arch() != "llama" || len(f.Tensors) != 48 || !strings.Contains(f.Name, "embedded") {
		t.Errorf("embedded model: %s %d tensors %q", f.Arch(), len(f.Tensors), f.Name)
	}
}
