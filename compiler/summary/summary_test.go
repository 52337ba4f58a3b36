package summary_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/compiler/summary"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// compileEmbedded runs every stage of the driver on the embedded model for
// target, keeping the pass snapshots.
func compileEmbedded(t *testing.T, target string) (*ir.Graph, *compiler.Result) {
	t.Helper()
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := models.Build(f, models.Options{NCtx: 256})
	if err != nil {
		t.Fatal(err)
	}
	r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: target, UBatch: 32, PassOptions: passes.Options{Snapshots: true}})
	if err != nil {
		t.Fatal(err)
	}
	return m.Graph, r
}

func TestRecords(t *testing.T) {
	_, r := compileEmbedded(t, "ascend910b")
	mem := summary.MemoryOf(r.Memory.Plan, r.Memory.Bindings.String())
	if mem.ArenaBytes <= 0 || mem.LowerBoundBytes > mem.ArenaBytes || mem.Buffers == 0 || mem.Bindings == "" {
		t.Errorf("MemoryOf = %+v", mem)
	}
	p := summary.PartitionOf(r)
	if p.Target != "ascend910b" || p.NPUNodes == 0 || p.NPUNodes+p.CPUNodes == 0 || p.Segments != len(r.Partition.Segments) {
		t.Errorf("PartitionOf = %+v", p)
	}
	prog := summary.ProgramOf(r.Program)
	if prog.Kernels != r.Program.Kernels() || prog.Segments == 0 || prog.CapturableSegments > prog.Segments || len(prog.KernelsByName) == 0 {
		t.Errorf("ProgramOf = %+v", prog)
	}
	pr := summary.PredictedOf(*r.Prediction, nil)
	if pr.EagerUSPerToken <= 0 || pr.EagerTokPerS != summary.PerSecond(pr.EagerUSPerToken) || pr.PromptTokens != 0 {
		t.Errorf("PredictedOf = %+v", pr)
	}
	// A program against itself differs nowhere.
	for _, d := range summary.KernelDiffs(r.Program, r.Program) {
		if d.DiffUS != 0 || d.IrtoolCalls != d.LlamaCppCalls {
			t.Errorf("KernelDiffs(p, p): %+v", d)
		}
	}
	if got := summary.KernelSummary(map[string]int{"b": 2, "a": 1}); got != "a x1, b x2" {
		t.Errorf("KernelSummary = %q", got)
	}
	if got := summary.PerSecond(0); got != 0 {
		t.Errorf("PerSecond(0) = %v", got)
	}
}

func TestViews(t *testing.T) {
	input, r := compileEmbedded(t, "ascend910b")
	g, part, err := summary.PartitionView(r, "ascend910b", false)
	if err != nil || g != r.Graph() || len(part.Nodes) == 0 {
		t.Fatalf("PartitionView: %v, %d nodes", err, len(part.Nodes))
	}
	_, segs, err := summary.PartitionView(r, "ascend910b", true)
	if err != nil || len(segs.Segments) != len(r.Program.Segments) {
		t.Fatalf("segments view: %v, %d segments, the program has %d", err, len(segs.Segments), len(r.Program.Segments))
	}
	rep, err := summary.Report(summary.ReportInfo{Model: "stories260K", Arch: "llama", Target: "ascend910b", Passes: "default", Ctx: 256, UBatch: 32, KVType: "f16", KVWrite: "set_rows"}, input, r)
	if err != nil {
		t.Fatal(err)
	}
	// as built, one column per pass snapshot, then the partitioned graph.
	if len(rep.Columns) < 3 || rep.Columns[0].Graph != input || len(rep.Charts) != 3 || rep.Partition == nil || rep.Program == nil {
		t.Fatalf("report: %d columns, %d charts, partition %v, program %v", len(rep.Columns), len(rep.Charts), rep.Partition != nil, rep.Program != nil)
	}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil || !strings.Contains(buf.String(), "irtool compile stories260K") {
		t.Errorf("WriteHTML: %v", err)
	}

	if _, _, err := summary.PartitionView(&compiler.Result{}, "cpu", false); err == nil || !strings.Contains(err.Error(), `target "cpu"`) {
		t.Errorf("PartitionView without a partition: %v", err)
	}
}

func TestDraw(t *testing.T) {
	_, r := compileEmbedded(t, "ascend910b")
	p := summary.Picture{Title: "t", ChartWhat: "stories260K: worst case", UBatch: 32, Ctx: 256, Layer: -1, Target: "ascend910b"}
	for _, c := range []struct {
		view, format, want string
	}{
		{"graph", "dot", "digraph"},
		{"partition", "dot", "digraph"},
		{"segments", "dot", "digraph"},
		{"interference", "dot", "graph"},
		{"liveness", "svg", "<svg"},
		{"liveness", "html", "<html"},
		{"interference", "svg", "<svg"},
		{"buffers", "txt", "stories260K: worst case n_tokens=32, n_kv=256"},
	} {
		p.View, p.Format = c.view, c.format
		out, err := summary.Draw(context.Background(), r, p)
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s as %s: %v; output lacks %q", c.view, c.format, err, c.want)
		}
	}
	p.View, p.Format, p.Layer = "buffers", "txt", 99
	if _, err := summary.Draw(context.Background(), r, p); err == nil || !strings.Contains(err.Error(), "--layer") {
		t.Errorf("layer 99: %v", err)
	}
}

func TestPassesOf(t *testing.T) {
	_, r := compileEmbedded(t, "cpu")
	out, total := summary.PassesOf(r.PassResult)
	if len(out) != len(r.PassResult.Passes) || total <= 0 {
		t.Fatalf("%d records for %d passes, %v ms", len(out), len(r.PassResult.Passes), total)
	}
	changed := 0
	for i, p := range out {
		if p.Name != r.PassResult.Passes[i].Name || p.RuleHits == nil || p.Check != nil {
			t.Errorf("record %d: %+v", i, p)
		}
		if p.Changed {
			changed++
		}
	}
	if changed == 0 || out[len(out)-1].NodesAfter != r.Optimised.NumOps() && out[len(out)-1].NodesAfter != len(r.Optimised.Nodes) {
		t.Errorf("%d passes changed the graph; last nodes_after %d, graph %d ops", changed, out[len(out)-1].NodesAfter, r.Optimised.NumOps())
	}
}
