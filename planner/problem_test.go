package planner

import (
	"strings"
	"testing"
)

func TestLowerBound(t *testing.T) {
	tests := []struct {
		name string
		p    *Problem
		want int64
	}{
		{"empty", &Problem{}, 0},
		{"Pisarchyk & Lee example: 36+16+8+64 at op 5", pisarchykLee(), 124},
		{"half-open lifetimes do not meet", &Problem{Buffers: []Buffer{{0, 0, 2, 10}, {1, 2, 4, 20}}}, 20},
		{"overlap adds", &Problem{Buffers: []Buffer{{0, 0, 3, 10}, {1, 2, 4, 20}}}, 30},
		{"alignment rounds sizes up", &Problem{Alignment: 32, Buffers: []Buffer{{0, 0, 3, 1}, {1, 2, 4, 33}}}, 32 + 64},
		{"zero size and empty lifetime count for nothing", &Problem{Buffers: []Buffer{{0, 0, 3, 0}, {1, 2, 2, 50}, {2, 1, 2, 7}}}, 7},
	}
	for _, tt := range tests {
		if got := LowerBound(tt.p); got != tt.want {
			t.Errorf("%s: LowerBound = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestLowerBoundPublished compares with the LOAD values in
// the reference measurements of docs/PLANNER.md and the MiniMalloc benchmark's capacity
// (A, B, E, F, G are solved exactly at 1 MiB, so their bound is 1 MiB; C and
// D have a bound below it).
func TestLowerBoundPublished(t *testing.T) {
	tests := []struct {
		file string
		want int64 // -1: below 1 MiB
	}{
		{"idealloc/resnet50.csv", 1515472556},
		{"idealloc/G_1.csv", 3030937746},
		{"idealloc/pangu_2.6B.csv", 5530099775},
		{"minimalloc/A.1048576.csv", 1048576},
		{"minimalloc/B.1048576.csv", 1048576},
		{"minimalloc/C.1048576.csv", -1},
		{"minimalloc/D.1048576.csv", -1},
		{"minimalloc/E.1048576.csv", 1048576},
		{"minimalloc/F.1048576.csv", 1048576},
		{"minimalloc/G.1048576.csv", 1048576},
	}
	for _, tt := range tests {
		p := readBench(t, tt.file)
		got := LowerBound(p)
		if tt.want < 0 {
			if got >= 1048576 || got <= 0 {
				t.Errorf("%s: LowerBound = %d, want in (0, 1 MiB)", tt.file, got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("%s: LowerBound = %d, want %d", tt.file, got, tt.want)
		}
	}
}

func TestNaiveSize(t *testing.T) {
	p := &Problem{Alignment: 32, Buffers: []Buffer{{0, 0, 3, 1}, {1, 2, 4, 33}, {2, 1, 1, 100}, {3, 0, 9, 0}}}
	if got := NaiveSize(p); got != 96 {
		t.Errorf("NaiveSize = %d, want 96", got)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		p    *Problem
		want string // "" = valid
	}{
		{"valid", &Problem{Buffers: []Buffer{{0, 0, 1, 5}}}, ""},
		{"nil", nil, "nil problem"},
		{"negative size", &Problem{Buffers: []Buffer{{7, 0, 1, -5}}}, "buffer 7: size -5"},
		{"huge size", &Problem{Buffers: []Buffer{{7, 0, 1, 1 << 61}}}, "out of range"},
		{"inverted lifetime", &Problem{Buffers: []Buffer{{3, 5, 4, 1}}}, "buffer 3: start 5 after end 4"},
		{"duplicate id", &Problem{Buffers: []Buffer{{3, 0, 4, 1}, {3, 1, 2, 1}}}, "duplicate id"},
		{"negative alignment", &Problem{Alignment: -1}, "alignment"},
		{"total overflow", &Problem{Buffers: []Buffer{{0, 0, 1, 1 << 60}, {1, 0, 1, 1 << 60}}}, "total size"},
	}
	for _, tt := range tests {
		err := tt.p.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	p := &Problem{Alignment: 8, Buffers: []Buffer{
		{10, 0, 4, 16}, // [0,4)
		{11, 2, 6, 8},  // overlaps 10 in time
		{12, 4, 8, 16}, // meets 10 at step 4: no overlap
		{13, 1, 3, 0},  // size 0: conflicts with nothing
	}}
	tests := []struct {
		name string
		a    *Assignment
		want string
	}{
		{"valid", &Assignment{Offsets: []int64{0, 16, 0, 0}, Arena: 24}, ""},
		{"valid, touching addresses", &Assignment{Offsets: []int64{8, 0, 8, 8}, Arena: 24}, ""},
		{"address overlap", &Assignment{Offsets: []int64{0, 8, 0, 0}, Arena: 24}, "buffers 10 (steps [0,4), bytes [0,16)) and 11"},
		{"overlap at the same offset", &Assignment{Offsets: []int64{0, 0, 16, 0}, Arena: 32}, "overlap"},
		{"misaligned", &Assignment{Offsets: []int64{0, 20, 0, 0}, Arena: 32}, "buffer 11: offset 20 not aligned to 8"},
		{"negative", &Assignment{Offsets: []int64{0, -8, 0, 0}, Arena: 24}, "negative offset"},
		{"outside arena", &Assignment{Offsets: []int64{0, 16, 0, 0}, Arena: 23}, "exceeds arena 23"},
		{"wrong length", &Assignment{Offsets: []int64{0}, Arena: 24}, "1 offsets for 4 buffers"},
		{"nil", nil, "nil assignment"},
	}
	for _, tt := range tests {
		err := Validate(p, tt.a)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// TestValidateBruteForce compares Validate's sweep with a quadratic check
// on random assignments.
func TestValidateBruteForce(t *testing.T) {
	rng := newRand(7)
	for iter := 0; iter < 3000; iter++ {
		// Small instances, and (every third) larger ones with long
		// lifetimes and large sizes, where more than 8 address ranges are
		// open at once and the address sweep switches to its segment tree.
		p := randomProblem(rng, 1+rng.IntN(8), 6, 40)
		spread := int64(5)
		if iter%3 == 2 {
			// Short lifetimes, sizes larger than the offset spread: many
			// buffers share addresses at different times.
			p = &Problem{}
			for i := range 10 + rng.IntN(50) {
				st := rng.IntN(60)
				p.Buffers = append(p.Buffers, Buffer{ID: i, Start: st, End: st + 1 + rng.IntN(2), Size: 200 + rng.Int64N(200)})
			}
			spread = 40
		}
		a := &Assignment{Offsets: make([]int64, len(p.Buffers))}
		for i := range a.Offsets {
			a.Offsets[i] = rng.Int64N(spread) * p.align() * 8
		}
		a.Arena = ArenaOf(p, a.Offsets)
		want := true
		for i := range p.Buffers {
			for j := i + 1; j < len(p.Buffers); j++ {
				bi, bj := p.Buffers[i], p.Buffers[j]
				if !p.live(i) || !p.live(j) || bi.End <= bj.Start || bj.End <= bi.Start {
					continue
				}
				if a.Offsets[i] < a.Offsets[j]+p.AlignedSize(j) && a.Offsets[j] < a.Offsets[i]+p.AlignedSize(i) {
					want = false
				}
			}
		}
		if err := Validate(p, a); (err == nil) != want {
			t.Fatalf("iteration %d: Validate = %v, brute force valid = %v\nproblem %+v\noffsets %v", iter, err, want, p, a.Offsets)
		}
		// Both sweeps of Validate agree with the brute force: the time
		// sweep (used while few buffers are live) and the address sweep
		// over a segment tree (used beyond).
		cs, ce, steps := compressLifetimes(p)
		if i, _, ok := findOverlapTime(p, a.Offsets, cs, ce, steps); !ok || (i < 0) != want {
			t.Fatalf("iteration %d: time sweep found %d (ok %v), brute force valid = %v", iter, i, ok, want)
		}
		if i, _ := findOverlap(p, a.Offsets, cs, ce, steps); (i < 0) != want {
			t.Fatalf("iteration %d: address sweep found %d, brute force valid = %v", iter, i, want)
		}
	}
}

// Aligned: sizes rounded up to the alignment, which the copy drops; the
// original is left alone.
func TestProblemAligned(t *testing.T) {
	p := &Problem{Alignment: 64, Buffers: []Buffer{{ID: 0, Start: 0, End: 2, Size: 1}, {ID: 1, Start: 1, End: 3, Size: 128}}}
	q := p.Aligned()
	if q.Alignment != 0 || q.Buffers[0].Size != 64 || q.Buffers[1].Size != 128 || q.Buffers[0].End != 2 {
		t.Errorf("Aligned: %+v", q)
	}
	if p.Buffers[0].Size != 1 {
		t.Errorf("the original changed: %+v", p.Buffers[0])
	}
}
