//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/acl/layout"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// Weight placement: where and how each quantised weight lives on the
// device. PlaceWeight, called once per weight at load, converts the ggml
// blocks into the layouts the recipes of its uses read (package layout,
// gguf/wqconv) and uploads them into the pool, under a key naming the
// weight's address, type, shape and layout; PlacedBytes sizes them. A
// recipe finds its copy by the same key (converted, kqWeight, kqExperts,
// q8Weight, dequantised) and, outside a capture, makes a missing one from
// the blocks read back (onDemand).

// PlaceWeight implements device.WeightPlacer: it converts a quantised
// weight, once, when it is placed on the device. data are its ggml blocks
// (the bytes just written at t.Addr); the converted copies the recipes of
// use read (gguf/wqconv; get_rows reads an int8 layout only) are
// written over the blocks when they fit there (target.WQInPlace: q4_0,
// q8_0, so that the device holds the weight once), else into the pool, so
// that no launch reads a weight back or converts it. Other types need
// nothing.
func (d *Device) PlaceWeight(t device.TensorDesc, data []byte, use device.WeightUse) error {
	if _, ok := wqLayout(t.DType); !ok || !dense(t) {
		return nil
	}
	if int64(len(data)) != t.Bytes() {
		return fmt.Errorf("acl: place %s weight: %d bytes, its shape %v needs %d", t.DType, len(data), t.Ne, t.Bytes())
	}
	defer d.leave(d.enter())
	n, err := d.bind("PlaceWeight")
	if err != nil {
		return err
	}
	if err := d.refuseWhileCapturing("PlaceWeight", n); err != nil {
		return err
	}
	n.cmu.Lock()
	defer n.cmu.Unlock()
	return d.placeCopies(n, t, data, use, false)
}

// placeCopies makes the copies of weight t (blocks data) that the recipes
// of use read, keyed by t.Addr: over the blocks at t.Addr when the layout
// fits there, else in the pool; when taken (TakeWeight), the first copy
// at t.Addr, which was allocated for it. The caller holds n.cmu.
func (d *Device) placeCopies(n *npu, t device.TensorDesc, data []byte, use device.WeightUse, taken bool) error {
	K, rows := t.Ne[0], t.Ne[1]*t.Ne[2]*t.Ne[3]
	rows8 := use.Rows
	l, _ := wqLayout(t.DType)
	if d.quantMode() == QuantMatmulGGML {
		// ggml's arithmetic: the integer layouts of the matmuls, f32
		// values for the rows of a re-quantised layout's table.
		// K-quant matrices: the integer layout of quantMulMatK.
		// Expert stacks ([K, N, E]): E copies of one expert's layout
		// (mulMatIDK).
		kq := use.Matmul && layout.KQTypes[t.DType] && t.Ne[3] == 1 && K%256 == 0
		if kq {
			kl := layout.NewKQ(t.DType, K, t.Ne[1], layout.KQVariantOf(t.DType, t.Ne[1], d.opts.LlamaBuild))
			var err error
			if t.Ne[2] == 1 {
				_, err = d.placeKQ(n, kqKey(kl, t.Addr), kl, data)
			} else {
				_, err = d.placeKQExperts(n, kqExpertsKey(kl, t.Addr, t.Ne[2]), kl, t.Ne[2], data)
			}
			if err != nil {
				return fmt.Errorf("acl: place %s weight [%d×%d] at %#x: %w", t.DType, rows, K, uint64(t.Addr), err)
			}
		}
		// q4_0 … q5_1 matrices and expert stacks: the integer layout of
		// quantMulMatQ8 and mulMatIDQ8.
		q8 := use.Matmul && layout.Q8Types[t.DType] && K%32 == 0
		if q8 {
			if _, err := d.placeQ8(n, q8Key(t.DType, t.Addr, K, rows), layout.NewQ8(t.DType, K, rows), data); err != nil {
				return fmt.Errorf("acl: place %s weight [%d×%d] at %#x: %w", t.DType, rows, K, uint64(t.Addr), err)
			}
		}
		if use.Matmul && ggmlModeTypes[t.DType] && !kq && !q8 || rows8 && l.Accuracy == wqconv.Requantised {
			if _, err := d.placeDequantised(n, f32Key(t.DType, t.Addr, K, rows), t.DType, data, K, rows); err != nil {
				return fmt.Errorf("acl: place %s weight [%d×%d] at %#x: %w", t.DType, rows, K, uint64(t.Addr), err)
			}
		}
		use.Matmul = use.Matmul && !ggmlModeTypes[t.DType]
		rows8 = rows8 && l.Accuracy != wqconv.Requantised
	}
	// get_rows gathers int8 values only: an int4 table's rows are the
	// CPU's (the target keeps that get_rows there).
	if !use.Matmul && !(rows8 && l.Dtype == wqconv.Int8) {
		return nil
	}
	var at device.Ptr // the pool
	room := int64(len(data))
	if taken {
		at, room = t.Addr, mainBytes(t.DType, K, rows)
	} else if target.WQInPlace(t.DType, K, rows) {
		at = t.Addr
	}
	if _, err := d.placeConverted(n, wqKey(t.DType, t.Addr, K, rows), t.DType, data, K, rows, at, room); err != nil {
		return fmt.Errorf("acl: place %s weight [%d×%d] at %#x: %w", t.DType, rows, K, uint64(t.Addr), err)
	}
	return nil
}

