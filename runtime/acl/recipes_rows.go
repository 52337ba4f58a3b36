//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// The rows family: get_rows and set_rows (the table of recipes.go lists
// their calls).

func getRows(b *builder) error {
	table, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !rows2D(table) || !rows2D(ids) || ids.Ne[1] != 1 || !rows2D(out) || out.DType != ir.F32 {
		return b.unsupported("get_rows of %v by %v: one table and one id vector only", table.Ne, ids.Ne)
	}
	n, ne0 := ids.Ne[0], table.Ne[0]
	idt := b.desc("index", ids, 1)
	ot := b.desc("out", out, 2)
	switch table.DType {
	case ir.F32:
		b.gather(b.desc("self", table, 2), idt, ot)
	case ir.F16:
		tt := b.desc("self", table, 2)
		tmp := b.temp("f16 rows", 2*n*ne0, 32)
		rows := func() C.uintptr_t { return b.tensor(C.ACL_FLOAT16, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp) }
		b.gather(tt, idt, rows())
		b.cast(rows(), ot, C.ACL_FLOAT)
	case ir.Q8_0:
		if !recipeTakes(ir.OpGetRows, table.DType) {
			return b.unsupported("get_rows from a %s table: no recipe for the type", table.DType)
		}
		blocks := ne0 / 32
		if table.Nb[0] != 34 || table.Nb[1] != blocks*34 {
			return b.unsupported("q8_0 table with strides %v", table.Nb)
		}
		q, s := b.q8Rows(table, idt, n)
		_, ost, _ := aclOrder(out)
		o3 := b.tensor(C.ACL_FLOAT, []int64{n, blocks, 32}, []int64{ost[2], 32 * ost[3], ost[3]}, 0, out.Addr)
		if b.d.quantMode() == QuantMatmulGGML {
			// ggml dequantises in f32 (d·q exact); int8 × f16 would
			// compute, and round, in f16. Widen the scales first.
			s32p := b.buffer(fmt.Sprintf("q8_0 row scales f32[%d]", n*blocks), 4*n*blocks)
			s32 := b.tensor(C.ACL_FLOAT, []int64{n, blocks, 1}, []int64{blocks, 1, 1}, 0, s32p)
			b.cast(s, s32, C.ACL_FLOAT)
			s = s32
		}
		b.op(C.IRT_MUL, q, s, o3)
	default:
		if l, ok := wqLayout(table.DType); ok && l.Dtype == wqconv.Int4 {
			return b.unsupported("get_rows from a %s table: its layout is int4, and no bound operator gathers int4 rows (the target runs this get_rows on the CPU)", table.DType)
		}
		if !table.DType.Quantized() || !recipeTakes(ir.OpGetRows, table.DType) {
			return b.unsupported("get_rows from a %s table", table.DType)
		}
		return getRowsConverted(b, table, out, idt, n, ne0)
	}
	return b.err
}

// q8Rows gathers the n rows of q8_0 table (by the ids of idt) into
// scratch and returns views of their int8 quants [n, K/32, 32] and f16
// scales [n, K/32, 1]: from the layout converted at load when the table
// has one (int8 values, then the scales: written over the blocks, which
// are gone), else from the blocks (int8 quants at byte 2 of every 34-byte
// block, the f16 scale at byte 0).
func (b *builder) q8Rows(table device.TensorDesc, idt C.uintptr_t, n int64) (q, s C.uintptr_t) {
	K, R := table.Ne[0], table.Ne[1]
	G := K / 32
	b.n.cmu.Lock()
	w, ok := b.n.tables[wqKey(ir.Q8_0, table.Addr, K, R)]
	b.n.cmu.Unlock()
	if !ok {
		rowBytes := table.Nb[1]
		tt := b.tensor(C.ACL_INT8, []int64{R, rowBytes}, []int64{rowBytes, 1}, 0, table.Addr)
		tmp := b.temp("q8_0 rows", n*rowBytes, 32)
		b.gather(tt, idt, b.tensor(C.ACL_INT8, []int64{n, rowBytes}, []int64{rowBytes, 1}, 0, tmp))
		return b.tensor(C.ACL_INT8, []int64{n, G, 32}, []int64{rowBytes, 34, 1}, 2, tmp),
			b.tensor(C.ACL_FLOAT16, []int64{n, G, 1}, []int64{rowBytes / 2, 17, 1}, 0, tmp)
	}
	l, _ := wqLayout(ir.Q8_0)
	c := wqAt(l, w, K, R)
	vals := b.temp("q8_0 rows", n*K, 32)
	sc := b.temp("q8_0 row scales", 2*n*G, 32)
	b.gather(b.tensor(C.ACL_INT8, []int64{R, K}, []int64{K, 1}, 0, c.values), idt, b.tensor(C.ACL_INT8, []int64{n, K}, []int64{K, 1}, 0, vals))
	idx := b.desc("index", b.k.Inputs[1], 1)
	b.gather(b.tensor(C.ACL_FLOAT16, []int64{R, G}, []int64{G, 1}, 0, c.scales), idx, b.tensor(C.ACL_FLOAT16, []int64{n, G}, []int64{G, 1}, 0, sc))
	return b.tensor(C.ACL_INT8, []int64{n, G, 32}, []int64{K, 32, 1}, 0, vals),
		b.tensor(C.ACL_FLOAT16, []int64{n, G, 1}, []int64{G, 1, 1}, 0, sc)
}

