package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// runJobChunked runs every phase of j in chunks of one index, handed to
// workers 0..workers-1 in turn (the order a pool may pick).
func runJobChunked(j Job, workers int) {
	w := 0
	for p := range j.Phases() {
		n, _ := j.Size(p)
		for lo := n - 1; lo >= 0; lo-- { // backwards: no chunk relies on the previous one
			j.Run(p, w, lo, lo+1)
			w = (w + 1) % workers
		}
	}
}

// The Jobs of the unfused graph's ops give the plain kernels' bits however
// their rows are chunked and whichever worker runs a chunk: each case runs
// the plain kernel, the job in its own chunks on one worker, and the job
// one row at a time, backwards, over three workers.
func TestUnfusedJobsMatchKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const hd, nh, nt = 64, 6, 40
	x := f32t(t, randF32(r, hd*nh*nt, 3), hd, nh, nt)
	w := f32t(t, randF32(r, hd, 1), hd)
	pos := make([]int32, nt)
	for i := range pos {
		pos[i] = int32(5 + 2*i)
	}
	pt := i32t(t, pos, nt)
	ff := f32t(t, []float32{1, 1, 1, 2, 4, 8, 8, 8, 1, 1, 1, 1, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, hd/2)
	norm := RopeParams{NDims: hd, NCtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	neox := norm
	neox.Mode, neox.NDims, neox.ExtFactor = RopeNeox, hd/2, 0.5
	const nkv, nq = 96, 40
	kq := f32t(t, randF32(r, nkv*nq*nh, 5), nkv, nq, nh)
	mv := make([]float32, nkv*nq)
	for i := range nq {
		for j := range nkv {
			if j > 50+i {
				mv[i*nkv+j] = float32(math.Inf(-1))
			}
		}
	}
	mask16 := f16t(t, mv, nkv, nq)
	mask32 := f32t(t, mv, nkv, nq)
	xt, err := x.Permute([MaxDims]int{1, 0, 2, 3}) // [nh, hd, nt] strided view
	if err != nil {
		t.Fatal(err)
	}
	like := func() Tensor { return newT(t, gguf.TypeF32, hd, nh, nt) }
	cases := []struct {
		name  string
		plain func(dst Tensor) error
		job   func(dst Tensor) (Job, error)
		dst   func() Tensor
	}{
		{"rms_norm", func(d Tensor) error { return RMSNorm(d, x, 1e-6) },
			func(d Tensor) (Job, error) { return RMSNormJob(d, x, 1e-6, 3) }, like},
		{"rms_norm f16 dst", func(d Tensor) error { return RMSNorm(d, x, 1e-6) },
			func(d Tensor) (Job, error) { return RMSNormJob(d, x, 1e-6, 3) }, func() Tensor { return newT(t, gguf.TypeF16, hd, nh, nt) }},
		{"scale", func(d Tensor) error { return Scale(d, x, 0.125) },
			func(d Tensor) (Job, error) { return ScaleJob(d, x, 0.125, 3) }, like},
		{"silu", func(d Tensor) error { return Silu(d, x) },
			func(d Tensor) (Job, error) { return SiluJob(d, x, 3) }, like},
		{"gelu", func(d Tensor) error { return Gelu(d, x) },
			func(d Tensor) (Job, error) { return GeluJob(d, x, 3) }, like},
		{"div", func(d Tensor) error { return Div(d, x, w) },
			func(d Tensor) (Job, error) { return DivJob(d, x, w, 3) }, like},
		{"soft_max f16 mask", func(d Tensor) error { return SoftMax(d, kq, &mask16, 0.125, 0) },
			func(d Tensor) (Job, error) { return SoftMaxJob(d, kq, &mask16, 0.125, 0, 3) },
			func() Tensor { return newT(t, gguf.TypeF32, nkv, nq, nh) }},
		{"soft_max alibi f32 mask", func(d Tensor) error { return SoftMax(d, kq, &mask32, 1, 8) },
			func(d Tensor) (Job, error) { return SoftMaxJob(d, kq, &mask32, 1, 8, 3) },
			func() Tensor { return newT(t, gguf.TypeF32, nkv, nq, nh) }},
		{"soft_max no mask", func(d Tensor) error { return SoftMax(d, kq, nil, 0.5, 0) },
			func(d Tensor) (Job, error) { return SoftMaxJob(d, kq, nil, 0.5, 0, 3) },
			func() Tensor { return newT(t, gguf.TypeF32, nkv, nq, nh) }},
		{"rope norm", func(d Tensor) error { return Rope(d, x, pt, norm) },
			func(d Tensor) (Job, error) { return RopeJob(d, x, pt, nil, norm, 3) }, like},
		{"rope neox partial yarn", func(d Tensor) error { return Rope(d, x, pt, neox) },
			func(d Tensor) (Job, error) { return RopeJob(d, x, pt, nil, neox, 3) }, like},
		{"rope factors", func(d Tensor) error { return RopeWithFactors(d, x, pt, ff, norm) },
			func(d Tensor) (Job, error) { return RopeJob(d, x, pt, &ff, norm, 3) }, like},
		{"cont of a permuted view", func(d Tensor) error { return Cpy(d, xt) },
			func(d Tensor) (Job, error) { return CpyJob(d, xt, 3) }, func() Tensor { return newT(t, gguf.TypeF32, nh*hd, nt) }},
		{"cpy f32 to f16", func(d Tensor) error { return Cpy(d, xt) },
			func(d Tensor) (Job, error) { return CpyJob(d, xt, 3) }, func() Tensor { return newT(t, gguf.TypeF16, nh, hd, nt) }},
		{"swa_mask", func(d Tensor) error { return SWAMask(d, mask32, pt, 32) },
			func(d Tensor) (Job, error) { return SWAMaskJob(d, mask32, pt, 32, 3) }, func() Tensor { return newT(t, gguf.TypeF32, nkv, nq) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.dst()
			if err := c.plain(want); err != nil {
				t.Fatal(err)
			}
			for _, chunked := range []bool{false, true} {
				got := c.dst()
				j, err := c.job(got)
				if err != nil {
					t.Fatal(err)
				}
				if chunked {
					runJobChunked(j, 3)
				} else {
					runJobSerial(j)
				}
				same(t, c.name, vals(t, got), vals(t, want))
			}
		})
	}
}

// The unfused jobs check their operands as the plain kernels do.
func TestUnfusedJobsErrors(t *testing.T) {
	x := newT(t, gguf.TypeF32, 8, 4)
	other := newT(t, gguf.TypeF32, 8, 5)
	pos := i32t(t, []int32{0, 1}, 2)
	p := RopeParams{NDims: 8, FreqBase: 10000, FreqScale: 1, AttnFactor: 1}
	bad := p
	bad.NDims = 7
	for name, err := range map[string]error{
		"rms_norm shape": func() error { _, err := RMSNormJob(other, x, 1e-6, 1); return err }(),
		"soft_max mask":  func() error { m := newT(t, gguf.TypeF32, 4, 4); _, err := SoftMaxJob(x, x, &m, 1, 0, 1); return err }(),
		"silu shape":     func() error { _, err := SiluJob(other, x, 1); return err }(),
		"rope n_dims":    func() error { _, err := RopeJob(x, x, pos, nil, bad, 1); return err }(),
		"rope positions": func() error {
			x3 := newT(t, gguf.TypeF32, 8, 1, 4)
			_, err := RopeJob(x3, x3, pos, nil, p, 1)
			return err
		}(),
		"cpy count": func() error { _, err := CpyJob(other, x, 1); return err }(),
		"swa_mask window": func() error {
			_, err := SWAMaskJob(x, x, pos, 0, 1)
			return err
		}(),
	} {
		wantErr(t, name, err)
	}
}
