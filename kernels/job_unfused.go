package kernels

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
)

// The Jobs of the ops that only the unfused graph (no fusion passes) has:
// rms_norm, soft_max, rope, scale, silu, gelu, div and cpy/cont. Each runs
// its plain kernel's row function over a chunk of rows, so the results are
// the same bits as the plain kernel's, however the rows are chunked.

// RMSNormJob prepares RMSNorm as a Job over the rows of src.
func RMSNormJob(dst, src Tensor, eps float32, workers int) (j Job, err error) {
	const op = "rms_norm"
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return nil, err
	}
	rj := newRowJob(src.NRows(), src.Ne[0], int(src.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		rmsNormRows(j.dst, j.a, j.eps, lo, hi, j.rows.s1[wk])
	})
	rj.dst, rj.a, rj.eps = dst, src, eps
	return rj, nil
}

// SoftMaxJob prepares SoftMax as a Job over the rows of src.
func SoftMaxJob(dst, src Tensor, mask *Tensor, scale, maxBias float32, workers int) (j Job, err error) {
	const op = "soft_max"
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return nil, err
	}
	if err := checkMask(op, mask, src); err != nil {
		return nil, err
	}
	al := newAlibi(maxBias, src.Ne[2])
	var m *Tensor
	if mask != nil {
		mc := *mask
		m = &mc
	}
	rj := newRowJob(src.NRows(), src.Ne[0], int(src.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		softmaxRows(j.dst, j.a, m, scale, al, lo, hi, j.rows.s1[wk], j.rows.s2[wk])
	})
	rj.dst, rj.a = dst, src
	return rj, nil
}

// ScaleJob prepares Scale as a Job over the rows of src.
func ScaleJob(dst, src Tensor, s float32, workers int) (Job, error) {
	return unaryJob("scale", dst, src, scaleBy(s), workers)
}

// SiluJob prepares Silu as a Job over the rows of src.
func SiluJob(dst, src Tensor, workers int) (Job, error) {
	return unaryJob("silu", dst, src, siluRow, workers)
}

// GeluJob prepares Gelu as a Job over the rows of src.
func GeluJob(dst, src Tensor, workers int) (Job, error) {
	return unaryJob("gelu", dst, src, geluRow, workers)
}

// DivJob prepares Div (dst = a / b) as a Job over the rows of a.
func DivJob(dst, a, b Tensor, workers int) (Job, error) {
	return binaryJob("div", dst, a, b, binDiv, workers)
}

func unaryJob(op string, dst, src Tensor, f func(out, x []float32), workers int) (j Job, err error) {
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return nil, err
	}
	rj := newRowJob(src.NRows(), src.Ne[0], int(src.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		unaryRows(j.dst, j.a, f, lo, hi, j.rows.s1[wk])
	})
	rj.dst, rj.a = dst, src
	return rj, nil
}

// RopeJob prepares Rope (RopeWithFactors when factors is not nil: read
// once here, as constant weights) as a two-phase Job: phase 0 writes the
// cos/sin table of the positions, read when it runs, into the job's own
// table (over positions, as RopeCacheJob), phase 1 rotates the rows of src
// with it (as RopeApplyJob). RopeCache followed by RopeApply is Rope bit
// for bit.
func RopeJob(dst, src, pos Tensor, factors *Tensor, p RopeParams, workers int) (j Job, err error) {
	const op = "rope"
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return nil, err
	}
	if err := checkRopeParams(op, p, src); err != nil {
		return nil, err
	}
	n := src.Ne[2]
	table, err := FromBytes(gguf.TypeF32, make([]byte, 4*int64(p.NDims)*n), int64(p.NDims), n)
	if err != nil {
		return nil, fmt.Errorf("kernels: %s: %w", op, err)
	}
	cj, err := RopeCacheJob(table, pos, factors, p, workers)
	if err != nil {
		return nil, err
	}
	aj, err := RopeApplyJob(dst, src, table, nil, nil, p, workers)
	if err != nil {
		return nil, err
	}
	return seqJob{cj, aj}, nil
}

// seqJob runs one-phase jobs one after the other, as its phases.
type seqJob []Job

func (s seqJob) Phases() int { return len(s) }

func (s seqJob) Size(p int) (n, chunk int) { return s[p].Size(0) }

func (s seqJob) Run(p, worker, lo, hi int) { s[p].Run(0, worker, lo, hi) }

// CpyJob prepares Cpy (cpy, cont, cast) as a Job. It runs in one chunk:
// the copy walks src and dst in logical order, which a strided or
// reshaped dst does not split by rows.
func CpyJob(dst, src Tensor, workers int) (j Job, err error) {
	const op = "cpy"
	defer guard(op, &err)
	how, err := checkCpy(op, dst, src)
	if err != nil {
		return nil, err
	}
	cj := &cpyJob{how: how, dst: dst, src: src}
	if how == cpyConvert {
		cj.buf = make([]float32, src.Ne[0])
	}
	return cj, nil
}

type cpyJob struct {
	how      cpyKind
	dst, src Tensor
	buf      []float32
}

func (j *cpyJob) Phases() int { return 1 }

func (j *cpyJob) Size(int) (n, chunk int) {
	if j.how == cpyNone {
		return 0, 1
	}
	return 1, 1
}

func (j *cpyJob) Run(_, _, _, _ int) {
	switch j.how {
	case cpyQuantRows:
		if err := copyQuantRows(j.dst, j.src); err != nil {
			panic(err)
		}
	case cpyRaw:
		copyRaw(j.dst, j.src)
	case cpyConvert:
		copyConvertBuf(j.dst, j.src, j.buf)
	}
}
