package kernels

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
)

// RoPE modes (ggml's GGML_ROPE_TYPE_*).
const (
	RopeNorm = 0 // adjacent pairs (x[2i], x[2i+1]) rotate: LLaMA
	RopeNeox = 2 // halves (x[i], x[i+n_dims/2]) rotate: GPT-NeoX, Qwen2
)

// RopeParams are ggml_rope_ext's parameters (op_params of GGML_OP_ROPE).
type RopeParams struct {
	NDims    int // number of leading dims rotated (even, <= ne0)
	Mode     int // RopeNorm or RopeNeox
	NCtxOrig int // original training context (YaRN correction dims)

	FreqBase   float32 // theta base, e.g. 10000
	FreqScale  float32 // position scale (1 = none)
	ExtFactor  float32 // YaRN extrapolation mix (0 = off)
	AttnFactor float32 // magnitude scale (1 = none)
	BetaFast   float32 // YaRN beta_fast (32 in llama.cpp)
	BetaSlow   float32 // YaRN beta_slow (1 in llama.cpp)
}

func logf(x float32) float32   { return float32(math.Log(float64(x))) }
func floorf(x float32) float32 { return float32(math.Floor(float64(x))) }
func ceilf(x float32) float32  { return float32(math.Ceil(float64(x))) }

// ropeCorrDim is ggml_rope_yarn_corr_dim in float32.
func ropeCorrDim(nDims, nCtxOrig int, nRot, base float32) float32 {
	a := float32(nDims) * logf(float32(nCtxOrig)/(nRot*2*float32(math.Pi)))
	return a / (2 * logf(base))
}

// ropeCorrDims is ggml_rope_yarn_corr_dims.
func ropeCorrDims(p RopeParams) [2]float32 {
	start := floorf(ropeCorrDim(p.NDims, p.NCtxOrig, p.BetaFast, p.FreqBase))
	end := ceilf(ropeCorrDim(p.NDims, p.NCtxOrig, p.BetaSlow, p.FreqBase))
	return [2]float32{max(0, start), min(float32(p.NDims-1), end)}
}

// ropeYarnRamp is rope_yarn_ramp (i0/2 is an integer division).
func ropeYarnRamp(low, high float32, i0 int) float32 {
	y := (float32(i0/2) - low) / max(0.001, high-low)
	return 1 - min(1, max(0, y))
}

// ropeYarn is rope_yarn: the cos/sin of one rotation angle with YaRN's
// interpolation/extrapolation mix and magnitude scale.
func ropeYarn(thetaExtrap, freqScale float32, corr [2]float32, i0 int, extFactor, mscale float32) (c, s float32) {
	thetaInterp := freqScale * thetaExtrap
	theta := thetaInterp
	if extFactor != 0 {
		rampMix := ropeYarnRamp(corr[0], corr[1], i0) * extFactor
		theta = float32(thetaInterp*(1-rampMix)) + float32(thetaExtrap*rampMix)
		mscale *= 1 + float32(0.1*logf(1/freqScale))
	}
	sn, cs := sincosf(theta)
	return cs * mscale, sn * mscale
}

// ropeRow fills cache (NDims floats: cos, sin per pair) for position pos,
// as ggml_rope_cache_init does: theta starts at pos and is multiplied by
// theta_scale = powf(freq_base, -2/n_dims) once per pair, in float32.
func ropeRow(cache []float32, pos int32, p RopeParams, corr [2]float32, thetaScale float32, ff []float32) {
	theta := float32(pos)
	for i0 := 0; i0+1 < len(cache); i0 += 2 {
		f := float32(1)
		if ff != nil {
			f = ff[i0/2]
		}
		cache[i0], cache[i0+1] = ropeYarn(theta/f, p.FreqScale, corr, i0, p.ExtFactor, p.AttnFactor)
		theta *= thetaScale
	}
}

// ropeApplyRow rotates the first NDims values of x into out (which may be x)
// with the cos/sin table c and copies the rest.
func ropeApplyRow(out, x, c []float32, nDims int, neox bool) {
	if !neox {
		for i0 := 0; i0 < nDims; i0 += 2 {
			cs, sn := c[i0], c[i0+1]
			x0, x1 := x[i0], x[i0+1]
			out[i0] = fma32(x0, cs, -float32(x1*sn))
			out[i0+1] = fma32(x0, sn, float32(x1*cs))
		}
	} else {
		h := nDims / 2
		for i0 := 0; i0 < nDims; i0 += 2 {
			ic := i0 / 2
			cs, sn := c[i0], c[i0+1]
			x0, x1 := x[ic], x[ic+h]
			out[ic] = fma32(x0, cs, -float32(x1*sn))
			out[ic+h] = fma32(x0, sn, float32(x1*cs))
		}
	}
	if &out[0] != &x[0] {
		copy(out[nDims:], x[nDims:len(out)])
	}
}

