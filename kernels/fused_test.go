package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// Every fused kernel must give the same bits as the unfused chain it
// replaces: the fusion passes are checked by running both graphs.

func TestRMSNormMulFused(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	x := f32t(t, randF32(r, 37*3, 2), 37, 3)
	w := f32t(t, randF32(r, 37, 1), 37)
	const eps = 1e-6
	want := newT(t, gguf.TypeF32, 37, 3)
	if err := RMSNorm(want, x, eps); err != nil {
		t.Fatal(err)
	}
	if err := Mul(want, want, w); err != nil {
		t.Fatal(err)
	}
	got := newT(t, gguf.TypeF32, 37, 3)
	if err := RMSNormMul(got, x, w, eps); err != nil {
		t.Fatal(err)
	}
	same(t, "rms_norm_mul", vals(t, got), vals(t, want))
	if err := RMSNormMul(got, x, f32t(t, make([]float32, 5), 5), eps); err == nil {
		t.Error("weight of the wrong width accepted")
	}
}

func TestAddRMSNormMulFused(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	a := f32t(t, randF32(r, 64*4, 1), 64, 4)
	b := f32t(t, randF32(r, 64*4, 1), 64, 4)
	w := f32t(t, randF32(r, 64, 1), 64)
	const eps = 1e-5
	for _, sumType := range []gguf.GGMLType{gguf.TypeF32, gguf.TypeF16} {
		wantSum := newT(t, sumType, 64, 4)
		if err := Add(wantSum, a, b); err != nil {
			t.Fatal(err)
		}
		want := newT(t, gguf.TypeF32, 64, 4)
		if err := RMSNorm(want, wantSum, eps); err != nil {
			t.Fatal(err)
		}
		if err := Mul(want, want, w); err != nil {
			t.Fatal(err)
		}
		sum := newT(t, sumType, 64, 4)
		got := newT(t, gguf.TypeF32, 64, 4)
		if err := AddRMSNormMul(got, sum, a, b, w, eps); err != nil {
			t.Fatal(err)
		}
		same(t, "sum "+sumType.String(), vals(t, sum), vals(t, wantSum))
		same(t, "norm "+sumType.String(), vals(t, got), vals(t, want))
	}
}

func TestSwiGLUFused(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	g := f32t(t, randF32(r, 21*2, 3), 21, 2)
	u := f32t(t, randF32(r, 21*2, 1), 21, 2)
	want := newT(t, gguf.TypeF32, 21, 2)
	if err := Silu(want, g); err != nil {
		t.Fatal(err)
	}
	if err := Mul(want, want, u); err != nil {
		t.Fatal(err)
	}
	got := newT(t, gguf.TypeF32, 21, 2)
	if err := SwiGLU(got, g, u); err != nil {
		t.Fatal(err)
	}
	same(t, "swiglu", vals(t, got), vals(t, want))
}

func TestMulMatAddFused(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	a := f16t(t, randF32(r, 48*10, 1), 48, 10)
	b := f32t(t, randF32(r, 48*3, 1), 48, 3)
	bias := f32t(t, randF32(r, 10, 1), 10)
	want := newT(t, gguf.TypeF32, 10, 3)
	if err := MulMat(want, a, b); err != nil {
		t.Fatal(err)
	}
	if err := Add(want, want, bias); err != nil {
		t.Fatal(err)
	}
	got := newT(t, gguf.TypeF32, 10, 3)
	if err := MulMatAdd(got, a, b, bias); err != nil {
		t.Fatal(err)
	}
	same(t, "mul_mat_add", vals(t, got), vals(t, want))
}

