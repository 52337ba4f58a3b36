package kernels

import (
	"fmt"
)

// elemGrain is the number of elements below which row loops stay on one
// goroutine.
const elemGrain = 1 << 14

// silu is ggml_silu_f32: x / (1 + expf(-x)).
func silu(x float32) float32 { return x / (1 + expf(-x)) }

func checkFloat(op, what string, t Tensor) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: %w", op, what, err)
	}
	if !isFloatType(t.Type) {
		return fmt.Errorf("kernels: %s: %s %s: type must be f32, f16 or bf16", op, what, t)
	}
	return nil
}

// checkFloats runs checkFloat on each operand of an op; names[i] names
// ts[i] in the error.
func checkFloats(op string, names []string, ts ...Tensor) error {
	for i, t := range ts {
		if err := checkFloat(op, names[i], t); err != nil {
			return err
		}
	}
	return nil
}

// checkSameFloat checks the operands of a row-wise op: dst and src float
// tensors (checkFloat) of the same shape.
func checkSameFloat(op string, dst, src Tensor) error {
	if err := checkFloats(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	if dst.Ne != src.Ne {
		return fmt.Errorf("kernels: %s: dst %s and src %s differ in shape", op, dst, src)
	}
	return nil
}

// canRepeat reports whether b can be broadcast over a (ggml_can_repeat):
// every dim of a is a multiple of b's.
func canRepeat(b, a Tensor) bool {
	for i := range MaxDims {
		if b.Ne[i] == 0 {
			if a.Ne[i] != 0 {
				return false
			}
			continue
		}
		if a.Ne[i]%b.Ne[i] != 0 {
			return false
		}
	}
	return true
}

// rowIndex splits a flat row number into (i1, i2, i3) for dims ne.
func rowIndex(r int64, ne [MaxDims]int64) (i1, i2, i3 int64) {
	i1 = r % ne[1]
	r /= ne[1]
	i2 = r % ne[2]
	i3 = r / ne[2]
	return
}

// eachRow runs fn over every row (i1, i2, i3) of shape ne, in parallel
// chunks when the tensor is large (on o.Pool when set, up to o.Threads
// goroutines otherwise). fn gets two scratch rows of ne[0] floats, which
// it must overwrite before reading: each row's result depends on the row
// alone, never on how the rows are chunked.
func eachRow(o Options, ne [MaxDims]int64, fn func(i1, i2, i3 int64, s1, s2 []float32)) {
	nr := ne[1] * ne[2] * ne[3]
	if nr == 0 || ne[0] == 0 {
		return
	}
	grain := max(1, int(elemGrain/max(ne[0], 1)))
	parallelFor(o.Pool, o.Threads, int(nr), grain, func(lo, hi int) {
		p1, p2 := getF32(int(ne[0])), getF32(int(ne[0]))
		defer putF32(p1)
		defer putF32(p2)
		for r := lo; r < hi; r++ {
			i1, i2, i3 := rowIndex(int64(r), ne)
			fn(i1, i2, i3, *p1, *p2)
		}
	})
}

func (t Tensor) rowOff(i1, i2, i3 int64) int64 { return i1*t.Nb[1] + i2*t.Nb[2] + i3*t.Nb[3] }

// binaryOp implements ggml's add/mul: dst = a op b with b repeated over a.
func (o Options) binaryOp(op string, dst, a, b Tensor, kind binOp) (err error) {
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "src0", "src1"}, dst, a, b); err != nil {
		return err
	}
	if dst.Ne != a.Ne {
		return fmt.Errorf("kernels: %s: dst %s and src0 %s differ in shape", op, dst, a)
	}
	if !canRepeat(b, a) {
		return fmt.Errorf("kernels: %s: src1 %s cannot be broadcast over src0 %s", op, b, a)
	}
	o.eachRows(a.Ne, func(lo, hi int, s1, s2 []float32) {
		binaryRows(dst, a, b, kind, lo, hi, s1, s2)
	})
	return nil
}

// Add computes dst = a + b, with b repeated over a in every dim whose size
// divides a's (ggml_add). dst has a's shape and may alias a.
func Add(dst, a, b Tensor) error { return Options{}.Add(dst, a, b) }

// Add is the package's Add with o's pool and threads.
func (o Options) Add(dst, a, b Tensor) error {
	return o.binaryOp("add", dst, a, b, binAdd)
}

// Mul computes dst = a * b, with b broadcast over a as in Add (ggml_mul).
func Mul(dst, a, b Tensor) error { return Options{}.Mul(dst, a, b) }

// Mul is the package's Mul with o's pool and threads.
func (o Options) Mul(dst, a, b Tensor) error {
	return o.binaryOp("mul", dst, a, b, binMul)
}

// unary applies f to every row of src into dst (same shape); f's out may
// alias x.
func (o Options) unary(op string, dst, src Tensor, f func(out, x []float32)) (err error) {
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return err
	}
	o.eachRows(src.Ne, func(lo, hi int, s1, _ []float32) {
		unaryRows(dst, src, f, lo, hi, s1)
	})
	return nil
}

// unaryRows is unary for the flat rows [lo, hi) of src.
func unaryRows(dst, src Tensor, f func(out, x []float32), lo, hi int, s1 []float32) {
	ne0 := int(src.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), src.Ne)
		x := srcRow(src, src.rowOff(i1, i2, i3), ne0, s1)
		out, direct := dstRow(dst, dst.rowOff(i1, i2, i3), ne0, s1)
		f(out[:len(x)], x)
		if !direct {
			storeRow(dst, dst.rowOff(i1, i2, i3), out)
		}
	}
}

// Scale computes dst = src * s (ggml_scale).
func Scale(dst, src Tensor, s float32) error { return Options{}.Scale(dst, src, s) }

// Scale is the package's Scale with o's pool and threads.
func (o Options) Scale(dst, src Tensor, s float32) error {
	return o.unary("scale", dst, src, scaleBy(s))
}

// scaleBy is Scale's row function.
func scaleBy(s float32) func(out, x []float32) {
	return func(out, x []float32) {
		for i, v := range x {
			out[i] = v * s
		}
	}
}

// Silu computes dst = src / (1 + exp(-src)) (ggml_silu), row by row with
// the exponential llama.cpp's x86 build uses (see siluRow).
func Silu(dst, src Tensor) error { return Options{}.Silu(dst, src) }

// Silu is the package's Silu with o's pool and threads.
func (o Options) Silu(dst, src Tensor) error {
	return o.unary("silu", dst, src, siluRow)
}

// SwiGLU computes dst = silu(gate) * up elementwise, bit for bit the same
// as Silu followed by Mul. gate, up and dst have the same shape.
func SwiGLU(dst, gate, up Tensor) error { return Options{}.SwiGLU(dst, gate, up) }

// SwiGLU is the package's SwiGLU with o's pool and threads.
func (o Options) SwiGLU(dst, gate, up Tensor) (err error) {
	const op = "swiglu"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "gate", "up"}, dst, gate, up); err != nil {
		return err
	}
	if dst.Ne != gate.Ne || up.Ne != gate.Ne {
		return fmt.Errorf("kernels: %s: shapes differ: dst %s, gate %s, up %s", op, dst, gate, up)
	}
	o.eachRows(gate.Ne, func(lo, hi int, s1, s2 []float32) {
		swigluRows(dst, gate, up, lo, hi, s1, s2)
	})
	return nil
}