// TakeWeight implements device.WeightTaker: in the "wqbmm" QuantMatmul
// mode, a quantised weight whose layout does not fit in its blocks
// (target.WQInPlace) and that only matmuls and get_rows read (use) lives
// on the device in its converted copy alone, in a pool block allocated
// for it, whose address names the weight from then on.
// It returns 0, and places nothing, for any other weight, whose blocks
// the session writes. The blocks are never uploaded.
func (d *Device) TakeWeight(t device.TensorDesc, data []byte, use device.WeightUse) (device.Ptr, error) {
	if !takes(t, use) || d.quantMode() != QuantMatmulWQBMM {
		return 0, nil
	}
	if int64(len(data)) != t.Bytes() {
		return 0, fmt.Errorf("acl: take %s weight: %d bytes, its shape %v needs %d", t.DType, len(data), t.Ne, t.Bytes())
	}
	defer d.leave(d.enter())
	n, err := d.bind("TakeWeight")
	if err != nil {
		return 0, err
	}
	if err := d.refuseWhileCapturing("TakeWeight", n); err != nil {
		return 0, err
	}
	n.cmu.Lock()
	defer n.cmu.Unlock()
	K, rows := t.Ne[0], t.Ne[1]*t.Ne[2]*t.Ne[3]
	size := mainBytes(t.DType, K, rows)
	off, _, err := n.pool.Alloc(size)
	if err != nil {
		return 0, fmt.Errorf("acl: take %s weight [%d×%d] (%d B): %w", t.DType, rows, K, size, err)
	}
	t.Addr = n.base + device.Ptr(off)
	n.inPlace[t.Addr] = true // no blocks there
	d.convertedBytes.Add(size)
	if err := d.placeCopies(n, t, data, use, true); err != nil {
		d.dropCopies(n, t)
		return 0, err
	}
	return t.Addr, nil
}

// DropWeight implements device.WeightTaker: it frees the copies of weight
// t that TakeWeight placed at t.Addr.
func (d *Device) DropWeight(t device.TensorDesc) error {
	defer d.leave(d.enter())
	n, err := d.bind("DropWeight")
	if err != nil {
		return err
	}
	n.cmu.Lock()
	defer n.cmu.Unlock()
	d.dropCopies(n, t)
	return nil
}

func (d *Device) dropCopies(n *npu, t device.TensorDesc) {
	K, rows := t.Ne[0], t.Ne[1]*t.Ne[2]*t.Ne[3]
	n.dropTable(wqKey(t.DType, t.Addr, K, rows))
	if n.inPlace[t.Addr] {
		n.pool.Free(int64(t.Addr - n.base))
		delete(n.inPlace, t.Addr)
	}
}

// takes reports whether TakeWeight holds weight t without its blocks: a
// dense quantised weight with a layout larger than its blocks, read by
// matmuls or (an int8 layout) get_rows.
func takes(t device.TensorDesc, use device.WeightUse) bool {
	l, ok := wqLayout(t.DType)
	K, rows := t.Ne[0], t.Ne[1]*t.Ne[2]*t.Ne[3]
	return ok && dense(t) && (use.Matmul || use.Rows && l.Dtype == wqconv.Int8) && !target.WQInPlace(t.DType, K, rows)
}

