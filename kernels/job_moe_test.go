package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// MulMatIDJob gives MulMatID's bits for each weight type, both activation
// layouts (one row per token, one per slot), chunked or not, and reads the
// expert ids when it runs: the same prepared job, run again after the ids
// change, matches the plain kernel on the new ids.
func TestMulMatIDJobMatchesKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const k, m, nExp, nUsed, nTok = 256, 16, 4, 2, 3
	wv := randF32(r, k*m*nExp, 0.1)
	weights := map[string]Tensor{"f32": f32t(t, wv, k, m, nExp), "f16": f16t(t, wv, k, m, nExp)}
	for _, q := range []struct {
		name string
		ty   gguf.GGMLType
		f    func([]float32) ([]byte, error)
	}{{"q8_0", gguf.TypeQ8_0, gguf.QuantizeQ8_0}, {"q4_0", gguf.TypeQ4_0, gguf.QuantizeQ4_0}} {
		b, err := q.f(wv)
		if err != nil {
			t.Fatal(err)
		}
		if weights[q.name], err = FromBytes(q.ty, b, k, m, nExp); err != nil {
			t.Fatal(err)
		}
	}
	qk, err := FromBytes(gguf.TypeQ4_K, randomKQuant(r, gguf.TypeQ4_K, m*nExp), k, m, nExp)
	if err != nil {
		t.Fatal(err)
	}
	weights["q4_k"] = qk
	idSets := [][]int32{{3, 0, 1, 3, 2, 1}, {0, 2, 2, 1, 3, 0}}
	for name, as := range weights {
		for _, bRows := range []int64{1, nUsed} {
			for _, opts := range []Options{{Quant: QuantGGML}, {Quant: QuantDequant}} {
				t.Run(fmt.Sprintf("%s/b%d/%s", name, bRows, opts.Quant), func(t *testing.T) {
					b := f32t(t, randF32(r, int(k*bRows*nTok), 1), k, bRows, nTok)
					ids := i32t(t, idSets[0], nUsed, nTok)
					for _, chunked := range []bool{false, true} {
						got := newT(t, gguf.TypeF32, m, nUsed, nTok)
						j, err := opts.MulMatIDJob(got, as, b, ids, 3)
						if err != nil {
							t.Fatal(err)
						}
						for _, set := range idSets {
							copy(ids.Data, i32t(t, set, nUsed, nTok).Data)
							want := newT(t, gguf.TypeF32, m, nUsed, nTok)
							if err := opts.MulMatID(want, as, b, ids); err != nil {
								t.Fatal(err)
							}
							if chunked {
								runJobChunked(j, 3)
							} else {
								runJobSerial(j)
							}
							same(t, fmt.Sprint(set), vals(t, got), vals(t, want))
						}
					}
				})
			}
		}
	}
}

// TopKJob and SumRowsJob give the plain kernels' bits; TopK's order
// (values with ties and NaNs) is sort.SliceStable's.
func TestMoERowJobsMatchKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	const n, rows = 24, 37
	v := randF32(r, n*rows, 2)
	for i := range v {
		switch i % 11 {
		case 3:
			v[i] = 0.5 // ties
		case 7:
			v[i] = float32(math.NaN())
		}
	}
	src := f32t(t, v, n, rows)
	const k = 6
	want := newT(t, gguf.TypeI32, k, rows)
	if err := TopK(want, src, k); err != nil {
		t.Fatal(err)
	}
	// The order sort.SliceStable gives (TopK's order before its jobs).
	for row := range rows {
		x := v[row*n : (row+1)*n]
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(i)
		}
		sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
		for j := range k {
			if g := int32(readIndex(want, int64(j), int64(row), 0)); g != idx[j] {
				t.Fatalf("top_k row %d slot %d = %d, sort.SliceStable %d", row, j, g, idx[j])
			}
		}
	}
	wantSum := newT(t, gguf.TypeF32, 1, rows)
	if err := SumRows(wantSum, src); err != nil {
		t.Fatal(err)
	}
	for _, chunked := range []bool{false, true} {
		got := newT(t, gguf.TypeI32, k, rows)
		j, err := TopKJob(got, src, k, 3)
		if err != nil {
			t.Fatal(err)
		}
		gotSum := newT(t, gguf.TypeF32, 1, rows)
		js, err := SumRowsJob(gotSum, src, 3)
		if err != nil {
			t.Fatal(err)
		}
		if chunked {
			runJobChunked(j, 3)
			runJobChunked(js, 3)
		} else {
			runJobSerial(j)
			runJobSerial(js)
		}
		if string(got.Data) != string(want.Data) {
			t.Errorf("chunked %v: top_k job differs from TopK", chunked)
		}
		if string(gotSum.Data) != string(wantSum.Data) {
			t.Errorf("chunked %v: sum_rows job differs from SumRows", chunked)
		}
	}
}

// The MoE jobs check their operands as the plain kernels do, and
// MulMatIDJob's run panics on an expert id outside the stack.
func TestMoEJobsErrors(t *testing.T) {
	src := f32t(t, make([]float32, 8), 4, 2)
	_, err := TopKJob(newT(t, gguf.TypeI32, 5, 2), src, 5, 1)
	wantErr(t, "top_k k > n", err)
	_, err = TopKJob(newT(t, gguf.TypeF32, 2, 2), src, 2, 1)
	wantErr(t, "top_k f32 dst", err)
	_, err = SumRowsJob(newT(t, gguf.TypeF32, 2, 2), src, 1)
	wantErr(t, "sum_rows dst shape", err)
	as := f32t(t, make([]float32, 4*3*2), 4, 3, 2)
	b := f32t(t, make([]float32, 4), 4, 1, 1)
	ids := i32t(t, []int32{1, 2}, 2, 1)
	_, err = (Options{}).MulMatIDJob(newT(t, gguf.TypeF32, 3, 1, 1), as, b, ids, 1)
	wantErr(t, "mul_mat_id dst shape", err)
	j, err := (Options{}).MulMatIDJob(newT(t, gguf.TypeF32, 3, 2, 1), as, b, ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("mul_mat_id job: expert id 2 of 2 did not panic")
		}
	}()
	runJobSerial(j)
}
