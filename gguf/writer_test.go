package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// rewrite copies every key and tensor of f into a new Writer.
func rewrite(t testing.TB, f *File) []byte {
	t.Helper()
	w := NewWriter()
	if err := w.SetVersion(f.Version); err != nil {
		t.Fatal(err)
	}
	for _, kv := range f.KV {
		w.SetKV(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Ne[:ti.NDims], data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// sameFile reports the first difference between two parsed files: version,
// alignment, data offset, every key and value (bit-exact) and every tensor's
// info and bytes.
func sameFile(t testing.TB, a, b *File) {
	t.Helper()
	if a.Version != b.Version || a.Alignment != b.Alignment || a.DataOffset != b.DataOffset {
		t.Errorf("header differs: v%d/%d/%d vs v%d/%d/%d", a.Version, a.Alignment, a.DataOffset, b.Version, b.Alignment, b.DataOffset)
	}
	if len(a.KV) != len(b.KV) {
		t.Fatalf("%d keys vs %d", len(a.KV), len(b.KV))
	}
	for i := range a.KV {
		if a.KV[i].Key != b.KV[i].Key || !a.KV[i].Value.Equal(b.KV[i].Value) {
			t.Errorf("key %d: %q=%v vs %q=%v", i, a.KV[i].Key, a.KV[i].Value, b.KV[i].Key, b.KV[i].Value)
		}
	}
	if len(a.Tensors) != len(b.Tensors) {
		t.Fatalf("%d tensors vs %d", len(a.Tensors), len(b.Tensors))
	}
	for i := range a.Tensors {
		x, y := a.Tensors[i], b.Tensors[i]
		if x != y {
			t.Errorf("tensor %d: %+v vs %+v", i, x, y)
			continue
		}
		dx, _ := a.TensorData(x.Name)
		dy, _ := b.TensorData(y.Name)
		if !bytes.Equal(dx, dy) {
			t.Errorf("tensor %q: data differs", x.Name)
		}
	}
}

// TestWriterRoundTrip rewrites every reference model (written by gguf-py or
// llama-quantize, not by this package) and checks that the result reads
// back identically and is byte-for-byte the original file.
func TestWriterRoundTrip(t *testing.T) {
	paths := testref.Models(t)
	paths = append(paths, filepath.Join(testref.Dir(), "vocab", "ggml-vocab-llama-spm.gguf"))
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(orig, p)
			if err != nil {
				t.Fatal(err)
			}
			out := rewrite(t, f)
			g, err := Parse(out, "rewritten "+p)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, f, g)
			if !bytes.Equal(out, orig) {
				i := 0
				for i < len(out) && i < len(orig) && out[i] == orig[i] {
					i++
				}
				t.Errorf("rewritten file differs from the original at byte %d (sizes %d, %d)", i, len(out), len(orig))
			}
		})
	}
}

// TestWriterAlignment checks that general.alignment is honoured: the data
// section and every tensor start on a multiple of it and the padding is zero.
func TestWriterAlignment(t *testing.T) {
	for _, align := range []uint32{1, 8, 32, 64, 4096} {
		w := NewWriter()
		w.SetKV("general.architecture", Str("test"))
		w.SetKV(KeyAlignment, U32(align))
		mustAdd(t, w, "a", TypeF32, []int64{3}, make([]byte, 12))
		mustAdd(t, w, "b", TypeQ8_0, []int64{32, 2}, bytes.Repeat([]byte{1}, 68))
		mustAdd(t, w, "c", TypeF16, []int64{5}, bytes.Repeat([]byte{2}, 10))
		buf := writeBuf(t, w)
		f, err := Parse(buf, "aligned")
		if err != nil {
			t.Fatalf("align %d: %v", align, err)
		}
		lt, loff, err := w.Layout()
		if err != nil || loff != f.DataOffset || len(lt) != len(f.Tensors) || lt[2] != f.Tensors[2] {
			t.Errorf("align %d: Layout() = %v, %d, %v; file %v, %d", align, lt, loff, err, f.Tensors, f.DataOffset)
		}
		if f.Alignment != uint64(align) || f.DataOffset%int64(align) != 0 {
			t.Errorf("align %d: file alignment %d, data offset %d", align, f.Alignment, f.DataOffset)
		}
		var end uint64
		for _, ti := range f.Tensors {
			if ti.Offset%uint64(align) != 0 {
				t.Errorf("align %d: tensor %s at %d", align, ti.Name, ti.Offset)
			}
			for _, b := range buf[uint64(f.DataOffset)+end : uint64(f.DataOffset)+ti.Offset] {
				if b != 0 {
					t.Fatalf("align %d: non-zero padding before %s", align, ti.Name)
				}
			}
			end = ti.Offset + ti.Size
		}
		if want := pad(uint64(f.DataOffset)+end, uint64(align)); uint64(len(buf)) != want {
			t.Errorf("align %d: file is %d bytes, want %d (last tensor padded)", align, len(buf), want)
		}
	}
}

