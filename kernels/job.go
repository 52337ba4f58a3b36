package kernels

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
)

// Job is a kernel prepared once for repeated execution on fixed tensors: a
// step of a compiled plan, whose operands live at fixed places (an arena,
// the weights, the KV cache) and change only in value. Its work is a
// sequence of phases; phase p covers the indexes [0, n) of Size(p), which a
// scheduler may split into chunks and run on several workers at once, and
// every phase must end before the next begins. Run reads the operands as
// they are when it is called. Preparing a job checks the operands and
// allocates its scratch (per worker); running it allocates nothing, and
// the results are bit for bit those of the plain kernel with the same
// operands, however the indexes are chunked.
type Job interface {
	// Phases is the number of phases.
	Phases() int
	// Size returns phase p's index count n and a chunk size worth one
	// dispatch (at least 1).
	Size(p int) (n, chunk int)
	// Run computes indexes [lo, hi) of phase p. worker is below the
	// workers the job was prepared for and unique among concurrent calls.
	// A failure (an index out of range in the data) panics; the scheduler
	// turns it into an error.
	Run(p, worker, lo, hi int)
}

// rowChunk is the rows per chunk of a row job: about elemGrain elements.
func rowChunk(ne0 int64) int { return max(1, int(elemGrain/max(ne0, 1))) }

// scratchRows holds two scratch rows per worker.
type scratchRows struct{ s1, s2 [][]float32 }

func newScratchRows(workers, n int) scratchRows {
	workers = max(workers, 1)
	s := scratchRows{s1: make([][]float32, workers), s2: make([][]float32, workers)}
	for w := range workers {
		s.s1[w], s.s2[w] = make([]float32, n), make([]float32, n)
	}
	return s
}

// MulMatJob prepares dst = a·b (+ bias, broadcast as Add; nil for none) as
// a Job: phase 0 converts b's columns (quantises them to the weight's
// vec_dot_type), phase 1 computes tiles of a's rows against every column,
// phase 2 adds the bias (rows of dst). Same checks and results as MulMat
// and MulMatAdd.
func (o Options) MulMatJob(dst, a, b Tensor, bias *Tensor, workers int) (j Job, err error) {
	const op = "mul_mat"
	defer guard(op, &err)
	if err := checkMulMat(op, dst, a, b); err != nil {
		return nil, err
	}
	mj := &mulMatJob{dst: dst, out: newDstWriter(dst), bias: bias}
	if bias != nil {
		if err := checkFloat(op, "bias", *bias); err != nil {
			return nil, err
		}
		if !canRepeat(*bias, dst) {
			return nil, fmt.Errorf("kernels: %s: bias %s cannot be broadcast over %s", op, *bias, dst)
		}
		mj.rows = newScratchRows(workers, int(dst.Ne[0]))
	}
	mj.m = newMatmul(o, a, b)
	if o.Packs != nil && mj.m.repack && useAVX2 {
		mj.m.pk = o.Packs.q4x8i(a)
	}
	if o.Packs != nil && mj.m.kind == mmQ8_K && repackQ4K(o, a, b) && useAVX2 {
		// Q4_K in the q4_K_8x8 order: from an interleaved copy.
		if mj.m.pk = o.Packs.q4kx8i(a); mj.m.pk != nil {
			mj.m.raw = true
		}
	}
	mj.grain = mj.m.schedule(max(workers, 1))
	if dst.NElements() == 0 {
		mj.m.tasks = 0
	}
	mj.tiles = make([]*tile, max(workers, 1))
	for w := range mj.tiles {
		mj.tiles[w] = newTile(mj.m, int(mj.m.rt))
		if mj.tiles[w].rows != nil && mj.tiles[w].buf == nil {
			// Preallocate the buffer load falls back to for misaligned
			// F32 views, so that running never allocates.
			mj.tiles[w].buf = getF32(len(mj.tiles[w].rows) * mj.m.k)
		}
	}
	mj.quant = make([]*[]float32, max(workers, 1))
	for w := range mj.quant {
		mj.quant[w] = getF32(mj.m.k)
	}
	return mj, nil
}

