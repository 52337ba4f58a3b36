package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// refMatMulAbs computes ggml's mul_mat in float64 from already-converted
// operands, a [K, M, A2, A3] and b [K, N, B2, B3] in logical order, and
// Σ|a·b| per output, the scale of its rounding error.
func refMatMulAbs(a []float64, ane [4]int64, b []float64, bne [4]int64) (out, abs []float64) {
	K, M, N := ane[0], ane[1], bne[1]
	r2, r3 := bne[2]/ane[2], bne[3]/ane[3]
	out = make([]float64, M*N*bne[2]*bne[3])
	abs = make([]float64, len(out))
	for i3 := range bne[3] {
		for i2 := range bne[2] {
			ab := ((i3/r3)*ane[2] + i2/r2) * M * K
			bb := (i3*bne[2] + i2) * N * K
			for n := range N {
				for m := range M {
					var s, sa float64
					for k := range K {
						p := a[ab+m*K+k] * b[bb+n*K+k]
						s += p
						sa += math.Abs(p)
					}
					out[((i3*bne[2]+i2)*N+n)*M+m] = s
					abs[((i3*bne[2]+i2)*N+n)*M+m] = sa
				}
			}
		}
	}
	return out, abs
}

// nearDot requires |got-want| <= tol*scale element by element, scale being
// Σ|a·b| of each dot product.
func nearDot(t testing.TB, what string, got []float32, want, scale []float64, tol float64) {
	t.Helper()
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol*scale[i] {
			t.Fatalf("%s[%d] = %.9g, want %.9g (diff %.3g > %.1g × %.3g)", what, i, got[i], want[i], d, tol, scale[i])
		}
	}
}

func TestMulMatSmall(t *testing.T) {
	// a rows (1 2 3) and (4 5 6); b rows (1 0 1), (0 1 0): dst[m, n] = a_m·b_n.
	a := f32t(t, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	b := f32t(t, []float32{1, 0, 1, 0, 1, 0}, 3, 2)
	dst := newT(t, gguf.TypeF32, 2, 2)
	if err := MulMat(dst, a, b); err != nil {
		t.Fatal(err)
	}
	near(t, "mul_mat", vals(t, dst), []float64{4, 10, 2, 5}, 0)
}

func TestMulMatFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name     string
		aty      gguf.GGMLType
		ane, bne [4]int64
		strided  bool // a is read through a transposed view, b through a permuted one
	}{
		{"f32 vector", gguf.TypeF32, [4]int64{37, 9, 1, 1}, [4]int64{37, 1, 1, 1}, false},
		{"f32 matrix", gguf.TypeF32, [4]int64{64, 17, 1, 1}, [4]int64{64, 11, 1, 1}, false},
		{"f32 gqa broadcast", gguf.TypeF32, [4]int64{16, 5, 2, 1}, [4]int64{16, 3, 6, 2}, false},
		{"f32 strided", gguf.TypeF32, [4]int64{24, 7, 1, 1}, [4]int64{24, 5, 3, 1}, true},
		{"f16 matrix", gguf.TypeF16, [4]int64{40, 13, 1, 1}, [4]int64{40, 6, 1, 1}, false},
		{"f16 strided gqa", gguf.TypeF16, [4]int64{16, 32, 2, 1}, [4]int64{16, 5, 4, 1}, true},
		{"bf16", gguf.TypeBF16, [4]int64{33, 4, 1, 1}, [4]int64{33, 2, 1, 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			an := c.ane[0] * c.ane[1] * c.ane[2] * c.ane[3]
			bn := c.bne[0] * c.bne[1] * c.bne[2] * c.bne[3]
			av := randF32(r, int(an), 1)
			bv := randF32(r, int(bn), 1)
			a := newT(t, c.aty, c.ane[:]...)
			b := f32t(t, bv, c.bne[:]...)
			if c.strided {
				// Store a transposed ([M, K] buffer) and view it back as
				// [K, M]; store b as [K, B2, N] and permute.
				buf := newT(t, c.aty, c.ane[1], c.ane[0], c.ane[2], c.ane[3])
				a = buf.Transpose()
				bb := newT(t, gguf.TypeF32, c.bne[0], c.bne[2], c.bne[1], c.bne[3])
				var err error
				if b, err = bb.Permute([4]int{0, 2, 1, 3}); err != nil {
					t.Fatal(err)
				}
				if err := Cpy(b, f32t(t, bv, c.bne[:]...)); err != nil {
					t.Fatal(err)
				}
			}
			if err := Cpy(a, f32t(t, av, c.ane[:]...)); err != nil {
				t.Fatal(err)
			}
			// The reference uses a's stored values and b rounded to a's
			// vec_dot_type, as ggml does.
			aStored := f64s(vals(t, a))
			round := vecDotRound(c.aty)
			bRef := make([]float64, len(bv))
			for i, v := range bv {
				if round != nil {
					v = round(v)
				}
				bRef[i] = float64(v)
			}
			dst := newT(t, gguf.TypeF32, c.ane[1], c.bne[1], c.bne[2], c.bne[3])
			if err := MulMat(dst, a, b); err != nil {
				t.Fatal(err)
			}
			got := vals(t, dst)
			wantV, scale := refMatMulAbs(aStored, c.ane, bRef, c.bne)
			nearDot(t, "mul_mat", got, wantV, scale, 1e-6)
			// Deterministic whatever the number of goroutines.
			for _, th := range []int{1, 3} {
				d2 := newT(t, gguf.TypeF32, dst.Ne[:]...)
				if err := (Options{Threads: th}).MulMat(d2, a, b); err != nil {
					t.Fatal(err)
				}
				same(t, fmt.Sprintf("threads=%d", th), vals(t, d2), got)
			}
		})
	}
}