func checkRopeParams(op string, p RopeParams, src Tensor) error {
	if p.Mode != RopeNorm && p.Mode != RopeNeox {
		return fmt.Errorf("kernels: %s: mode %d unsupported (only %d NORM and %d NEOX)", op, p.Mode, RopeNorm, RopeNeox)
	}
	if p.NDims <= 0 || p.NDims%2 != 0 || int64(p.NDims) > src.Ne[0] {
		return fmt.Errorf("kernels: %s: n_dims %d must be even, positive and at most ne0 = %d of %s", op, p.NDims, src.Ne[0], src)
	}
	if !(p.FreqBase > 0) {
		return fmt.Errorf("kernels: %s: freq_base %v must be positive", op, p.FreqBase)
	}
	return nil
}

// readPositions returns the I32 positions of pos (a vector of n values).
func readPositions(op string, pos Tensor, n int64) ([]int32, error) {
	if err := pos.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: pos: %w", op, err)
	}
	if pos.Type != gguf.TypeI32 {
		return nil, fmt.Errorf("kernels: %s: positions %s must be i32", op, pos)
	}
	if pos.Ne[0] < n {
		return nil, fmt.Errorf("kernels: %s: %d positions for %d rows", op, pos.Ne[0], n)
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(readIndex(pos, int64(i), 0, 0))
	}
	return out, nil
}

// readFactors returns the freq factors (nil for none); they must hold at
// least n_dims/2 F32 values.
func readFactors(op string, ff *Tensor, p RopeParams) ([]float32, error) {
	if ff == nil {
		return nil, nil
	}
	if err := ff.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: freq factors: %w", op, err)
	}
	if ff.Type != gguf.TypeF32 || ff.Ne[0] < int64(p.NDims/2) {
		return nil, fmt.Errorf("kernels: %s: freq factors %s must be f32 with at least %d values", op, *ff, p.NDims/2)
	}
	v := make([]float32, p.NDims/2)
	if err := loadRowInto(*ff, 0, v); err != nil {
		return nil, err
	}
	return v, nil
}

// buildRopeCache returns the cos/sin table: NDims floats per position.
func buildRopeCache(pos []int32, p RopeParams, ff []float32) []float32 {
	corr := ropeCorrDims(p)
	thetaScale := powf(p.FreqBase, -2/float32(p.NDims))
	c := make([]float32, len(pos)*p.NDims)
	for j, ps := range pos {
		ropeRow(c[j*p.NDims:(j+1)*p.NDims], ps, p, corr, thetaScale, ff)
	}
	return c
}

// Rope applies rotary position embedding (ggml_rope_ext, modes NORM and
// NEOX) to src [ne0, n_head, n_tokens, ne3]: token i2 is rotated by
// pos[i2] (I32). Angles follow ggml exactly: theta_i = pos *
// theta_scale^i computed iteratively in float32 with
// theta_scale = powf(freq_base, -2/n_dims), YaRN ramp when ext_factor != 0,
// cos/sin scaled by attn_factor. Dims at and beyond n_dims are copied.
// dst has src's shape and may alias it.
func Rope(dst, src, pos Tensor, p RopeParams) error { return Options{}.Rope(dst, src, pos, p) }

// Rope is the package's Rope with o's pool and threads.
func (o Options) Rope(dst, src, pos Tensor, p RopeParams) error {
	return o.rope("rope", dst, src, pos, nil, p)
}

// RopeWithFactors is Rope with per-pair frequency divisors (ggml_rope_ext's
// third operand, an F32 vector of n_dims/2 values).
func RopeWithFactors(dst, src, pos, factors Tensor, p RopeParams) error {
	return Options{}.RopeWithFactors(dst, src, pos, factors, p)
}

// RopeWithFactors is the package's RopeWithFactors with o's pool and
// threads.
func (o Options) RopeWithFactors(dst, src, pos, factors Tensor, p RopeParams) error {
	return o.rope("rope", dst, src, pos, &factors, p)
}

