package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// baseFile is a small valid file built with the Writer: three keys (one
// array) and three tensors at data offsets 0, 32 and 96.
func baseFile(t testing.TB) []byte {
	t.Helper()
	w := NewWriter()
	w.SetKV("key_one", Str("llama"))
	w.SetKV("key_two", U32s([]uint32{1, 2, 3}))
	w.SetKV("key_arr", Strs([]string{"x", "yy"}))
	mustAdd(t, w, "tensor_a", TypeF32, []int64{4, 2}, bytes.Repeat([]byte{1}, 32))
	mustAdd(t, w, "tensor_b", TypeQ8_0, []int64{32, 1}, bytes.Repeat([]byte{2}, 34))
	mustAdd(t, w, "tensor_c", TypeF32, []int64{8}, bytes.Repeat([]byte{3}, 32))
	buf := writeBuf(t, w)
	if _, err := Parse(buf, "base"); err != nil {
		t.Fatalf("base file does not parse: %v", err)
	}
	return buf
}

// after returns the offset just after the length-prefixed string s in buf.
func after(t testing.TB, buf []byte, s string) int {
	t.Helper()
	pat := binary.LittleEndian.AppendUint64(nil, uint64(len(s)))
	pat = append(pat, s...)
	i := bytes.Index(buf, pat)
	if i < 0 {
		t.Fatalf("string %q not found", s)
	}
	return i + len(pat)
}

func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }

// tensorField returns the offsets of a tensor info's fields in buf:
// n_dims, the dims, type and data offset.
func tensorField(t testing.TB, buf []byte, name string) (nd, dims, typ, off int) {
	nd = after(t, buf, name)
	n := int(binary.LittleEndian.Uint32(buf[nd:]))
	dims = nd + 4
	typ = dims + 8*n
	off = typ + 4
	return
}