// mainBytes is the size of a taken weight's copy, its gguf/wqconv layout.
func mainBytes(t ir.DType, K, rows int64) int64 {
	l, _ := wqLayout(t)
	return l.DeviceBytes(int(rows), int(K))
}

// PlacedBytes bounds the device bytes PlaceWeight adds to the pool for a
// weight of type t with rows rows of K values, in QuantMatmul mode
// (QuantMatmulWQBMM when empty), whether it feeds matmuls, get_rows or
// both: the gguf/wqconv layout in "wqbmm" mode; in "ggml" mode the integer layout of
// the matmuls (layout.Q8 for q4_0…q5_1, layout.KQ for the K-quants: 4 bytes
// per value, 8 for q6_K, plus the per-block scales; expert stacks alike),
// an f32 copy of the values (4 bytes per value: the rows of a re-quantised
// layout, or a K-quant weight without an integer layout; counted for
// every K-quant, which also covers the alignment of an expert stack's
// per-expert layouts) and, for the others' rows, their int8 layout (an
// int4 layout's rows are the CPU's).
// 0 for a type PlaceWeight leaves as it is. It sizes Options.PoolBytes.
func PlacedBytes(t ir.DType, K, rows int64, mode string) int64 {
	l, ok := wqLayout(t)
	if !ok || K <= 0 || rows <= 0 {
		return 0
	}
	var n int64
	if mode == QuantMatmulGGML {
		if layout.KQTypes[t] || l.Accuracy == wqconv.Requantised {
			n += 4 * K * rows
		}
		if layout.Q8Types[t] && K%32 == 0 {
			n += 4 * layout.NewQ8(t, K, rows).Size
		}
		if layout.KQTypes[t] && K%256 == 0 {
			// quantMulMatK's copy of a 2-D matrix (its largest variant).
			v := layout.KQLanes
			if t == ir.Q6_K {
				v = layout.KQQ6Bsums
			}
			n += 4 * layout.NewKQ(t, K, rows, v).Size
		}
		if t != ir.Q8_0 && l.Accuracy != wqconv.Requantised && l.Dtype == wqconv.Int8 {
			n += l.DeviceBytes(int(rows), int(K))
		}
		if !ggmlModeTypes[t] {
			n += l.DeviceBytes(int(rows), int(K))
		}
		return n
	}
	return l.DeviceBytes(int(rows), int(K))
}

// wqWeight is a quantised weight in the layout gguf/wqconv converts it to,
// resident in the device pool: Rows×K values (int4 or int8), then the
// f16 scales (Rows × K/Span), then the f16 offsets when the layout has
// them, then a HighBits layout's bitmask of fifth bits (Rows × K/8).
type wqWeight struct {
	layout                  wqconv.Layout
	values, scales, offsets device.Ptr // offsets 0 when the layout has none
	high                    device.Ptr // 0 unless the layout has HighBits
}

// wqKey names the converted copy of the weight at addr: its type, row
// length and row count.
func wqKey(t ir.DType, addr device.Ptr, K, rows int64) string {
	return fmt.Sprintf("wq %s %#x [%d,%d]", t, uint64(addr), K, rows)
}

// wqLayout is the layout of a converted weight.
func wqLayout(t ir.DType) (wqconv.Layout, bool) {
	l, err := wqconv.LayoutOf(gguf.GGMLType(t))
	return l, err == nil
}

func wqAt(l wqconv.Layout, p device.Ptr, K, rows int64) wqWeight {
	v := K * rows
	if l.Dtype == wqconv.Int4 {
		v /= 2
	}
	w := wqWeight{layout: l, values: p, scales: p + device.Ptr(v)}
	if l.Offset {
		w.offsets = w.scales + device.Ptr(2*rows*K/int64(l.Span))
	}
	if l.HighBits {
		w.high = w.scales + device.Ptr(2*rows*K/int64(l.Span))
	}
	return w
}

// kqKey names the converted copy of the K-quant weight at addr.
func kqKey(l layout.KQ, addr device.Ptr) string {
	return fmt.Sprintf("kq %s v%d %#x [%d,%d]", l.T, l.V, uint64(addr), l.K, l.N)
}

// kqExpertsKey names the converted copy of the stack of E K-quant expert
// matrices at addr, each in layout l.
func kqExpertsKey(l layout.KQ, addr device.Ptr, E int64) string {
	return fmt.Sprintf("%s experts %d", kqKey(l, addr), E)
}

