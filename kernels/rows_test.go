package kernels

import (
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func TestGetRows(t *testing.T) {
	// A [4, 3] table of F32, F16 and Q8_0 (the latter with 32-wide rows).
	table := []float32{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}
	idx := i32t(t, []int32{2, 0, 2, 1}, 4)
	want := []float64{20, 21, 22, 23, 0, 1, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13}
	for _, src := range []Tensor{f32t(t, table, 4, 3), f16t(t, table, 4, 3)} {
		dst := newT(t, gguf.TypeF32, 4, 4)
		if err := GetRows(dst, src, idx); err != nil {
			t.Fatal(err)
		}
		near(t, "get_rows "+src.Type.String(), vals(t, dst), want, 0)
	}
	// Quantised rows come out as ggml's dequantisation.
	q32 := make([]float32, 96)
	for i := range q32 {
		q32[i] = float32(math.Sin(float64(i)))
	}
	qb, err := gguf.QuantizeQ8_0(q32)
	if err != nil {
		t.Fatal(err)
	}
	qt, err := FromBytes(gguf.TypeQ8_0, qb, 32, 3)
	if err != nil {
		t.Fatal(err)
	}
	deq := vals(t, qt)
	dst := newT(t, gguf.TypeF32, 32, 2)
	if err := GetRows(dst, qt, i32t(t, []int32{2, 1}, 2)); err != nil {
		t.Fatal(err)
	}
	same(t, "get_rows q8_0", vals(t, dst), append(append([]float32{}, deq[64:96]...), deq[32:64]...))

	// 3-D: idx [2, 2] picks rows within each of src's two matrices.
	src3 := f32t(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 2, 2)
	idx3, err := FromI64([]int64{1, 1, 0, 1}, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	dst3 := newT(t, gguf.TypeF32, 2, 2, 2)
	if err := GetRows(dst3, src3, idx3); err != nil {
		t.Fatal(err)
	}
	near(t, "get_rows 3d", vals(t, dst3), []float64{3, 4, 3, 4, 5, 6, 7, 8}, 0)

	for _, bad := range []Tensor{i32t(t, []int32{3}, 1), i32t(t, []int32{-1}, 1)} {
		if err := GetRows(newT(t, gguf.TypeF32, 4, 1), f32t(t, table, 4, 3), bad); err == nil {
			t.Errorf("index %v accepted", vals(t, bad))
		}
	}
	if err := GetRows(newT(t, gguf.TypeF32, 4, 2), f32t(t, table, 4, 3), idx); err == nil {
		t.Error("dst of the wrong shape accepted")
	}
}

func TestSetRows(t *testing.T) {
	cache := newT(t, gguf.TypeF16, 3, 5)
	src := f32t(t, []float32{1, 2, 3, 1.0009765625 + 1.0/4096, 5, 6}, 3, 2)
	for _, idx := range []Tensor{i32t(t, []int32{4, 1}, 2), func() Tensor {
		x, err := FromI64([]int64{4, 1}, 2)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}()} {
		if err := SetRows(cache, src, idx); err != nil {
			t.Fatal(err)
		}
		// 1 + 2^-10 + 2^-12 rounds to 1 + 2^-10 in F16.
		near(t, "set_rows", vals(t, cache), []float64{0, 0, 0, 1.0009765625, 5, 6, 0, 0, 0, 0, 0, 0, 1, 2, 3}, 0)
	}
	// Broadcast of the index over dim 2: two heads share the indices.
	c2 := newT(t, gguf.TypeF32, 2, 3, 2)
	s2 := f32t(t, []float32{1, 2, 3, 4}, 2, 1, 2)
	if err := SetRows(c2, s2, i32t(t, []int32{2}, 1)); err != nil {
		t.Fatal(err)
	}
	near(t, "set_rows broadcast", vals(t, c2), []float64{0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 3, 4}, 0)
	// Q8_0 rows are quantised like ggml's from_float.
	qc := newT(t, gguf.TypeQ8_0, 32, 2)
	row := make([]float32, 32)
	for i := range row {
		row[i] = float32(i) / 7
	}
	if err := SetRows(qc, f32t(t, row, 32, 1), i32t(t, []int32{1}, 1)); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 34)
	quantizeRowQ8_0Bytes(row, want)
	if string(qc.Data[34:]) != string(want) {
		t.Error("q8_0 row differs from quantizeRowQ8_0Bytes")
	}
	if err := SetRows(cache, src, i32t(t, []int32{5, 0}, 2)); err == nil {
		t.Error("index past the last row accepted")
	}
	if err := SetRows(cache, src, i32t(t, []int32{1}, 1)); err == nil {
		t.Error("index count mismatch accepted")
	}
}

func TestCpy(t *testing.T) {
	t.Run("f32 to f16 rounds to nearest even", func(t *testing.T) {
		// 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1);
		// 1 + 3·2^-11 ties to 1 + 2^-9; 65520 overflows to +Inf; 2^-25 is
		// exactly half the smallest subnormal and rounds to 0.
		in := []float32{1 + 1.0/2048, 1 + 3.0/2048, 65520, 65519, float32(math.Ldexp(1, -25)), -0.1}
		src := f32t(t, in, int64(len(in)))
		dst := newT(t, gguf.TypeF16, int64(len(in)))
		if err := Cpy(dst, src); err != nil {
			t.Fatal(err)
		}
		near(t, "f16", vals(t, dst), []float64{1, 1 + 4.0/2048, math.Inf(1), 65504, 0, -0.0999755859375}, 0)
		back := newT(t, gguf.TypeF32, int64(len(in)))
		if err := Cpy(back, dst); err != nil {
			t.Fatal(err)
		}
		same(t, "f16 to f32", vals(t, back), vals(t, dst))
	})
	t.Run("permuted cont with new shape", func(t *testing.T) {
		// kqv [hd=2, T=3, H=2] permuted to [2, 2, 3] and copied as [4, 3]
		// (ggml_cont_2d after ggml_permute(0, 2, 1, 3)).
		v := make([]float32, 12)
		for i := range v {
			v[i] = float32(i)
		}
		kqv := f32t(t, v, 2, 3, 2)
		p, err := kqv.Permute([4]int{0, 2, 1, 3})
		if err != nil {
			t.Fatal(err)
		}
		dst := newT(t, gguf.TypeF32, 4, 3)
		if err := Cpy(dst, p); err != nil {
			t.Fatal(err)
		}
		near(t, "cont_2d", vals(t, dst), []float64{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}, 0)
	})
	t.Run("into a strided view", func(t *testing.T) {
		// Copy a [3, 2] F32 tensor into the transposed view of a [2, 3] F16 buffer.
		buf := newT(t, gguf.TypeF16, 2, 3)
		src := f32t(t, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
		if err := Cpy(buf.Transpose(), src); err != nil {
			t.Fatal(err)
		}
		near(t, "transposed dst", vals(t, buf), []float64{1, 4, 2, 5, 3, 6}, 0)
	})
	t.Run("same type raw copy", func(t *testing.T) {
		idx, err := FromI64([]int64{1 << 40, -7, 3}, 3)
		if err != nil {
			t.Fatal(err)
		}
		dst := newT(t, gguf.TypeI64, 3)
		if err := Cpy(dst, idx); err != nil {
			t.Fatal(err)
		}
		if string(dst.Data) != string(idx.Data) {
			t.Error("i64 copy changed bytes")
		}
	})
	t.Run("errors", func(t *testing.T) {
		if err := Cpy(newT(t, gguf.TypeF32, 5), f32t(t, make([]float32, 4), 4)); err == nil {
			t.Error("element count mismatch accepted")
		}
		if err := Cpy(newT(t, gguf.TypeQ8_0, 64), f32t(t, make([]float32, 64), 32, 2)); err == nil {
			t.Error("quantised copy with different row lengths accepted")
		}
		if err := Cpy(newT(t, gguf.TypeQ5_1, 32), f32t(t, make([]float32, 32), 32)); err == nil {
			t.Error("copy into q5_1 accepted")
		}
	})
}