func TestDotF32x4SameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 41; n++ {
		a := randF32(r, n, 1)
		b := [4][]float32{randF32(r, n, 1), randF32(r, n, 1), randF32(r, n, 1), randF32(r, n, 1)}
		v0, v1, v2, v3 := dotF32x4(a, b[0], b[1], b[2], b[3])
		same(t, fmt.Sprintf("n=%d", n), []float32{v0, v1, v2, v3},
			[]float32{dotF32(a, b[0]), dotF32(a, b[1]), dotF32(a, b[2]), dotF32(a, b[3])})
	}
}

// TestDotVariantsSameBits checks the unrolled and raw forms of the dot
// products against their plain forms: dotF32x4FMA against dotF32FMA,
// dotVecF16Raw against dotVec of the widened row, and (F16 values, whose
// products are exact) dotF32 against dotF32FMA. Lengths cover empty, tails
// and several 32-value blocks.
func TestDotVariantsSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 100; n++ {
		a := randF32(r, n, 1)
		b := [4][]float32{randF32(r, n, 1), randF32(r, n, 1), randF32(r, n, 1), randF32(r, n, 1)}
		v0, v1, v2, v3 := dotF32x4FMA(a, b[0], b[1], b[2], b[3])
		same(t, fmt.Sprintf("x4 n=%d", n), []float32{v0, v1, v2, v3},
			[]float32{dotF32FMA(a, b[0]), dotF32FMA(a, b[1]), dotF32FMA(a, b[2]), dotF32FMA(a, b[3])})
		h := f16t(t, append(a, 0), int64(n+1))
		ha, hb := vals(t, h)[:n], make([]float32, n)
		for i, x := range b[0] {
			hb[i] = roundF16(x)
		}
		same(t, fmt.Sprintf("raw n=%d", n), []float32{dotVecF16Raw(h.Data, hb)}, []float32{dotVec(ha, hb, true)})
		same(t, fmt.Sprintf("f16 fma n=%d", n), []float32{dotF32(ha, hb)}, []float32{dotF32FMA(ha, hb)})
	}
}

func TestQuantizeQ8_0(t *testing.T) {
	// ggml's AVX2 quantize_row_q8_0: amax 127 gives id = 1, so 2.5 rounds
	// to even (2) where the reference roundf would give 3; -0.5 gives -0.
	x := make([]float32, 32)
	x[0], x[1], x[2], x[3] = 127, 2.5, 3.5, -0.5
	qs := make([]int8, 32)
	d := make([]float32, 1)
	quantizeQ8_0(x, qs, d)
	if d[0] != 1 || qs[0] != 127 || qs[1] != 2 || qs[2] != 4 || qs[3] != 0 {
		t.Errorf("d %v q %v", d[0], qs[:4])
	}
	// The scale is the F16 value stored in the block.
	x[0] = 100
	quantizeQ8_0(x, qs, d)
	if want := roundF16(100.0 / 127); d[0] != want {
		t.Errorf("d = %v, want the f16 %v", d[0], want)
	}
	// All zeros: d 0, q 0.
	quantizeQ8_0(make([]float32, 32), qs, d)
	if d[0] != 0 || qs[0] != 0 {
		t.Errorf("zero block: d %v q %v", d[0], qs[0])
	}
	// Bytes form agrees with the int8 form and dequantises with gguf.
	r := rand.New(rand.NewPCG(5, 6))
	v := randF32(r, 96, 3)
	b := make([]byte, 3*34)
	quantizeRowQ8_0Bytes(v, b)
	q2 := make([]int8, 96)
	d2 := make([]float32, 3)
	quantizeQ8_0(v, q2, d2)
	deq := make([]float32, 96)
	if err := gguf.Dequantize(gguf.TypeQ8_0, b, deq); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if deq[i] != float32(q2[i])*d2[i/32] {
			t.Fatalf("value %d: bytes give %v, int8 form %v", i, deq[i], float32(q2[i])*d2[i/32])
		}
		// |q·d16 - x| <= d/2 plus |q|·|d16 - d| <= 127·d·2^-11.
		if math.Abs(float64(deq[i]-v[i])) > float64(d2[i/32])*0.57 {
			t.Fatalf("value %d: %v quantised to %v", i, v[i], deq[i])
		}
	}
}