type mulMatJob struct {
	m     *matmul
	dst   Tensor
	out   dstWriter
	bias  *Tensor
	grain int
	tiles []*tile
	quant []*[]float32 // per worker: one activation row to quantise
	rows  scratchRows  // bias phase
}

func (j *mulMatJob) Phases() int { return 3 }

func (j *mulMatJob) Size(p int) (n, chunk int) {
	switch p {
	case 0:
		if j.m.bDirect {
			return 0, 1
		}
		return j.m.cols, max(1, (1<<15)/max(j.m.k, 1))
	case 1:
		return j.m.tasks, j.grain
	}
	if j.bias == nil {
		return 0, 1
	}
	return int(j.dst.NRows()), rowChunk(j.dst.Ne[0])
}

func (j *mulMatJob) Run(p, worker, lo, hi int) {
	switch p {
	case 0:
		j.m.convertWith(*j.quant[worker], lo, hi)
	case 1:
		j.m.runTasks(j.tiles[worker], &j.out, lo, hi)
	case 2:
		binaryRows(j.dst, j.dst, *j.bias, binAdd, lo, hi, j.rows.s1[worker], j.rows.s2[worker])
	}
}

// binOp selects the arithmetic of binaryRows.
type binOp int

const (
	binAdd binOp = iota
	binMul
	binDiv
)

// binaryRows is the row loop of Add, Mul or Div (ggml's broadcasting
// binary ops) for the flat rows [lo, hi) of a.
func binaryRows(dst, a, b Tensor, op binOp, lo, hi int, s1, s2 []float32) {
	ne0, ne10 := int(a.Ne[0]), int(b.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), a.Ne)
		x := srcRow(a, a.rowOff(i1, i2, i3), ne0, s1)
		y := srcRow(b, b.rowOff(i1%b.Ne[1], i2%b.Ne[2], i3%b.Ne[3]), ne10, s2[:ne10])
		out, direct := dstRow(dst, dst.rowOff(i1, i2, i3), ne0, s1)
		for base := 0; base < ne0; base += ne10 {
			xs, os := x[base:base+ne10], out[base:base+ne10]
			ys := y[:len(xs)]
			switch op {
			case binAdd:
				for i := range xs {
					os[i] = xs[i] + ys[i]
				}
			case binMul:
				for i := range xs {
					os[i] = xs[i] * ys[i]
				}
			case binDiv:
				for i := range xs {
					os[i] = xs[i] / ys[i]
				}
			}
		}
		if !direct {
			storeRow(dst, dst.rowOff(i1, i2, i3), out)
		}
	}
}

// rowJob is a one-phase job over the flat rows of a tensor.
type rowJob struct {
	n, chunk int
	rows     scratchRows
	run      func(j *rowJob, worker, lo, hi int)
	// operands and parameters, by op
	dst, a, b, c, w Tensor
	eps             float32
	bin             binOp
	p               RopeParams
}

func (j *rowJob) Phases() int { return 1 }

func (j *rowJob) Size(int) (n, chunk int) { return j.n, j.chunk }

func (j *rowJob) Run(_, worker, lo, hi int) { j.run(j, worker, lo, hi) }

func newRowJob(rows int64, ne0 int64, scratch, workers int, run func(j *rowJob, worker, lo, hi int)) *rowJob {
	return &rowJob{n: int(rows), chunk: rowChunk(ne0), rows: newScratchRows(workers, scratch), run: run}
}

// AddJob prepares Add (dst = a + b) as a Job over the rows of a.
func AddJob(dst, a, b Tensor, workers int) (Job, error) {
	return binaryJob("add", dst, a, b, binAdd, workers)
}

// MulJob prepares Mul (dst = a * b) as a Job over the rows of a.
func MulJob(dst, a, b Tensor, workers int) (Job, error) {
	return binaryJob("mul", dst, a, b, binMul, workers)
}