// q8Key names the converted copy of the weight at addr (layout.Q8Values).
func q8Key(t ir.DType, addr device.Ptr, K, rows int64) string {
	return fmt.Sprintf("q8 %s %#x [%d,%d]", t, uint64(addr), K, rows)
}

// f32Key names the f32 copy of the weight at addr (QuantMatmulGGML).
func f32Key(t ir.DType, addr device.Ptr, K, rows int64) string {
	return fmt.Sprintf("f32 %s %#x [%d,%d]", t, uint64(addr), K, rows)
}

// converted returns the converted copy of quantised weight a (its rows of
// K = Ne[0] elements; the outer dims are rows too, expert after expert):
// the one placed at load (PlaceWeight), else, outside a capture, one made
// now from the blocks read back from the device.
func (b *builder) converted(a device.TensorDesc) wqWeight {
	if b.err != nil {
		return wqWeight{}
	}
	w, err := b.convert(a)
	b.setErr(err)
	return w
}

func (b *builder) convert(a device.TensorDesc) (wqWeight, error) {
	K, rows := a.Ne[0], a.Ne[1]*a.Ne[2]*a.Ne[3]
	l, ok := wqLayout(a.DType)
	if !ok {
		return wqWeight{}, b.unsupported("%s weight: no aclnnWeightQuantBatchMatmulV2 layout (gguf/wqconv)", a.DType)
	}
	if !dense(a) {
		return wqWeight{}, b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
	}
	key := wqKey(a.DType, a.Addr, K, rows)
	p, err := b.onDemand(a, key, "weight", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeConverted(n, key, a.DType, blocks, K, rows, 0, 0)
	})
	if err != nil {
		return wqWeight{}, err
	}
	return wqAt(l, p, K, rows), nil
}

// kqWeight returns the layout and device address of the converted copy of
// the 2-D K-quant weight a (layout.KQValues): the one placed at load
// (PlaceWeight), else, outside a capture, one made now from the blocks
// read back.
func (b *builder) kqWeight(a device.TensorDesc) (layout.KQ, device.Ptr) {
	K, N := a.Ne[0], a.Ne[1]
	l := layout.NewKQ(a.DType, K, N, layout.KQVariantOf(a.DType, N, b.d.opts.LlamaBuild))
	if b.err != nil {
		return l, 0
	}
	if !dense(a) {
		b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
		return l, 0
	}
	key := kqKey(l, a.Addr)
	p, err := b.onDemand(a, key, "weight", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeKQ(n, key, l, blocks)
	})
	if err != nil {
		b.setErr(err)
		return l, 0
	}
	return l, p
}

// kqExperts returns the layout of one expert matrix of the K-quant stack
// as ([K, N, E]) and the device address of its converted copy
// (KQStackValues: E copies of that layout, l.Size elements apart): the
// one placed at load, else, outside a capture, one made now.
func (b *builder) kqExperts(as device.TensorDesc) (layout.KQ, device.Ptr) {
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	l := layout.NewKQ(as.DType, K, N, layout.KQVariantOf(as.DType, N, b.d.opts.LlamaBuild))
	if b.err != nil {
		return l, 0
	}
	if !dense(as) {
		b.unsupported("non-contiguous %s experts (nb %v)", as.DType, as.Nb)
		return l, 0
	}
	key := kqExpertsKey(l, as.Addr, E)
	p, err := b.onDemand(as, key, "experts", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeKQExperts(n, key, l, E, blocks)
	})
	if err != nil {
		b.setErr(err)
		return l, 0
	}
	return l, p
}

// q8Weight returns the layout and device address of the converted copy
// of quantised weight a (its rows of K = Ne[0] values; the outer dims are
// rows too, expert after expert): the one placed at load (PlaceWeight),
// else, outside a capture, one made now from the blocks read back.
func (b *builder) q8Weight(a device.TensorDesc) (layout.Q8, device.Ptr) {
	K, rows := a.Ne[0], a.Ne[1]*a.Ne[2]*a.Ne[3]
	l := layout.NewQ8(a.DType, K, rows)
	if b.err != nil {
		return l, 0
	}
	if !dense(a) {
		b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
		return l, 0
	}
	key := q8Key(a.DType, a.Addr, K, rows)
	p, err := b.onDemand(a, key, "weight", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeQ8(n, key, l, blocks)
	})
	if err != nil {
		b.setErr(err)
		return l, 0
	}
	return l, p
}

