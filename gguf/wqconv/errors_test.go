package wqconv

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
)

var extraModels = flag.String("models", "", "comma-separated extra GGUF files whose tensors TestErrorBounds measures")

// bounds are the documented worst cases (docs/LOWERING.md, "Quantised
// weights for aclnnWeightQuantBatchMatmulV2"): the largest error of an
// element over the largest |value| A of its group of 32, for the mappings
// that are not exact. Where they come from:
//
//   - rounded scale/offset: the scale's f16 rounding (relative ≤ 2⁻¹¹)
//     costs ≤ 2⁻¹¹·D·(w range)/2 ≤ 2⁻¹¹·A, as D·(w range) ≤ 2A; the offset,
//     once w is centred (|middle w| ≤ ½, so 0 is in the range), carries the
//     group's value at w = 0, |o·S| ≲ A, and its rounding costs ≤ 2⁻¹¹·A;
//     float32 arithmetic adds ~2⁻²⁴·A;
//   - q6_K: ≤ half the scale amax/127 (rounded to f16) = A/254·(1 + 2⁻¹¹);
//   - q2_K: ≤ half the scale (range/253, rounded up to f16), range ≤ 2A.
var bounds = map[gguf.GGMLType]float64{
	gguf.TypeQ4_1: 0x1p-10 * (1 + 0x1p-10),
	gguf.TypeQ5_1: 0x1p-10 * (1 + 0x1p-10),
	gguf.TypeQ4_K: 0x1p-10 * (1 + 0x1p-10),
	gguf.TypeQ5_K: 0x1p-10 * (1 + 0x1p-10),
	gguf.TypeQ6_K: (1 + 0x1p-10) / 254,
	gguf.TypeQ2_K: (1 + 0x1p-10) / 253,
}

// stats accumulates a mapping's error against ggml's values.
type stats struct {
	groups   int
	maxRel   float64 // max over groups of max|err| / max|y|
	sumErr2  float64
	sumY2    float64
	exactGrp int // groups without any error
}

func (s *stats) add(y, got []float32, span int) {
	for g := 0; g < len(y); g += span {
		amax, emax := 0.0, 0.0
		for i := g; i < g+span; i++ {
			amax = max(amax, math.Abs(float64(y[i])))
			e := math.Abs(float64(got[i]) - float64(y[i]))
			emax = max(emax, e)
			s.sumErr2 += e * e
			s.sumY2 += float64(y[i]) * float64(y[i])
		}
		s.groups++
		if emax == 0 {
			s.exactGrp++
			continue
		}
		rel := math.Inf(1)
		if amax > 0 {
			rel = emax / amax
		}
		s.maxRel = max(s.maxRel, rel)
	}
}

func (s *stats) String() string {
	return fmt.Sprintf("%d groups, %.1f%% exact, max err/group amax %.3g (2^%.1f), rms err/rms value %.3g",
		s.groups, 100*float64(s.exactGrp)/float64(max(s.groups, 1)), s.maxRel, math.Log2(s.maxRel), math.Sqrt(s.sumErr2/max(s.sumY2, 1e-300)))
}

// kinds of error measured: Dequant's float32 arithmetic, DequantF16's
// f16 arithmetic, and a matmul x·Wᵀ with the f32 arithmetic (4 rows of
// Gaussian x, error over the largest |output| of the tensor).
type measured struct{ f32, f16, mm stats }

