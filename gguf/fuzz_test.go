package gguf

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"testing/iotest"

	"github.com/irtool/irtool/internal/testref"
)

// shrink rewrites a model as a small fuzz seed: the same keys with arrays
// cut to their first 4 elements, and each tensor replaced by one block of
// its type (bytes taken from the real tensor).
func shrink(t testing.TB, f *File) []byte {
	t.Helper()
	w := NewWriter()
	for _, kv := range f.KV {
		v := kv.Value
		if v.Type() == ValArray && v.Len() > 4 {
			els := make([]Value, 4)
			for i := range els {
				els[i] = v.Index(i)
			}
			v = ArrayOf(v.ElemType(), els)
		}
		w.SetKV(kv.Key, v)
	}
	for i, ti := range f.Tensors {
		if i >= 6 {
			break
		}
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		bs := ti.Type.BlockSize()
		if err := w.AddTensor(ti.Name, ti.Type, []int64{int64(bs)}, data[:ti.Type.TypeSize()]); err != nil {
			t.Fatal(err)
		}
	}
	return writeBuf(t, w)
}

// FuzzOpen feeds arbitrary bytes to Parse. Invalid input must give a
// *FormatError (never a panic, which Parse would report as ErrInternal);
// valid input must give tensor data inside the file, dequantise where the
// type is supported, and survive a rewrite with the Writer unchanged.
//
// Seeds: small versions of the models in testdata/ (their metadata, one
// block per tensor), truncated prefixes of the real files, and files with
// every value type.
func FuzzOpen(f *testing.F) {
	for _, name := range []string{"stories260K.gguf", "synth-llama-F16.gguf", "synth-llama-Q4_0.gguf", "synth-llama-Q8_0.gguf"} {
		b, err := os.ReadFile(testref.Testdata(name))
		if err != nil {
			f.Fatal(err)
		}
		g, err := Parse(b, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(shrink(f, g))
		f.Add(b[:min(len(b), 1024)])
	}
	f.Add(baseFile(f))
	w := NewWriter()
	w.SetKV("all", ArrayOf(ValArray, []Value{U8s([]uint8{1}), I64s([]int64{-1}), F64s([]float64{2}), Bools([]bool{true}), Strs([]string{"s"})}))
	w.SetKV(KeyAlignment, U32(8))
	for i, ty := range []GGMLType{TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeBF16, TypeIQ4_NL, TypeIQ4_XS} {
		_ = w.AddTensor(string(rune('a'+i)), ty, []int64{int64(ty.BlockSize())}, bytes.Repeat([]byte{0x5a}, ty.TypeSize()))
	}
	f.Add(writeBuf(f, w))

	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "fuzz")
		// The stream decoder (Open of a pipe) must agree with Parse.
		if _, serr := ReadStream(iotest.HalfReader(bytes.NewReader(data)), "fuzz", StreamLimits{}); (serr == nil) != (err == nil) {
			t.Fatalf("ReadStream: %v; Parse: %v", serr, err)
		} else if err != nil {
			var a, b *FormatError
			if !errors.As(err, &a) || !errors.As(serr, &b) || a.Err != b.Err {
				t.Fatalf("ReadStream: %v; Parse: %v", serr, err)
			}
		}
		if err != nil {
			var fe *FormatError
			if errors.Is(err, ErrInternal) || !errors.As(err, &fe) {
				t.Fatalf("bad error: %v", err)
			}
			return
		}
		for _, kv := range g.KV {
			_ = kv.Value.String()
			_ = kv.Value.Any()
			_, _ = g.GetInt32s(kv.Key)
			_, _ = g.GetFloat32s(kv.Key)
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			d, err := g.TensorData(ti.Name)
			if err != nil || uint64(len(d)) != ti.Size {
				t.Fatalf("tensor %q: %d bytes, %v", ti.Name, len(d), err)
			}
			if CanDequantize(ti.Type) && ti.NElements() <= 1<<16 {
				if _, err := g.TensorFloat32(ti.Name); err != nil {
					t.Fatalf("tensor %q: %v", ti.Name, err)
				}
			}
		}
		// Rewrite when the writer accepts the content (it refuses what ggml
		// cannot load, such as 0-dimensional tensors or 64-byte names).
		if g.Alignment*uint64(len(g.Tensors)+1) > 1<<20 {
			return // padding alone would be huge
		}
		w := NewWriter()
		_ = w.SetVersion(g.Version)
		for _, kv := range g.KV {
			w.SetKV(kv.Key, kv.Value)
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			d, _ := g.TensorData(ti.Name)
			if ti.NDims == 0 || w.AddTensor(ti.Name, ti.Type, ti.Ne[:ti.NDims], d) != nil {
				return
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			return
		}
		h, err := Parse(buf.Bytes(), "rewritten")
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		for i := range g.KV {
			if g.KV[i].Key != h.KV[i].Key || !g.KV[i].Value.Equal(h.KV[i].Value) {
				t.Fatalf("key %q changed in the rewrite", g.KV[i].Key)
			}
		}
		for i := range g.Tensors {
			a, b := g.Tensors[i], h.Tensors[i]
			da, _ := g.TensorData(a.Name)
			db, _ := h.TensorData(b.Name)
			if a.Name != b.Name || a.Type != b.Type || a.Ne != b.Ne || !bytes.Equal(da, db) {
				t.Fatalf("tensor %q changed in the rewrite", a.Name)
			}
		}
	})
}
