package compiler_test

import (
	"context"
	"os"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/ir"
)

// BenchmarkCompile is the whole compile (passes, both memory plans,
// partition, lowering) of real-sized graphs with the options irtool
// compile uses: the Qwen2.5-0.5B shape read from its IR text and the
// Llama-3.2-1B shape built from its configuration, both at n_ctx 512.
// Each sub-benchmark runs the stages up to one (Until), so the
// differences show where the time goes; cpu-ms/op is
// the process's CPU time per compile (the planner's searches run
// concurrently, so it can exceed the wall time on an idle machine).
func BenchmarkCompile(b *testing.B) {
	data, err := os.ReadFile("../cli/testdata/qwen2.5-0.5b-shapes.ir")
	if err != nil {
		b.Fatal(err)
	}
	qwen, err := ir.ParseString(string(data))
	if err != nil {
		b.Fatal(err)
	}
	llama := testmodel.Llama32(b, 512).Graph
	for _, c := range []struct {
		name string
		g    *ir.Graph
	}{{"qwen2.5-0.5b", qwen}, {"llama3.2-1b", llama}} {
		for _, until := range compiler.Stages() {
			b.Run(c.name+"/"+until.String(), func(b *testing.B) {
				opts := compiler.Options{Until: until}
				start := cpuTime()
				for b.Loop() {
					if _, err := compiler.Compile(context.Background(), c.g, opts); err != nil {
						b.Fatal(err)
					}
				}
				if cpu := cpuTime() - start; cpu > 0 {
					b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				}
			})
		}
	}
}
