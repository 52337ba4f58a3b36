package kernels

import (
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/libm_glibc.txt needs -tags hostlibm)")

// sameF32 reports identical encodings, or both NaN.
func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestLibmGolden checks sincosf and expf against GNU libc's results stored
// in testdata/libm_glibc.txt: the RoPE angles of common configurations
// and the expf arguments on which glibc's result is not the nearest float
// (where a correctly rounded function, such as float32(math.Cos(x)),
// differs from llama.cpp's), the range boundaries of both algorithms, and
// random values.
func TestLibmGolden(t *testing.T) {
	n, notNearest := 0, 0
	for _, v := range readGolden(t, "testdata/libm_glibc.txt", 4) {
		x := v[0]
		s, c := sincosf(x)
		e := expf(x)
		if !sameF32(s, v[1]) || !sameF32(c, v[2]) || !sameF32(e, v[3]) {
			t.Errorf("x=%08x (%g): sincosf = %08x %08x, expf = %08x; glibc %08x %08x %08x", math.Float32bits(x), x,
				math.Float32bits(s), math.Float32bits(c), math.Float32bits(e), math.Float32bits(v[1]), math.Float32bits(v[2]), math.Float32bits(v[3]))
		}
		if x == x && !math.IsInf(float64(x), 0) && (v[1] != float32(math.Sin(float64(x))) || v[2] != float32(math.Cos(float64(x))) || v[3] != float32(math.Exp(float64(x)))) {
			notNearest++
		}
		n++
	}
	// The file must hold cases that tell glibc from correct rounding, or
	// the test would pass for float32(math.Cos(x)) too.
	if n < 100 || notNearest < 50 {
		t.Fatalf("testdata/libm_glibc.txt: %d cases, %d where glibc is not correctly rounded", n, notNearest)
	}
}

// libmGoldenInputs are the golden file's candidate arguments: RoPE angles
// (ggml_rope_cache_init's iterated theta for bases 1e4, 5e5, 1e6 and
// n_dims 64 and 128, positions below 8192), every 1021st float32 encoding
// in expf's finite range, the boundaries of both functions' branches, and random floats.
// The generator keeps the angles and sweep values on which glibc is not
// correctly rounded.
func libmGoldenInputs() []float32 {
	var xs []float32
	for _, base := range []float32{10000, 500000, 1000000} {
		for _, nd := range []int{64, 128} {
			ts := powf(base, -2/float32(nd))
			for pos := range 8192 {
				th := float32(pos)
				for range nd / 2 {
					xs = append(xs, th)
					th *= ts
				}
			}
		}
	}
	for u := uint64(0); u < 1<<32; u += 1021 {
		if x := math.Float32frombits(uint32(u)); x > -104 && x < 89 {
			xs = append(xs, x)
		}
	}
	return xs
}

// libmEdges are always kept: branch boundaries, specials and random values.
func libmEdges() []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 0x1p-149, 0x1p-126, 0x1p-13, 0x1p-12, 0x1.fffffep-13,
		0x1.921fb4p-1, 0x1.921fb6p-1, 0x1.8p-1, 0x1.9p-1, 119.99999, 120, 120.00001, 1e4, 1e6, 123456.78, 3.4e38,
		-0x1.921fb6p-1, -120, -1e6, 88, 88.5, 0x1.62e42ep6, 0x1.62e430p6, -0x1.9fe368p6, -0x1.9fe36ap6, -103, -87.5,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	return xs
}

// powfGoldenInputs are powf's candidate pairs: RoPE's
// powf(freq_base, -2/n_dims) for bases from 1e3 to 2e7 (steps of 0.07%)
// and common n_dims, ALiBi's powf(2, -k/n) and powf(m, j), specials and
// random pairs.
func powfGoldenInputs() (x, y []float32) {
	nds := []int{16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 256}
	for b := float32(1000); b < 2e7; b *= 1.0007 {
		for _, nd := range nds {
			x, y = append(x, b), append(y, -2/float32(nd))
		}
	}
	for n := 1; n <= 64; n++ {
		for k := 1; k <= 16; k++ {
			x, y = append(x, 2), append(y, -float32(k)/float32(n))
		}
	}
	sp := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2, -2, 0.5, 0x1p-149, 0x1p-126, 3.4e38,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 10, -10, 1e-30}
	for _, a := range sp {
		for _, b := range sp {
			x, y = append(x, a), append(y, b)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		x, y = append(x, math.Float32frombits(r.Uint32()&0x7fffffff)), append(y, float32(r.NormFloat64()*8))
	}
	return x, y
}

// TestPowfGolden checks powf against glibc's results stored in
// testdata/libm_glibc_powf.txt (every pair on which glibc is not correctly
// rounded among powfGoldenInputs, and a sample of the rest).
func TestPowfGolden(t *testing.T) {
	n, notNearest := 0, 0
	for _, v := range readGolden(t, "testdata/libm_glibc_powf.txt", 3) {
		if got := powf(v[0], v[1]); !sameF32(got, v[2]) {
			t.Errorf("powf(%08x, %08x) = %08x, glibc %08x", math.Float32bits(v[0]), math.Float32bits(v[1]), math.Float32bits(got), math.Float32bits(v[2]))
		}
		if v[2] == v[2] && v[2] != float32(math.Pow(float64(v[0]), float64(v[1]))) {
			notNearest++
		}
		n++
	}
	if n < 100 || notNearest < 20 {
		t.Fatalf("testdata/libm_glibc_powf.txt: %d cases, %d where glibc is not correctly rounded", n, notNearest)
	}
}

// TestRopeCacheTakesGlibcAngles pins one angle on which glibc's cosf is not
// the nearest float: Qwen2's RoPE (freq_base 1e6, n_dims 64) at position
// 31, pair 1, where llama.cpp's cached cosine is 0x1.245874p-2 while the
// correctly rounded cosine is 0x1.245872p-2.
func TestRopeCacheTakesGlibcAngles(t *testing.T) {
	p := RopeParams{NDims: 64, Mode: RopeNeox, NCtxOrig: 32768, FreqBase: 1e6, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	c := buildRopeCache([]int32{31}, p, nil)
	if got, want := c[2], float32(0x1.245874p-2); got != want {
		t.Fatalf("cos(theta_1(31)) = %x, want glibc's %x", math.Float32bits(got), math.Float32bits(want))
	}
}

// readGolden reads a golden file of float32 encodings in hex, fields per
// line; lines starting with # are comments.
func readGolden(t *testing.T, path string, fields int) [][]float32 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float32
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != fields {
			t.Fatalf("%s: bad line %q", path, line)
		}
		v := make([]float32, fields)
		for i, w := range fs {
			u, err := strconv.ParseUint(w, 16, 32)
			if err != nil {
				t.Fatalf("%s: bad line %q", path, line)
			}
			v[i] = math.Float32frombits(uint32(u))
		}
		rows = append(rows, v)
	}
	return rows
}