// TestWriterDeterministic checks that the same calls give the same bytes and
// that replacing a key keeps its position.
func TestWriterDeterministic(t *testing.T) {
	build := func() []byte {
		w := NewWriter()
		w.SetKV("b", U32(1))
		w.SetKV("a", Strs([]string{"x", "y"}))
		w.SetKV("b", U32(2))
		mustAdd(t, w, "t", TypeF32, []int64{2}, make([]byte, 8))
		return writeBuf(t, w)
	}
	x, y := build(), build()
	if !bytes.Equal(x, y) {
		t.Fatal("two identical writers gave different bytes")
	}
	f, err := Parse(x, "det")
	if err != nil {
		t.Fatal(err)
	}
	if f.KV[0].Key != "b" || f.KV[1].Key != "a" {
		t.Errorf("key order %q %q", f.KV[0].Key, f.KV[1].Key)
	}
	if v, _ := f.GetUint("b"); v != 2 {
		t.Errorf("b = %d, want the replaced value 2", v)
	}
}

// TestWriterAllValueTypes writes one key of every type (and nested arrays)
// and reads them back bit-exactly.
func TestWriterAllValueTypes(t *testing.T) {
	vals := []Value{
		U8(200), I8(-100), U16(60000), I16(-30000), U32(4e9), I32(-2e9), U64(1 << 63), I64(-1 << 62),
		F32(1.5), F64(-2.25), Bool(true), Bool(false), Str("héllo"), Str(""),
		U8s([]uint8{1, 2}), I8s([]int8{-1}), U16s([]uint16{7}), I16s([]int16{-7}), U32s([]uint32{1, 2, 3}),
		I32s([]int32{-5, 5}), U64s([]uint64{1 << 40}), I64s([]int64{-1 << 40}), F32s([]float32{0.5, -0}),
		F64s([]float64{1e300}), Bools([]bool{true, false}), Strs([]string{"a", "", "ccc"}), Strs(nil),
		ArrayOf(ValArray, []Value{U32s([]uint32{1}), U32s([]uint32{2, 3})}),
		ArrayOf(ValArray, []Value{ArrayOf(ValArray, []Value{Strs([]string{"deep"})})}),
		ArrayOf(ValUint16, []Value{U16(1), U16(2)}),
	}
	w := NewWriter()
	for i, v := range vals {
		w.SetKV(string(rune('a'+i)), v)
	}
	f, err := Parse(writeBuf(t, w), "types")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		got := f.KV[i].Value
		if !got.Equal(v) {
			t.Errorf("%d: wrote %v (%s), read %v (%s)", i, v, v.Type(), got, got.Type())
		}
	}
	if x, ok := f.Get("ab"); ok {
		t.Errorf("unexpected key %v", x)
	}
	// 16 levels of arrays is the most both the writer and the reader accept.
	v := U8s([]uint8{1})
	for range 15 {
		v = ArrayOf(ValArray, []Value{v})
	}
	w = NewWriter()
	w.SetKV("deep", v)
	if g, err := Parse(writeBuf(t, w), "deep"); err != nil || !g.KV[0].Value.Equal(v) {
		t.Errorf("16-deep array: %v", err)
	}
	nested, _ := f.Get(string(rune('a' + 27)))
	if nested.Len() != 2 || nested.Index(1).Len() != 2 || nested.Index(1).Index(1).Any() != uint32(3) {
		t.Errorf("nested array read back as %v", nested)
	}
}

