package wqconv

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
)

func f16(x float64) uint16 { return gguf.F32ToF16(float32(x)) }

func f16v(h uint16) float64 { return float64(gguf.F16ToF32(h)) }

func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

// neighbours returns h and the f16 values next to it on both sides (a
// neighbour that is not finite is replaced by h).
func neighbours(h uint16) [3]uint16 {
	up, down := h+1, h-1 // for h ≥ +0; the other way round for negatives
	switch {
	case h == 0:
		down = 0x8001
	case h == 0x8000:
		up, down = 0x0001, 0x8001
	case h&0x8000 != 0:
		up, down = h-1, h+1
	}
	out := [3]uint16{h, up, down}
	for i, c := range out {
		if !finite(f16v(c)) {
			out[i] = h
		}
	}
	return out
}

// eval is Dequant's arithmetic for one element with an offset.
func eval(w int, o, s uint16) float64 {
	return float64(float32(float32(w)+gguf.F16ToF32(o)) * gguf.F16ToF32(s))
}

// affine maps a group whose ggml values are D·u − M (D and M exact float32
// products of f16 scales and small integers) to values w = u − c, scale
// f16(D) and an f16 offset. c is chosen per group so that w is centred on
// 0 within [−lim−1, lim] (the offset then carries only the group's centre
// value, and its f16 rounding costs at most 2⁻¹¹ of the group's largest
// value); the error (w + o)·S − (D·(u) − M) is linear in w, so the offset
// that zeroes it at the middle of the group's w range, rounded to f16, and
// its two f16 neighbours are tried at the range's ends and the best kept.
// D = 0: the group is −M; w = 0 with scale zeroS and offset zeroO (which
// the caller chose so that zeroO·zeroS = −M exactly).
func affine(u []int, lim int, D, M float64, zeroS, zeroO uint16, v []int8, s, o *uint16) error {
	if !finite(D) || !finite(M) {
		return fmt.Errorf("non-finite scale %g or min %g", D, M)
	}
	if D == 0 {
		for i := range u {
			v[i] = 0
		}
		*s, *o = zeroS, zeroO
		return nil
	}
	S := f16(D)
	sv := f16v(S)
	if !finite(sv) || sv == 0 {
		return fmt.Errorf("scale %g is not a finite non-zero f16", D)
	}
	lo, hi := u[0], u[0]
	for _, x := range u {
		lo, hi = min(lo, x), max(hi, x)
	}
	// Centre: c = round((lo+hi)/2), kept where w fits [−lim−1, lim].
	c := min(max((lo+hi+1)/2, hi-lim), lo+lim+1)
	wlo, whi := lo-c, hi-c
	T := func(w int) float64 { return D*float64(w+c) - M }
	wc := float64(wlo+whi) / 2
	oReal := (D*(wc+float64(c))-M)/sv - wc
	if math.Abs(oReal) > 65504 {
		// The group's spread (at most 31·|D|) is below the f16 resolution
		// of its values: one constant.
		for i := range u {
			v[i] = 0
		}
		*s, *o = f16((D*(wc+float64(c)) - M)), 0x3c00
		if !finite(f16v(*s)) {
			return fmt.Errorf("value %g overflows f16", D*(wc+float64(c))-M)
		}
		return nil
	}
	best, bestErr := uint16(0), math.Inf(1)
	for _, h := range neighbours(f16(oReal)) {
		e := max(math.Abs(eval(wlo, h, S)-T(wlo)), math.Abs(eval(whi, h, S)-T(whi)))
		if e < bestErr {
			best, bestErr = h, e
		}
	}
	for i, x := range u {
		v[i] = int8(x - c)
	}
	*s, *o = S, best
	return nil
}

// round8 returns round(x) (half to even) and whether it lies in int8's range.
func round8(x float64) (int8, bool) {
	r := math.RoundToEven(x)
	if r < -128 || r > 127 || math.IsNaN(r) {
		return 0, false
	}
	return int8(r), true
}

// symmetric re-quantises the values y of one group to int8 w with one f16
// scale S (y ≈ w·S), trying the scale cand and the amax/127 scale (and the
// f16 value above it), and keeps the one with the smaller maximum error.
func symmetric(y []float32, cand uint16, v []int8, s *uint16) error {
	amax := 0.0
	for _, x := range y {
		if !finite(float64(x)) {
			return fmt.Errorf("non-finite value %g", x)
		}
		amax = max(amax, math.Abs(float64(x)))
	}
	if amax == 0 {
		for i := range y {
			v[i] = 0
		}
		*s = 0
		return nil
	}
	g := f16(amax / 127)
	cands := []uint16{cand, g, g + 1}
	var w [32]int8
	bestErr := math.Inf(1)
	for _, S := range cands {
		sv := f16v(S)
		if !finite(sv) || sv == 0 {
			continue
		}
		e, ok := 0.0, true
		svf := float32(sv)
		for i, x := range y {
			if w[i], ok = round8(float64(x) / sv); !ok {
				break
			}
			e = max(e, math.Abs(float64(float32(w[i])*svf)-float64(x)))
			if e >= bestErr {
				ok = false
				break
			}
		}
		if ok && e < bestErr {
			bestErr, *s = e, S
			copy(v, w[:len(y)])
		}
	}
	if math.IsInf(bestErr, 1) {
		return fmt.Errorf("values up to %g overflow an f16 int8 scale", amax)
	}
	return nil
}

// asymmetric re-quantises the values y of one group to int8 w, an f16 scale
// S and an f16 offset o (y ≈ (w + o)·S): S spans the group's range in 253
// steps (at least |centre|/1000, so that the offset's f16 rounding moves w
// by under half a step and w stays within int8), o = centre/S; the f16 neighbours of S above it and
// of o are tried and the pair with the smallest maximum error is kept.
func asymmetric(y []float32, v []int8, s, o *uint16) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range y {
		if !finite(float64(x)) {
			return fmt.Errorf("non-finite value %g", x)
		}
		lo, hi = min(lo, float64(x)), max(hi, float64(x))
	}
	c := (lo + hi) / 2
	if hi == lo {
		for i := range y {
			v[i] = 0
		}
		*s, *o = f16(c), 0x3c00
		if !finite(f16v(*s)) {
			return fmt.Errorf("value %g overflows f16", c)
		}
		return nil
	}
	S0 := max((hi-lo)/253, math.Abs(c)/1000)
	S := f16(S0)
	if f16v(S) < S0 {
		S++
	}
	var w [32]int8
	bestErr := math.Inf(1)
	for _, sc := range []uint16{S, S + 1} {
		sv := f16v(sc)
		if !finite(sv) || sv == 0 {
			continue
		}
		for _, oc := range neighbours(f16(c / sv)) {
			ov := f16v(oc)
			e, ok := 0.0, true
			svf, ovf := float32(sv), float32(ov)
			for i, x := range y {
				if w[i], ok = round8(float64(x)/sv - ov); !ok {
					break
				}
				// Dequant's arithmetic: the sum exact, the product rounded.
				e = max(e, math.Abs(float64((float32(w[i])+ovf)*svf)-float64(x)))
				if e >= bestErr {
					ok = false
					break
				}
			}
			if ok && e < bestErr {
				bestErr, *s, *o = e, sc, oc
				copy(v, w[:len(y)])
			}
		}
	}
	if math.IsInf(bestErr, 1) {
		return fmt.Errorf("values in [%g, %g] overflow an f16 int8 scale", lo, hi)
	}
	return nil
}