func binaryJob(op string, dst, a, b Tensor, kind binOp, workers int) (j Job, err error) {
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "src0", "src1"}, dst, a, b); err != nil {
		return nil, err
	}
	if dst.Ne != a.Ne {
		return nil, fmt.Errorf("kernels: %s: dst %s and src0 %s differ in shape", op, dst, a)
	}
	if !canRepeat(b, a) || b.Ne[0] == 0 && a.Ne[0] != 0 {
		return nil, fmt.Errorf("kernels: %s: src1 %s cannot be broadcast over src0 %s", op, b, a)
	}
	rj := newRowJob(a.NRows(), a.Ne[0], int(a.Ne[0]), workers, func(j *rowJob, w, lo, hi int) {
		binaryRows(j.dst, j.a, j.b, j.bin, lo, hi, j.rows.s1[w], j.rows.s2[w])
	})
	rj.dst, rj.a, rj.b, rj.bin = dst, a, b, kind
	if a.Ne[0] == 0 {
		rj.n = 0
	}
	return rj, nil
}

// RMSNormMulJob prepares RMSNormMul as a Job over the rows of x.
func RMSNormMulJob(dst, x, w Tensor, eps float32, workers int) (j Job, err error) {
	const op = "rms_norm_mul"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "x", "w"}, dst, x, w); err != nil {
		return nil, err
	}
	if dst.Ne != x.Ne {
		return nil, fmt.Errorf("kernels: %s: dst %s and x %s differ in shape", op, dst, x)
	}
	if !canRepeat(w, x) || w.Ne[0] == 0 {
		return nil, fmt.Errorf("kernels: %s: weight %s cannot be broadcast over %s", op, w, x)
	}
	rj := newRowJob(x.NRows(), x.Ne[0], int(x.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		rmsNormMulRows(j.dst, j.a, j.w, j.eps, lo, hi, j.rows.s1[wk], j.rows.s2[wk])
	})
	rj.dst, rj.a, rj.w, rj.eps = dst, x, w, eps
	return rj, nil
}

// AddRMSNormMulJob prepares AddRMSNormMul as a Job over the rows of a.
func AddRMSNormMulJob(dst, sum, a, b, w Tensor, eps float32, workers int) (j Job, err error) {
	const op = "add_rms_norm_mul"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "sum", "a", "b", "w"}, dst, sum, a, b, w); err != nil {
		return nil, err
	}
	if dst.Ne != a.Ne || sum.Ne != a.Ne {
		return nil, fmt.Errorf("kernels: %s: dst %s, sum %s and a %s differ in shape", op, dst, sum, a)
	}
	if !canRepeat(b, a) || b.Ne[0] == 0 {
		return nil, fmt.Errorf("kernels: %s: b %s cannot be broadcast over a %s", op, b, a)
	}
	if !canRepeat(w, a) || w.Ne[0] == 0 {
		return nil, fmt.Errorf("kernels: %s: weight %s cannot be broadcast over %s", op, w, a)
	}
	rj := newRowJob(a.NRows(), a.Ne[0], int(a.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		addRMSNormMulRows(j.dst, j.c, j.a, j.b, j.w, j.eps, lo, hi, j.rows.s1[wk], j.rows.s2[wk])
	})
	rj.dst, rj.c, rj.a, rj.b, rj.w, rj.eps = dst, sum, a, b, w, eps
	return rj, nil
}

// SwiGLUJob prepares SwiGLU as a Job over the rows of gate.
func SwiGLUJob(dst, gate, up Tensor, workers int) (j Job, err error) {
	const op = "swiglu"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "gate", "up"}, dst, gate, up); err != nil {
		return nil, err
	}
	if dst.Ne != gate.Ne || up.Ne != gate.Ne {
		return nil, fmt.Errorf("kernels: %s: shapes differ: dst %s, gate %s, up %s", op, dst, gate, up)
	}
	rj := newRowJob(gate.NRows(), gate.Ne[0], int(gate.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		swigluRows(j.dst, j.a, j.b, lo, hi, j.rows.s1[wk], j.rows.s2[wk])
	})
	rj.dst, rj.a, rj.b = dst, gate, up
	return rj, nil
}

