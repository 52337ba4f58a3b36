package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// q8KRow returns a Q8_K activation row with every sum the kernels read.
func q8KRow(qs []int8, d []float32) q8Row {
	c := q8Row{qs: qs, d: d, bsums: make([]int32, len(qs)/16), bs16: make([]int16, len(qs)/16), b32: make([]int16, len(qs)/32)}
	for i := range c.bsums {
		for _, v := range qs[16*i : 16*i+16] {
			c.bsums[i] += int32(v)
		}
	}
	q8KExtra(c.bsums, c.bs16, c.b32)
	return c
}

// kActivations returns Q8_K activation rows of k values: quantised random
// and edge rows (activationCases: NaN, ±Inf, subnormals, ...) and rows of
// extreme integers (all -128, all 127, alternating), which reach the
// int16 bounds of the kernels' partial sums.
func kActivations(r *rand.Rand, k int) []q8Row {
	var rows []q8Row
	for _, x := range activationCases(r, k) {
		qs, d := make([]int8, k), make([]float32, k/256)
		bs := make([]int32, k/16)
		quantizeQ8_K(x, qs, d, bs)
		rows = append(rows, q8KRow(qs, d))
	}
	for _, f := range []func(i int) int8{
		func(int) int8 { return -128 },
		func(int) int8 { return 127 },
		func(i int) int8 { return int8(127 - 255*(i%2)) },
	} {
		qs, d := make([]int8, k), make([]float32, k/256)
		for i := range qs {
			qs[i] = f(i)
		}
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
		rows = append(rows, q8KRow(qs, d))
	}
	return rows
}

