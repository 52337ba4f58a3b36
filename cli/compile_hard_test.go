package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hardGraphIR writes IR text of a random DAG of n adds whose operands are
// tensors of many sizes (multiples of 16 floats; an add broadcasts a
// smaller operand whose size divides its own) read long after they were
// made: a graph whose memory plan the planner's search does not bring to
// its lower bound, unlike the model graphs, which reach it on the
// constructive strategies alone.
func hardGraphIR(n int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 1))
	ks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 18, 20, 21, 24, 28, 30, 35, 36, 40, 42, 45, 60, 63, 70, 84, 90, 105, 120, 126, 140, 180, 210, 252, 315, 420, 630, 1260}
	type val struct{ id, k int }
	var b strings.Builder
	b.WriteString("graph \"hard\" {\n")
	var vals []val
	bySize := map[int][]int{}
	for i, k := range ks {
		fmt.Fprintf(&b, "  %%%d = input() : f32[%d] \"x%d\"\n", i, 16*k, k)
		vals = append(vals, val{i, k})
		bySize[k] = append(bySize[k], i)
	}
	read := map[int]bool{}
	for i := range n {
		id := len(ks) + i
		k := ks[rng.IntN(len(ks))]
		same := bySize[k]
		x := same[max(0, len(same)-12)+rng.IntN(min(len(same), 12))]
		divs := []int{x}
		for _, v := range vals[max(0, len(vals)-200):] {
			if k%v.k == 0 {
				divs = append(divs, v.id)
			}
		}
		y := divs[rng.IntN(len(divs))]
		read[x], read[y] = true, true
		fmt.Fprintf(&b, "  %%%d = add(%%%d, %%%d) : f32[%d]\n", id, x, y, 16*k)
		vals = append(vals, val{id, k})
		bySize[k] = append(bySize[k], id)
	}
	var outs []string
	for _, v := range vals[len(ks):] {
		if !read[v.id] {
			outs = append(outs, fmt.Sprintf("%%%d", v.id))
		}
	}
	fmt.Fprintf(&b, "  outputs(%s)\n}\n", strings.Join(outs, ", "))
	return b.String()
}

// TestCompileJSONDeterministicHard: on a graph whose plans stay above
// their lower bound (so the search runs out its work cap rather than
// stopping at the bound), compile --json gives the same bytes, timing
// fields aside, on two runs and with --threads 1 and 2: the search is
// bounded by work (planner.WorkBudget), not by the time it got. The
// wall-clock --budget is only a safety cap, generous here so that a loaded
// machine does not hit it (the JSON would say budget_exhausted).
func TestCompileJSONDeterministicHard(t *testing.T) {
	if testing.Short() {
		t.Skip("plans a 2,500-node graph three times")
	}
	path := filepath.Join(t.TempDir(), "hard.ir")
	if err := os.WriteFile(path, []byte(hardGraphIR(2500, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	var first []byte
	for i, threads := range []string{"1", "1", "2"} {
		args := []string{"compile", path, "--json", "--target", "cpu", "--budget", "60s", "--threads", threads}
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var rep struct {
			Memory struct {
				Arena     int64 `json:"arena_bytes"`
				Bound     int64 `json:"lower_bound_bytes"`
				Exhausted bool  `json:"budget_exhausted"`
			} `json:"memory"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"budget_exhausted": true`) {
			t.Fatalf("run %d: the 60 s safety cap cut a search short: the plans are what the time allowed\n%s", i+1, out)
		}
		if rep.Memory.Arena <= rep.Memory.Bound {
			t.Fatalf("the worst-case plan reached its lower bound (%d B): the graph no longer exercises the search's work cap", rep.Memory.Bound)
		}
		got := stripTiming(t, out)
		if i == 0 {
			first = got
			continue
		}
		if !bytes.Equal(got, first) {
			t.Errorf("run %d (--threads %s): JSON differs from run 1 beyond timing fields:\n%s", i+1, threads, firstDiff(first, got))
		}
	}
}
