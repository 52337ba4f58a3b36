package gguf

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/irtool/irtool/internal/testref"
)

// countingReader counts the bytes it hands out.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// endless yields the byte b forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

func sameStream(t *testing.T, a, b *File) {
	t.Helper()
	if a.Version != b.Version || a.Alignment != b.Alignment || a.DataOffset != b.DataOffset {
		t.Fatalf("header differs: %+v vs %+v", a, b)
	}
	if !reflect.DeepEqual(a.Tensors, b.Tensors) || len(a.KV) != len(b.KV) {
		t.Fatal("tensors or metadata differ")
	}
	for i := range a.KV {
		if a.KV[i].Key != b.KV[i].Key || a.KV[i].Value.String() != b.KV[i].Value.String() {
			t.Fatalf("key %d differs", i)
		}
	}
	for _, ti := range a.Tensors {
		x, _ := a.TensorData(ti.Name)
		y, err := b.TensorData(ti.Name)
		if err != nil || !bytes.Equal(x, y) {
			t.Fatalf("tensor %q data differs (%v)", ti.Name, err)
		}
	}
}

// TestReadStreamMatchesParse reads real files through readers that return
// a few bytes at a time and checks the result is Parse's.
func TestReadStreamMatchesParse(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "synth-llama-Q4_0.gguf"} {
		b, err := os.ReadFile(testref.Testdata(name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := Parse(b, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []io.Reader{bytes.NewReader(b), iotest.HalfReader(bytes.NewReader(b)), iotest.DataErrReader(bytes.NewReader(b))} {
			c := &countingReader{r: r}
			got, err := ReadStream(c, name, StreamLimits{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameStream(t, want, got)
			if c.n > len(b) {
				t.Errorf("%s: read %d bytes of %d", name, c.n, len(b))
			}
		}
	}
}

// TestReadStreamPrefixes: every prefix of a file read as a stream fails
// with the same error as Parse of that prefix.
func TestReadStreamPrefixes(t *testing.T) {
	b := baseFile(t)
	for n := range len(b) {
		_, want := Parse(b[:n:n], "prefix")
		_, got := ReadStream(iotest.OneByteReader(bytes.NewReader(b[:n])), "prefix", StreamLimits{})
		if want == nil || got == nil || want.Error() != got.Error() {
			t.Fatalf("prefix of %d bytes: stream error %v, Parse error %v", n, got, want)
		}
	}
}

// TestReadStreamBounded: a hostile stream is refused after a bounded read,
// sized by the header's own counts and the limit, never by the stream.
func TestReadStreamBounded(t *testing.T) {
	const limit = 1 << 20
	for _, c := range []struct {
		name  string
		r     io.Reader
		most  int // bytes the reader may hand out
		class error
	}{
		{"zeros", endless(0), 4, ErrBadMagic},
		{"absurd counts", io.MultiReader(bytes.NewReader(header(1<<40, 1<<40)), endless(0)), 64 << 10, ErrTooLarge},
		{"string past the limit", io.MultiReader(bytes.NewReader(raw(header(0, 1), u64(limit))), endless('a')), 64 << 10, ErrTruncated},
		{"string within the limit, endless", io.MultiReader(bytes.NewReader(raw(header(0, 1), u64(limit/2))), endless('a')), limit, ErrBadValue},
		{"array of 2^29 u8 (the limit holds 2^20)", io.MultiReader(bytes.NewReader(raw(header(0, 1), str("k"), u32(ValArray), u32(ValUint8), u64(1<<29))), endless(0)), 64 << 10, ErrTruncated},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := &countingReader{r: c.r}
			_, err := ReadStream(cr, c.name, StreamLimits{MaxBytes: limit})
			if !errors.Is(err, c.class) {
				t.Fatalf("err %v, want %v", err, c.class)
			}
			if cr.n > c.most {
				t.Errorf("read %d bytes, want at most %d", cr.n, c.most)
			}
		})
	}
	// A valid file followed by junk: only the file (and the header's
	// read-ahead) is read.
	b := baseFile(t)
	cr := &countingReader{r: io.MultiReader(bytes.NewReader(b), endless(0xee))}
	f, err := ReadStream(cr, "base+junk", StreamLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Parse(b, "base")
	sameStream(t, want, f)
	if cr.n > max(2*len(b), 64<<10) {
		t.Errorf("read %d bytes for a %d-byte file", cr.n, len(b))
	}
}
