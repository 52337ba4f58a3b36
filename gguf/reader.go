package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/irtool/irtool/internal/safeio"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// DefaultAlignment is the data alignment used when a file has no
// general.alignment key (GGUF_DEFAULT_ALIGNMENT).
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides DefaultAlignment. It must
// be a u32 power of two.
const KeyAlignment = "general.alignment"

// MaxDims is the largest number of dimensions a tensor may have
// (GGML_MAX_DIMS).
const MaxDims = 4

// maxNesting bounds how deeply arrays of arrays may nest, so a hostile file
// cannot drive the decoder's recursion arbitrarily deep.
const maxNesting = 16

// Classes of malformed input. Errors returned by Parse and Open wrap one of
// these (test with errors.Is) inside a *FormatError that says where and why.
var (
	ErrTruncated    = errors.New("truncated file")
	ErrBadMagic     = errors.New("not a GGUF file")
	ErrVersion      = errors.New("unsupported GGUF version")
	ErrTooLarge     = errors.New("count or length larger than the file can hold")
	ErrBadValue     = errors.New("malformed metadata")
	ErrDuplicate    = errors.New("duplicate name")
	ErrBadTensor    = errors.New("malformed tensor info")
	ErrUnknownType  = errors.New("unknown ggml type")
	ErrOverflow     = errors.New("size overflow")
	ErrAlignment    = errors.New("bad alignment")
	ErrOutOfBounds  = errors.New("tensor data out of bounds")
	ErrOverlap      = errors.New("overlapping tensor data")
	ErrInternal     = errors.New("internal error")
	ErrClosed       = errors.New("file is closed")
	ErrNoTensor     = errors.New("no such tensor")
	ErrUnsupported  = errors.New("unsupported type")
	errShortDequant = errors.New("source too short")
)

// FormatError describes why a file is not valid GGUF. Err is one of the
// Err* classes above.
type FormatError struct {
	File   string // the path given to Open or the name given to Parse
	Offset int64  // byte offset at which the problem was found
	Msg    string // what is wrong, naming the key or tensor at fault
	Err    error  // the class of problem
}

// Error names the file, the problem and the byte offset where it was found.
func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s: %s (at byte %d)", e.File, e.Msg, e.Offset)
}

// Unwrap returns the class of the problem.
func (e *FormatError) Unwrap() error { return e.Err }

// KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string
	Type   GGMLType
	NDims  int      // dimensions stored in the file (0..4)
	Ne     [4]int64 // elements per dimension in ggml order (ne[0] innermost), padded with 1
	Offset uint64   // byte offset of the data relative to File.DataOffset
	Size   uint64   // bytes of data
}

// NElements returns the number of elements (the product of Ne).
func (t *TensorInfo) NElements() int64 {
	return t.Ne[0] * t.Ne[1] * t.Ne[2] * t.Ne[3]
}

// Shape returns the first max(NDims, 1) dimensions of Ne.
func (t *TensorInfo) Shape() []int64 {
	return append([]int64(nil), t.Ne[:max(t.NDims, 1)]...)
}

// File is a parsed GGUF file. Metadata and tensor infos are ordinary Go
// values that outlive Close; tensor data are slices of the file's bytes
// (memory-mapped by Open) and are valid only until Close.
//
// The exported slices must be treated as read-only. All methods except
// Close may be called from several goroutines at once.
type File struct {
	Name       string // path given to Open, or name given to Parse
	Version    uint32 // 2 or 3
	Alignment  uint64 // data alignment: general.alignment or 32
	DataOffset int64  // start of the tensor data section in the file
	Size       int64  // size of the file in bytes
	KV         []KV
	Tensors    []TensorInfo

	data    []byte
	unmap   func() error
	closed  bool
	kvIdx   map[string]int
	tensIdx map[string]int
}