// GetRowsJob prepares GetRows as a Job over the rows of dst. The indexes
// are read when it runs; one outside the rows of src panics (Run's
// contract).
func GetRowsJob(dst, src, idx Tensor, workers int) (j Job, err error) {
	const op = "get_rows"
	defer guard(op, &err)
	if err := src.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: src: %w", op, err)
	}
	if !canLoad(src.Type) {
		return nil, fmt.Errorf("kernels: %s: src type %s is not supported", op, src.Type)
	}
	if err := checkFloat(op, "dst", dst); err != nil {
		return nil, err
	}
	if err := checkIndexTensor(op, idx); err != nil {
		return nil, err
	}
	want := [MaxDims]int64{src.Ne[0], idx.Ne[0], idx.Ne[1], idx.Ne[2]}
	if dst.Ne != want {
		return nil, fmt.Errorf("kernels: %s: dst %s, want shape %v for src %s and idx %s", op, dst, want, src, idx)
	}
	if src.Ne[2] != idx.Ne[1] || src.Ne[3] != idx.Ne[2] {
		return nil, fmt.Errorf("kernels: %s: src %s and idx %s differ in dims 2, 3", op, src, idx)
	}
	rj := newRowJob(dst.NRows(), dst.Ne[0], int(dst.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		getRowsRows(j.dst, j.a, j.b, lo, hi, j.rows.s1[wk])
	})
	rj.dst, rj.a, rj.b = dst, src, idx
	return rj, nil
}

// SetRowsJob prepares SetRows as a Job over the rows of src (the indexes
// are read and checked when it runs). Like SetRows it runs in one chunk:
// two rows with the same index must land in order.
func SetRowsJob(dst, src, idx Tensor, workers int) (j Job, err error) {
	const op = "set_rows"
	defer guard(op, &err)
	if err := checkSetRowsShapes(op, dst, src, idx); err != nil {
		return nil, err
	}
	rj := newRowJob(src.NRows(), src.Ne[0], int(src.Ne[0]), workers, func(j *rowJob, wk, lo, hi int) {
		dst, src, idx := j.dst, j.a, j.b
		ne0 := int(src.Ne[0])
		for r := lo; r < hi; r++ {
			i, i02, i03 := rowIndex(int64(r), src.Ne)
			k := readIndex(idx, i, i02%idx.Ne[1], i03%idx.Ne[2])
			if k < 0 || k >= dst.Ne[1] {
				panic(fmt.Sprintf("kernels: %s: index %d outside the %d rows of %s", op, k, dst.Ne[1], dst))
			}
			x := srcRow(src, src.rowOff(i, i02, i03), ne0, j.rows.s1[wk])
			storeRow(dst, dst.rowOff(k, i02, i03), x)
		}
	})
	rj.chunk = max(rj.n, 1)
	rj.dst, rj.a, rj.b = dst, src, idx
	return rj, nil
}