func TestQuantizeQ8_K(t *testing.T) {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i%17) - 5
	}
	x[100] = -12 // largest magnitude, negative: iscale = -127/-12
	qs := make([]int8, 256)
	d := make([]float32, 1)
	bs := make([]int32, 16)
	quantizeQ8_K(x, qs, d, bs)
	iscale := float32(-127) / float32(-12)
	if d[0] != 1/iscale {
		t.Errorf("d = %v, want %v", d[0], 1/iscale)
	}
	for i, v := range x {
		want := int8(min(127, int32(math.RoundToEven(float64(iscale*v)))))
		if qs[i] != want {
			t.Fatalf("q[%d] = %d, want %d", i, qs[i], want)
		}
	}
	for g := range 16 {
		var s int32
		for _, q := range qs[g*16 : g*16+16] {
			s += int32(q)
		}
		if bs[g] != s {
			t.Errorf("bsum %d = %d, want %d", g, bs[g], s)
		}
	}
	if nearestInt(2.5) != 2 || nearestInt(3.5) != 4 || nearestInt(-2.5) != -2 {
		t.Error("nearestInt does not round half to even")
	}
}

// randomKQuant returns n random blocks of a K-quant type with sane F16
// scales: every bit pattern of the quants and sub-scales is valid.
func randomKQuant(r *rand.Rand, ty gguf.GGMLType, n int) []byte {
	ts := ty.TypeSize()
	b := make([]byte, n*ts)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	put := func(off int, v float32) { binary.LittleEndian.PutUint16(b[off:], gguf.F32ToF16(v)) }
	for s := range n {
		o := s * ts
		switch ty {
		case gguf.TypeQ2_K:
			put(o+80, 0.01+r.Float32()*0.01)
			put(o+82, r.Float32()*0.01)
		case gguf.TypeQ3_K:
			put(o+108, 0.01+r.Float32()*0.01)
		case gguf.TypeQ4_K, gguf.TypeQ5_K:
			put(o, 0.01+r.Float32()*0.01)
			put(o+2, r.Float32()*0.01)
		case gguf.TypeQ6_K:
			put(o+208, 0.001+r.Float32()*0.001)
		}
	}
	return b
}

// TestUnpackQK checks the integer decomposition of every K-quant type
// against gguf.Dequantize: d*sc*q - dmin*m, evaluated in ggml's float order,
// must give the same bits.
func TestUnpackQK(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, ty := range []gguf.GGMLType{gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		const nsb = 3
		src := randomKQuant(r, ty, nsb)
		want := make([]float32, nsb*256)
		if err := gguf.Dequantize(ty, src, want); err != nil {
			t.Fatal(err)
		}
		row := newQKRow(nsb * 256)
		unpackQK(ty, src, row)
		for i := range want {
			s, g := i/256, i/16
			d, dm := row.d[s], row.dmin[s]
			var got float32
			switch ty {
			case gguf.TypeQ6_K:
				got = float32(d*float32(row.sc[g])) * float32(row.q[i])
			case gguf.TypeQ3_K:
				got = float32(d*float32(row.sc[g])) * float32(row.q[i])
			default:
				got = float32(float32(d*float32(row.sc[g]))*float32(row.q[i])) - float32(dm*float32(row.m[g]))
			}
			if math.Float32bits(got) != math.Float32bits(want[i]) {
				t.Fatalf("%s value %d: unpacked %v, dequantised %v (q %d sc %d m %d)", ty, i, got, want[i], row.q[i], row.sc[g], row.m[g])
			}
		}
	}
}

