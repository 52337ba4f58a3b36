package kernels

import "github.com/irtool/irtool/gguf"

// Q2_K and Q3_K rows multiplied straight from their blocks by the AVX2
// kernels of k23_amd64.s (a tile of rows against one Q8_K activation row
// per call, into dst), in the order of ggml_vec_dot_q{2,3}_K_q8_K that
// dotQK reproduces on unpacked rows (qk.go): dotQK on unpackQK's row is
// their Go twin, and what runs without the assembly (the tile path of
// matmul.go). llama.cpp repacks neither type for AVX2 (q2_K_8x8 needs
// AVX-512 at 3f545bec), so decode and prefill take this one order.

// k23Raw reports whether rows of type t take these kernels.
func k23Raw(t gguf.GGMLType) bool {
	return useAVX2 && (t == gguf.TypeQ2_K || t == gguf.TypeQ3_K)
}

// dotK23Rows sets out[r] to the product of the Q2_K or Q3_K row at
// src[r·stride:] with c, for r < nr.
func dotK23Rows(t gguf.GGMLType, src []byte, stride, nr int, c q8Row, out []float32) {
	nb := len(c.d)
	if nb == 0 || nr == 0 {
		clear(out[:nr])
		return
	}
	_, _, _, _ = src[(nr-1)*stride+nb*t.TypeSize()-1], c.qs[nb*256-1], c.bsums[nb*16-1], out[nr-1]
	if t == gguf.TypeQ2_K {
		dotQ2KRowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.bsums[0], nb, nr, &out[0])
		return
	}
	dotQ3KRowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.bsums[0], nb, nr, &out[0])
}

// mulK23 is tile.mulRaw for Q2_K and Q3_K rows (k23Raw).
func (t *tile) mulK23(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	stride := int(m.a.Nb[1])
	for j := range m.n {
		c := m.q8col(base + j)
		if d := out.col(j, i12, i13); d != nil {
			dotK23Rows(m.a.Type, t.raw[0], stride, nr, c, d[r0:r0+int64(nr)])
			continue
		}
		dotK23Rows(m.a.Type, t.raw[0], stride, nr, c, t.out[:nr])
		for r, v := range t.out[:nr] {
			out.put(r0+int64(r), j, i12, i13, v)
		}
	}
}