// Open memory-maps the GGUF file at path (reading it into memory where
// mapping is unavailable) and parses it. Close releases the mapping.
//
// Open does not trust the path to be a regular file: it refuses
// directories, does not block on a FIFO without a writer, and reads any
// other non-regular file (a pipe such as /dev/stdin, a FIFO, a device)
// as a stream: the magic is checked on the first 4 bytes, then exactly as
// many bytes are read as the header's counts require, up to MaxStreamBytes,
// with a deadline on each read (see ReadStream).
func Open(path string) (*File, error) {
	in, err := safeio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer in.Close()
	if !in.Regular() {
		return readStream(in, safeio.Limits{MaxBytes: MaxStreamBytes})
	}
	data, unmap, err := mapFile(in.File)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f, err := Parse(data, path)
	if err != nil {
		if unmap != nil {
			_ = unmap()
		}
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

// Parse parses a GGUF file held in memory (an embedded model, a fuzz input).
// The tensor data slices alias data, which must not change afterwards. name
// is used in error messages.
//
// Parse never panics and allocates no more than a small multiple of
// len(data): every count and length is checked against the bytes left
// before anything is allocated for it.
func Parse(data []byte, name string) (f *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f = nil
			err = &FormatError{File: name, Msg: fmt.Sprintf("parser panic: %v", r), Err: ErrInternal}
		}
	}()
	d := &decoder{data: data, name: name, limit: len(data)}
	return d.parse()
}

// Mapped reports whether the file's data is a memory mapping of the file
// (Open of a regular file), rather than bytes held in memory (a stream
// such as a pipe, a Parse, or a file the kernel would not map).
func (f *File) Mapped() bool { return f != nil && f.unmap != nil }

// Close releases the file's memory mapping. Tensor data slices obtained
// earlier must not be used afterwards. Close is idempotent.
func (f *File) Close() error {
	if f == nil || f.closed {
		return nil
	}
	f.closed = true
	f.data = nil
	if f.unmap != nil {
		u := f.unmap
		f.unmap = nil
		if err := u(); err != nil {
			return fmt.Errorf("gguf: %s: unmap: %w", f.Name, err)
		}
	}
	return nil
}

// Tensor returns the info of the tensor called name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensIdx[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of the tensor called name, without copying.
// The slice aliases the file (read-only) and is valid until Close.
func (f *File) TensorData(name string) ([]byte, error) {
	i, ok := f.tensIdx[name]
	if !ok {
		return nil, fmt.Errorf("gguf: %s: tensor %q: %w", f.Name, name, ErrNoTensor)
	}
	return f.tensorData(&f.Tensors[i])
}

func (f *File) tensorData(t *TensorInfo) ([]byte, error) {
	if f.closed {
		return nil, fmt.Errorf("gguf: %s: tensor %q: %w", f.Name, t.Name, ErrClosed)
	}
	start := uint64(f.DataOffset) + t.Offset
	end := start + t.Size
	if end < start || end > uint64(len(f.data)) {
		return nil, fmt.Errorf("gguf: %s: tensor %q: %w", f.Name, t.Name, ErrOutOfBounds)
	}
	return f.data[start:end:end], nil
}