// TestMulMatQuantGGML checks the integer path against a float64 product of
// the dequantised weights and the quantised activations (what the integer
// dot products compute exactly), and QuantDequant against the dequantised
// weights with unrounded activations.
func TestMulMatQuantGGML(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	type qcase struct {
		ty   gguf.GGMLType
		k, m int64
		data func(n int) []byte
	}
	ref := func(q func([]float32) ([]byte, error)) func(int) []byte {
		return func(n int) []byte {
			b, err := q(randF32(r, n, 0.5))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	cases := []qcase{
		{gguf.TypeQ8_0, 64, 9, ref(gguf.QuantizeQ8_0)},
		{gguf.TypeQ4_0, 96, 7, ref(gguf.QuantizeQ4_0)},
		{gguf.TypeQ5_0, 64, 5, func(n int) []byte {
			b := make([]byte, n/32*22)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			for i := 0; i < len(b); i += 22 {
				binary.LittleEndian.PutUint16(b[i:], gguf.F32ToF16(0.01+r.Float32()*0.01))
			}
			return b
		}},
	}
	for _, ty := range []gguf.GGMLType{gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		cases = append(cases, qcase{ty, 512, 6, func(n int) []byte { return randomKQuant(r, ty, n/256) }})
	}
	for _, c := range cases {
		t.Run(c.ty.String(), func(t *testing.T) {
			const n = 5
			a, err := FromBytes(c.ty, c.data(int(c.k*c.m)), c.k, c.m)
			if err != nil {
				t.Fatal(err)
			}
			bv := randF32(r, int(c.k*n), 1)
			b := f32t(t, bv, c.k, n)
			aDeq := f64s(vals(t, a))

			// QuantGGML: activations quantised as ggml does.
			bq := make([]float64, len(bv))
			qs := make([]int8, c.k)
			if c.ty.BlockSize() == 32 {
				d := make([]float32, c.k/32)
				for j := range n {
					quantizeQ8_0(bv[j*int(c.k):(j+1)*int(c.k)], qs, d)
					for i := range qs {
						bq[j*int(c.k)+i] = float64(qs[i]) * float64(d[i/32])
					}
				}
			} else {
				d := make([]float32, c.k/256)
				bs := make([]int32, c.k/16)
				for j := range n {
					quantizeQ8_K(bv[j*int(c.k):(j+1)*int(c.k)], qs, d, bs)
					for i := range qs {
						bq[j*int(c.k)+i] = float64(qs[i]) * float64(d[i/256])
					}
				}
			}
			ne := [4]int64{c.k, c.m, 1, 1}
			bne := [4]int64{c.k, n, 1, 1}
			dst := newT(t, gguf.TypeF32, c.m, n)
			if err := (Options{Quant: QuantGGML}).MulMat(dst, a, b); err != nil {
				t.Fatal(err)
			}
			w, sc := refMatMulAbs(aDeq, ne, bq, bne)
			nearDot(t, "ggml", vals(t, dst), w, sc, 1e-6)

			if err := (Options{Quant: QuantDequant}).MulMat(dst, a, b); err != nil {
				t.Fatal(err)
			}
			w, sc = refMatMulAbs(aDeq, ne, f64s(bv), bne)
			nearDot(t, "dequant", vals(t, dst), w, sc, 1e-6)
		})
	}
	t.Run("fallback for q4_1", func(t *testing.T) {
		b := make([]byte, 20*2)
		for i := range b {
			b[i] = byte(i * 7)
		}
		binary.LittleEndian.PutUint16(b[0:], gguf.F32ToF16(0.1))
		binary.LittleEndian.PutUint16(b[20:], gguf.F32ToF16(0.2))
		a, err := FromBytes(gguf.TypeQ4_1, b, 32, 2)
		if err != nil {
			t.Fatal(err)
		}
		x := f32t(t, randF32(r, 32, 1), 32)
		d1, d2 := newT(t, gguf.TypeF32, 2), newT(t, gguf.TypeF32, 2)
		if err := (Options{Quant: QuantGGML}).MulMat(d1, a, x); err != nil {
			t.Fatal(err)
		}
		if err := MulMat(d2, a, x); err != nil {
			t.Fatal(err)
		}
		same(t, "q4_1 ggml falls back to dequant", vals(t, d1), vals(t, d2))
	})
}

func TestMulMatErrors(t *testing.T) {
	a := newT(t, gguf.TypeF32, 4, 3)
	b := newT(t, gguf.TypeF32, 4, 2)
	for _, c := range []struct {
		name      string
		dst, a, b Tensor
	}{
		{"inner dims", newT(t, gguf.TypeF32, 3, 2), a, newT(t, gguf.TypeF32, 5, 2)},
		{"dst shape", newT(t, gguf.TypeF32, 2, 3), a, b},
		{"dst type", newT(t, gguf.TypeF16, 3, 2), a, b},
		{"b quantised", newT(t, gguf.TypeF32, 3, 1), newT(t, gguf.TypeF32, 32, 3), newT(t, gguf.TypeQ8_0, 32, 1)},
		{"no broadcast", newT(t, gguf.TypeF32, 3, 2, 3), newT(t, gguf.TypeF32, 4, 3, 2), newT(t, gguf.TypeF32, 4, 2, 3)},
		{"i32 weights", newT(t, gguf.TypeF32, 3, 2), newT(t, gguf.TypeI32, 4, 3), b},
		{"truncated weights", newT(t, gguf.TypeF32, 3, 2), Tensor{Type: gguf.TypeF32, Ne: a.Ne, Nb: a.Nb, Data: a.Data[:40]}, b},
		{"dst overlaps b", Tensor{Type: gguf.TypeF32, Ne: [4]int64{3, 2, 1, 1}, Nb: [4]int64{4, 12, 24, 24}, Data: b.Data}, a, b},
	} {
		if err := MulMat(c.dst, c.a, c.b); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestMulMatColumnsIndependent multiplies 6 columns at once and one at a
// time: for quantised weights a decode step (1 column, weights read
// straight from their bytes) must give the bits of the same column in a
// prefill (weights decoded once for all columns). F32 and F16 weights, and
// quantised weights dequantised to F32 (QuantDequant), meet a single column
// with ggml_vec_dot_f32/f16's summation order (tinyBLAS takes only n >= 2,
// as in llama.cpp), so there the single column must equal dotVec of the row
// and the column, and the 6 columns tinyBLAS's order (dotF32FMA, or dotF32
// for F16).
func TestMulMatColumnsIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const k, m, n = 256, 7, 6
	wv := randF32(r, k*m, 0.5)
	weights := map[gguf.GGMLType]Tensor{
		gguf.TypeF32: f32t(t, wv, k, m),
		gguf.TypeF16: f16t(t, wv, k, m),
	}
	for _, q := range []struct {
		ty gguf.GGMLType
		f  func([]float32) ([]byte, error)
	}{{gguf.TypeQ8_0, gguf.QuantizeQ8_0}, {gguf.TypeQ4_0, gguf.QuantizeQ4_0}} {
		b, err := q.f(wv)
		if err != nil {
			t.Fatal(err)
		}
		if weights[q.ty], err = FromBytes(q.ty, b, k, m); err != nil {
			t.Fatal(err)
		}
	}
	qk, err := FromBytes(gguf.TypeQ4_K, randomKQuant(r, gguf.TypeQ4_K, m), k, m)
	if err != nil {
		t.Fatal(err)
	}
	weights[gguf.TypeQ4_K] = qk
	xv := randF32(r, k*n, 1)
	x := f32t(t, xv, k, n)
	for ty, w := range weights {
		for _, opts := range []Options{{Quant: QuantDequant}, {Quant: QuantGGML}} {
			all := newT(t, gguf.TypeF32, m, n)
			if err := opts.MulMat(all, w, x); err != nil {
				t.Fatal(err)
			}
			av := vals(t, all)
			for j := range n {
				one := newT(t, gguf.TypeF32, m, 1)
				col := xv[j*k : (j+1)*k]
				if err := opts.MulMat(one, w, f32t(t, col, k, 1)); err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s %s column %d", ty, opts.Quant, j)
				if ty != gguf.TypeF32 && ty != gguf.TypeF16 && opts.Quant == QuantGGML {
					same(t, what, vals(t, one), av[j*m:(j+1)*m])
					continue
				}
				wf := vals(t, w)
				c := append([]float32(nil), col...)
				if ty == gguf.TypeF16 {
					for i := range c {
						c[i] = roundF16(c[i])
					}
				}
				vec, tiny := make([]float32, m), make([]float32, m)
				for r := range m {
					row := wf[r*k : (r+1)*k]
					vec[r] = dotVec(row, c, ty == gguf.TypeF16)
					if ty != gguf.TypeF16 {
						tiny[r] = dotF32FMA(row, c)
					} else {
						tiny[r] = dotF32(row, c)
					}
				}
				same(t, what+" (vec_dot)", vals(t, one), vec)
				same(t, what+" (tinyBLAS)", av[j*m:(j+1)*m], tiny)
			}
		}
	}
}