// TestHostileInput corrupts a valid file in one way per class of malformed
// input and checks that Parse returns an error of that class whose message
// names the problem, without panicking.
func TestHostileInput(t *testing.T) {
	cases := []struct {
		name  string
		class error
		msg   string
		edit  func(t *testing.T, b []byte) []byte
	}{
		{"bad magic", ErrBadMagic, `not a GGUF file (its first 4 bytes are not the magic "GGUF")`, func(t *testing.T, b []byte) []byte { copy(b, "GGML"); return b }},
		{"not gguf", ErrBadMagic, "not a GGUF file", func(t *testing.T, b []byte) []byte { return []byte("PK\x03") }},
		{"empty", ErrTruncated, "too short", func(t *testing.T, b []byte) []byte { return nil }},
		{"version 1", ErrVersion, "GGUF v1 is not supported", func(t *testing.T, b []byte) []byte { put32(b, 4, 1); return b }},
		{"version 0", ErrVersion, "version 0", func(t *testing.T, b []byte) []byte { put32(b, 4, 0); return b }},
		{"version 4", ErrVersion, "newer than v3", func(t *testing.T, b []byte) []byte { put32(b, 4, 4); return b }},
		{"big endian", ErrVersion, "big-endian", func(t *testing.T, b []byte) []byte { put32(b, 4, 3<<24); return b }},
		{"absurd tensor count", ErrTooLarge, "cannot fit", func(t *testing.T, b []byte) []byte { put64(b, 8, 1<<62); return b }},
		{"absurd key count", ErrTooLarge, "cannot fit", func(t *testing.T, b []byte) []byte { put64(b, 16, math.MaxUint64); return b }},
		{"absurd string length", ErrTooLarge, "string length 1099511627776 exceeds ggml's limit", func(t *testing.T, b []byte) []byte {
			put64(b, 24, 1<<40)
			return b
		}},
		{"absurd array length", ErrTooLarge, `key "key_two": array of 1152921504606846976 u32 exceeds`, func(t *testing.T, b []byte) []byte {
			put64(b, after(t, b, "key_two")+8, 1<<60)
			return b
		}},
		{"absurd string array", ErrTooLarge, `key "key_arr": array of`, func(t *testing.T, b []byte) []byte {
			put64(b, after(t, b, "key_arr")+8, 1<<50)
			return b
		}},
		{"string past end", ErrTruncated, `truncated: element 1 of key "key_arr": string length 1048576 exceeds the`, func(t *testing.T, b []byte) []byte {
			put64(b, after(t, b, "x"), 1<<20) // length of "yy"
			return b
		}},
		{"invalid value type", ErrBadValue, `key "key_one" has invalid value type 13`, func(t *testing.T, b []byte) []byte {
			put32(b, after(t, b, "key_one"), 13)
			return b
		}},
		{"invalid array type", ErrBadValue, `array of invalid value type 99`, func(t *testing.T, b []byte) []byte {
			put32(b, after(t, b, "key_two")+4, 99)
			return b
		}},
		{"duplicate key", ErrDuplicate, `duplicate metadata key "key_one"`, func(t *testing.T, b []byte) []byte {
			copy(b[after(t, b, "key_two")-3:], "one")
			return b
		}},
		{"duplicate tensor", ErrDuplicate, `duplicate tensor name "tensor_a"`, func(t *testing.T, b []byte) []byte {
			b[after(t, b, "tensor_b")-1] = 'a'
			return b
		}},
		{"too many dims", ErrBadTensor, `tensor "tensor_a" has 5 dimensions`, func(t *testing.T, b []byte) []byte {
			nd, _, _, _ := tensorField(t, b, "tensor_a")
			put32(b, nd, 5)
			return b
		}},
		{"negative dim", ErrBadTensor, `tensor "tensor_a": dimension 1 is negative`, func(t *testing.T, b []byte) []byte {
			_, dims, _, _ := tensorField(t, b, "tensor_a")
			put64(b, dims+8, math.MaxUint64)
			return b
		}},
		{"element count overflow", ErrOverflow, `tensor "tensor_a": shape [1099511627776 1099511627776 1 1] has more than 2^63 elements`, func(t *testing.T, b []byte) []byte {
			_, dims, _, _ := tensorField(t, b, "tensor_a")
			put64(b, dims, 1<<40)
			put64(b, dims+8, 1<<40)
			return b
		}},
		{"byte size overflow", ErrOverflow, `tensor "tensor_a": f32 row of 2305843009213693952 elements: size overflows int64`, func(t *testing.T, b []byte) []byte {
			_, dims, _, _ := tensorField(t, b, "tensor_a")
			put64(b, dims, 1<<61)
			put64(b, dims+8, 2)
			return b
		}},
		{"unknown type", ErrUnknownType, `tensor "tensor_a" has unknown ggml type id 99`, func(t *testing.T, b []byte) []byte {
			_, _, typ, _ := tensorField(t, b, "tensor_a")
			put32(b, typ, 99)
			return b
		}},
		{"removed type", ErrUnknownType, `unknown ggml type id 32 (q4_0_4_8(removed))`, func(t *testing.T, b []byte) []byte {
			_, _, typ, _ := tensorField(t, b, "tensor_a")
			put32(b, typ, 32)
			return b
		}},
		{"partial block", ErrBadTensor, `tensor "tensor_b": row length 33 is not a multiple of the q8_0 block size 32`, func(t *testing.T, b []byte) []byte {
			_, dims, _, _ := tensorField(t, b, "tensor_b")
			put64(b, dims, 33)
			return b
		}},
		{"misaligned offset", ErrAlignment, `tensor "tensor_c": data offset 100 is not a multiple of the alignment 32`, func(t *testing.T, b []byte) []byte {
			_, _, _, off := tensorField(t, b, "tensor_c")
			put64(b, off, 100)
			return b
		}},
		{"offset past end", ErrOutOfBounds, `tensor "tensor_c": data [1048576, 1048576+32) extends past the end`, func(t *testing.T, b []byte) []byte {
			_, _, _, off := tensorField(t, b, "tensor_c")
			put64(b, off, 1<<20)
			return b
		}},
		{"offset wraps", ErrOutOfBounds, `tensor "tensor_c"`, func(t *testing.T, b []byte) []byte {
			_, _, _, off := tensorField(t, b, "tensor_c")
			put64(b, off, math.MaxUint64-31)
			return b
		}},
		{"size past end", ErrOutOfBounds, `tensor "tensor_c"`, func(t *testing.T, b []byte) []byte {
			_, dims, _, _ := tensorField(t, b, "tensor_c")
			put64(b, dims, 1<<30)
			return b
		}},
		{"overlap", ErrOverlap, `tensor "tensor_b" (bytes 0..34) overlaps tensor "tensor_a" (bytes 0..32)`, func(t *testing.T, b []byte) []byte {
			_, _, _, off := tensorField(t, b, "tensor_b")
			put64(b, off, 0)
			return b
		}},
		{"array past end", ErrTruncated, `truncated: key "key_two": array of 1000 u32 needs at least 4000 bytes`, func(t *testing.T, b []byte) []byte {
			put64(b, after(t, b, "key_two")+8, 1000)
			return b
		}},
		{"data section past end", ErrTruncated, "data section would start", func(t *testing.T, b []byte) []byte {
			_, _, _, off := tensorField(t, b, "tensor_c")
			return b[:off+8]
		}},
		{"alignment not power of two", ErrAlignment, "general.alignment = 48 is not a power of two", func(t *testing.T, b []byte) []byte {
			return withAlignment(t, U32(48))
		}},
		{"alignment zero", ErrAlignment, "general.alignment = 0 is not a power of two", func(t *testing.T, b []byte) []byte {
			return withAlignment(t, U32(0))
		}},
		{"alignment wrong type", ErrAlignment, "general.alignment must be a u32, not u64", func(t *testing.T, b []byte) []byte {
			return withAlignment(t, U64(32))
		}},
		{"empty key", ErrBadValue, "metadata key 0 is empty", func(t *testing.T, b []byte) []byte {
			return raw(header(0, 1), str(""), u32(ValUint8), []byte{1, 0, 0})
		}},
		{"empty tensor name", ErrBadTensor, "tensor 0 has an empty name", func(t *testing.T, b []byte) []byte {
			return raw(header(1, 0), str(""), u32(1), u64(1), u32(0), u64(0))
		}},
		{"deep nesting", ErrBadValue, `key "k": arrays nested more than 16 deep`, func(t *testing.T, b []byte) []byte {
			out := raw(header(0, 1), str("k"), u32(ValArray))
			for range 20 {
				out = raw(out, u32(ValArray), u64(1))
			}
			return raw(out, u32(ValUint8), u64(0))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(t, baseFile(t))
			f, err := Parse(b, "hostile.gguf")
			if err == nil {
				t.Fatalf("parsed: %d keys, %d tensors", len(f.KV), len(f.Tensors))
			}
			if !errors.Is(err, c.class) {
				t.Errorf("error class: got %v, want %v", err, c.class)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "hostile.gguf" {
				t.Errorf("not a *FormatError naming the file: %#v", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q does not contain %q", err, c.msg)
			}
		})
	}
}

func withAlignment(t *testing.T, v Value) []byte {
	t.Helper()
	// The writer refuses a bad alignment, so write a good one under a
	// placeholder key of the same length and patch it.
	w := NewWriter()
	w.SetKV("general.alignmenX", v)
	mustAdd(t, w, "t", TypeF32, []int64{1}, make([]byte, 4))
	b := writeBuf(t, w)
	i := bytes.Index(b, []byte("general.alignmenX"))
	b[i+len("general.alignmenX")-1] = 't'
	return b
}

func header(nTensors, nKV uint64) []byte { return raw([]byte(Magic), u32(3), u64(nTensors), u64(nKV)) }
func u32[T ~uint32 | int](x T) []byte    { return binary.LittleEndian.AppendUint32(nil, uint32(x)) }
func u64(x uint64) []byte                { return binary.LittleEndian.AppendUint64(nil, x) }
func str(s string) []byte                { return append(u64(uint64(len(s))), s...) }
func raw(parts ...[]byte) []byte         { return bytes.Join(parts, nil) }

// TestTruncatedEverywhere parses every proper prefix of a valid file up to
// the end of the last tensor's data: each must fail with a truncation-type
// error, never panic.
func TestTruncatedEverywhere(t *testing.T) {
	b := baseFile(t)
	f, _ := Parse(b, "base")
	last := f.Tensors[len(f.Tensors)-1]
	end := int(uint64(f.DataOffset) + last.Offset + last.Size)
	for n := range end {
		_, err := Parse(b[:n:n], "prefix")
		if err == nil {
			t.Fatalf("prefix of %d bytes parsed", n)
		}
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("prefix of %d bytes: unexpected error class: %v", n, err)
		}
	}
	// Trailing padding after the last tensor is not needed.
	if _, err := Parse(b[:end], "unpadded"); err != nil {
		t.Errorf("file without the last padding: %v", err)
	}
}

// TestHostileAllocation checks that absurd counts and lengths are refused
// before anything proportional to them is allocated.
func TestHostileAllocation(t *testing.T) {
	inputs := map[string][]byte{
		"tensor count": raw(header(1<<40, 0)),
		"key count":    raw(header(0, 1<<40), make([]byte, 1000)),
		"string":       raw(header(0, 1), u64(1<<50)),
		"u8 array":     raw(header(0, 1), str("k"), u32(ValArray), u32(ValUint8), u64(1<<40), make([]byte, 1000)),
		"string array": raw(header(0, 1), str("k"), u32(ValArray), u32(ValString), u64(1<<40), make([]byte, 1000)),
		"nested array": raw(header(0, 1), str("k"), u32(ValArray), u32(ValArray), u64(1<<40), make([]byte, 1000)),
		// 80 string-array elements of 0 bytes each: legal, and small.
		"many empty strings": raw(header(0, 1), str("k"), u32(ValArray), u32(ValString), u64(80), make([]byte, 640)),
	}
	for name, b := range inputs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Parse(b, name)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if limit := uint64(64*len(b) + 16<<10); alloc > limit {
			t.Errorf("%s: allocated %d bytes for a %d-byte input (limit %d); err %v", name, alloc, len(b), limit, err)
		}
		if name != "many empty strings" && err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// TestOpenAndClose covers Open's file handling.
func TestOpenAndClose(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(p, baseFile(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.TensorData("tensor_b")
	if err != nil || len(d) != 34 || d[0] != 2 || cap(d) != 34 {
		t.Fatalf("TensorData: %d bytes (cap %d), %v", len(d), cap(d), err)
	}
	if _, err := f.TensorData("nope"); !errors.Is(err, ErrNoTensor) {
		t.Errorf("missing tensor: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.TensorData("tensor_b"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if s, _ := f.GetString("key_one"); s != "llama" {
		t.Errorf("metadata after Close: %q", s)
	}

	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "empty.gguf") {
		t.Errorf("empty file: %v", err)
	}
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x01\x00\x00\x00"), 0o644)
	if _, err := Open(bad); !errors.Is(err, ErrVersion) {
		t.Errorf("v1 file: %v", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("opening a directory succeeded")
	}
}

// TestUnsupportedTensorType checks that dequantising a type outside the
// supported set names the tensor.
func TestUnsupportedTensorType(t *testing.T) {
	w := NewWriter()
	mustAdd(t, w, "blk.0.attn_q.weight", TypeIQ2_XXS, []int64{256}, make([]byte, 66))
	f, err := Parse(writeBuf(t, w), "iq2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.TensorFloat32("blk.0.attn_q.weight")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `tensor "blk.0.attn_q.weight"`) ||
		!strings.Contains(err.Error(), "unsupported type") || !strings.Contains(err.Error(), "iq2_xxs") {
		t.Errorf("got %v", err)
	}
}