// RopeApplyJob prepares RopeApply as a Job over the rows of src. With
// rows set (a tensor [ne0*ne1 of src, n_rows]) and idx, it is
// rope_apply_set_rows instead: token t's rotated heads, laid end to end,
// are stored to row idx[t] of rows (converted to its type), bit for bit
// RopeApply into an F32 tensor, a reshape and SetRows; the job then runs
// over tokens.
func RopeApplyJob(dst, src, cache Tensor, rows, idx *Tensor, p RopeParams, workers int) (j Job, err error) {
	const op = "rope_apply"
	defer guard(op, &err)
	if err := checkFloat(op, "src", src); err != nil {
		return nil, err
	}
	pp := p
	pp.FreqBase = 1 // unused here
	if err := checkRopeParams(op, pp, src); err != nil {
		return nil, err
	}
	if err := cache.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: cache: %w", op, err)
	}
	if cache.Type != gguf.TypeF32 || cache.Ne[0] != int64(p.NDims) || cache.Ne[1] < src.Ne[2] {
		return nil, fmt.Errorf("kernels: %s: cache %s must be f32 [n_dims=%d, >= %d positions]", op, cache, p.NDims, src.Ne[2])
	}
	ne0 := src.Ne[0]
	if rows == nil {
		if err := checkFloat(op, "dst", dst); err != nil {
			return nil, err
		}
		if dst.Ne != src.Ne {
			return nil, fmt.Errorf("kernels: %s: dst %s and src %s differ in shape", op, dst, src)
		}
		rj := newRowJob(src.NRows(), ne0, int(ne0)+p.NDims, workers, ropeApplyRows)
		rj.dst, rj.a, rj.c, rj.p = dst, src, cache, p
		return rj, nil
	}
	if idx == nil || src.Ne[3] != 1 {
		return nil, fmt.Errorf("kernels: %s: row write needs indexes and a 3-D src %s", op, src)
	}
	if err := rows.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: rows: %w", op, err)
	}
	if !canStore(rows.Type) {
		return nil, fmt.Errorf("kernels: %s: rows type %s is not supported", op, rows.Type)
	}
	if rows.Ne[0] != ne0*src.Ne[1] || rows.Ne[2] != 1 || rows.Ne[3] != 1 {
		return nil, fmt.Errorf("kernels: %s: rows %s must be [ne0*ne1 of src %s, n_rows]", op, *rows, src)
	}
	if err := checkIndexTensor(op, *idx); err != nil {
		return nil, err
	}
	if idx.Ne[0] != src.Ne[2] {
		return nil, fmt.Errorf("kernels: %s: %d indices for %d tokens", op, idx.Ne[0], src.Ne[2])
	}
	rj := newRowJob(src.Ne[2], ne0*src.Ne[1], max(int(ne0*src.Ne[1]), int(ne0)+p.NDims), workers, ropeApplySetRows)
	rj.dst, rj.a, rj.c, rj.b, rj.p = *rows, src, cache, *idx, p
	return rj, nil
}

// ropeCacheRow returns the table column of token i2, decoded into s when
// the table is not dense F32.
func ropeCacheRow(cache Tensor, i2 int64, nd int, s []float32) []float32 {
	return srcRow(cache, cache.rowOff(i2, 0, 0), nd, s[:nd])
}

func ropeApplyRows(j *rowJob, wk, lo, hi int) {
	dst, src := j.dst, j.a
	ne0 := int(src.Ne[0])
	nd, neox := j.p.NDims, j.p.Mode == RopeNeox
	// s1: the source row; s2: the output row, then the table column.
	s1, s2 := j.rows.s1[wk], j.rows.s2[wk]
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), src.Ne)
		c := ropeCacheRow(j.c, i2, nd, s2[ne0:])
		x := srcRow(src, src.rowOff(i1, i2, i3), ne0, s1)
		out, direct := dstRow(dst, dst.rowOff(i1, i2, i3), ne0, s2)
		ropeApplyRow(out, x, c, nd, neox)
		if !direct {
			storeRow(dst, dst.rowOff(i1, i2, i3), out)
		}
	}
}

func ropeApplySetRows(j *rowJob, wk, lo, hi int) {
	rows, src, idx := j.dst, j.a, j.b
	hd, nh := int(src.Ne[0]), int(src.Ne[1])
	nd, neox := j.p.NDims, j.p.Mode == RopeNeox
	row, s2 := j.rows.s1[wk], j.rows.s2[wk]
	for t := int64(lo); t < int64(hi); t++ {
		k := readIndex(idx, t, 0, 0)
		if k < 0 || k >= rows.Ne[1] {
			panic(fmt.Sprintf("kernels: rope_apply_set_rows: idx[%d] = %d outside the %d rows of %s", t, k, rows.Ne[1], rows))
		}
		c := ropeCacheRow(j.c, t, nd, s2)
		for h := range nh {
			x := srcRow(src, src.rowOff(int64(h), t, 0), hd, s2[nd:])
			ropeApplyRow(row[h*hd:(h+1)*hd], x, c, nd, neox)
		}
		storeRow(rows, rows.rowOff(k, 0, 0), row[:hd*nh])
	}
}

