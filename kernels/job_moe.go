package kernels

import (
	"fmt"
)

// TopKJob prepares TopK as a Job over the rows of src (one index
// permutation per worker, sorted in place).
func TopKJob(dst, src Tensor, k, workers int) (j Job, err error) {
	const op = "top_k"
	defer guard(op, &err)
	if err := checkTopK(op, dst, src, k); err != nil {
		return nil, err
	}
	tj := &topKJob{dst: dst, src: src, k: k, n: int(src.NRows()), chunk: max(1, rowChunk(src.Ne[0])/4)}
	tj.sorts = make([]*topKSort, max(workers, 1))
	for w := range tj.sorts {
		tj.sorts[w] = newTopKSort(int(src.Ne[0]))
	}
	return tj, nil
}

type topKJob struct {
	dst, src Tensor
	k        int
	n, chunk int
	sorts    []*topKSort
}

func (j *topKJob) Phases() int               { return 1 }
func (j *topKJob) Size(int) (n, chunk int)   { return j.n, j.chunk }
func (j *topKJob) Run(_, worker, lo, hi int) { topKRows(j.dst, j.src, j.k, lo, hi, j.sorts[worker]) }

// SumRowsJob prepares SumRows as a Job over the rows of src.
func SumRowsJob(dst, src Tensor, workers int) (j Job, err error) {
	const op = "sum_rows"
	defer guard(op, &err)
	if err := checkSumRows(op, dst, src); err != nil {
		return nil, err
	}
	rj := newRowJob(src.NRows(), src.Ne[0], int(max(src.Ne[0], 1)), workers, func(j *rowJob, wk, lo, hi int) {
		sumRowsRows(j.dst, j.a, lo, hi, j.rows.s1[wk], j.rows.s2[wk])
	})
	rj.dst, rj.a = dst, src
	return rj, nil
}

// MulMatIDJob prepares MulMatID as a Job. The expert of each slot is read
// from ids when the job runs: phase 0 (over the slots, token-major) reads
// it, points the slot's product at that expert's matrix and converts the
// slot's activation column; phase 1 computes the slots' products, split
// into the tiles of weight rows MulMatJob uses (the same product, one
// column, as the plain kernel's MulMat per slot). An expert id outside
// as panics (Run's contract). Weights are read in place (no Packs).
func (o Options) MulMatIDJob(dst, as, b, ids Tensor, workers int) (j Job, err error) {
	const op = "mul_mat_id"
	defer guard(op, &err)
	if err := checkMulMatID(op, dst, as, b, ids); err != nil {
		return nil, err
	}
	o.Packs = nil
	nUsed, nTok := ids.Ne[0], ids.Ne[1]
	workers = max(workers, 1)
	mj := &mulMatIDJob{as: as, ids: ids, nUsed: nUsed, nExpert: as.Ne[2]}
	if nUsed*nTok == 0 || as.Ne[2] == 0 {
		return mj, nil
	}
	ns := int(nUsed * nTok)
	mj.slots = make([]*matmul, ns)
	mj.outs = make([]dstWriter, ns)
	for s := range ns {
		e, t := int64(s)%nUsed, int64(s)/nUsed
		a, col, out := mulMatIDSlot(dst, as, b, 0, e, t)
		m := newMatmul(o, a, col)
		mj.grain = m.schedule(workers)
		if out.NElements() == 0 {
			m.tasks = 0
		}
		mj.slots[s], mj.outs[s] = m, newDstWriter(out)
	}
	mj.tasks = mj.slots[0].tasks // every slot has the same shapes
	mj.tiles = make([]*tile, workers)
	mj.quant = make([]*[]float32, workers)
	for w := range workers {
		t := newTile(mj.slots[0], int(mj.slots[0].rt))
		if t.rows != nil && t.buf == nil {
			t.buf = getF32(len(t.rows) * mj.slots[0].k)
		}
		mj.tiles[w], mj.quant[w] = t, getF32(mj.slots[0].k)
	}
	return mj, nil
}

type mulMatIDJob struct {
	as, ids        Tensor
	nUsed, nExpert int64
	slots          []*matmul // per slot s = t*nUsed + e
	outs           []dstWriter
	tasks, grain   int // tasks per slot, tasks per chunk
	tiles          []*tile
	quant          []*[]float32
}

func (j *mulMatIDJob) Phases() int { return 2 }

func (j *mulMatIDJob) Size(p int) (n, chunk int) {
	if p == 0 {
		return len(j.slots), 1
	}
	return len(j.slots) * j.tasks, j.grain
}

func (j *mulMatIDJob) Run(p, worker, lo, hi int) {
	if p == 0 {
		for s := lo; s < hi; s++ {
			e, t := int64(s)%j.nUsed, int64(s)/j.nUsed
			x := readIndex(j.ids, e, t, 0)
			if x < 0 || x >= j.nExpert {
				panic(fmt.Sprintf("kernels: mul_mat_id: ids[%d,%d] = %d outside the %d experts", e, t, x, j.nExpert))
			}
			m := j.slots[s]
			m.setAData(j.as.Data[x*j.as.Nb[2]:])
			if !m.bDirect {
				m.convertWith(*j.quant[worker], 0, m.cols)
			}
		}
		return
	}
	for i := lo; i < hi; {
		s := i / j.tasks
		end := min(hi, (s+1)*j.tasks)
		j.slots[s].runTasks(j.tiles[worker], &j.outs[s], i-s*j.tasks, end-s*j.tasks)
		i = end
	}
}
