package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxNameLen is one more than the longest tensor name ggml accepts
// (GGML_MAX_NAME = 64, including the terminating NUL).
const MaxNameLen = 64

// Writer builds a GGUF file in the layout ggml's gguf_write_to_file and
// gguf-py produce: header, metadata in the order it was set, tensor infos in
// the order tensors were added, zero padding to the alignment, then each
// tensor's data padded with zeros to the alignment. The output depends only
// on the calls made, so it is deterministic.
//
// The alignment is general.alignment when that key is set (it must be a u32
// power of two), 32 otherwise.
type Writer struct {
	version uint32
	kv      []KV
	kvIdx   map[string]int
	tensors []wtensor
	tIdx    map[string]int
	err     error
}

type wtensor struct {
	info TensorInfo
	data []byte
}

// NewWriter returns an empty GGUF v3 writer.
func NewWriter() *Writer {
	return &Writer{version: 3, kvIdx: map[string]int{}, tIdx: map[string]int{}}
}

// SetVersion selects the GGUF version written, 2 or 3 (the default). The two
// differ only in the number in the header.
func (w *Writer) SetVersion(v uint32) error {
	if v != 2 && v != 3 {
		return fmt.Errorf("gguf: writer: version %d: only 2 and 3 can be written", v)
	}
	w.version = v
	return nil
}

// SetKV sets a metadata key. A new key goes after the existing ones; setting
// an existing key replaces its value in place. Invalid keys or values are
// reported by WriteTo.
func (w *Writer) SetKV(key string, v Value) {
	if i, ok := w.kvIdx[key]; ok {
		w.kv[i].Value = v
		return
	}
	w.kvIdx[key] = len(w.kv)
	w.kv = append(w.kv, KV{Key: key, Value: v})
}

// AddTensor appends a tensor of type t and shape ne (ggml order, 1 to 4
// dimensions) whose encoded bytes are data. data is not copied until WriteTo.
func (w *Writer) AddTensor(name string, t GGMLType, ne []int64, data []byte) error {
	if err := w.addTensor(name, t, ne, data); err != nil {
		return fmt.Errorf("gguf: writer: tensor %q: %w", name, err)
	}
	return nil
}

func (w *Writer) addTensor(name string, t GGMLType, ne []int64, data []byte) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) >= MaxNameLen {
		return fmt.Errorf("name is %d bytes, ggml allows at most %d", len(name), MaxNameLen-1)
	}
	if _, dup := w.tIdx[name]; dup {
		return fmt.Errorf("%w: added twice", ErrDuplicate)
	}
	if !t.Known() {
		return fmt.Errorf("%w: %s", ErrUnknownType, t)
	}
	if len(ne) < 1 || len(ne) > MaxDims {
		return fmt.Errorf("%d dimensions, want 1 to %d", len(ne), MaxDims)
	}
	info := TensorInfo{Name: name, Type: t, NDims: len(ne), Ne: [4]int64{1, 1, 1, 1}}
	for i, n := range ne {
		if n < 0 {
			return fmt.Errorf("dimension %d is negative (%d)", i, n)
		}
		info.Ne[i] = n
	}
	size, err := tensorBytes(t, info.Ne)
	if err != nil {
		return err
	}
	if uint64(len(data)) != size {
		return fmt.Errorf("%s %v needs %d bytes of data, got %d", t, ne, size, len(data))
	}
	info.Size = size
	w.tIdx[name] = len(w.tensors)
	w.tensors = append(w.tensors, wtensor{info: info, data: data})
	return nil
}

// alignment returns the alignment the file will use.
func (w *Writer) alignment() (uint64, error) {
	i, ok := w.kvIdx[KeyAlignment]
	if !ok {
		return DefaultAlignment, nil
	}
	v := w.kv[i].Value
	if v.Type() != ValUint32 {
		return 0, fmt.Errorf("%w: %s must be a u32, not %s", ErrAlignment, KeyAlignment, v.Type())
	}
	a, _ := v.Uint()
	if a == 0 || a&(a-1) != 0 {
		return 0, fmt.Errorf("%w: %s = %d is not a power of two", ErrAlignment, KeyAlignment, a)
	}
	return a, nil
}

// Layout returns the tensor infos (with their data offsets) and the data
// offset the file will have, without writing it.
func (w *Writer) Layout() (tensors []TensorInfo, dataOffset int64, err error) {
	tensors, dataOffset, _, err = w.layout()
	return tensors, dataOffset, err
}

