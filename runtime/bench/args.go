package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/irtool/irtool/gguf"
)

// This file holds llama-bench's arguments and table
// (tools/llama-bench/llama-bench.cpp): the lists of -p, -n, -ub and -t,
// the pairs of -pg, and the markdown table of the results.

// MaxListLen bounds a list (a range such as 1-1000000000 is refused, not
// expanded).
const MaxListLen = 1024

// ParseList parses llama-bench's list of values: comma-separated values,
// each a number or a range (ParseRange); more than limit values is an error.
func ParseList(s string, limit int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		vals, err := ParseRange(strings.TrimSpace(part))
		if err != nil {
			return out, err
		}
		out = append(out, vals...)
		if len(out) > limit {
			return out, fmt.Errorf("more than %d values", MaxListLen)
		}
	}
	return out, nil
}

// ParseRange parses one element of a list: N, first-last, first-last+step
// or first-last*mult (llama-bench's syntax).
func ParseRange(s string) ([]int, error) {
	num := func(t string) (int, error) {
		v, err := strconv.Atoi(t)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%q is not a number >= 0", t)
		}
		return v, nil
	}
	first, rest, isRange := strings.Cut(s, "-")
	if !isRange || first == "" { // a number, or a negative one
		v, err := num(s)
		return []int{v}, err
	}
	step, mult := 1, 1
	last := rest
	if a, b, ok := strings.Cut(rest, "+"); ok {
		last = a
		v, err := num(b)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("%q: the step must be a positive number", s)
		}
		step = v
	} else if a, b, ok := strings.Cut(rest, "*"); ok {
		last = a
		v, err := num(b)
		if err != nil || v < 2 {
			return nil, fmt.Errorf("%q: the multiplier must be at least 2", s)
		}
		mult, step = v, 0
	}
	lo, err := num(first)
	if err != nil {
		return nil, err
	}
	hi, err := num(last)
	if err != nil {
		return nil, err
	}
	if hi < lo || mult > 1 && lo == 0 {
		return nil, fmt.Errorf("%q is not a range first-last with first <= last (and first > 0 with *mult)", s)
	}
	var out []int
	for v := lo; v <= hi; {
		if len(out) == MaxListLen {
			return nil, fmt.Errorf("%q has more than %d values", s, MaxListLen)
		}
		out = append(out, v)
		if mult > 1 {
			v *= mult
		} else {
			v += step
		}
	}
	return out, nil
}

// ParsePair parses -pg's PP,TG: two numbers >= 0.
func ParsePair(s string) ([2]int, error) {
	a, b, ok := strings.Cut(s, ",")
	pp, err1 := strconv.Atoi(strings.TrimSpace(a))
	tg, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || pp < 0 || tg < 0 || strings.Contains(b, ",") {
		return [2]int{}, fmt.Errorf("want PP,TG: two numbers >= 0")
	}
	return [2]int{pp, tg}, nil
}

// WriteTable prints results as llama-bench's markdown table for the model
// in file f, named name, with an n_ubatch column when ubCol is set.
func WriteTable(w io.Writer, f *gguf.File, name string, ubCol bool, results []Result) {
	size, params := ModelSize(f)
	if ubCol {
		fmt.Fprintln(w, "| model | size | params | backend | threads | n_ubatch | test | t/s |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
	} else {
		fmt.Fprintln(w, "| model | size | params | backend | threads | test | t/s |")
		fmt.Fprintln(w, "| --- | ---: | ---: | --- | ---: | ---: | ---: |")
	}
	for _, r := range results {
		ub := ""
		if ubCol {
			ub = fmt.Sprintf(" %d |", r.UBatch)
		}
		fmt.Fprintf(w, "| %s | %.2f MiB | %.2f M | irtool cpu | %d |%s %s | %.2f ± %.2f |\n",
			name, float64(size)/(1<<20), float64(params)/1e6, r.Threads, ub, r.Test, r.TokS, r.Stddev)
	}
}
