package ir

import (
	"math"
	"os"
	"strings"
	"testing"
)

// TestHostileAttributes edits the golden attention graph's text with
// attribute values no kernel can run; each must be refused, naming the node
// and the attribute.
func TestHostileAttributes(t *testing.T) {
	b, err := os.ReadFile("testdata/attention.ir")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if _, err := ParseString(src); err != nil {
		t.Fatalf("golden graph: %v", err)
	}
	const rope = "{attn_factor=1.0, ext_factor=0.0, freq_base=10000.0, freq_scale=1.0, mode=0, n_dims=4}"
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"rope n_dims huge", rope, strings.Replace(rope, "n_dims=4", "n_dims=1000000000", 1), "n_dims = 1000000000 is outside"},
		{"rope n_dims negative", rope, strings.Replace(rope, "n_dims=4", "n_dims=-8", 1), "n_dims = -8 is outside"},
		{"rope n_dims odd", rope, strings.Replace(rope, "n_dims=4", "n_dims=3", 1), "n_dims = 3 must be even"},
		{"rope n_dims past the row", rope, strings.Replace(rope, "n_dims=4", "n_dims=6", 1), "n_dims = 6 is outside (0, 4]"},
		{"rope n_dims float", rope, strings.Replace(rope, "n_dims=4", "n_dims=4.0", 1), "n_dims = 4 must be an integer"},
		{"rope mode", rope, strings.Replace(rope, "mode=0", "mode=1", 1), "mode = 1"},
		{"rope freq_base zero", rope, strings.Replace(rope, "freq_base=10000.0", "freq_base=0.0", 1), "freq_base = 0 is outside"},
		{"rope freq_scale negative", rope, strings.Replace(rope, "freq_scale=1.0", "freq_scale=-1.0", 1), "freq_scale = -1 is outside"},
		{"rope ext_factor", rope, strings.Replace(rope, "ext_factor=0.0", "ext_factor=7.0", 1), "ext_factor = 7 is outside"},
		{"soft_max max_bias negative", "{max_bias=0.0, scale=0.5}", "{max_bias=-1.0, scale=0.5}", "max_bias = -1 is outside"},
		{"rms_norm eps negative", "{eps=1e-05}", "{eps=-1e-05}", "eps = -1e-05 is outside"},
		{"rms_norm eps a string", "{eps=1e-05}", `{eps="small"}`, `eps = "small" is a string, want a number`},
		{"rms_norm eps a symbol", "{eps=1e-05}", `{eps=abc}`, `eps = abc is a shape expression`},
		{"rms_norm unknown attribute", "{eps=1e-05}", `{foo=1, eps=1e-05}`, `unknown attribute "foo" of rms_norm (it takes eps)`},
		{"rms_norm misspelt attribute", "{eps=1e-05}", `{esp=1e-05}`, `unknown attribute "esp" of rms_norm (it takes eps); did you mean "eps"?`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(src, c.old) {
				t.Fatalf("golden graph has no %q", c.old)
			}
			text := strings.Replace(src, c.old, c.new, 1)
			g, err := ParseString(text)
			if err == nil {
				err = Verify(g)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestNonFiniteAttributes: NaN and infinities (which the text format cannot
// spell) set on a built graph are refused by Verify.
func TestNonFiniteAttributes(t *testing.T) {
	for _, c := range []struct {
		op   Op
		key  string
		v    float64
		want string
	}{
		{OpSoftMax, "scale", math.NaN(), "scale = NaN is not finite"},
		{OpRope, "freq_base", math.NaN(), "freq_base = NaN is not finite"},
		{OpRope, "attn_factor", math.Inf(1), "attn_factor = +Inf is not finite"},
		{OpRMSNorm, "eps", math.Inf(-1), "eps = -Inf is not finite"},
	} {
		g := attentionGraph(t)
		for _, n := range g.Nodes {
			if n.Op == c.op {
				n.Attrs = n.Attrs.Clone()
				n.Attrs[c.key] = c.v
				break
			}
		}
		if err := Verify(g); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s=%v: err %v, want %q", c.op, c.key, c.v, err, c.want)
		}
	}
}

// TestAttrValuesOnEveryOp: a non-finite float attribute is refused on any
// op, before the op's own range checks (soft_max's
// max_bias).
func TestAttrValuesOnEveryOp(t *testing.T) {
	g := attentionGraph(t)
	for _, n := range g.Nodes {
		if n.Op != OpSoftMax {
			continue
		}
		n.Attrs = n.Attrs.Clone()
		n.Attrs["max_bias"] = []float64{1, 2, math.NaN()}
		if err := Verify(g); err == nil || !strings.Contains(err.Error(), "max_bias[2] = NaN is not finite") {
			t.Fatalf("err %v", err)
		}
		return
	}
	t.Fatal("no soft_max in the graph")
}
