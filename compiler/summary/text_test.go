package summary_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler/summary"
)

// WritePasses: the pipeline's line, a row per pass and the op table, whose
// counts are the graphs'.
func TestWritePasses(t *testing.T) {
	in, r := compileEmbedded(t, "ascend910b")
	out, total := summary.PassesOf(r.PassResult)
	var buf bytes.Buffer
	summary.WritePasses(&buf, r.Pipeline, out, total, in, r.Optimised)
	text := buf.String()
	head := fmt.Sprintf("passes %s: %d -> %d ops in ", r.Pipeline, in.NumOps(), r.Optimised.NumOps())
	if !strings.HasPrefix(text, head) {
		t.Errorf("first line: want prefix %q in\n%s", head, text)
	}
	for _, p := range out {
		if !strings.Contains(text, "\n  "+p.Name+" ") {
			t.Errorf("no row for pass %s", p.Name)
		}
	}
	for op, n := range in.OpCounts() {
		row := fmt.Sprintf("\n  %-20s %6d %6d\n", op, n, r.Optimised.OpCounts()[op])
		if !strings.Contains(text, row) {
			t.Errorf("no op row %q", row)
		}
	}
	if strings.Contains(text, " \n") {
		t.Errorf("trailing blanks in\n%s", text)
	}
}

// WriteCompare: one line per layout, with the graph-order bound.
func TestWriteCompare(t *testing.T) {
	_, r := compileEmbedded(t, "ascend910b")
	var buf bytes.Buffer
	summary.WriteCompare(&buf, r.Memory.Compare)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	c := r.Memory.Compare
	if len(lines) != 2 || !strings.HasPrefix(lines[0], fmt.Sprintf("  this target's layout: ours %d B, ggml-alloc (gallocr replay) %d B; lower bound %d B", c.Target.OursBytes, c.Target.GallocrBytes, c.Target.GraphOrderBound)) ||
		!strings.HasPrefix(lines[1], "  ggml's layout (llama.cpp's compute buffer): ours ") {
		t.Errorf("lines:\n%s", buf.String())
	}
}