func TestRopeSetRowsFused(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const hd, nh, nt, nctx = 8, 2, 3, 10
	src := f32t(t, randF32(r, hd*nh*nt, 1), hd, nh, nt)
	pos := i32t(t, []int32{4, 5, 6}, nt)
	idx := i32t(t, []int32{7, 2, 9}, nt)
	for _, mode := range []int{RopeNorm, RopeNeox} {
		p := RopeParams{NDims: 6, Mode: mode, NCtxOrig: 512, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
		roped := newT(t, gguf.TypeF32, hd, nh, nt)
		if err := Rope(roped, src, pos, p); err != nil {
			t.Fatal(err)
		}
		flat, err := roped.Reshape(hd*nh, nt)
		if err != nil {
			t.Fatal(err)
		}
		want := newT(t, gguf.TypeF16, hd*nh, nctx)
		if err := SetRows(want, flat, idx); err != nil {
			t.Fatal(err)
		}
		got := newT(t, gguf.TypeF16, hd*nh, nctx)
		if err := RopeSetRows(got, src, pos, idx, p); err != nil {
			t.Fatal(err)
		}
		if string(got.Data) != string(want.Data) {
			t.Errorf("mode %d: rope_set_rows differs from rope + set_rows", mode)
		}
	}
	if err := RopeSetRows(newT(t, gguf.TypeF16, hd, nctx), src, pos, idx, RopeParams{NDims: 8, FreqBase: 1e4}); err == nil {
		t.Error("cache rows of the wrong width accepted")
	}
}

// TestAttentionFused compares the fused attention with llama.cpp's unfused
// chain on F16 and F32 caches, grouped-query heads, a padded causal mask,
// ALiBi, and strided views of the caches and of the output.
func TestAttentionFused(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	const hd, nh, nhkv, nt, nkv, nctx = 16, 4, 2, 3, 32, 40
	for _, c := range []struct {
		cache   gguf.GGMLType
		maxBias float32
	}{{gguf.TypeF16, 0}, {gguf.TypeF32, 0}, {gguf.TypeF16, 8}} {
		t.Run(fmt.Sprintf("%s/max_bias=%v", c.cache, c.maxBias), func(t *testing.T) {
			// K and V caches [hd*nhkv, nctx], row-major; V read transposed.
			kc := newT(t, c.cache, hd*nhkv, nctx)
			vc := newT(t, c.cache, hd*nhkv, nctx)
			if err := Cpy(kc, f32t(t, randF32(r, hd*nhkv*nctx, 1), hd*nhkv, nctx)); err != nil {
				t.Fatal(err)
			}
			if err := Cpy(vc, f32t(t, randF32(r, hd*nhkv*nctx, 1), hd*nhkv, nctx)); err != nil {
				t.Fatal(err)
			}
			es := int64(c.cache.TypeSize())
			row := kc.Nb[1]
			k, err := kc.View([4]int64{hd, nkv, nhkv, 1}, [4]int64{es, row, hd * es, row * nkv}, 0)
			if err != nil {
				t.Fatal(err)
			}
			v, err := vc.View([4]int64{nkv, hd, nhkv, 1}, [4]int64{row, es, hd * es, row * nkv}, 0)
			if err != nil {
				t.Fatal(err)
			}
			// q: the permuted view of a [hd, nh, nt] tensor.
			q3 := f32t(t, randF32(r, hd*nh*nt, 1), hd, nh, nt)
			q, err := q3.Permute([4]int{0, 2, 1, 3})
			if err != nil {
				t.Fatal(err)
			}
			mv := make([]float32, nkv*64)
			for i := range 64 {
				for j := range nkv {
					if i >= nt || j > 20+i {
						mv[i*nkv+j] = float32(math.Inf(-1))
					}
				}
			}
			mask := f32t(t, mv, nkv, 64)
			scale := float32(1 / math.Sqrt(hd))

			kq := newT(t, gguf.TypeF32, nkv, nt, nh)
			if err := MulMat(kq, k, q); err != nil {
				t.Fatal(err)
			}
			if err := SoftMax(kq, kq, &mask, scale, c.maxBias); err != nil {
				t.Fatal(err)
			}
			want := newT(t, gguf.TypeF32, hd, nt, nh)
			if err := MulMat(want, v, kq); err != nil {
				t.Fatal(err)
			}

			got := newT(t, gguf.TypeF32, hd, nt, nh)
			if err := Attention(got, q, k, v, &mask, scale, c.maxBias); err != nil {
				t.Fatal(err)
			}
			same(t, "attention", vals(t, got), vals(t, want))

			// Into the permuted view of the merged [hd, nh, nt] layout, with
			// one goroutine.
			merged := newT(t, gguf.TypeF32, hd, nh, nt)
			mp, err := merged.Permute([4]int{0, 2, 1, 3})
			if err != nil {
				t.Fatal(err)
			}
			if err := (Options{Threads: 1}).Attention(mp, q, k, v, &mask, scale, c.maxBias); err != nil {
				t.Fatal(err)
			}
			same(t, "attention into a view", vals(t, mp), vals(t, want))
		})
	}
	t.Run("errors", func(t *testing.T) {
		q := newT(t, gguf.TypeF32, 8, 2, 3)
		k := newT(t, gguf.TypeF16, 8, 5, 2)
		v := newT(t, gguf.TypeF16, 5, 8, 2)
		dst := newT(t, gguf.TypeF32, 8, 2, 3)
		if err := Attention(dst, q, k, v, nil, 1, 0); err == nil {
			t.Error("3 heads over 2 kv heads accepted")
		}
		q4 := newT(t, gguf.TypeF32, 8, 2, 4)
		if err := Attention(newT(t, gguf.TypeF32, 8, 2, 4), q4, k, newT(t, gguf.TypeF16, 4, 8, 2), nil, 1, 0); err == nil {
			t.Error("v with the wrong n_kv accepted")
		}
		if err := Attention(newT(t, gguf.TypeF32, 8, 2, 4), q4, k, v, nil, 1, 0); err != nil {
			t.Errorf("valid call: %v", err)
		}
	})
}

// TestHostileInputs feeds kernels malformed tensors and requires errors,
// never panics.
func TestHostileInputs(t *testing.T) {
	ok := newT(t, gguf.TypeF32, 4, 4)
	bad := []Tensor{
		{Type: gguf.TypeF32, Ne: [4]int64{4, 4, 1, 1}, Nb: [4]int64{4, 16, 64, 64}, Data: make([]byte, 10)},
		{Type: gguf.TypeF32, Ne: [4]int64{4, 4, 1, 1}, Nb: [4]int64{4, -16, 64, 64}, Data: make([]byte, 64)},
		{Type: gguf.TypeF32, Ne: [4]int64{-4, 4, 1, 1}, Nb: [4]int64{4, 16, 64, 64}, Data: make([]byte, 64)},
		{Type: gguf.GGMLType(200), Ne: [4]int64{4, 4, 1, 1}, Nb: [4]int64{4, 16, 64, 64}, Data: make([]byte, 64)},
		{Type: gguf.TypeF32, Ne: [4]int64{1 << 40, 1 << 40, 1, 1}, Nb: [4]int64{4, 16, 64, 64}, Data: make([]byte, 64)},
		{Type: gguf.TypeF32, Ne: [4]int64{1 << 62, 2, 1, 1}, Nb: [4]int64{1 << 10, 1 << 62, 64, 64}, Data: make([]byte, 64)},
		{Type: gguf.TypeF32, Ne: [4]int64{1 << 20, 1 << 20, 1, 1}, Nb: [4]int64{0, 0, 0, 0}, Data: make([]byte, 64)},
		{},
	}
	pos := i32t(t, []int32{0, 1, 2, 3}, 4)
	rp := RopeParams{NDims: 4, FreqBase: 10000, FreqScale: 1, AttnFactor: 1}
	for i, b := range bad {
		for name, f := range map[string]func() error{
			"add":      func() error { return Add(ok, b, ok) },
			"add dst":  func() error { return Add(b, ok, ok) },
			"rms_norm": func() error { return RMSNorm(ok, b, 1e-5) },
			"softmax":  func() error { return SoftMax(ok, b, nil, 1, 0) },
			"mask":     func() error { return SoftMax(ok, ok, &b, 1, 0) },
			"rope":     func() error { return Rope(b, b, pos, rp) },
			"get_rows": func() error { return GetRows(ok, b, pos) },
			"set_rows": func() error { return SetRows(b, ok, pos) },
			"cpy":      func() error { return Cpy(ok, b) },
			"mul_mat":  func() error { return MulMat(ok, b, ok) },
			"mul_mat2": func() error { return MulMat(ok, ok, b) },
			"to_f32":   func() error { _, err := ToF32(b); return err },
			"attn":     func() error { return Attention(ok, ok, b, ok, nil, 1, 0) },
		} {
			if name == "to_f32" && b.NElements() == 0 {
				continue // an empty tensor is valid
			}
			if err := f(); err == nil {
				t.Errorf("bad tensor %d, %s: no error", i, name)
			}
		}
	}
}

// TestAttentionShapes checks Attention bit for bit against the unfused
// chain on the shapes its fast paths depend on: head_dim 8 (unrolled K
// dots) and others with dot tails, n_kv not a multiple of 8, V read along
// dim 1 (set_rows cache) or dim 0 (transposed cpy cache), 1 to 3 query
// heads per KV head, dim-3 batches broadcast over fewer KV batches, F16 masks,
// ALiBi, and enough tokens over few KV heads that the kernel splits
// tokens across goroutines (also compared with one goroutine).
func TestAttentionShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct {
		cache, maskType       gguf.GGMLType
		transposedV           bool
		hd, nh, nhkv, nt, nkv int64
		batches, kvBatches    int64
		maxBias               float32
	}{
		{gguf.TypeF16, gguf.TypeF32, false, 8, 8, 4, 1, 64, 1, 1, 0},
		{gguf.TypeF16, gguf.TypeF32, true, 8, 8, 4, 1, 64, 1, 1, 0},
		{gguf.TypeF16, gguf.TypeF16, true, 16, 4, 2, 5, 37, 4, 2, 0},
		{gguf.TypeF32, gguf.TypeF16, false, 12, 6, 2, 70, 96, 1, 1, 0},
		{gguf.TypeF16, gguf.TypeF32, false, 8, 8, 4, 65, 96, 2, 1, 0},
		{gguf.TypeBF16, gguf.TypeF32, false, 16, 2, 2, 3, 40, 2, 2, 8},
		{gguf.TypeF16, gguf.TypeF32, false, 64, 4, 1, 2, 33, 1, 1, 0},
	} {
		name := fmt.Sprintf("%s/vT=%v/hd%d_h%d_kv%d_t%d_nkv%d_b%d_kvb%d", c.cache, c.transposedV, c.hd, c.nh, c.nhkv, c.nt, c.nkv, c.batches, c.kvBatches)
		t.Run(name, func(t *testing.T) {
			// Caches of kvBatches blocks of nctx cells each.
			nctx, kvb := c.nkv+3, c.kvBatches
			es := int64(c.cache.TypeSize())
			n := int(c.hd * c.nhkv * nctx * kvb)
			kc := newT(t, c.cache, c.hd*c.nhkv, nctx*kvb)
			if err := Cpy(kc, f32t(t, randF32(r, n, 1), c.hd*c.nhkv, nctx*kvb)); err != nil {
				t.Fatal(err)
			}
			k, err := kc.View([4]int64{c.hd, c.nkv, c.nhkv, kvb}, [4]int64{es, kc.Nb[1], c.hd * es, kc.Nb[1] * nctx}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var v Tensor
			if c.transposedV {
				vc := newT(t, c.cache, nctx, c.hd*c.nhkv*kvb)
				if err := Cpy(vc, f32t(t, randF32(r, n, 1), nctx, c.hd*c.nhkv*kvb)); err != nil {
					t.Fatal(err)
				}
				v, err = vc.View([4]int64{c.nkv, c.hd, c.nhkv, kvb}, [4]int64{es, vc.Nb[1], vc.Nb[1] * c.hd, vc.Nb[1] * c.hd * c.nhkv}, 0)
			} else {
				vc := newT(t, c.cache, c.hd*c.nhkv, nctx*kvb)
				if err := Cpy(vc, f32t(t, randF32(r, n, 1), c.hd*c.nhkv, nctx*kvb)); err != nil {
					t.Fatal(err)
				}
				v, err = vc.View([4]int64{c.nkv, c.hd, c.nhkv, kvb}, [4]int64{vc.Nb[1], es, c.hd * es, vc.Nb[1] * nctx}, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			q, err := f32t(t, randF32(r, int(c.hd*c.nh*c.nt*c.batches), 1), c.hd, c.nh, c.nt, c.batches).Permute([4]int{0, 2, 1, 3})
			if err != nil {
				t.Fatal(err)
			}
			rows := (c.nt + 63) / 64 * 64
			mv := make([]float32, c.nkv*rows)
			for i := range rows {
				for j := range c.nkv {
					if i >= c.nt || j > c.nkv-c.nt-2+i {
						mv[i*c.nkv+j] = float32(math.Inf(-1))
					}
				}
			}
			mask := f32t(t, mv, c.nkv, rows)
			if c.maskType == gguf.TypeF16 {
				mask = f16t(t, mv, c.nkv, rows)
			}
			scale := float32(1 / math.Sqrt(float64(c.hd)))

			kq := newT(t, gguf.TypeF32, c.nkv, c.nt, c.nh, c.batches)
			if err := MulMat(kq, k, q); err != nil {
				t.Fatal(err)
			}
			if err := SoftMax(kq, kq, &mask, scale, c.maxBias); err != nil {
				t.Fatal(err)
			}
			want := newT(t, gguf.TypeF32, c.hd, c.nt, c.nh, c.batches)
			if err := MulMat(want, v, kq); err != nil {
				t.Fatal(err)
			}
			for _, threads := range []int{0, 1, 3} {
				got, err := newT(t, gguf.TypeF32, c.hd, c.nh, c.nt, c.batches).Permute([4]int{0, 2, 1, 3})
				if err != nil {
					t.Fatal(err)
				}
				if err := (Options{Threads: threads}).Attention(got, q, k, v, &mask, scale, c.maxBias); err != nil {
					t.Fatal(err)
				}
				same(t, fmt.Sprintf("threads=%d", threads), vals(t, got), vals(t, want))
			}
		})
	}
}