// layout also returns the header size.
func (w *Writer) layout() (tensors []TensorInfo, dataOffset int64, header uint64, err error) {
	align, err := w.alignment()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("gguf: writer: %w", err)
	}
	header, err = w.headerSize()
	if err != nil {
		return nil, 0, 0, err
	}
	var off uint64
	for _, t := range w.tensors {
		info := t.info
		info.Offset = off
		tensors = append(tensors, info)
		off += pad(info.Size, align)
	}
	if len(w.tensors) == 0 {
		return tensors, int64(header), header, nil
	}
	return tensors, int64(pad(header, align)), header, nil
}

func pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

func (w *Writer) headerSize() (uint64, error) {
	var cw countWriter
	if err := w.writeHeader(&cw, nil); err != nil {
		return 0, err
	}
	return cw.n, nil
}

// WriteTo writes the file to out and returns the number of bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	tensors, dataOff, hdr, err := w.layout()
	if err != nil {
		return 0, err
	}
	align, _ := w.alignment()
	cw := &countWriter{w: out}
	bw := bufio.NewWriterSize(cw, 1<<16)
	if err := w.writeHeader(bw, tensors); err != nil {
		return int64(cw.n), err
	}
	if len(tensors) > 0 {
		if err := writeZeros(bw, uint64(dataOff)-hdr); err != nil {
			return int64(cw.n), fmt.Errorf("gguf: writer: %w", err)
		}
	}
	for _, t := range w.tensors {
		if _, err := bw.Write(t.data); err != nil {
			return int64(cw.n), fmt.Errorf("gguf: writer: tensor %q: %w", t.info.Name, err)
		}
		if err := writeZeros(bw, pad(t.info.Size, align)-t.info.Size); err != nil {
			return int64(cw.n), fmt.Errorf("gguf: writer: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return int64(cw.n), fmt.Errorf("gguf: writer: %w", err)
	}
	return int64(cw.n), nil
}

func writeZeros(w io.Writer, n uint64) error {
	var zeros [64]byte
	for n > 0 {
		k := min(n, uint64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// writeHeader writes magic, counts, metadata and tensor infos. tensors may be
// nil when only the size is wanted (offsets do not change the size).
func (w *Writer) writeHeader(out io.Writer, tensors []TensorInfo) error {
	e := &encoder{w: out}
	e.bytes([]byte(Magic))
	e.u32(w.version)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kv)))
	for _, kv := range w.kv {
		if kv.Key == "" {
			return errors.New("gguf: writer: empty metadata key")
		}
		if err := kv.Value.validate(); err != nil {
			return fmt.Errorf("gguf: writer: key %q: %w", kv.Key, err)
		}
		e.str(kv.Key)
		e.u32(uint32(kv.Value.Type()))
		e.value(kv.Value)
	}
	for i, t := range w.tensors {
		info := t.info
		if tensors != nil {
			info = tensors[i]
		}
		e.str(info.Name)
		e.u32(uint32(info.NDims))
		for _, n := range info.Ne[:info.NDims] {
			e.u64(uint64(n))
		}
		e.u32(uint32(info.Type))
		e.u64(info.Offset)
	}
	if e.err != nil {
		return fmt.Errorf("gguf: writer: %w", e.err)
	}
	return nil
}

type encoder struct {
	w   io.Writer
	buf [8]byte
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], x)
	e.bytes(e.buf[:4])
}

func (e *encoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], x)
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

// value writes v's payload (its type tag is written by the caller).
func (e *encoder) value(v Value) {
	switch v.Type() {
	case ValString:
		e.str(v.str)
	case ValArray:
		a := v.arr
		e.u32(uint32(a.elem))
		e.u64(uint64(a.n))
		switch a.elem {
		case ValString:
			for _, s := range a.strs {
				e.str(s)
			}
		case ValArray:
			for _, x := range a.vals {
				e.value(x)
			}
		default:
			e.bytes(a.raw)
		}
	default:
		sz := v.Type().size()
		putBits(e.buf[:], sz, v.bits)
		e.bytes(e.buf[:sz])
	}
}

type countWriter struct {
	w io.Writer
	n uint64
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.w == nil {
		c.n += uint64(len(p))
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.n += uint64(n)
	return n, err
}