// RopeCacheJob prepares RopeCache (with factors when ff is not nil) as a
// Job over positions.
func RopeCacheJob(dst, pos Tensor, factors *Tensor, p RopeParams, workers int) (j Job, err error) {
	const op = "rope_cache"
	defer guard(op, &err)
	if err := dst.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if dst.Type != gguf.TypeF32 || dst.Ne[0] != int64(p.NDims) || dst.Ne[2] != 1 || dst.Ne[3] != 1 {
		return nil, fmt.Errorf("kernels: %s: dst %s must be f32 [n_dims=%d, n_pos]", op, dst, p.NDims)
	}
	if err := checkRopeParams(op, p, Tensor{Ne: [MaxDims]int64{int64(p.NDims)}}); err != nil {
		return nil, err
	}
	if err := pos.Validate(); err != nil || pos.Type != gguf.TypeI32 || pos.Ne[0] < dst.Ne[1] {
		return nil, fmt.Errorf("kernels: %s: positions %s must be i32 with >= %d values", op, pos, dst.Ne[1])
	}
	ff, err := readFactors(op, factors, p)
	if err != nil {
		return nil, err
	}
	corr := ropeCorrDims(p)
	thetaScale := powf(p.FreqBase, -2/float32(p.NDims))
	rj := newRowJob(dst.Ne[1], int64(p.NDims), p.NDims, workers, func(j *rowJob, wk, lo, hi int) {
		for c := lo; c < hi; c++ {
			ps := int32(readIndex(pos, int64(c), 0, 0))
			out, direct := dstRow(j.dst, j.dst.rowOff(int64(c), 0, 0), p.NDims, j.rows.s1[wk])
			ropeRow(out, ps, p, corr, thetaScale, ff)
			if !direct {
				storeRow(j.dst, j.dst.rowOff(int64(c), 0, 0), out)
			}
		}
	})
	rj.dst = dst
	return rj, nil
}

// AttentionJob prepares Attention as a Job over its tasks (a KV head of
// one batch and a range of tokens each).
func (o Options) AttentionJob(dst, q, k, v Tensor, mask *Tensor, scale, maxBias float32, workers int) (j Job, err error) {
	const op = "attention"
	defer guard(op, &err)
	if err := checkAttention(op, dst, q, k, v, mask); err != nil {
		return nil, err
	}
	aj := &attnJob{}
	if k.Ne[1] == 0 || dst.NElements() == 0 {
		return aj, nil
	}
	aj.at = newAttn(dst, q, k, v, mask, scale, maxBias, max(workers, 1))
	aj.bufs = make([][]float32, max(workers, 1))
	for w := range aj.bufs {
		aj.bufs[w] = make([]float32, aj.at.scratch)
	}
	return aj, nil
}

type attnJob struct {
	at   *attn
	bufs [][]float32
}

func (j *attnJob) Phases() int { return 1 }

func (j *attnJob) Size(int) (n, chunk int) {
	if j.at == nil {
		return 0, 1
	}
	return j.at.tasks, j.at.grain
}

func (j *attnJob) Run(_, worker, lo, hi int) { j.at.run(j.bufs[worker], lo, hi) }

// F32 returns the data of a dense F32 tensor as float32 values without
// copying; false when t is not dense F32 (or its data is misaligned).
func (t Tensor) F32() ([]float32, bool) {
	if t.Type != gguf.TypeF32 || !t.IsContiguous() {
		return nil, false
	}
	v := f32view(t.Data, int(t.NElements()))
	return v, v != nil || t.NElements() == 0
}

// eachRows runs fn over the flat rows of shape ne in chunks (in parallel
// when the tensor is large: on o.Pool when set, up to o.Threads goroutines
// otherwise), with two scratch rows of ne[0] floats: the plain kernels'
// loop around the row functions their Jobs share.
func (o Options) eachRows(ne [MaxDims]int64, fn func(lo, hi int, s1, s2 []float32)) {
	nr := ne[1] * ne[2] * ne[3]
	if nr == 0 || ne[0] == 0 {
		return
	}
	parallelFor(o.Pool, o.Threads, int(nr), rowChunk(ne[0]), func(lo, hi int) {
		p1, p2 := getF32(int(ne[0])), getF32(int(ne[0]))
		defer putF32(p1)
		defer putF32(p2)
		fn(lo, hi, *p1, *p2)
	})
}