// TensorFloat32 dequantises the tensor called name into a new []float32 of
// NElements values. Types Dequantize does not handle give an error wrapping
// ErrUnsupported that names the tensor.
func (f *File) TensorFloat32(name string) ([]float32, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gguf: %s: tensor %q: %w", f.Name, name, ErrNoTensor)
	}
	if !CanDequantize(t.Type) {
		return nil, fmt.Errorf("gguf: tensor %q: dequantize %s: %w", name, t.Type, ErrUnsupported)
	}
	src, err := f.tensorData(t)
	if err != nil {
		return nil, err
	}
	dst := make([]float32, t.NElements())
	if err := Dequantize(t.Type, src, dst); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return dst, nil
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIdx[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// GetString returns a string value.
func (f *File) GetString(key string) (string, bool) {
	v, ok := f.Get(key)
	if !ok {
		return "", false
	}
	return v.Str()
}

// GetUint returns a value of any integer type that is non-negative.
func (f *File) GetUint(key string) (uint64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return v.Uint()
}

// GetInt returns a value of any integer type that fits in an int64.
func (f *File) GetInt(key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return v.Int()
}

// GetFloat returns an f32 or f64 value.
func (f *File) GetFloat(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return v.Float()
}

// GetBool returns a bool value.
func (f *File) GetBool(key string) (bool, bool) {
	v, ok := f.Get(key)
	if !ok {
		return false, false
	}
	return v.Bool()
}

// GetStrings returns a string array (a copy).
func (f *File) GetStrings(key string) ([]string, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	return v.Strings()
}

// GetFloat32s returns an f32 (or f64) array as float32s.
func (f *File) GetFloat32s(key string) ([]float32, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	return v.Float32s()
}

// GetInt32s returns an array of any integer type converted to int32s; ok is
// false if an element does not fit.
func (f *File) GetInt32s(key string) ([]int32, bool) {
	v, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	return v.Int32s()
}

// Arch returns general.architecture ("llama", "qwen2", ...), or "".
func (f *File) Arch() string {
	s, _ := f.GetString("general.architecture")
	return s
}

// decoder reads a GGUF header with every length checked against the bytes
// that remain.
//
// When partial is set, data is only the prefix read so far of a stream that
// may be up to limit bytes long: a read past the end of data that could
// still fit returns a *needMore saying how many bytes the stream must
// supply, and every count is checked against limit instead of len(data).
type decoder struct {
	data    []byte
	off     int
	name    string
	partial bool
	limit   int // the largest the whole input may be (len(data) unless partial)
}

// needMore is returned by a partial decoder that ran out of data: the input
// must have at least total bytes to be decoded further. header is true
// while the header is being read (the stream reader then reads ahead).
type needMore struct {
	total  int
	header bool
}

func (e *needMore) Error() string { return fmt.Sprintf("gguf: need %d bytes", e.total) }

// left is the number of bytes after the read position that the input may
// hold: those read so far, or up to the limit of a partial input.
func (d *decoder) left() int {
	if d.partial {
		return d.limit - d.off
	}
	return len(d.data) - d.off
}

// need makes a partial decoder fetch n bytes (already checked to fit in the
// limit) before it allocates anything sized by them.
func (d *decoder) need(n uint64) error {
	if d.partial && n > uint64(len(d.data)-d.off) {
		return &needMore{total: d.off + int(n), header: true}
	}
	return nil
}

func (d *decoder) errf(class error, format string, args ...any) error {
	return &FormatError{File: d.name, Offset: int64(d.off), Msg: fmt.Sprintf(format, args...), Err: class}
}

// take returns the next n bytes, or ErrTruncated naming what was being read.
func (d *decoder) take(n int, what func() string) ([]byte, error) {
	if d.partial && n >= 0 && n > len(d.data)-d.off && n <= d.left() {
		return nil, &needMore{total: d.off + n, header: true}
	}
	if n < 0 || n > d.left() {
		return nil, d.errf(ErrTruncated, "truncated: %s needs %d bytes, %d left", what(), n, d.left())
	}
	b := d.data[d.off : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) u32(what func() string) (uint32, error) {
	b, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what func() string) (uint64, error) {
	b, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (d *decoder) str(what func() string) (string, error) {
	n, err := d.u64(func() string { return "length of " + what() })
	if err != nil {
		return "", err
	}
	if n > maxCount {
		return "", d.errf(ErrTooLarge, "%s: string length %d exceeds ggml's limit of %d", what(), n, maxCount)
	}
	if n > uint64(d.left()) {
		return "", d.errf(ErrTruncated, "truncated: %s: string length %d exceeds the %d bytes left", what(), n, d.left())
	}
	b, err := d.take(int(n), what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func fixed(s string) func() string { return func() string { return s } }

// maxCount is ggml's limit on string lengths and array element counts
// (GGUF_MAX_STRING_LENGTH, GGUF_MAX_ARRAY_ELEMENTS).
const maxCount = 1 << 30

// Minimum encoded sizes, used to bound counts before allocating.
const (
	minKVBytes     = 8 + 1 + 4 + 1 // key length, 1-byte key, type, 1-byte value
	minTensorBytes = 8 + 1 + 4 + 4 + 8
	minArrayBytes  = 4 + 8 // element type and count of a nested array
)

func (d *decoder) parse() (*File, error) {
	f, nTensors, nKV, err := d.header()
	if err != nil {
		return nil, err
	}
	// Allocate only for bytes a stream has actually supplied.
	if err := d.need(nTensors*minTensorBytes + nKV*minKVBytes); err != nil {
		return nil, err
	}
	if err := d.metadata(f, nKV); err != nil {
		return nil, err
	}
	if err := d.alignment(f); err != nil {
		return nil, err
	}

	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensIdx = make(map[string]int, nTensors)
	for i := range int(nTensors) {
		t, err := d.tensorInfo(i, f.tensIdx)
		if err != nil {
			return nil, err
		}
		f.tensIdx[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}

	headerEnd := uint64(d.off)
	if nTensors == 0 {
		f.DataOffset = int64(headerEnd)
		return f, nil
	}
	dataOff := (headerEnd + f.Alignment - 1) / f.Alignment * f.Alignment
	if dataOff > uint64(d.limit) {
		return nil, d.errf(ErrTruncated, "truncated: the data section would start at byte %d, past the end of the file (%d bytes)", dataOff, d.limit)
	}
	f.DataOffset = int64(dataOff)
	if err := d.checkLayout(f); err != nil {
		return nil, err
	}
	return f, nil
}

// header reads the magic, the version and the tensor and metadata key
// counts, which must fit in the bytes left.
func (d *decoder) header() (f *File, nTensors, nKV uint64, err error) {
	if d.partial && len(d.data) < 4 && d.limit >= 4 {
		return nil, 0, 0, &needMore{total: 4, header: true}
	}
	if len(d.data) < 4 {
		if strings.HasPrefix(Magic, string(d.data)) {
			return nil, 0, 0, d.errf(ErrTruncated, "truncated: %d bytes, too short for a GGUF header", len(d.data))
		}
		return nil, 0, 0, d.errf(ErrBadMagic, "not a GGUF file: %d bytes, without the magic %q", len(d.data), Magic)
	}
	if string(d.data[:4]) != Magic {
		// The bytes found are not echoed: the file may be anything
		// (a path in an IR's meta weights names a file of the user's).
		return nil, 0, 0, d.errf(ErrBadMagic, "not a GGUF file (its first 4 bytes are not the magic %q)", Magic)
	}
	d.off = 4
	f = &File{Name: d.name, Size: int64(len(d.data)), data: d.data}
	if f.Version, err = d.u32(fixed("version")); err != nil {
		return nil, 0, 0, err
	}
	switch v := f.Version; {
	case v == 1:
		return nil, 0, 0, d.errf(ErrVersion, "GGUF v1 is not supported (only v2 and v3 are); convert the file with a current llama.cpp")
	case v == 0 || v&0xFFFF == 0:
		return nil, 0, 0, d.errf(ErrVersion, "version %d (%#08x): a big-endian file or a corrupt header", v, v)
	case v > 3:
		return nil, 0, 0, d.errf(ErrVersion, "version %d is newer than v3, the latest this reader knows", v)
	}
	nTensors, err = d.u64(fixed("tensor count"))
	if err != nil {
		return nil, 0, 0, err
	}
	nKV, err = d.u64(fixed("metadata key count"))
	if err != nil {
		return nil, 0, 0, err
	}
	left := uint64(d.left())
	if nTensors > left/minTensorBytes || nKV > left/minKVBytes ||
		nTensors*minTensorBytes+nKV*minKVBytes > left {
		return nil, 0, 0, d.errf(ErrTooLarge, "%d tensors and %d metadata keys cannot fit in the %d bytes left", nTensors, nKV, left)
	}
	return f, nTensors, nKV, nil
}

// metadata reads nKV metadata key-value pairs into f.KV.
func (d *decoder) metadata(f *File, nKV uint64) error {
	f.KV = make([]KV, 0, nKV)
	f.kvIdx = make(map[string]int, nKV)
	for i := range int(nKV) {
		key, err := d.str(func() string { return fmt.Sprintf("metadata key %d", i) })
		if err != nil {
			return err
		}
		if key == "" {
			return d.errf(ErrBadValue, "metadata key %d is empty", i)
		}
		if _, dup := f.kvIdx[key]; dup {
			return d.errf(ErrDuplicate, "duplicate metadata key %q", key)
		}
		t, err := d.u32(func() string { return fmt.Sprintf("type of key %q", key) })
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(t), key, 0)
		if err != nil {
			return err
		}
		f.kvIdx[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	return nil
}

// alignment sets f.Alignment from general.alignment, a u32 power of two,
// or the default.
func (d *decoder) alignment(f *File) error {
	f.Alignment = DefaultAlignment
	if v, ok := f.Get(KeyAlignment); ok {
		if v.Type() != ValUint32 {
			return d.errf(ErrAlignment, "%s must be a u32, not %s", KeyAlignment, v.Type())
		}
		a, _ := v.Uint()
		if a == 0 || a&(a-1) != 0 {
			return d.errf(ErrAlignment, "%s = %d is not a power of two", KeyAlignment, a)
		}
		f.Alignment = a
	}
	return nil
}

// value decodes one value of type t (for key, in errors).
func (d *decoder) value(t ValueType, key string, depth int) (Value, error) {
	what := func() string { return fmt.Sprintf("value of key %q", key) }
	switch t {
	case ValString:
		s, err := d.str(what)
		if err != nil {
			return Value{}, err
		}
		return Value{tag: tagOf(ValString), str: s}, nil
	case ValArray:
		return d.arrayValue(key, depth)
	}
	if !t.Valid() {
		return Value{}, d.errf(ErrBadValue, "key %q has invalid value type %d", key, uint32(t))
	}
	b, err := d.take(t.size(), what)
	if err != nil {
		return Value{}, err
	}
	return Value{tag: tagOf(t), bits: readBits(b, t.size())}, nil
}

func (d *decoder) arrayValue(key string, depth int) (Value, error) {
	if depth >= maxNesting {
		return Value{}, d.errf(ErrBadValue, "key %q: arrays nested more than %d deep", key, maxNesting)
	}
	et, err := d.u32(func() string { return fmt.Sprintf("array type of key %q", key) })
	if err != nil {
		return Value{}, err
	}
	elem := ValueType(et)
	if !elem.Valid() {
		return Value{}, d.errf(ErrBadValue, "key %q: array of invalid value type %d", key, et)
	}
	n, err := d.u64(func() string { return fmt.Sprintf("array length of key %q", key) })
	if err != nil {
		return Value{}, err
	}
	minSize := uint64(elem.size())
	switch elem {
	case ValString:
		minSize = 8
	case ValArray:
		minSize = minArrayBytes
	}
	if n > maxCount {
		return Value{}, d.errf(ErrTooLarge, "key %q: array of %d %s exceeds ggml's limit of %d elements", key, n, elem, maxCount)
	}
	if n > uint64(d.left())/minSize {
		return Value{}, d.errf(ErrTruncated, "truncated: key %q: array of %d %s needs at least %d bytes, %d left", key, n, elem, n*minSize, d.left())
	}
	if err := d.need(n * minSize); err != nil {
		return Value{}, err
	}
	a := &array{elem: elem, n: int(n)}
	switch elem {
	case ValString:
		a.strs = make([]string, n)
		for i := range a.strs {
			if a.strs[i], err = d.str(func() string { return fmt.Sprintf("element %d of key %q", i, key) }); err != nil {
				return Value{}, err
			}
		}
	case ValArray:
		a.vals = make([]Value, n)
		for i := range a.vals {
			if a.vals[i], err = d.arrayValue(key, depth+1); err != nil {
				return Value{}, err
			}
		}
	default:
		b, err := d.take(int(n)*elem.size(), fixed("array elements"))
		if err != nil {
			return Value{}, err
		}
		a.raw = append([]byte(nil), b...)
	}
	return Value{tag: tagOf(ValArray), arr: a}, nil
}

func (d *decoder) tensorInfo(i int, seen map[string]int) (TensorInfo, error) {
	var t TensorInfo
	name, err := d.str(func() string { return fmt.Sprintf("name of tensor %d", i) })
	if err != nil {
		return t, err
	}
	if name == "" {
		return t, d.errf(ErrBadTensor, "tensor %d has an empty name", i)
	}
	if _, dup := seen[name]; dup {
		return t, d.errf(ErrDuplicate, "duplicate tensor name %q", name)
	}
	t.Name = name
	what := func(s string) func() string { return func() string { return fmt.Sprintf("%s of tensor %q", s, name) } }
	nd, err := d.u32(what("dimension count"))
	if err != nil {
		return t, err
	}
	if nd > MaxDims {
		return t, d.errf(ErrBadTensor, "tensor %q has %d dimensions, at most %d are allowed", name, nd, MaxDims)
	}
	t.NDims = int(nd)
	t.Ne = [4]int64{1, 1, 1, 1}
	for j := range t.NDims {
		n, err := d.u64(what(fmt.Sprintf("dimension %d", j)))
		if err != nil {
			return t, err
		}
		if n > math.MaxInt64 {
			return t, d.errf(ErrBadTensor, "tensor %q: dimension %d is negative (%d)", name, j, int64(n))
		}
		t.Ne[j] = int64(n)
	}
	elems := uint64(1)
	for _, n := range t.Ne {
		if n != 0 && elems > math.MaxInt64/uint64(n) {
			return t, d.errf(ErrOverflow, "tensor %q: shape %v has more than 2^63 elements", name, t.Ne)
		}
		elems *= uint64(n)
	}
	ty, err := d.u32(what("type"))
	if err != nil {
		return t, err
	}
	t.Type = GGMLType(ty)
	if !t.Type.Known() {
		return t, d.errf(ErrUnknownType, "tensor %q has unknown ggml type id %d (%s)", name, ty, t.Type)
	}
	if bs := int64(t.Type.BlockSize()); t.Ne[0]%bs != 0 {
		return t, d.errf(ErrBadTensor, "tensor %q: row length %d is not a multiple of the %s block size %d", name, t.Ne[0], t.Type, bs)
	}
	if t.Size, err = tensorBytes(t.Type, t.Ne); err != nil {
		return t, d.errf(ErrOverflow, "tensor %q: %v", name, err)
	}
	if t.Offset, err = d.u64(what("data offset")); err != nil {
		return t, err
	}
	return t, nil
}

// checkLayout verifies that every tensor's data is aligned, inside the file
// and disjoint from every other tensor's.
func (d *decoder) checkLayout(f *File) error {
	dataLen := uint64(d.limit) - uint64(f.DataOffset)
	d.off = int(f.DataOffset)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return d.errf(ErrAlignment, "tensor %q: data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > dataLen || t.Size > dataLen-t.Offset {
			return d.errf(ErrOutOfBounds, "tensor %q: data [%d, %d+%d) extends past the end of the file (data section is %d bytes)", t.Name, t.Offset, t.Offset, t.Size, dataLen)
		}
	}
	order := make([]int, 0, len(f.Tensors))
	for i := range f.Tensors {
		if f.Tensors[i].Size > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, q := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if q.Offset < p.Offset+p.Size {
			return d.errf(ErrOverlap, "tensor %q (bytes %d..%d) overlaps tensor %q (bytes %d..%d)", q.Name, q.Offset, q.Offset+q.Size, p.Name, p.Offset, p.Offset+p.Size)
		}
	}
	if d.partial {
		// The header is complete: the stream must now supply exactly the
		// data the tensors occupy, no more.
		end := uint64(f.DataOffset)
		for i := range f.Tensors {
			end = max(end, uint64(f.DataOffset)+f.Tensors[i].Offset+f.Tensors[i].Size)
		}
		if end > uint64(len(d.data)) {
			return &needMore{total: int(end)}
		}
	}
	return nil
}
