package floatbits

import (
	"math"
	randv1 "math/rand"
	"math/rand/v2"
	"testing"
)

func TestBytesRoundTrip(t *testing.T) {
	v := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, float32(math.Inf(1)), float32(math.NaN()), math.SmallestNonzeroFloat32}
	b := Bytes(v...)
	if len(b) != 4*len(v) {
		t.Fatalf("%d bytes for %d values", len(b), len(v))
	}
	if b[8] != 0 || b[9] != 0 || b[10] != 0x80 || b[11] != 0x3f { // 1.0 little-endian
		t.Errorf("1.0 encoded as % x", b[8:12])
	}
	back := Floats(append(b, 0xff)) // the partial value is ignored
	if len(back) != len(v) {
		t.Fatalf("%d values back", len(back))
	}
	for i := range v {
		if !Equal(back[i], v[i]) {
			t.Errorf("value %d: %v, want %v", i, back[i], v[i])
		}
	}
}

func TestSameAndEqual(t *testing.T) {
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	otherNaN := math.Float32frombits(0x7fc00001)
	for _, c := range []struct {
		a, b        float32
		equal, same bool
	}{
		{1, 1, true, true},
		{0, negZero, false, false},
		{nan, nan, true, true},
		{nan, otherNaN, false, true},
		{nan, 1, false, false},
	} {
		if Equal(c.a, c.b) != c.equal || Same(c.a, c.b) != c.same {
			t.Errorf("%v, %v: Equal %v Same %v, want %v %v", c.a, c.b, Equal(c.a, c.b), Same(c.a, c.b), c.equal, c.same)
		}
	}
}

func TestMismatch(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		a, b []float32
		want int
	}{
		{nil, nil, -1},
		{[]float32{1, nan}, []float32{1, nan}, -1},
		{[]float32{1, 2, 3}, []float32{1, 2, 4}, 2},
		{[]float32{1, 2}, []float32{1, 2, 3}, 2},
		{[]float32{1}, []float32{2, 3}, 0},
	} {
		if got := Mismatch(c.a, c.b); got != c.want {
			t.Errorf("Mismatch(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestRand: the values are the source's draws in order, scaled, whichever
// math/rand the source comes from.
func TestRand(t *testing.T) {
	r2, w2 := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	r1, w1 := randv1.New(randv1.NewSource(3)), randv1.New(randv1.NewSource(3))
	for _, c := range []struct {
		r, w  Normal
		scale float32
	}{{r2, w2, 0.1}, {r1, w1, 1}} {
		v := Rand(c.r, 5, c.scale)
		for i, x := range v {
			if want := float32(c.w.NormFloat64()) * c.scale; !Equal(x, want) {
				t.Errorf("value %d: %v, want %v", i, x, want)
			}
		}
	}
}
