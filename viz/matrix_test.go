package viz_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/viz"
)

// layeredChart is an input, three layers of two buffers and an output:
// layers 1 and 2 are the same, layer 0 also holds the input still live.
func layeredChart() *viz.Chart {
	buf := func(start, end int, off, size int64, layer int, label, group string) viz.Lifetime {
		return viz.Lifetime{Start: start, End: end, Offset: off, Size: size, Node: -1, Label: label, Group: group, Layer: layer}
	}
	return &viz.Chart{Title: "layered", Arena: 228, LowerBound: 164, Buffers: []viz.Lifetime{
		buf(0, 2, 0, 100, -1, "%0 get_rows inp", "get_rows"),
		buf(1, 3, 128, 64, 0, "%1 mul_mat a-0", "mul_mat"),
		buf(3, 5, 0, 64, 0, "%2 add b-0", "add"),
		buf(5, 7, 128, 64, 1, "%3 mul_mat a-1", "mul_mat"),
		buf(7, 9, 0, 64, 1, "%4 add b-1", "add"),
		buf(9, 11, 128, 64, 2, "%5 mul_mat a-2", "mul_mat"),
		buf(11, 13, 0, 64, 2, "%6 add b-2", "add"),
		buf(13, 14, 128, 64, -1, "%7 mul_mat out", "mul_mat"),
	}}
}

func TestInterferenceMatrixGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := layeredChart().WriteInterferenceSVG(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "interference_matrix.svg"), buf.Bytes())
	checkSVG(t, buf.Bytes())
	textFits(t, buf.Bytes())
	out := buf.String()
	for _, want := range []string{
		"layered: which buffers may share memory",
		"outside the layers: 1 buffers",
		"layer 0: 2 buffers, and 1 of other layers live during its steps",
		"layers 1–2: 2 buffers (the same in each; rows name layer 1&#39;s)",
		"after the last layer: 1 buffers",
		"1  %0 get_rows inp, 100 B @ 0 (from outside the layers)",
		"8 buffers, 28 pairs: 27 may share memory (never live together), 12 share bytes in this plan",
		"<title>1 and 2: must not share</title>",           // inp and a-0 live at step 1
		"<title>1 and 3: share bytes in this plan</title>", // inp and b-0 at offset 0
	} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix lacks %q", want)
		}
	}
	if strings.Contains(out, "layer 2:") {
		t.Error("layer 2 is drawn again, though it is the same as layer 1")
	}
	if strings.Contains(out, `fill="#dc2626"><title>`) {
		t.Error("a valid plan has a red cell")
	}
}

// TestInterferenceMatrixWrongPlan: two live buffers at overlapping offsets
// get red cells.
func TestInterferenceMatrixWrongPlan(t *testing.T) {
	c := layeredChart()
	c.Buffers[1].Offset = 0 // a-0 now overlaps the input while both live
	var buf bytes.Buffer
	if err := c.WriteInterferenceSVG(&buf); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), "overlap while both live"); got != 2 {
		t.Errorf("red cells: got %d, want 2 (both halves of the matrix)", got)
	}
}

// TestInterferenceMatrixLongLabels: labels and titles of any length stay
// inside the picture.
func TestInterferenceMatrixLongLabels(t *testing.T) {
	c := layeredChart()
	c.Title = strings.Repeat("a very long model path/", 8)
	c.Buffers[2].Label = strings.Repeat("%2 add_rms_norm_mul with a very long name ", 6)
	var buf bytes.Buffer
	if err := c.WriteInterferenceSVG(&buf); err != nil {
		t.Fatal(err)
	}
	textFits(t, buf.Bytes())
}
