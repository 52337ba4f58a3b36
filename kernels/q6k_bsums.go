package kernels

// dotQ6KBsums is ggml_vec_dot_q6_K_q8_K as llama.cpp's x86 AVX2 build
// computes it since the weights' -32 offset left the lanes (commit
// 3f545bec has it; c392e50 does not, see dotQK): the lanes collect the
// unsigned 6-bit values, lane k (0..7) of each super-block holding
// Σ sc·Σ q·y over values 4k..4k+3 of every 32-value group, each times its
// 16-value scale, minus 32·(sc[2k]·bsum[2k] + sc[2k+1]·bsum[2k+1]) (the
// offset of the k-th 32-value group, from the activation's 16-value sums);
// then, as before, acc[k] = fma(d_y·d, float(lane[k]), acc[k]) per
// super-block and the 256-bit horizontal sum. The integer total equals
// dotQK's; only its split over the lanes, hence the float rounding, differs.
func dotQ6KBsums(a *qkRow, b q8Row) float32 {
	var acc [8]float32
	for s, da := range a.d {
		var lane [8]int32
		for g := range 16 {
			o := s*256 + g*16
			x := a.q[o : o+16 : o+16] // q - 32 (unpackQK)
			y := b.qs[o : o+16 : o+16]
			sc := a.sc[s*16+g]
			l0 := 4 * (g % 2)
			for k := range 4 {
				p := (int32(x[4*k])+32)*int32(y[4*k]) + (int32(x[4*k+1])+32)*int32(y[4*k+1]) +
					(int32(x[4*k+2])+32)*int32(y[4*k+2]) + (int32(x[4*k+3])+32)*int32(y[4*k+3])
				lane[l0+k] += sc * p
			}
		}
		sc := a.sc[s*16 : s*16+16 : s*16+16]
		bs := b.bsums[s*16 : s*16+16 : s*16+16]
		for k := range lane {
			lane[k] -= 32 * (sc[2*k]*bs[2*k] + sc[2*k+1]*bs[2*k+1])
		}
		d := b.d[s] * da
		for k := range acc {
			acc[k] = fma32(d, float32(lane[k]), acc[k])
		}
	}
	return hsum8(&acc)
}
