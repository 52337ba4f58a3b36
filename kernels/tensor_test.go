package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func TestNewTensorStrides(t *testing.T) {
	for _, c := range []struct {
		ty     gguf.GGMLType
		ne     []int64
		nb     [4]int64
		nbytes int64
	}{
		{gguf.TypeF32, []int64{3, 2}, [4]int64{4, 12, 24, 24}, 24},
		{gguf.TypeF16, []int64{5}, [4]int64{2, 10, 10, 10}, 10},
		{gguf.TypeI32, []int64{2, 3, 4}, [4]int64{4, 8, 24, 96}, 96},
		{gguf.TypeQ8_0, []int64{64, 3}, [4]int64{34, 68, 204, 204}, 204},
		{gguf.TypeQ4_K, []int64{256, 2}, [4]int64{144, 144, 288, 288}, 288},
	} {
		x, err := NewTensor(c.ty, c.ne...)
		if err != nil {
			t.Fatalf("%s%v: %v", c.ty, c.ne, err)
		}
		if x.Nb != c.nb || x.NBytes() != c.nbytes || int64(len(x.Data)) != c.nbytes || !x.IsContiguous() {
			t.Errorf("%s%v: nb %v nbytes %d len %d contiguous %v; want nb %v nbytes %d", c.ty, c.ne, x.Nb, x.NBytes(), len(x.Data), x.IsContiguous(), c.nb, c.nbytes)
		}
	}
	for _, c := range []struct {
		ty gguf.GGMLType
		ne []int64
	}{
		{gguf.TypeQ8_0, []int64{33}}, {gguf.TypeF32, []int64{-1}}, {gguf.TypeF32, nil},
		{gguf.TypeF32, []int64{1, 2, 3, 4, 5}}, {gguf.GGMLType(4), []int64{32}},
		{gguf.TypeF32, []int64{1 << 20, 1 << 20, 1 << 20}},
	} {
		if _, err := NewTensor(c.ty, c.ne...); err == nil {
			t.Errorf("NewTensor(%s, %v): no error", c.ty, c.ne)
		}
	}
}