// kWeights returns n rows of nsb super-blocks of type t (ts bytes each):
// random bytes with finite F16 scales, and edge rows: every byte 0xff
// (the largest quants and scales), every quant byte 0, and the edge F16
// scales (zero, subnormal, largest, ±Inf, NaN) in d/dmin.
func kWeights(r *rand.Rand, t gguf.GGMLType, n, nsb int) [][]byte {
	ts := t.TypeSize()
	scale := func(b []byte, s float32) {
		h := gguf.F32ToF16(s)
		switch t {
		case gguf.TypeQ6_K:
			binary.LittleEndian.PutUint16(b[208:], h)
		default:
			binary.LittleEndian.PutUint16(b, h)
			binary.LittleEndian.PutUint16(b[2:], gguf.F32ToF16(s/3))
		}
	}
	var rows [][]byte
	for i := range n {
		row := make([]byte, nsb*ts)
		for j := range row {
			row[j] = byte(r.IntN(256))
		}
		for s := range nsb {
			b := row[s*ts : (s+1)*ts]
			switch {
			case i%7 == 1:
				for j := range b {
					b[j] = 0xff
				}
				scale(b, float32(r.NormFloat64()))
			case i%7 == 2:
				clear(b)
				scale(b, 1)
			case i%7 == 3:
				e := edgeF16[r.IntN(len(edgeF16))]
				if t == gguf.TypeQ6_K {
					binary.LittleEndian.PutUint16(b[208:], e)
				} else {
					binary.LittleEndian.PutUint16(b[2*r.IntN(2):], e)
				}
			default:
				scale(b, float32(r.NormFloat64()*0.01))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// refKDot is the K-quant dot of the current build on an unpacked row:
// the reference the kernels must reproduce.
func refKDot(t gguf.GGMLType, raw []byte, k int, c q8Row, gemm bool) float32 {
	row := newQKRow(k)
	unpackQK(t, raw, row)
	switch {
	case t == gguf.TypeQ4_K && gemm:
		return dotQ4Kx8Gemm(row, c)
	case t == gguf.TypeQ4_K:
		return dotQ4Kx8(row, c)
	case t == gguf.TypeQ6_K:
		return dotQ6KBsums(row, c)
	}
	return dotQK(row, c)
}

// TestKQuantKernels checks the K-quant kernels (kquant.go): in every build
// the one that runs (the assembly, or the Go twin under -tags purego)
// against the reference dots on unpacked rows (dotQ4Kx8, dotQ4Kx8Gemm,
// dotQK, dotQ6KBsums), and with assembly the twin against it too, bit for
// bit, on random and edge blocks and activations, rows read at a stride
// from a misaligned buffer, one to three groups of eight rows.
func TestKQuantKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, ty := range []gguf.GGMLType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, nsb := range []int{1, 3} {
			for _, ng := range []int{1, 3} {
				k, ts, nr := 256*nsb, ty.TypeSize(), 8*ng
				rows := kWeights(r, ty, nr, nsb)
				stride := nsb*ts + 5 // rows not adjacent
				buf := make([]byte, 1+nr*stride)
				src := buf[1:]
				for i, row := range rows {
					copy(src[i*stride:], row)
				}
				var pk []byte
				if ty == gguf.TypeQ4_K {
					pk = make([]byte, ng*nsb*q4kx8Block)
					repackQ4Kx8i(pk, src, stride, nr, nsb)
				}
				acts := kActivations(r, k)
				if ty == gguf.TypeQ4_K {
					// Four columns at a time (the prefill's GEMM kernel).
					for ci := range acts {
						cols := [4]q8Row{acts[ci], acts[(ci+1)%len(acts)], acts[(ci+5)%len(acts)], acts[(ci+11)%len(acts)]}
						for g := range ng {
							var o [4][8]float32
							dotQ4Kx8x4i(pk[g*nsb*q4kx8Block:], &cols, &o)
							for c := range cols {
								for j := range 8 {
									want := refKDot(ty, rows[8*g+j], k, cols[c], true)
									if !sameBits(o[c][j], want) {
										t.Fatalf("q4_K x4 nsb %d act %d col %d group %d row %d: %g, reference %g", nsb, ci, c, g, j, o[c][j], want)
									}
								}
							}
						}
					}
				}
				if ty == gguf.TypeQ6_K {
					// Four columns at a time (the prefill's kernel).
					for ci := range acts {
						cols := [4]q8Row{acts[ci], acts[(ci+3)%len(acts)], acts[(ci+7)%len(acts)], acts[(ci+13)%len(acts)]}
						var o [4][]float32
						for c := range o {
							o[c] = make([]float32, nr)
						}
						dotQ6Kx4Rows(src, stride, &cols, &o)
						for c := range cols {
							for i, row := range rows {
								if want := refKDot(ty, row, k, cols[c], false); !sameBits(o[c][i], want) {
									t.Fatalf("q6_K x4 nsb %d act %d col %d row %d: %g, reference %g", nsb, ci, c, i, o[c][i], want)
								}
							}
						}
					}
				}
				for ci, c := range acts {
					for _, gemm := range []bool{false, true} {
						if gemm && ty != gguf.TypeQ4_K {
							continue
						}
						got, twin := make([]float32, nr), make([]float32, nr)
						switch ty {
						case gguf.TypeQ4_K:
							dotQ4Kx8i(pk, ng, c, gemm, got)
							dotQ4Kx8iGo(pk, ng, c, gemm, twin)
						case gguf.TypeQ5_K:
							dotQ5KRows(src, stride, c, got)
							dotQ5KRowsGo(src, stride, c, twin)
						case gguf.TypeQ6_K:
							dotQ6KRows(src, stride, c, got)
							dotQ6KRowsGo(src, stride, c, twin)
						}
						for i, row := range rows {
							what := fmt.Sprintf("%s nsb %d ng %d act %d gemm %v row %d", ty, nsb, ng, ci, gemm, i)
							want := refKDot(ty, row, k, c, gemm)
							if !sameBits(got[i], want) {
								t.Fatalf("%s: kernel %g (%#x), reference %g (%#x)", what, got[i], mathBits(got[i]), want, mathBits(want))
							}
							if !sameBits(twin[i], want) {
								t.Fatalf("%s: Go twin %g, reference %g", what, twin[i], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestKQuantSIMDUsed makes sure the assembly kernels are what
// TestKQuantKernels tested where they exist.
func TestKQuantSIMDUsed(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(7, 8))
	rows := kWeights(r, gguf.TypeQ6_K, 1, 1)
	c := kActivations(r, 256)[0]
	var a, b [1]float32
	dotQ6KRowsAVX2(&rows[0][0], 210, &c.qs[0], &c.d[0], &c.bs16[0], 1, 1, &a[0])
	dotQ6KRowsGo(rows[0], 210, c, b[:])
	if !sameBits(a[0], b[0]) {
		t.Fatalf("assembly %g, twin %g", a[0], b[0])
	}
}

func mathBits(f float32) uint32 { return math.Float32bits(f) }

// TestMulMatJobKQuant runs K-quant matmul jobs with Options.Packs (Q4_K
// from its interleaved copy, Q5_K and Q6_K rows in place, as a compiled
// plan runs them) and plain MulMat against the build's dot product on
// unpacked rows (qkDot, and qkDotGemm for the columns llama.cpp
// multiplies four at a time): decode (1–3 columns), prefill (4+, with
// leftover columns), a Q4_K matrix llama.cpp does not repack (rows not a
// multiple of 8), both builds, and a destination not dense along dim 0.
func TestMulMatJobKQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	packs := NewWeightPacks()
	defer packs.Release()
	for _, ty := range []gguf.GGMLType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, sh := range [][3]int64{{256, 16, 1}, {512, 24, 3}, {256, 64, 4}, {512, 40, 9}, {256, 12, 5}} {
			for _, build := range []LlamaBuild{LlamaCurrent, LlamaC392e50} {
				for _, strided := range []bool{false, true} {
					k, m, n := sh[0], sh[1], sh[2]
					name := fmt.Sprintf("%s_%dx%dx%d_%v_strided%v", ty, k, m, n, build, strided)
					t.Run(name, func(t *testing.T) {
						nsb := int(k / 256)
						var raw []byte
						for _, row := range kWeights(r, ty, int(m), nsb) {
							raw = append(raw, row...)
						}
						a, err := FromBytes(ty, raw, k, m)
						if err != nil {
							t.Fatal(err)
						}
						x, _ := FromF32(randF32(r, int(k*n), 1), k, n)
						o := Options{LlamaBuild: build}
						dot, gemm := qkDot(o, a, x), qkDotGemm(o, a, x)
						want := make([]float32, m*n)
						xs := vals(t, x)
						for j := range n {
							qs, d, bs := make([]int8, k), make([]float32, nsb), make([]int32, k/16)
							quantizeQ8_K(xs[j*k:(j+1)*k], qs, d, bs)
							c := q8KRow(qs, d)
							f := dot
							if gemm != nil && j < n-n%4 {
								f = gemm
							}
							for i := range m {
								row := newQKRow(int(k))
								unpackQK(ty, raw[i*a.Nb[1]:], row)
								want[j*m+i] = f(row, c)
							}
						}
						for _, op := range []string{"job", "mulmat"} {
							dst, _ := NewTensor(gguf.TypeF32, m, n)
							got := dst
							if strided {
								got, err = dst.View([4]int64{m, n, 1, 1}, [4]int64{4 * n, 4, 4 * n * m, 4 * n * m}, 0)
								if err != nil {
									t.Fatal(err)
								}
							}
							if op == "job" {
								oj := o
								oj.Packs = packs
								j, err := oj.MulMatJob(got, a, x, nil, 2)
								if err != nil {
									t.Fatal(err)
								}
								runJobSerial(j)
							} else if err := o.MulMat(got, a, x); err != nil {
								t.Fatal(err)
							}
							for j := range n {
								for i := range m {
									v := vals(t, got)[j*m+i]
									if !sameBits(v, want[j*m+i]) {
										t.Fatalf("%s: [%d,%d] = %g, want %g", op, i, j, v, want[j*m+i])
									}
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestWeightPacksShared checks that two handles on one matrix share one
// repacked copy, counted once in the process, that the copy leaves the
// cache with the last handle, and that a matrix of another type or shape
// at the same address gets its own.
func TestWeightPacksShared(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(61, 62))
	var raw []byte
	for _, row := range kWeights(r, gguf.TypeQ4_K, 16, 2) {
		raw = append(raw, row...)
	}
	a, err := FromBytes(gguf.TypeQ4_K, raw, 512, 16)
	if err != nil {
		t.Fatal(err)
	}
	n0, b0 := SharedPacks()
	w1, w2 := NewWeightPacks(), NewWeightPacks()
	p1, p2 := w1.q4kx8i(a), w2.q4kx8i(a)
	if &p1[0] != &p2[0] {
		t.Fatal("two handles got two copies")
	}
	if n, b := SharedPacks(); n != n0+1 || b != b0+int64(len(p1)) {
		t.Fatalf("cache: %d copies, %d bytes; want %d, %d", n, b, n0+1, b0+int64(len(p1)))
	}
	if w1.Bytes() != int64(len(p1)) || w2.Bytes() != int64(len(p1)) {
		t.Fatalf("handles hold %d and %d bytes, want %d", w1.Bytes(), w2.Bytes(), len(p1))
	}
	a2, _ := FromBytes(gguf.TypeQ4_K, raw[:len(raw)/2], 512, 8) // same address, other shape
	if p3 := w1.q4kx8i(a2); &p3[0] == &p1[0] {
		t.Fatal("another shape at the same address shares the copy")
	}
	w1.Release()
	if n, _ := SharedPacks(); n != n0+1 {
		t.Fatalf("after one release: %d copies, want %d (the other handle still holds one)", n, n0+1)
	}
	w2.Release()
	if n, b := SharedPacks(); n != n0 || b != b0 {
		t.Fatalf("after both releases: %d copies, %d bytes; want %d, %d", n, b, n0, b0)
	}
	// A new handle makes a new copy.
	w3 := NewWeightPacks()
	defer w3.Release()
	if p4 := w3.q4kx8i(a); &p4[0] == &p1[0] {
		t.Fatal("a released copy was reused")
	}
}

// TestWeightPacksConcurrent has several handles ask for the same matrix at
// once: one copy is made, and every handle gets it.
func TestWeightPacksConcurrent(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(71, 72))
	var raw []byte
	for _, row := range kWeights(r, gguf.TypeQ4_K, 64, 4) {
		raw = append(raw, row...)
	}
	a, err := FromBytes(gguf.TypeQ4_K, raw, 1024, 64)
	if err != nil {
		t.Fatal(err)
	}
	n0, _ := SharedPacks()
	const n = 6
	ws := make([]*WeightPacks, n)
	got := make([][]byte, n)
	done := make(chan int)
	for i := range ws {
		ws[i] = NewWeightPacks()
		go func() {
			got[i] = ws[i].q4kx8i(a)
			done <- i
		}()
	}
	for range n {
		<-done
	}
	for i := range got {
		if &got[i][0] != &got[0][0] {
			t.Fatalf("handle %d got another copy", i)
		}
		ws[i].Release()
	}
	if c, _ := SharedPacks(); c != n0 {
		t.Fatalf("%d copies left, want %d", c, n0)
	}
}