func measure(t *testing.T, m *measured, r *rand.Rand, typ gguf.GGMLType, raw []byte, rows, cols int) {
	t.Helper()
	w, err := Convert(typ, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	y := ggmlValues(t, typ, raw, rows*cols)
	got := Dequant(w)
	m.f32.add(y, got, 32)
	m.f16.add(y, DequantF16(w), 32)
	const xr = 4
	want, have := make([]float32, xr*rows), make([]float32, xr*rows)
	x := make([]float64, cols)
	for i := range xr {
		for k := range x {
			x[k] = r.NormFloat64()
		}
		for n := range rows {
			var a, b float64
			for k, xv := range x {
				a += xv * float64(y[n*cols+k])
				b += xv * float64(got[n*cols+k])
			}
			want[i*rows+n], have[i*rows+n] = float32(a), float32(b)
		}
	}
	m.mm.add(want, have, len(want))
}

// quantizeAffine is ggml-quants.c's quantize_row_q4_1_ref (levels = 15) and
// quantize_row_q5_1_ref (levels = 31) for one block of 32: d = (max −
// min)/levels, m = min, u = min(levels, (int)((x − min)/d + 0.5)).
func quantizeAffine(typ gguf.GGMLType, x []float32) []byte {
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	levels := float32(15)
	if typ == gguf.TypeQ5_1 {
		levels = 31
	}
	d := (hi - lo) / levels
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	var u [32]int
	for j, v := range x {
		u[j] = min(int(levels), int(int8((v-lo)*id+0.5)))
	}
	blk := make([]byte, typ.TypeSize())
	binary.LittleEndian.PutUint16(blk, gguf.F32ToF16(d))
	binary.LittleEndian.PutUint16(blk[2:], gguf.F32ToF16(lo))
	qs := blk[4:]
	if typ == gguf.TypeQ5_1 {
		var qh uint32
		for j := range 16 {
			qh |= uint32(u[j]>>4&1)<<j | uint32(u[j+16]>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
		qs = blk[8:]
	}
	for j := range 16 {
		qs[j] = byte(u[j]&15) | byte(u[j+16]&15)<<4
	}
	return blk
}

// modelFiles lists the GGUF files measured: the reference models
// (testref.Models) and testdata's copies, plus -models.
func modelFiles(t *testing.T) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[filepath.Base(p)] {
			seen[filepath.Base(p)] = true
			out = append(out, p)
		}
	}
	for _, p := range testref.Models(t) {
		add(p)
	}
	local, _ := filepath.Glob(testref.Testdata("*.gguf"))
	for _, p := range local {
		add(p)
	}
	if *extraModels != "" {
		for _, p := range strings.Split(*extraModels, ",") {
			add(p)
		}
	}
	sort.Strings(out)
	return out
}

// TestErrorBounds measures every mapping against ggml's values on three
// kinds of blocks, checks the exact ones have no error and the others stay
// within bounds, and logs the figures of docs/LOWERING.md's table (go test
// ./gguf/wqconv -run TestErrorBounds -v):
//
//   - random: random quants and scales, f16 fields of magnitude [2⁻¹⁴, 1);
//   - gauss: q4_1/q5_1 blocks quantised from Gaussian weights with ggml's
//     reference quantiser (quantizeAffine);
//   - model: every tensor of the type in the reference models (llama.cpp's
//     llama-quantize output on random-Gaussian masters), and -models.
func TestErrorBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	files := modelFiles(t)
	for _, typ := range Types() {
		l, _ := LayoutOf(typ)
		t.Run(typ.String(), func(t *testing.T) {
			var rnd, gauss, model measured
			rows, cols := 64, 1024
			for range 4 {
				measure(t, &rnd, r, typ, randomBlocks(r, typ, rows*cols/typ.BlockSize(), false), rows, cols)
			}
			if typ == gguf.TypeQ4_1 || typ == gguf.TypeQ5_1 {
				var raw []byte
				x := make([]float32, 32)
				for range rows * cols / 32 {
					sigma := math.Exp(r.NormFloat64() - 3)
					for j := range x {
						x[j] = float32(r.NormFloat64() * sigma)
					}
					raw = append(raw, quantizeAffine(typ, x)...)
				}
				measure(t, &gauss, r, typ, raw, rows, cols)
			}
			var names []string
			tensors := 0
			for _, p := range files {
				f, err := gguf.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, ti := range f.Tensors {
					if ti.Type != typ {
						continue
					}
					data, err := f.TensorData(ti.Name)
					if err != nil {
						t.Fatal(err)
					}
					measure(t, &model, r, typ, data, int(ti.NElements()/ti.Ne[0]), int(ti.Ne[0]))
					if n := filepath.Base(p); len(names) == 0 || names[len(names)-1] != n {
						names = append(names, n)
					}
					tensors++
				}
				f.Close()
			}
			for _, c := range []struct {
				name string
				m    *measured
			}{{"random", &rnd}, {"gauss", &gauss}, {"model", &model}} {
				if c.m.f32.groups == 0 {
					continue
				}
				t.Logf("%s %s (%s, %s): %v", typ, c.name, l.Dtype, l.Accuracy, &c.m.f32)
				t.Logf("%s %s f16 arithmetic: %v", typ, c.name, &c.m.f16)
				t.Logf("%s %s matmul x·Wᵀ: max err/max|out| %.3g (2^%.1f)", typ, c.name, c.m.mm.maxRel, math.Log2(c.m.mm.maxRel))
				if l.Accuracy == Exact {
					if c.m.f32.exactGrp != c.m.f32.groups {
						t.Errorf("%s %s: exact mapping with errors: %v", typ, c.name, &c.m.f32)
					}
				} else if c.m.f32.maxRel > bounds[typ] {
					t.Errorf("%s %s: max error %g of the group's largest value, bound %g", typ, c.name, c.m.f32.maxRel, bounds[typ])
				}
			}
			t.Logf("%s: %d model tensors from %s", typ, tensors, strings.Join(names, " "))
		})
	}
}
