package parallel_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/target"
)

// AnalyzeRank fills a rank's record and prints its lines; a device too
// small for the rank is an error naming the rank and what it holds.
func TestAnalyzeRank(t *testing.T) {
	f, m := embedded(t)
	tp, err := models.ShardTPFile(f, m.Options, models.TPOptions{Ranks: 2})
	if err != nil {
		t.Fatal(err)
	}
	rms, err := parallel.Split(m, tp, 1)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := parallel.Rules()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := parallel.LinkProfile("ascend910b", "ring")
	if err != nil {
		t.Fatal(err)
	}
	if prof.Interconnect.Algorithm != target.Algorithm("ring") {
		t.Errorf("LinkProfile: algorithm %q, want ring", prof.Interconnect.Algorithm)
	}
	rm := rms[1]
	r, err := compiler.Compile(context.Background(), rm.Model.Graph, compiler.Options{Strategy: "greedy-size", Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	var par parallel.Prediction
	var buf bytes.Buffer
	out := parallel.Rank{Rank: 1}
	if err := parallel.AnalyzeRank(&out, r, rm, prof, parallel.DefaultHCCLBuffMB, &par, &buf); err != nil {
		t.Fatal(err)
	}
	if out.TPRank != 1 || len(out.Collectives) != 11 || out.CollectiveBuffers.Count != 22 || out.CollectiveBytes != out.CollectiveBuffers.Bytes ||
		out.DeviceMemory == nil || !out.DeviceMemory.Fits || out.Step == nil || out.Nodes != r.Graph().NumOps() {
		t.Errorf("record: %+v", out)
	}
	for _, want := range []string{" ops, 11 collectives per step", "  collective buffers: 22 planned in the decode arena", "  device memory: ", " (1 communicator(s) x 2 x 200 MB) of ", "  link model: decode step "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("no %q in\n%s", want, buf.String())
		}
	}

	small := *prof
	npu := *prof.NPU
	npu.MemBytes = 1 << 20
	small.NPU = &npu
	err = parallel.AnalyzeRank(&parallel.Rank{Rank: 1}, r, rm, &small, parallel.DefaultHCCLBuffMB, &par, &bytes.Buffer{})
	if err == nil || !strings.HasPrefix(err.Error(), "rank 1 (tp rank 1, stage 0): needs ") || !strings.Contains(err.Error(), "HCCL_BUFFSIZE 200 MB") {
		t.Errorf("a 1 MiB device: %v", err)
	}
	if _, err := parallel.LinkProfile("cpu", "mesh"); err == nil || !strings.Contains(err.Error(), "--link-algo mesh: target cpu has no NPU interconnect") {
		t.Errorf("LinkProfile(cpu, mesh): %v", err)
	}
}

// WriteSweep prints a row per degree, a refused one with its reason.
func TestWriteSweep(t *testing.T) {
	var buf bytes.Buffer
	parallel.WriteSweep(&buf, []parallel.SweepRow{{TP: 1, StepUS: 100, PredictedTokS: 10000, ComputeUS: 90, WeightBytes: 3 << 20},
		{TP: 3, Error: "n_head 8 is not a multiple of 3"}})
	got := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(got) != 3 || !strings.HasPrefix(got[0], "  tp      step us") ||
		got[1] != "  1           100    10000.0          90              0        3.0  none" || got[2] != "  3    refused: n_head 8 is not a multiple of 3" {
		t.Errorf("sweep:\n%s", buf.String())
	}
}