// getRowsConverted gathers rows of a quantised table from the layout
// converted at load (gguf/wqconv, an int8 layout; the target keeps a
// get_rows from an int4 table on the CPU): the rows'
// int8 values, f16 scales (and offsets) gathered, then, in f32 over each
// group of Span values, (w + offset) · scale: the sum exact, the product
// rounded once (wqconv.Dequant's arithmetic, which gives ggml's values bit
// for bit for the exact types).
func getRowsConverted(b *builder, table, out device.TensorDesc, idt C.uintptr_t, n, K int64) error {
	if l, _ := wqLayout(table.DType); l.Accuracy == wqconv.Requantised && b.d.quantMode() == QuantMatmulGGML {
		// ggml's values of a table whose layout is re-quantised (q2_K,
		// q6_K): the rows of its f32 copy.
		w := b.dequantised(table)
		b.gather(b.tensor(C.ACL_FLOAT, []int64{table.Ne[1], K}, []int64{K, 1}, 0, w), idt, b.desc("out", out, 2))
		return b.err
	}
	w := b.converted(table)
	if b.err != nil {
		return b.err
	}
	l := w.layout
	R, G, S := table.Ne[1], K/int64(l.Span), int64(l.Span)
	vals := b.temp("int8 rows", n*K, 32)
	sc := b.temp("f16 row scales", 2*n*G, 32)
	var of device.Ptr
	if l.Offset {
		of = b.temp("f16 row offsets", 2*n*G, 32)
	}
	s32 := b.temp("f32 row scales", 4*n*G, 32)
	var o32 device.Ptr
	if l.Offset {
		o32 = b.temp("f32 row offsets", 4*n*G, 32)
	}
	b.gather(b.tensor(C.ACL_INT8, []int64{R, K}, []int64{K, 1}, 0, w.values), idt, b.tensor(C.ACL_INT8, []int64{n, K}, []int64{K, 1}, 0, vals))
	idx := func() C.uintptr_t { return b.desc("index", b.k.Inputs[1], 1) }
	b.gather(b.tensor(C.ACL_FLOAT16, []int64{R, G}, []int64{G, 1}, 0, w.scales), idx(), b.tensor(C.ACL_FLOAT16, []int64{n, G}, []int64{G, 1}, 0, sc))
	if l.Offset {
		b.gather(b.tensor(C.ACL_FLOAT16, []int64{R, G}, []int64{G, 1}, 0, w.offsets), idx(), b.tensor(C.ACL_FLOAT16, []int64{n, G}, []int64{G, 1}, 0, of))
	}
	_, ost, _ := aclOrder(out)
	o3 := func() C.uintptr_t {
		return b.tensor(C.ACL_FLOAT, []int64{n, G, S}, []int64{ost[2], S * ost[3], ost[3]}, 0, out.Addr)
	}
	per := func(dt C.int, p device.Ptr) C.uintptr_t {
		return b.tensor(dt, []int64{n, G, 1}, []int64{G, 1, 1}, 0, p)
	}
	b.cast(b.tensor(C.ACL_INT8, []int64{n, G, S}, []int64{K, S, 1}, 0, vals), o3(), C.ACL_FLOAT)
	if l.Offset {
		b.cast(per(C.ACL_FLOAT16, of), per(C.ACL_FLOAT, o32), C.ACL_FLOAT)
		b.inplaceAdd(o3(), per(C.ACL_FLOAT, o32), 1)
	}
	b.cast(per(C.ACL_FLOAT16, sc), per(C.ACL_FLOAT, s32), C.ACL_FLOAT)
	b.op(C.IRT_INPLACEMUL, o3(), per(C.ACL_FLOAT, s32))
	return b.err
}

func setRows(b *builder) error {
	dst, src, idx := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2]
	if !rows2D(dst) || !rows2D(src) || !rows2D(idx) || idx.Ne[1] != 1 || idx.Ne[0] != src.Ne[1] || src.Ne[0] != dst.Ne[0] {
		return b.unsupported("set_rows of %v into %v by %v: one matrix and one index vector only", src.Ne, dst.Ne, idx.Ne)
	}
	n, ne0 := src.Ne[1], src.Ne[0]
	dt := b.desc("selfRef", dst, 2)
	it := b.desc("index", idx, 1)
	st := b.desc("source", src, 2)
	if src.DType != dst.DType {
		dd, ok := aclDType(dst.DType)
		if !ok {
			return b.unsupported("set_rows into %s", dst.DType)
		}
		tmp := b.temp("cast rows", dst.DType.TypeSize()*n*ne0, 32)
		rows := func() C.uintptr_t { return b.tensor(dd, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp) }
		b.cast(st, rows(), dd)
		st = rows()
	}
	b.indexCopy(dt, it, st)
	return b.err
}

// getRowsBatched is get_rows; an f32 table batched over dim 2 with one id
// column per batch (ggml's get_rows of [ne0, rows, T] by [n, T]) gathers
// each batch on its own.
func getRowsBatched(b *builder) error {
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
		b.gather(b.tensor(C.ACL_FLOAT, []int64{table.Ne[1], ne0}, []int64{table.Nb[1] / 4, 1}, t*table.Nb[2]/4, table.Addr),
			b.tensor(C.ACL_INT32, []int64{n}, []int64{1}, t*ids.Nb[1]/4, ids.Addr),
			b.tensor(C.ACL_FLOAT, []int64{n, ne0}, []int64{out.Nb[1] / 4, 1}, t*out.Nb[2]/4, out.Addr))
	}
	return b.err
}
