package svgcheck

import (
	"strings"
	"testing"
)

func TestOverflows(t *testing.T) {
	// "Hello" at 10 px is 22.8 px wide in Helvetica.
	for _, tc := range []struct {
		name, svg string
		want      []string // substrings of the reports, in order
	}{
		{"fits", `<svg width="100" height="40"><text x="10" y="20" font-size="10">Hello</text></svg>`, nil},
		{"past the right edge", `<svg width="30" height="40"><text x="10" y="20" font-size="10">Hello</text></svg>`,
			[]string{`"Hello" (23 px at 10 px) runs outside the canvas`}},
		{"end anchor past the left edge", `<svg viewBox="0 0 100 40"><text x="20" y="20" font-size="10" text-anchor="end">Hello</text></svg>`,
			[]string{"outside the canvas"}},
		{"middle anchor inherited", `<svg viewBox="0 0 100 40"><g text-anchor="middle" font-size="10"><text x="50" y="20">Hello</text></g></svg>`, nil},
		{"bold is wider", `<svg width="45" height="40"><text x="0" y="20" font-size="20" font-weight="bold">Hello</text></svg>`,
			[]string{"outside the canvas"}},
		{"above the top", `<svg width="100" height="40"><text x="0" y="4" font-size="10">Hello</text></svg>`,
			[]string{"outside the canvas"}},
		{"rotated text is not checked", `<svg width="10" height="10"><text transform="translate(5,5) rotate(-90)">Hello</text></svg>`, nil},
		{"graphviz node", `<svg width="200pt" height="100pt" viewBox="0.00 0.00 200.00 100.00">
<g id="graph0" class="graph" transform="scale(1 1) rotate(0) translate(4 96)">
<g id="node1" class="node"><title>n0</title>
<polygon fill="none" stroke="black" points="60,-80 0,-80 0,-60 60,-60 60,-80"/>
<text text-anchor="middle" x="30" y="-66" font-family="Helvetica" font-size="10.00">Hello</text>
</g>
<g id="node2" class="node"><title>n1</title>
<path fill="none" stroke="black" d="M12,-40C12,-40 28,-40 28,-40 28,-40 28,-20 28,-20 28,-20 12,-20 12,-20"/>
<text text-anchor="middle" x="20" y="-26" font-family="Helvetica" font-size="10.00">Hello</text>
</g>
</g></svg>`, []string{`"Hello" (23 px at 10 px, [12.6,62.5]-[35.4,72.0]) runs outside its box [16.0,56.0]-[32.0,76.0] (node2)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Overflows([]byte(tc.svg))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d reports %q, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("report %d: %q lacks %q", i, got[i], w)
				}
			}
		})
	}
	if _, err := Overflows([]byte("<svg><text>")); err == nil {
		t.Error("truncated SVG: no error")
	}
}

// FuzzOverflows: any input gives reports or an error, never a panic.
func FuzzOverflows(f *testing.F) {
	f.Add([]byte(`<svg width="30" height="40"><text x="10" y="20" font-size="10">Hello</text></svg>`))
	f.Add([]byte(`<svg viewBox="0 0 1 1"><g class="node"><path d="M1,2C3"/><text transform="translate(1) rotate(9">x</text></g></svg>`))
	f.Fuzz(func(t *testing.T, svg []byte) {
		_, _ = Overflows(svg)
	})
}
