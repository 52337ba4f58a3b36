//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

func getRows(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	table, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !rows2D(table) || !rows2D(ids) || ids.Ne[1] != 1 || !rows2D(out) || out.DType != ir.F32 {
		return b.unsupported("get_rows of %v by %v: one table and one id vector only", table.Ne, ids.Ne)
	}
	n, ne0 := ids.Ne[0], table.Ne[0]
	idt, err := b.desc("index", ids, 1)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 2)
	if err != nil {
		return err
	}
	switch table.DType {
	case ir.F32:
		tt, err := b.desc("self", table, 2)
		if err != nil {
			return err
		}
		a := tensors(tt, idt, ot)
		b.call(C.IRT_GATHERV2, a)
		return nil
	case ir.F16:
		tt, err := b.desc("self", table, 2)
		if err != nil {
			return err
		}
		tmp, err := b.temp("f16 rows", 2*n*ne0, 32)
		if err != nil {
			return err
		}
		gt, err := b.tensor(C.ACL_FLOAT16, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp)
		if err != nil {
			return err
		}
		b.call(C.IRT_GATHERV2, tensors(tt, idt, gt))
		gin, err := b.tensor(C.ACL_FLOAT16, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp)
		if err != nil {
			return err
		}
		c := tensors(gin, ot)
		c.i[0] = C.ACL_FLOAT
		b.call(C.IRT_CAST, c)
		return nil
	case ir.Q8_0:
		// Gather the rows' bytes, then dequantise them: int8 quants at byte
		// 2 of every 34-byte block times the f16 scale at byte 0.
		rowBytes, blocks := table.Nb[1], ne0/32
		if table.Nb[0] != 34 || rowBytes != blocks*34 {
			return b.unsupported("q8_0 table with strides %v", table.Nb)
		}
		tt, err := b.tensor(C.ACL_INT8, []int64{table.Ne[1], rowBytes}, []int64{rowBytes, 1}, 0, table.Addr)
		if err != nil {
			return err
		}
		tmp, err := b.temp("q8_0 rows", n*rowBytes, 32)
		if err != nil {
			return err
		}
		gt, err := b.tensor(C.ACL_INT8, []int64{n, rowBytes}, []int64{rowBytes, 1}, 0, tmp)
		if err != nil {
			return err
		}
		b.call(C.IRT_GATHERV2, tensors(tt, idt, gt))
		q, err := b.tensor(C.ACL_INT8, []int64{n, blocks, 32}, []int64{rowBytes, 34, 1}, 2, tmp)
		if err != nil {
			return err
		}
		s, err := b.tensor(C.ACL_FLOAT16, []int64{n, blocks, 1}, []int64{rowBytes / 2, 17, 1}, 0, tmp)
		if err != nil {
			return err
		}
		_, ost, _ := aclOrder(out)
		o3, err := b.tensor(C.ACL_FLOAT, []int64{n, blocks, 32}, []int64{ost[2], 32 * ost[3], ost[3]}, 0, out.Addr)
		if err != nil {
			return err
		}
		if b.d.quantMode() == QuantMatmulGGML {
			// ggml dequantises in f32 (d·q exact); int8 × f16 would
			// compute, and round, in f16. Widen the scales first.
			s32p, err := b.buffer(fmt.Sprintf("q8_0 row scales f32[%d]", n*blocks), 4*n*blocks)
			if err != nil {
				return err
			}
			s32, err := b.tensor(C.ACL_FLOAT, []int64{n, blocks, 1}, []int64{blocks, 1, 1}, 0, s32p)
			if err != nil {
				return err
			}
			b.cast(s, s32, C.ACL_FLOAT)
			s = s32
		}
		b.call(C.IRT_MUL, tensors(q, s, o3))
		return nil
	}
	return b.unsupported("get_rows from a %s table", table.DType)
}

func setRows(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	dst, src, idx := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2]
	if !rows2D(dst) || !rows2D(src) || !rows2D(idx) || idx.Ne[1] != 1 || idx.Ne[0] != src.Ne[1] || src.Ne[0] != dst.Ne[0] {
		return b.unsupported("set_rows of %v into %v by %v: one matrix and one index vector only", src.Ne, dst.Ne, idx.Ne)
	}
	n, ne0 := src.Ne[1], src.Ne[0]
	dt, err := b.desc("selfRef", dst, 2)
	if err != nil {
		return err
	}
	it, err := b.desc("index", idx, 1)
	if err != nil {
		return err
	}
	st, err := b.desc("source", src, 2)
	if err != nil {
		return err
	}
	if src.DType != dst.DType {
		dd, ok := aclDType(dst.DType)
		if !ok {
			return b.unsupported("set_rows into %s", dst.DType)
		}
		es := dst.DType.TypeSize()
		tmp, err := b.temp("cast rows", es*n*ne0, 32)
		if err != nil {
			return err
		}
		ct, err := b.tensor(dd, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp)
		if err != nil {
			return err
		}
		c := tensors(st, ct)
		c.i[0] = C.int64_t(dd)
		b.call(C.IRT_CAST, c)
		if st, err = b.tensor(dd, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp); err != nil {
			return err
		}
	}
	a := tensors(dt, it, st)
	a.i[0] = 0
	b.call(C.IRT_INDEXCOPY, a)
	return nil
}

// getRowsBatched is get_rows; an f32 table batched over dim 2 with one id
// column per batch (ggml's get_rows of [ne0, rows, T] by [n, T]) gathers
// each batch on its own.
func getRowsBatched(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	table, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if rows2D(table) || table.DType != ir.F32 || out.DType != ir.F32 || ids.DType != ir.I32 {
		return getRows(b)
	}
	T := table.Ne[2]
	if table.Ne[3] != 1 || ids.Ne[1] != T || ids.Ne[2] != 1 || ids.Ne[3] != 1 || out.Ne[2] != T || out.Ne[3] != 1 ||
		out.Ne[1] != ids.Ne[0] || out.Ne[0] != table.Ne[0] || table.Nb[0] != 4 || out.Nb[0] != 4 || ids.Nb[0] != 4 {
		return b.unsupported("get_rows of %v by %v into %v", table.Ne, ids.Ne, out.Ne)
	}
	n, ne0 := ids.Ne[0], table.Ne[0]
	for t := int64(0); t < T; t++ {
		tt, err := b.tensor(C.ACL_FLOAT, []int64{table.Ne[1], ne0}, []int64{table.Nb[1] / 4, 1}, t*table.Nb[2]/4, table.Addr)
		if err != nil {
			return err
		}
		it, err := b.tensor(C.ACL_INT32, []int64{n}, []int64{1}, t*ids.Nb[1]/4, ids.Addr)
		if err != nil {
			return err
		}
		ot, err := b.tensor(C.ACL_FLOAT, []int64{n, ne0}, []int64{out.Nb[1] / 4, 1}, t*out.Nb[2]/4, out.Addr)
		if err != nil {
			return err
		}
		b.call(C.IRT_GATHERV2, tensors(tt, it, ot))
	}
	return nil
}
