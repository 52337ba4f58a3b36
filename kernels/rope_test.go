package kernels

import (
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// ropeClosedForm rotates x [hd, nh, nt] in float64 with the textbook
// formula theta_i = p * base^(-2i/n_dims), plus YaRN's ramp and magnitude
// scale when extFactor != 0.
func ropeClosedForm(x []float32, hd, nh int, pos []int32, p RopeParams, ff []float64) []float64 {
	out := f64s(x)
	n := p.NDims
	var lo, hi float64
	if p.ExtFactor != 0 {
		corr := func(beta float64) float64 {
			return float64(n) * math.Log(float64(p.NCtxOrig)/(beta*2*math.Pi)) / (2 * math.Log(float64(p.FreqBase)))
		}
		lo = max(0, math.Floor(corr(float64(p.BetaFast))))
		hi = min(float64(n-1), math.Ceil(corr(float64(p.BetaSlow))))
	}
	for t, ps := range pos {
		for h := range nh {
			row := out[(t*nh+h)*hd : (t*nh+h+1)*hd]
			src := f64s(x[(t*nh+h)*hd : (t*nh+h+1)*hd])
			for i := 0; i < n/2; i++ {
				thetaExtrap := float64(ps) * math.Pow(float64(p.FreqBase), -2*float64(i)/float64(n))
				if ff != nil {
					thetaExtrap /= ff[i]
				}
				theta := float64(p.FreqScale) * thetaExtrap
				mscale := float64(p.AttnFactor)
				if p.ExtFactor != 0 {
					y := (float64(i) - lo) / max(0.001, hi-lo)
					mix := (1 - min(1, max(0, y))) * float64(p.ExtFactor)
					theta = theta*(1-mix) + thetaExtrap*mix
					mscale *= 1 + 0.1*math.Log(1/float64(p.FreqScale))
				}
				c, s := math.Cos(theta)*mscale, math.Sin(theta)*mscale
				a, b := 2*i, 2*i+1
				if p.Mode == RopeNeox {
					a, b = i, i+n/2
				}
				row[a] = src[a]*c - src[b]*s
				row[b] = src[a]*s + src[b]*c
			}
		}
	}
	return out
}

func TestRopeClosedForm(t *testing.T) {
	const hd, nh, nt = 12, 3, 4
	x := make([]float32, hd*nh*nt)
	for i := range x {
		x[i] = float32(math.Cos(float64(i) * 0.37))
	}
	pos := []int32{0, 1, 7, 33}
	base := RopeParams{NDims: 8, NCtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	yarn := base
	yarn.FreqScale, yarn.ExtFactor, yarn.AttnFactor = 0.25, 1, 0.9
	for _, c := range []struct {
		name string
		p    RopeParams
		ff   []float32
	}{
		{"norm", base, nil},
		{"neox", func() RopeParams { p := base; p.Mode = RopeNeox; return p }(), nil},
		{"norm all dims", func() RopeParams { p := base; p.NDims = hd; return p }(), nil},
		{"yarn", yarn, nil},
		{"neox yarn", func() RopeParams { p := yarn; p.Mode = RopeNeox; return p }(), nil},
		{"freq factors", base, []float32{1, 2, 4, 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := f32t(t, x, hd, nh, nt)
			pt := i32t(t, pos, nt)
			dst := newT(t, gguf.TypeF32, hd, nh, nt)
			var ff []float64
			var err error
			if c.ff != nil {
				ff = f64s(c.ff)
				err = RopeWithFactors(dst, src, pt, f32t(t, c.ff, int64(len(c.ff))), c.p)
			} else {
				err = Rope(dst, src, pt, c.p)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := vals(t, dst)
			// float32 theta accumulated iteratively: a few ulps of a
			// 33-radian angle.
			near(t, "rope", got, ropeClosedForm(x, hd, nh, pos, c.p, ff), 2e-5)
			// Dims from n_dims on are copied.
			for i := range got {
				if i%hd >= c.p.NDims && got[i] != x[i] {
					t.Fatalf("dim %d not passed through", i%hd)
				}
			}

			// RopeCache + RopeApply is bit for bit Rope.
			cache := newT(t, gguf.TypeF32, int64(c.p.NDims), nt)
			if c.ff != nil {
				err = RopeCacheWithFactors(cache, pt, f32t(t, c.ff, int64(len(c.ff))), c.p)
			} else {
				err = RopeCache(cache, pt, c.p)
			}
			if err != nil {
				t.Fatal(err)
			}
			viaCache := newT(t, gguf.TypeF32, hd, nh, nt)
			if err := RopeApply(viaCache, src, cache, c.p); err != nil {
				t.Fatal(err)
			}
			same(t, "cache+apply", vals(t, viaCache), got)

			// In place, and into a strided view, give the same bits.
			inPlace := clone(t, src)
			if c.ff != nil {
				err = RopeWithFactors(inPlace, inPlace, pt, f32t(t, c.ff, int64(len(c.ff))), c.p)
			} else {
				err = Rope(inPlace, inPlace, pt, c.p)
			}
			if err != nil {
				t.Fatal(err)
			}
			same(t, "in place", vals(t, inPlace), got)
			buf := newT(t, gguf.TypeF32, hd, nt, nh)
			view, err := buf.Permute([4]int{0, 2, 1, 3})
			if err != nil {
				t.Fatal(err)
			}
			if c.ff == nil {
				if err := Rope(view, src, pt, c.p); err != nil {
					t.Fatal(err)
				}
				same(t, "strided dst", vals(t, view), got)
			}
		})
	}
}

// TestRopeIterativeTheta checks the ggml detail that theta is multiplied by
// theta_scale = powf(base, -2/n) in float32 pair after pair, not computed as
// pow(base, -2i/n): the two differ in the last bits, and RoPE's table must
// hold the iterative values.
func TestRopeIterativeTheta(t *testing.T) {
	p := RopeParams{NDims: 64, NCtxOrig: 2048, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	const pos = 1000
	cache := newT(t, gguf.TypeF32, 64, 1)
	if err := RopeCache(cache, i32t(t, []int32{pos}, 1), p); err != nil {
		t.Fatal(err)
	}
	got := vals(t, cache)
	scale := powf(10000, -2.0/64)
	theta := float32(pos)
	for i := 0; i < 64; i += 2 {
		// C's sinf/cosf as glibc computes them (TestLibmGolden).
		sn, cs := sincosf(theta)
		if got[i] != cs || got[i+1] != sn {
			t.Fatalf("pair %d: cos/sin %v %v, want those of float32 theta %v", i/2, got[i], got[i+1], theta)
		}
		theta *= scale
	}
}

func TestRopeErrors(t *testing.T) {
	src := newT(t, gguf.TypeF32, 8, 2, 3)
	pos := i32t(t, []int32{0, 1, 2}, 3)
	ok := RopeParams{NDims: 8, FreqBase: 10000, FreqScale: 1, AttnFactor: 1}
	for _, c := range []struct {
		name string
		p    func(RopeParams) RopeParams
		pos  Tensor
	}{
		{"odd n_dims", func(p RopeParams) RopeParams { p.NDims = 7; return p }, pos},
		{"n_dims > ne0", func(p RopeParams) RopeParams { p.NDims = 10; return p }, pos},
		{"mrope mode", func(p RopeParams) RopeParams { p.Mode = 8; return p }, pos},
		{"zero base", func(p RopeParams) RopeParams { p.FreqBase = 0; return p }, pos},
		{"few positions", func(p RopeParams) RopeParams { return p }, i32t(t, []int32{0, 1}, 2)},
		{"f32 positions", func(p RopeParams) RopeParams { return p }, f32t(t, []float32{0, 1, 2}, 3)},
	} {
		if err := Rope(src, src, c.pos, c.p(ok)); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := RopeApply(src, src, newT(t, gguf.TypeF32, 6, 3), ok); err == nil {
		t.Error("RopeApply with a table of the wrong width accepted")
	}
}