func (o Options) rope(op string, dst, src, pos Tensor, factors *Tensor, p RopeParams) (err error) {
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return err
	}
	if err := checkRopeParams(op, p, src); err != nil {
		return err
	}
	ps, err := readPositions(op, pos, src.Ne[2])
	if err != nil {
		return err
	}
	ff, err := readFactors(op, factors, p)
	if err != nil {
		return err
	}
	cache := buildRopeCache(ps, p, ff)
	o.applyRope(dst, src, cache, p)
	return nil
}

// applyRope rotates every row of src into dst with the table cache (NDims
// floats per i2).
func (o Options) applyRope(dst, src Tensor, cache []float32, p RopeParams) {
	ne0 := int(src.Ne[0])
	neox := p.Mode == RopeNeox
	eachRow(o, src.Ne, func(i1, i2, i3 int64, s1, s2 []float32) {
		x := srcRow(src, src.rowOff(i1, i2, i3), ne0, s1)
		out, direct := dstRow(dst, dst.rowOff(i1, i2, i3), ne0, s2)
		c := cache[int(i2)*p.NDims : int(i2+1)*p.NDims]
		ropeApplyRow(out, x, c, p.NDims, neox)
		if !direct {
			storeRow(dst, dst.rowOff(i1, i2, i3), out)
		}
	})
}

// RopeCache writes the cos/sin tables of positions pos (I32, n values) into
// dst, an F32 tensor [n_dims, n]: dst[2i, j] = cos(theta_i(pos[j])) and
// dst[2i+1, j] = sin(...), both times attn_factor. These are exactly the
// values Rope uses, so RopeApply with this table reproduces Rope bit for
// bit. Computing the table once per step and sharing it across layers is
// ggml-cann's "RoPE cache".
func RopeCache(dst, pos Tensor, p RopeParams) error {
	return ropeCache(dst, pos, nil, p)
}

// RopeCacheWithFactors is RopeCache with frequency factors (see
// RopeWithFactors).
func RopeCacheWithFactors(dst, pos, factors Tensor, p RopeParams) error {
	return ropeCache(dst, pos, &factors, p)
}

func ropeCache(dst, pos Tensor, factors *Tensor, p RopeParams) (err error) {
	const op = "rope_cache"
	defer guard(op, &err)
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if dst.Type != gguf.TypeF32 || dst.Ne[0] != int64(p.NDims) || dst.Ne[2] != 1 || dst.Ne[3] != 1 {
		return fmt.Errorf("kernels: %s: dst %s must be f32 [n_dims=%d, n_pos]", op, dst, p.NDims)
	}
	if err := checkRopeParams(op, p, Tensor{Ne: [MaxDims]int64{int64(p.NDims)}}); err != nil {
		return err
	}
	ps, err := readPositions(op, pos, dst.Ne[1])
	if err != nil {
		return err
	}
	ff, err := readFactors(op, factors, p)
	if err != nil {
		return err
	}
	cache := buildRopeCache(ps, p, ff)
	for j := range ps {
		storeRow(dst, dst.rowOff(int64(j), 0, 0), cache[j*p.NDims:(j+1)*p.NDims])
	}
	return nil
}

// readRopeCache loads a table written by RopeCache for n positions.
func readRopeCache(op string, cache Tensor, p RopeParams, n int64) ([]float32, error) {
	if err := cache.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: cache: %w", op, err)
	}
	if cache.Type != gguf.TypeF32 || cache.Ne[0] != int64(p.NDims) || cache.Ne[1] < n {
		return nil, fmt.Errorf("kernels: %s: cache %s must be f32 [n_dims=%d, >= %d positions]", op, cache, p.NDims, n)
	}
	c := make([]float32, int(n)*p.NDims)
	for j := range n {
		if err := loadRowInto(cache, cache.rowOff(j, 0, 0), c[int(j)*p.NDims:int(j+1)*p.NDims]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// RopeApply rotates src with a table from RopeCache (column i2 for token
// i2); p.NDims and p.Mode select the rotation, the angle parameters are not
// used. The result is bit for bit Rope's.
func RopeApply(dst, src, cache Tensor, p RopeParams) error {
	return Options{}.RopeApply(dst, src, cache, p)
}

// RopeApply is the package's RopeApply with o's pool and threads.
func (o Options) RopeApply(dst, src, cache Tensor, p RopeParams) (err error) {
	const op = "rope_apply"
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return err
	}
	pp := p
	pp.FreqBase = 1 // unused here
	if err := checkRopeParams(op, pp, src); err != nil {
		return err
	}
	c, err := readRopeCache(op, cache, p, src.Ne[2])
	if err != nil {
		return err
	}
	o.applyRope(dst, src, c, p)
	return nil
}