func TestViews(t *testing.T) {
	// 3x2 matrix: rows [0 1 2], [3 4 5].
	x := f32t(t, []float32{0, 1, 2, 3, 4, 5}, 3, 2)
	tr := x.Transpose()
	if tr.Ne != [4]int64{2, 3, 1, 1} || tr.IsContiguous() {
		t.Fatalf("transpose: %v nb %v", tr, tr.Nb)
	}
	near(t, "transpose", vals(t, tr), []float64{0, 3, 1, 4, 2, 5}, 0)
	c := clone(t, tr)
	if !c.IsContiguous() {
		t.Fatal("Contiguous() is not contiguous")
	}
	near(t, "contiguous", vals(t, c), []float64{0, 3, 1, 4, 2, 5}, 0)

	p, err := x.Permute([4]int{1, 0, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "permute", vals(t, p), []float64{0, 3, 1, 4, 2, 5}, 0)
	if _, err := x.Permute([4]int{0, 0, 1, 2}); err == nil {
		t.Error("bad permutation accepted")
	}
	// ggml_permute(x, 0, 2, 1, 3) of [2, 3, 4] gives [2, 4, 3].
	y := newT(t, gguf.TypeF32, 2, 3, 4)
	yp, err := y.Permute([4]int{0, 2, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if yp.Ne != [4]int64{2, 4, 3, 1} || yp.Nb != [4]int64{4, 24, 8, 96} {
		t.Errorf("permute 0213: ne %v nb %v", yp.Ne, yp.Nb)
	}

	r, err := x.Reshape(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "reshape", vals(t, r), []float64{0, 1, 2, 3, 4, 5}, 0)
	if _, err := tr.Reshape(6); err == nil {
		t.Error("reshape of a strided view accepted")
	}
	if _, err := x.Reshape(4); err == nil {
		t.Error("reshape changing the element count accepted")
	}

	// Second row as a view.
	v, err := x.View([4]int64{3, 1, 1, 1}, x.Nb, x.Nb[1])
	if err != nil {
		t.Fatal(err)
	}
	near(t, "view", vals(t, v), []float64{3, 4, 5}, 0)
	if _, err := x.View([4]int64{3, 2, 1, 1}, x.Nb, 4); err == nil {
		t.Error("view past the end accepted")
	}
	if _, err := x.View([4]int64{3, 1, 1, 1}, [4]int64{-4, 12, 12, 12}, 8); err == nil {
		t.Error("negative stride accepted")
	}
}

func TestElementAccess(t *testing.T) {
	x := newT(t, gguf.TypeF16, 2, 2)
	if err := x.SetFloat(1.5, 1, 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := x.Float(1, 1, 0, 0); err != nil || v != 1.5 {
		t.Errorf("Float = %v, %v", v, err)
	}
	if _, err := x.Float(2, 0, 0, 0); err == nil {
		t.Error("out-of-range index accepted")
	}
	idx, err := FromI64([]int64{-3, 1 << 40}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := idx.Int(1, 0, 0, 0); err != nil || v != 1<<40 {
		t.Errorf("Int = %v, %v", v, err)
	}
	if _, err := x.Int(0, 0, 0, 0); err == nil {
		t.Error("Int on f16 accepted")
	}
	q := newT(t, gguf.TypeQ8_0, 32)
	if _, err := q.Float(0, 0, 0, 0); err == nil {
		t.Error("element access to a quantised tensor accepted")
	}
}

func TestValidate(t *testing.T) {
	good := f32t(t, make([]float32, 6), 3, 2)
	for _, c := range []struct {
		name string
		mod  func(*Tensor)
		msg  string
	}{
		{"short data", func(x *Tensor) { x.Data = x.Data[:20] }, "spans 24 bytes"},
		{"negative dim", func(x *Tensor) { x.Ne[1] = -1 }, "negative"},
		{"unknown type", func(x *Tensor) { x.Type = 99 }, "unknown type"},
		{"quantised partial block", func(x *Tensor) { x.Type = gguf.TypeQ8_0; x.Ne = [4]int64{16, 1, 1, 1} }, "block size"},
		{"quantised strided row", func(x *Tensor) {
			x.Type = gguf.TypeQ8_0
			x.Ne = [4]int64{64, 1, 1, 1}
			x.Nb = [4]int64{40, 80, 80, 80}
			x.Data = make([]byte, 100)
		}, "dense"},
	} {
		x := good
		c.mod(&x)
		err := x.Validate()
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.msg)
		}
	}
	if err := good.Validate(); err != nil {
		t.Errorf("valid tensor: %v", err)
	}
}

func TestToF32Quantised(t *testing.T) {
	src := make([]float32, 64)
	for i := range src {
		src[i] = float32(i) - 31.5
	}
	q, err := gguf.QuantizeQ8_0(src)
	if err != nil {
		t.Fatal(err)
	}
	x, err := FromBytes(gguf.TypeQ8_0, q, 32, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 64)
	if err := gguf.Dequantize(gguf.TypeQ8_0, q, want); err != nil {
		t.Fatal(err)
	}
	same(t, "q8_0", vals(t, x), want)
	if _, err := FromBytes(gguf.TypeQ8_0, q[:60], 32, 2); err == nil {
		t.Error("FromBytes accepted short data")
	}
}

// TestRoundF16 checks the bit-level fast path of roundF16 against gguf's
// converters on every float32 whose low 13 bits are one of the patterns
// that decide rounding (exact, just below/at/above a tie, largest), for all
// 2^19 sign/exponent/upper-mantissa combinations, and on random values.
func TestRoundF16(t *testing.T) {
	ref := func(v float32) float32 { return gguf.F16ToF32(gguf.F32ToF16(v)) }
	check := func(b uint32) {
		v := math.Float32frombits(b)
		got, want := roundF16(v), ref(v)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("roundF16(%#08x = %g) = %#08x, want %#08x", b, v, math.Float32bits(got), math.Float32bits(want))
		}
	}
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
			check(hi<<13 | lo)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 1 << 20 {
		check(r.Uint32())
	}
}
