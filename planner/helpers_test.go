package planner

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// benchFile returns the path of a benchmark instance under
// the external planner benchmark directory, skipping the test when it is absent.
func benchFile(t testing.TB, rel string) string {
	t.Helper()
	// The small public instances are in testdata/bench (its README).
	if p := filepath.Join("testdata", "bench", rel); fileExists(p) {
		return p
	}
	p := filepath.Join(testref.Root(), "..", "shared", "planner-bench", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("benchmark instance %s is absent", p)
	}
	return p
}

func readBench(t testing.TB, rel string) *Problem {
	t.Helper()
	p, err := ReadCSVFile(benchFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pisarchykLee is the worked example of Pisarchyk & Lee (arXiv 2001.03288):
// eight tensors given as (first op, last op, size) with inclusive ranges.
func pisarchykLee() *Problem {
	raw := [][3]int{{0, 1, 32}, {1, 4, 28}, {2, 5, 36}, {3, 5, 16}, {4, 5, 8}, {5, 7, 64}, {6, 8, 10}, {7, 8, 40}}
	p := &Problem{}
	for i, r := range raw {
		p.Buffers = append(p.Buffers, Buffer{ID: i, Start: r[0], End: r[1] + 1, Size: int64(r[2])})
	}
	return p
}

// randomProblem returns a random instance with n buffers over steps steps.
func randomProblem(rng *rand.Rand, n, steps int, maxSize int64) *Problem {
	p := &Problem{}
	switch rng.IntN(3) {
	case 1:
		p.Alignment = 8
	case 2:
		p.Alignment = 32
	}
	for i := 0; i < n; i++ {
		s := rng.IntN(steps)
		e := s + rng.IntN(steps-s+1)
		size := rng.Int64N(maxSize + 1)
		if rng.IntN(10) == 0 {
			size = 0
		}
		p.Buffers = append(p.Buffers, Buffer{ID: 100 + 3*i, Start: s, End: e, Size: size})
	}
	return p
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
