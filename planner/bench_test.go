package planner

import (
	"context"
	"testing"
	"time"
)

// The benchmarks measure the numbers reported in docs/PLANNER.md; each
// reports the arena as a multiple of the lower bound ("xLB"). Run them with
// -benchtime 1x: every iteration of Best* spends up to its budget.
//
//	go test ./planner/ -run '^$' -bench . -benchtime 1x

var realTraces = []string{"idealloc/resnet50.csv", "idealloc/G_1.csv", "idealloc/pangu_2.6B.csv"}

var miniMalloc = []string{"A", "B", "C", "D", "E", "F", "G"}

func benchSolve(b *testing.B, file, strategy string, opts Options) {
	p := readBench(b, file)
	b.ResetTimer()
	var rep *Report
	for b.Loop() {
		var err error
		_, rep, err = Solve(context.Background(), p, strategy, opts)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rep.Ratio, "xLB")
	b.ReportMetric(float64(rep.Arena-rep.LowerBound)/float64(rep.LowerBound)*1e6, "ppm_over_LB")
}

func BenchmarkGreedySize(b *testing.B) {
	for _, f := range realTraces {
		b.Run(f, func(b *testing.B) { benchSolve(b, f, StrategyGreedySize, Options{}) })
	}
	for _, n := range miniMalloc {
		b.Run(n, func(b *testing.B) { benchSolve(b, "minimalloc/"+n+".1048576.csv", StrategyGreedySize, Options{}) })
	}
}

// BenchmarkBestRealTraces runs best with the default 10 s budget; it stops
// as soon as it reaches the lower bound (resnet50, G_1) or, on pangu_2.6B,
// when the search has nothing affordable left to try.
func BenchmarkBestRealTraces(b *testing.B) {
	for _, f := range realTraces {
		b.Run(f, func(b *testing.B) { benchSolve(b, f, StrategyBest, Options{}) })
	}
}

// BenchmarkBestPangu1s runs best on pangu_2.6B (18,692 buffers) under a
// one-second budget.
func BenchmarkBestPangu1s(b *testing.B) {
	benchSolve(b, "idealloc/pangu_2.6B.csv", StrategyBest, Options{Budget: time.Second})
}

// BenchmarkBestMiniMalloc runs best on MiniMalloc's challenging instances
// with a 10 s budget each.
func BenchmarkBestMiniMalloc(b *testing.B) {
	for _, n := range miniMalloc {
		b.Run(n, func(b *testing.B) {
			benchSolve(b, "minimalloc/"+n+".1048576.csv", StrategyBest, Options{Budget: 10 * time.Second})
		})
	}
}

func BenchmarkLowerBoundPangu(b *testing.B) {
	p := readBench(b, "idealloc/pangu_2.6B.csv")
	for b.Loop() {
		LowerBound(p)
	}
}

func BenchmarkValidatePangu(b *testing.B) {
	p := readBench(b, "idealloc/pangu_2.6B.csv")
	a, _, err := Solve(context.Background(), p, StrategyGreedySize, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := Validate(p, a); err != nil {
			b.Fatal(err)
		}
	}
}