// dequantised returns the f32 copy of quantised weight a (N rows of K),
// made on the host from the blocks read back and uploaded once per weight,
// as the repacked shadow of aclnnWeightQuantBatchMatmulV2 is.
func (b *builder) dequantised(a device.TensorDesc) device.Ptr {
	if b.err != nil {
		return 0
	}
	p, err := b.dequantise(a)
	b.setErr(err)
	return p
}

func (b *builder) dequantise(a device.TensorDesc) (device.Ptr, error) {
	K, N := a.Ne[0], a.Ne[1]
	bs := a.DType.BlockSize()
	if bs == 0 || K%bs != 0 {
		return 0, b.unsupported("%s weight with %d columns (not a multiple of %d)", a.DType, K, bs)
	}
	blockBytes := a.DType.TypeSize()
	rowBytes := K / bs * blockBytes
	if a.Nb[0] != blockBytes || a.Nb[1] != rowBytes {
		return 0, b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
	}
	key := f32Key(a.DType, a.Addr, K, N)
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return p, nil
	}
	b.d.mu.Lock()
	strict := n.strict
	b.d.mu.Unlock()
	if strict > 0 {
		return 0, b.fail(device.ACLErrCaptureModeNotSupport,
			"the %s weight at %#x must be dequantised before its first captured use: launch it once eagerly (e.g. run prefill eagerly) first", a.DType, uint64(a.Addr))
	}
	if n.inPlace[a.Addr] {
		return 0, b.unsupported("the %s weight at %#x holds its converted layout (placed over its blocks at load), not ggml blocks: no f32 copy can be made from it", a.DType, uint64(a.Addr))
	}
	blocks := make([]byte, N*rowBytes)
	if rc := C.irt_d2h(hostPtr(blocks), C.uintptr_t(a.Addr), C.size_t(len(blocks))); rc != 0 {
		return 0, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	b.d.bytesD2H.Add(int64(len(blocks)))
	p, err := b.d.placeDequantised(n, key, a.DType, blocks, K, N)
	if err != nil {
		return 0, b.unsupported("%v", err)
	}
	return p, nil
}

// onDemand returns the device copy of quantised tensor a stored under key:
// the one placed at load (PlaceWeight), else, outside a capture, the one
// place makes (under n.cmu) from a's blocks read back from the device. what
// names a in the error a capture gets ("weight" or "experts").
func (b *builder) onDemand(a device.TensorDesc, key, what string, place func(n *npu, blocks []byte) (device.Ptr, error)) (device.Ptr, error) {
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return p, nil
	}
	b.d.mu.Lock()
	strict := n.strict
	b.d.mu.Unlock()
	if strict > 0 {
		verb, pron := "was", "it"
		if what == "experts" {
			verb, pron = "were", "them"
		}
		return 0, b.fail(device.ACLErrCaptureModeNotSupport,
			"the %s %s at %#x %s not converted at load (PlaceWeight) and cannot be converted during a capture: launch %s once eagerly first", a.DType, what, uint64(a.Addr), verb, pron)
	}
	if n.inPlace[a.Addr] {
		return 0, b.unsupported("the %s %s at %#x holds its converted layout (placed over its blocks at load), not ggml blocks: no other copy can be made from it", a.DType, what, uint64(a.Addr))
	}
	blocks := make([]byte, a.Bytes())
	if rc := C.irt_d2h(hostPtr(blocks), C.uintptr_t(a.Addr), C.size_t(len(blocks))); rc != 0 {
		return 0, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	b.d.bytesD2H.Add(int64(len(blocks)))
	p, err := place(n, blocks)
	if err != nil {
		return 0, fmt.Errorf("acl: %s: %w", b.p.label, err)
	}
	return p, nil
}