// TestWriterErrors checks that the writer refuses what llama.cpp would not
// load, naming the tensor or key.
func TestWriterErrors(t *testing.T) {
	cases := []struct {
		name, want string
		add        func(w *Writer) error
	}{
		{"empty name", "empty name", func(w *Writer) error { return w.AddTensor("", TypeF32, []int64{1}, make([]byte, 4)) }},
		{"long name", "at most 63", func(w *Writer) error {
			return w.AddTensor(strings.Repeat("x", 64), TypeF32, []int64{1}, make([]byte, 4))
		}},
		{"duplicate", "added twice", func(w *Writer) error {
			_ = w.AddTensor("t", TypeF32, []int64{1}, make([]byte, 4))
			return w.AddTensor("t", TypeF32, []int64{1}, make([]byte, 4))
		}},
		{"unknown type", "unknown ggml type", func(w *Writer) error { return w.AddTensor("t", GGMLType(4), []int64{32}, nil) }},
		{"no dims", "0 dimensions", func(w *Writer) error { return w.AddTensor("t", TypeF32, nil, nil) }},
		{"five dims", "5 dimensions", func(w *Writer) error { return w.AddTensor("t", TypeF32, []int64{1, 1, 1, 1, 1}, nil) }},
		{"negative", "negative", func(w *Writer) error { return w.AddTensor("t", TypeF32, []int64{-1}, nil) }},
		{"block", "not a multiple of the block size", func(w *Writer) error { return w.AddTensor("t", TypeQ4_0, []int64{31}, nil) }},
		{"data size", "needs 8 bytes of data, got 4", func(w *Writer) error { return w.AddTensor("t", TypeF32, []int64{2}, make([]byte, 4)) }},
		{"overflow", "overflow", func(w *Writer) error {
			return w.AddTensor("t", TypeF32, []int64{1 << 40, 1 << 40}, nil)
		}},
		{"alignment type", "must be a u32", func(w *Writer) error { w.SetKV(KeyAlignment, U64(32)); return write(w) }},
		{"alignment value", "not a power of two", func(w *Writer) error { w.SetKV(KeyAlignment, U32(48)); return write(w) }},
		{"bad array", `key "arr": ArrayOf: element 1 has type i32, want u32`, func(w *Writer) error {
			w.SetKV("arr", ArrayOf(ValUint32, []Value{U32(1), I32(2)}))
			return write(w)
		}},
		{"zero value", `key "z": invalid value type`, func(w *Writer) error { w.SetKV("z", Value{tag: 100}); return write(w) }},
		{"deep nesting", "nested more than 16 deep", func(w *Writer) error {
			v := U8s([]uint8{1})
			for range 16 {
				v = ArrayOf(ValArray, []Value{v})
			}
			w.SetKV("deep", v)
			return write(w)
		}},
		{"empty key", "empty metadata key", func(w *Writer) error { w.SetKV("", U8(1)); return write(w) }},
		{"version", "only 2 and 3", func(w *Writer) error { return w.SetVersion(1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.add(NewWriter())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func write(w *Writer) error {
	_, err := w.WriteTo(&bytes.Buffer{})
	return err
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriterIOError checks that a failing destination is reported.
func TestWriterIOError(t *testing.T) {
	w := NewWriter()
	w.SetKV("k", Str(strings.Repeat("x", 1<<17)))
	mustAdd(t, w, "t", TypeF32, []int64{1 << 16}, make([]byte, 1<<18))
	for _, n := range []int{0, 1 << 16, 1 << 18} {
		if _, err := w.WriteTo(&failWriter{n: n}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("after %d bytes: %v", n, err)
		}
	}
}

func mustAdd(t testing.TB, w *Writer, name string, ty GGMLType, ne []int64, data []byte) {
	t.Helper()
	if err := w.AddTensor(name, ty, ne, data); err != nil {
		t.Fatal(err)
	}
}

func writeBuf(t testing.TB, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
