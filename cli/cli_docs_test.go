package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// flagBlock matches one generated flag table of docs/CLI.md.
var flagBlock = regexp.MustCompile(`(?s)<!-- BEGIN FLAGS ([a-z-]+) [^>]*-->\n(.*?)<!-- END FLAGS -->`)

// TestCLIDocFlags checks that the flag table of every command in
// docs/CLI.md is the one its FlagSet gives (the same rows "irtool help
// COMMAND" prints); go test ./cli -run TestCLIDocFlags -update
// rewrites the tables.
func TestCLIDocFlags(t *testing.T) {
	const path = "../docs/CLI.md"
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(raw)
	seen := map[string]bool{}
	var stale []string
	out := flagBlock.ReplaceAllStringFunc(doc, func(block string) string {
		m := flagBlock.FindStringSubmatch(block)
		name := m[1]
		c, ok := commands[name]
		if !ok {
			t.Errorf("docs/CLI.md has a flag table for %q, which is not a command", name)
			return block
		}
		seen[name] = true
		fs := flagSetOf(c)
		require.NotNil(t, fs, "command %s declares no flags", name)
		want := markdownFlagTable(fs)
		if m[2] != want {
			stale = append(stale, name)
		}
		return fmt.Sprintf("<!-- BEGIN FLAGS %s (generated from the command's flags: go test ./cli -run TestCLIDocFlags -update) -->\n%s<!-- END FLAGS -->", name, want)
	})
	for _, c := range sortedCommands() {
		if !seen[c.Name] {
			t.Errorf("docs/CLI.md has no flag table for command %q: add\n<!-- BEGIN FLAGS %s -->\n<!-- END FLAGS -->\nto its section and run go test ./cli -run TestCLIDocFlags -update", c.Name, c.Name)
		}
	}
	if len(stale) == 0 && out == doc {
		return
	}
	if golden.Update() {
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return
	}
	t.Errorf("docs/CLI.md's flag tables of %s differ from the commands' flags; run go test ./cli -run TestCLIDocFlags -update", strings.Join(stale, ", "))
}

// TestHelpPrintsEveryFlag checks that "irtool help COMMAND" lists every
// flag the command accepts, with its default.
func TestHelpPrintsEveryFlag(t *testing.T) {
	for _, c := range sortedCommands() {
		t.Run(c.Name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			require.Equal(t, 0, run([]string{"help", c.Name}, &stdout, &stderr), stderr.String())
			help := stdout.String()
			fs := flagSetOf(c)
			require.NotNil(t, fs)
			for _, r := range flagRows(fs) {
				dash := "--"
				if len(r.Name) == 1 {
					dash = "-"
				}
				require.Contains(t, help, "  "+dash+r.Name, "flag %s missing from help", r.Name)
				if r.Default != "" {
					require.Contains(t, help, "(default "+r.Default+")", "default of %s missing from help", r.Name)
				}
			}
		})
	}
}

// TestCLIDocJSONFields checks that every JSON field the commands print
// (every json tag of package main, and of the library types they print as
// they are: plan --json's planner.Report, run --json's stats) is named in
// docs/CLI.md.
func TestCLIDocJSONFields(t *testing.T) {
	doc, err := os.ReadFile("../docs/CLI.md")
	require.NoError(t, err)
	for _, rt := range []reflect.Type{reflect.TypeFor[planner.Report](), reflect.TypeFor[program.PhaseStats](),
		reflect.TypeFor[device.CacheStats](), reflect.TypeFor[device.DeviceStats](), reflect.TypeFor[device.PoolStats]()} {
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" && !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("JSON field %q (%s) is not documented in docs/CLI.md", name, rt)
			}
		}
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	tag := regexp.MustCompile("json:\"([a-z0-9_]+)[,\"]")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range tag.FindAllStringSubmatch(string(src), -1) {
			if !regexp.MustCompile("[`\".]" + m[1] + "[`\".]").Match(doc) {
				t.Errorf("%s: JSON field %q is not documented in docs/CLI.md", f, m[1])
			}
		}
	}
}