// placeConverted converts rows×K blocks of type t with gguf/wqconv and
// uploads the result (values, scales, offsets) under key, replacing what
// the key held: at at, over the blocks it was converted from (which it
// must fit), or in the room bytes at at when the weight was taken
// (TakeWeight), or into the pool when at is 0. The caller holds n.cmu.
func (d *Device) placeConverted(n *npu, key string, t ir.DType, blocks []byte, K, rows int64, at device.Ptr, room int64) (device.Ptr, error) {
	t0 := time.Now()
	w, err := wqconv.Convert(gguf.GGMLType(t), blocks, int(rows), int(K))
	if err != nil {
		return 0, err
	}
	data := w.Bytes()
	d.convertNS.Add(int64(time.Since(t0)))
	n.dropTable(key)
	if at != 0 {
		if int64(len(data)) > room {
			return 0, fmt.Errorf("converted %s weight (%d B) does not fit in its %d B", t, len(data), room)
		}
		if rc := C.irt_h2d(C.uintptr_t(at), hostPtr(data), C.size_t(len(data))); rc != 0 {
			return 0, newError("aclrtMemcpy", "converted weight", int32(rc))
		}
		d.bytesH2D.Add(int64(len(data)))
		n.tables[key] = at
		n.inPlace[at] = true
		return at, nil
	}
	off, _, err := n.pool.Alloc(int64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("converted %s weight (%d B): %w", t, len(data), err)
	}
	p := n.base + device.Ptr(off)
	if rc := C.irt_h2d(C.uintptr_t(p), hostPtr(data), C.size_t(len(data))); rc != 0 {
		n.pool.Free(off)
		return 0, newError("aclrtMemcpy", "converted weight", int32(rc))
	}
	d.bytesH2D.Add(int64(len(data)))
	d.convertedBytes.Add(int64(len(data)))
	n.tables[key] = p
	delete(n.inPlace, p)
	return p, nil
}

// placeKQ converts the blocks of a K-quant matrix into layout l
// (layout.KQValues) and uploads the copy into the pool under key. The caller
// holds n.cmu.
func (d *Device) placeKQ(n *npu, key string, l layout.KQ, blocks []byte) (device.Ptr, error) {
	vals, err := layout.KQValues(l, blocks)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("converted %s weight", l.T), vals)
}

// placeKQExperts converts E stacked expert matrices (blocks) into E
// copies of layout l and uploads them under key. The caller holds n.cmu.
func (d *Device) placeKQExperts(n *npu, key string, l layout.KQ, E int64, blocks []byte) (device.Ptr, error) {
	vals, err := layout.KQStackValues(l, E, blocks)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("converted %s experts", l.T), vals)
}

// placeQ8 converts the blocks of a matrix into layout l (layout.Q8Values) and
// uploads the copy into the pool under key. The caller holds n.cmu.
func (d *Device) placeQ8(n *npu, key string, l layout.Q8, blocks []byte) (device.Ptr, error) {
	vals, err := layout.Q8Values(l, blocks)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("converted %s weight", l.T), vals)
}

// placeDequantised uploads the f32 values of rows×K blocks of type t
// (ggml's dequantize_row_*) into the pool under key. The caller holds
// n.cmu.
func (d *Device) placeDequantised(n *npu, key string, t ir.DType, blocks []byte, K, rows int64) (device.Ptr, error) {
	vals, err := layout.DequantizeRows(t, blocks, K, rows)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("dequantised %s weight", t), vals)
}

// placeF32 uploads vals into the pool under key (what names them in
// errors), replacing what the key held. The caller holds n.cmu.
func (d *Device) placeF32(n *npu, key, what string, vals []float32) (device.Ptr, error) {
	t0 := time.Now()
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	d.convertNS.Add(int64(time.Since(t0)))
	n.dropTable(key)
	off, _, err := n.pool.Alloc(int64(len(raw)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	p := n.base + device.Ptr(off)
	if rc := C.irt_h2d(C.uintptr_t(p), hostPtr(raw), C.size_t(len(raw))); rc != 0 {
		n.pool.Free(off)
		return 0, newError("aclrtMemcpy", what, int32(rc))
	}
	d.bytesH2D.Add(int64(len(raw)))
	d.convertedBytes.Add(int64(len(raw)))
	n.tables[key] = p
	delete(n.inPlace, p)
	return p, nil
}

// dropTable forgets the copy stored under key, freeing it unless it was
// written over its weight's blocks. The caller holds n.cmu.
func (n *npu) dropTable(key string) {
	if old, ok := n.tables[key]; ok {
		if !n.inPlace[old] {
			n.pool.Free(int64(old - n.base))
		}
		delete(n.tables, key)
	}
}