// rmsNormMulRows is RMSNormMul for the flat rows [lo, hi) of x.
func rmsNormMulRows(dst, x, w Tensor, eps float32, lo, hi int, s1, s2 []float32) {
	ne0, nw := int(x.Ne[0]), int(w.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), x.Ne)
		xr := srcRow(x, x.rowOff(i1, i2, i3), ne0, s1)
		wr := srcRow(w, w.rowOff(i1%w.Ne[1], i2%w.Ne[2], i3%w.Ne[3]), nw, s2[:nw])
		normMulRow(dst, dst.rowOff(i1, i2, i3), xr, wr, eps, s1)
	}
}

// addRMSNormMulRows is AddRMSNormMul for the flat rows [lo, hi) of a.
func addRMSNormMulRows(dst, sum, a, b, w Tensor, eps float32, lo, hi int, s1, s2 []float32) {
	ne0, ne10, nw := int(a.Ne[0]), int(b.Ne[0]), int(w.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), a.Ne)
		x := srcRow(a, a.rowOff(i1, i2, i3), ne0, s1)
		y := srcRow(b, b.rowOff(i1%b.Ne[1], i2%b.Ne[2], i3%b.Ne[3]), ne10, s2[:ne10])
		soff := sum.rowOff(i1, i2, i3)
		s, direct := dstRow(sum, soff, ne0, s1)
		for r := 0; r < ne0; r += ne10 {
			for i := range ne10 {
				s[r+i] = x[r+i] + y[i]
			}
		}
		if !direct {
			storeRow(sum, soff, s)
			if sum.Type != gguf.TypeF32 {
				if err := loadRowInto(sum, soff, s); err != nil {
					panic(err)
				}
			}
		}
		wr := srcRow(w, w.rowOff(i1%w.Ne[1], i2%w.Ne[2], i3%w.Ne[3]), nw, s2[:nw])
		normMulRow(dst, dst.rowOff(i1, i2, i3), s, wr, eps, s1)
	}
}

// swigluRows is SwiGLU for the flat rows [lo, hi) of gate.
func swigluRows(dst, gate, up Tensor, lo, hi int, s1, s2 []float32) {
	ne0 := int(gate.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), gate.Ne)
		g := srcRow(gate, gate.rowOff(i1, i2, i3), ne0, s1)
		u := srcRow(up, up.rowOff(i1, i2, i3), ne0, s2)
		out, direct := dstRow(dst, dst.rowOff(i1, i2, i3), ne0, s1)
		u = u[:len(g)]
		out = out[:len(g)]
		siluRow(out, g)
		for i := range out {
			out[i] *= u[i]
		}
		if !direct {
			storeRow(dst, dst.rowOff(i1, i2, i3), out)
		}
	}
}

// getRowsRows is GetRows for the flat rows [lo, hi) of dst; an index
// outside src panics.
func getRowsRows(dst, src, idx Tensor, lo, hi int, s1 []float32) {
	ne0 := int(src.Ne[0])
	for r := lo; r < hi; r++ {
		i10, i11, i12 := rowIndex(int64(r), dst.Ne)
		k := readIndex(idx, i10, i11, i12)
		if k < 0 || k >= src.Ne[1] {
			panic(fmt.Sprintf("kernels: get_rows: idx[%d,%d,%d] = %d outside the %d rows of %s", i10, i11, i12, k, src.Ne[1], src))
		}
		out, direct := dstRow(dst, dst.rowOff(i10, i11, i12), ne0, s1)
		if err := loadRowInto(src, src.rowOff(k, i11, i12), out); err != nil {
			panic(err)
		}
		if !direct {
			storeRow(dst, dst.rowOff(i10, i11, i12), out)
		}
	}
}
