package planner_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/irtool/irtool/planner"
)

// WriteText: the summary of a solved instance (three buffers live one
// after the other, so one 64-byte slot holds them all) and one row per
// strategy that ran, in the set's order.
func TestReportWriteText(t *testing.T) {
	p := &planner.Problem{Buffers: []planner.Buffer{{ID: 0, Start: 0, End: 1, Size: 64}, {ID: 1, Start: 1, End: 2, Size: 32}, {ID: 2, Start: 2, End: 3, Size: 64}}}
	set := planner.DefaultStrategies()
	_, rep, err := set.Solve(context.Background(), p, planner.StrategyBest, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, "three.csv", 1, set); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"instance     three.csv (3 buffers, alignment 1)\n", "lower bound  64 B\n", "arena        64 B    1.0000 x LB, by ", "optimal      proven",
		"\n\nstrategy", "greedy-size", "naive        160 B"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	_, table, _ := strings.Cut(out, "\nstrategy")
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		rows = append(rows, strings.Fields(line)[0])
	}
	var want []string
	for _, n := range set.Names() {
		if _, ok := rep.Strategies[n]; ok {
			want = append(want, n)
		}
	}
	if strings.Join(rows, ",") != strings.Join(want, ",") {
		t.Errorf("strategy rows %v, want %v", rows, want)
	}
}
