package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type tag of a GGUF metadata value (enum gguf_type).
type ValueType uint32

// The GGUF metadata value types, numbered as in the GGUF specification.
const (
	ValUint8   ValueType = 0
	ValInt8    ValueType = 1
	ValUint16  ValueType = 2
	ValInt16   ValueType = 3
	ValUint32  ValueType = 4
	ValInt32   ValueType = 5
	ValFloat32 ValueType = 6
	ValBool    ValueType = 7
	ValString  ValueType = 8
	ValArray   ValueType = 9
	ValUint64  ValueType = 10
	ValInt64   ValueType = 11
	ValFloat64 ValueType = 12

	valTypeCount = 13
)

var valTypeNames = [valTypeCount]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// valTypeSizes holds the encoded size of fixed-size types (0 for str, arr).
var valTypeSizes = [valTypeCount]int{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// String returns the short name ggml's gguf.cpp uses ("u32", "f32", "str",
// "arr", ...).
func (t ValueType) String() string {
	if t < valTypeCount {
		return valTypeNames[t]
	}
	return fmt.Sprintf("gguf_type(%d)", uint32(t))
}

// Valid reports whether t is one of the 13 GGUF value types.
func (t ValueType) Valid() bool { return t < valTypeCount }

// size returns the encoded size of a fixed-size type, 0 for str and arr.
func (t ValueType) size() int {
	if t < valTypeCount {
		return valTypeSizes[t]
	}
	return 0
}

func (t ValueType) isInt() bool {
	switch t {
	case ValUint8, ValInt8, ValUint16, ValInt16, ValUint32, ValInt32, ValUint64, ValInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == ValInt8 || t == ValInt16 || t == ValInt32 || t == ValInt64
}

// Value is one GGUF metadata value: a scalar or an array (possibly of
// arrays). The zero Value is invalid. Values are immutable; build them with
// the constructors (U32, Str, F32s, ArrayOf, ...).
//
// Scalars keep their exact bits (a bool's byte, a float's NaN payload) so a
// file read and written back is byte-identical.
type Value struct {
	tag  uint8  // the ValueType + 1; 0 marks the zero Value, which is invalid
	bits uint64 // integer, float and bool scalars: the little-endian bits
	str  string // ValString
	arr  *array // ValArray
}

// array is the payload of an array value. Fixed-size elements stay in their
// little-endian encoding (one allocation whatever the length); strings and
// nested arrays are decoded.
type array struct {
	elem ValueType
	n    int
	raw  []byte   // fixed-size elements, n*elem.size() bytes
	strs []string // ValString elements
	vals []Value  // ValArray elements
	err  error    // set by ArrayOf when the elements do not match elem
}

// Type returns the value's type (ValArray for arrays); for the zero Value
// it returns a type for which Valid is false.
func (v Value) Type() ValueType {
	if v.tag == 0 {
		return invalidType
	}
	return ValueType(v.tag - 1)
}

// invalidType is what Type returns for the zero Value.
const invalidType ValueType = 0xFFFFFFFF

func tagOf(t ValueType) uint8 {
	if !t.Valid() {
		return 0
	}
	return uint8(t) + 1
}

// IsValid reports whether v was built by a constructor or read from a file.
func (v Value) IsValid() bool {
	if !v.Type().Valid() {
		return false
	}
	if v.Type() == ValArray {
		return v.arr != nil && v.arr.err == nil
	}
	return true
}

// validate returns why v cannot be written, or nil.
func (v Value) validate() error { return v.validateDepth(0) }

func (v Value) validateDepth(depth int) error {
	if !v.Type().Valid() {
		return fmt.Errorf("invalid value type %s", v.Type())
	}
	if v.Type() != ValArray {
		return nil
	}
	if v.arr == nil {
		return fmt.Errorf("array value without elements (use a constructor)")
	}
	if v.arr.err != nil {
		return v.arr.err
	}
	if depth >= maxNesting {
		return fmt.Errorf("arrays nested more than %d deep", maxNesting)
	}
	if v.arr.elem == ValArray {
		for i, e := range v.arr.vals {
			if err := e.validateDepth(depth + 1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
	}
	return nil
}

// ElemType returns the element type of an array (0 for scalars).
func (v Value) ElemType() ValueType {
	if v.Type() == ValArray && v.arr != nil {
		return v.arr.elem
	}
	return 0
}

// Len returns the number of elements of an array, 0 for scalars.
func (v Value) Len() int {
	if v.Type() == ValArray && v.arr != nil {
		return v.arr.n
	}
	return 0
}

// Index returns element i of an array as a scalar (or array) Value.
// It returns the zero Value if v is not an array or i is out of range.
func (v Value) Index(i int) Value {
	if v.Type() != ValArray || v.arr == nil || i < 0 || i >= v.arr.n {
		return Value{}
	}
	a := v.arr
	switch a.elem {
	case ValString:
		return Value{tag: tagOf(ValString), str: a.strs[i]}
	case ValArray:
		return a.vals[i]
	}
	sz := a.elem.size()
	return Value{tag: tagOf(a.elem), bits: readBits(a.raw[i*sz:], sz)}
}

func readBits(b []byte, sz int) uint64 {
	switch sz {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// Uint returns an integer scalar as uint64; ok is false for other types and
// for negative values.
func (v Value) Uint() (uint64, bool) {
	if !v.Type().isInt() {
		return 0, false
	}
	if v.Type().isSigned() {
		i := v.signed()
		if i < 0 {
			return 0, false
		}
		return uint64(i), true
	}
	return v.bits, true
}

// Int returns an integer scalar as int64; ok is false for other types and for
// u64 values above math.MaxInt64.
func (v Value) Int() (int64, bool) {
	if !v.Type().isInt() {
		return 0, false
	}
	if v.Type().isSigned() {
		return v.signed(), true
	}
	if v.bits > math.MaxInt64 {
		return 0, false
	}
	return int64(v.bits), true
}

func (v Value) signed() int64 {
	switch v.Type() {
	case ValInt8:
		return int64(int8(v.bits))
	case ValInt16:
		return int64(int16(v.bits))
	case ValInt32:
		return int64(int32(v.bits))
	}
	return int64(v.bits)
}

// Float returns an f32 or f64 scalar as float64.
func (v Value) Float() (float64, bool) {
	switch v.Type() {
	case ValFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case ValFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Bool returns a bool scalar (any non-zero byte is true, as in ggml).
func (v Value) Bool() (bool, bool) {
	if v.Type() != ValBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string scalar.
func (v Value) Str() (string, bool) {
	if v.Type() != ValString {
		return "", false
	}
	return v.str, true
}

// Strings returns a copy of a string array's elements.
func (v Value) Strings() ([]string, bool) {
	if v.Type() != ValArray || v.arr == nil || v.arr.elem != ValString {
		return nil, false
	}
	return append([]string(nil), v.arr.strs...), true
}

// Float32s returns an f32 or f64 array as float32s.
func (v Value) Float32s() ([]float32, bool) {
	if v.Type() != ValArray || v.arr == nil {
		return nil, false
	}
	a := v.arr
	out := make([]float32, a.n)
	switch a.elem {
	case ValFloat32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.raw[4*i:]))
		}
	case ValFloat64:
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(a.raw[8*i:])))
		}
	default:
		return nil, false
	}
	return out, true
}

// Int64s returns an integer array as int64s; ok is false if the array is not
// of an integer type or a u64 element exceeds math.MaxInt64.
func (v Value) Int64s() ([]int64, bool) {
	if v.Type() != ValArray || v.arr == nil || !v.arr.elem.isInt() {
		return nil, false
	}
	out := make([]int64, v.arr.n)
	for i := range out {
		x, ok := v.Index(i).Int()
		if !ok {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// Int32s returns an integer array as int32s; ok is false if the array is not
// of an integer type or an element does not fit in an int32.
func (v Value) Int32s() ([]int32, bool) {
	if v.Type() != ValArray || v.arr == nil || !v.arr.elem.isInt() {
		return nil, false
	}
	a := v.arr
	out := make([]int32, a.n)
	if a.elem == ValInt32 { // the common case: token types
		for i := range out {
			out[i] = int32(binary.LittleEndian.Uint32(a.raw[4*i:]))
		}
		return out, true
	}
	for i := range out {
		x, ok := v.Index(i).Int()
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

// Any returns v as a plain Go value: uint8..uint64, int8..int64, float32,
// float64, bool, string, or for arrays []any (of those).
func (v Value) Any() any {
	switch v.Type() {
	case ValUint8:
		return uint8(v.bits)
	case ValInt8:
		return int8(v.bits)
	case ValUint16:
		return uint16(v.bits)
	case ValInt16:
		return int16(v.bits)
	case ValUint32:
		return uint32(v.bits)
	case ValInt32:
		return int32(v.bits)
	case ValUint64:
		return v.bits
	case ValInt64:
		return int64(v.bits)
	case ValFloat32:
		return math.Float32frombits(uint32(v.bits))
	case ValFloat64:
		return math.Float64frombits(v.bits)
	case ValBool:
		return v.bits != 0
	case ValString:
		return v.str
	case ValArray:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = v.Index(i).Any()
		}
		return out
	}
	return nil
}

// Equal reports whether v and w have the same type and the same encoded
// bits (so NaNs with equal payloads are equal, and 0 and -0 differ).
func (v Value) Equal(w Value) bool {
	if v.Type() != w.Type() {
		return false
	}
	switch v.Type() {
	case ValString:
		return v.str == w.str
	case ValArray:
		x, y := v.arr, w.arr
		if x == nil || y == nil {
			return x == y
		}
		if x.elem != y.elem || x.n != y.n {
			return false
		}
		switch x.elem {
		case ValString:
			for i := range x.strs {
				if x.strs[i] != y.strs[i] {
					return false
				}
			}
			return true
		case ValArray:
			for i := range x.vals {
				if !x.vals[i].Equal(y.vals[i]) {
					return false
				}
			}
			return true
		}
		return string(x.raw) == string(y.raw)
	}
	return v.bits == w.bits
}

// String formats v for people: scalars as Go would print them, strings
// quoted, arrays as "[n × type]" followed by up to the first 8 elements.
func (v Value) String() string {
	switch v.Type() {
	case ValString:
		return strconv.Quote(v.str)
	case ValArray:
		if v.arr == nil {
			return "[invalid array]"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "[%d × %s]", v.arr.n, v.arr.elem)
		n := min(v.arr.n, 8)
		if n > 0 {
			b.WriteString(" {")
			for i := range n {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(v.Index(i).String())
			}
			if v.arr.n > n {
				b.WriteString(", …")
			}
			b.WriteString("}")
		}
		return b.String()
	}
	if !v.Type().Valid() {
		return "<invalid>"
	}
	return fmt.Sprint(v.Any())
}

// Scalar constructors.

// U8 returns a u8 value.
func U8(x uint8) Value { return Value{tag: tagOf(ValUint8), bits: uint64(x)} }

// I8 returns an i8 value.
func I8(x int8) Value { return Value{tag: tagOf(ValInt8), bits: uint64(uint8(x))} }

// U16 returns a u16 value.
func U16(x uint16) Value { return Value{tag: tagOf(ValUint16), bits: uint64(x)} }

// I16 returns an i16 value.
func I16(x int16) Value { return Value{tag: tagOf(ValInt16), bits: uint64(uint16(x))} }

// U32 returns a u32 value.
func U32(x uint32) Value { return Value{tag: tagOf(ValUint32), bits: uint64(x)} }

// I32 returns an i32 value.
func I32(x int32) Value { return Value{tag: tagOf(ValInt32), bits: uint64(uint32(x))} }

// U64 returns a u64 value.
func U64(x uint64) Value { return Value{tag: tagOf(ValUint64), bits: x} }

// I64 returns an i64 value.
func I64(x int64) Value { return Value{tag: tagOf(ValInt64), bits: uint64(x)} }

// F32 returns an f32 value.
func F32(x float32) Value { return Value{tag: tagOf(ValFloat32), bits: uint64(math.Float32bits(x))} }

// F64 returns an f64 value.
func F64(x float64) Value { return Value{tag: tagOf(ValFloat64), bits: math.Float64bits(x)} }

// Bool returns a bool value.
func Bool(x bool) Value {
	if x {
		return Value{tag: tagOf(ValBool), bits: 1}
	}
	return Value{tag: tagOf(ValBool)}
}

// Str returns a string value.
func Str(s string) Value { return Value{tag: tagOf(ValString), str: s} }

// Array constructors. Each copies its argument.

// Strs returns an array of strings.
func Strs(xs []string) Value {
	return Value{tag: tagOf(ValArray), arr: &array{elem: ValString, n: len(xs), strs: append([]string(nil), xs...)}}
}

func fixedArray[T any](elem ValueType, xs []T, put func([]byte, T)) Value {
	sz := elem.size()
	raw := make([]byte, len(xs)*sz)
	for i, x := range xs {
		put(raw[i*sz:], x)
	}
	return Value{tag: tagOf(ValArray), arr: &array{elem: elem, n: len(xs), raw: raw}}
}

// U8s returns an array of u8.
func U8s(xs []uint8) Value {
	return fixedArray(ValUint8, xs, func(b []byte, x uint8) { b[0] = x })
}

// I8s returns an array of i8.
func I8s(xs []int8) Value {
	return fixedArray(ValInt8, xs, func(b []byte, x int8) { b[0] = uint8(x) })
}

// U16s returns an array of u16.
func U16s(xs []uint16) Value {
	return fixedArray(ValUint16, xs, func(b []byte, x uint16) { binary.LittleEndian.PutUint16(b, x) })
}

// I16s returns an array of i16.
func I16s(xs []int16) Value {
	return fixedArray(ValInt16, xs, func(b []byte, x int16) { binary.LittleEndian.PutUint16(b, uint16(x)) })
}

// U32s returns an array of u32.
func U32s(xs []uint32) Value {
	return fixedArray(ValUint32, xs, func(b []byte, x uint32) { binary.LittleEndian.PutUint32(b, x) })
}

// I32s returns an array of i32.
func I32s(xs []int32) Value {
	return fixedArray(ValInt32, xs, func(b []byte, x int32) { binary.LittleEndian.PutUint32(b, uint32(x)) })
}

// U64s returns an array of u64.
func U64s(xs []uint64) Value {
	return fixedArray(ValUint64, xs, func(b []byte, x uint64) { binary.LittleEndian.PutUint64(b, x) })
}

// I64s returns an array of i64.
func I64s(xs []int64) Value {
	return fixedArray(ValInt64, xs, func(b []byte, x int64) { binary.LittleEndian.PutUint64(b, uint64(x)) })
}

// F32s returns an array of f32.
func F32s(xs []float32) Value {
	return fixedArray(ValFloat32, xs, func(b []byte, x float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(x)) })
}

// F64s returns an array of f64.
func F64s(xs []float64) Value {
	return fixedArray(ValFloat64, xs, func(b []byte, x float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(x)) })
}

// Bools returns an array of bool.
func Bools(xs []bool) Value {
	return fixedArray(ValBool, xs, func(b []byte, x bool) {
		if x {
			b[0] = 1
		}
	})
}

// ArrayOf returns an array of elem built from values, which must all have
// type elem (arrays of arrays are allowed: elem ValArray). A mismatch makes
// an invalid Value; the Writer reports it, naming the key.
func ArrayOf(elem ValueType, values []Value) Value {
	a := &array{elem: elem, n: len(values)}
	v := Value{tag: tagOf(ValArray), arr: a}
	if !elem.Valid() {
		a.err = fmt.Errorf("ArrayOf: invalid element type %s", elem)
		return v
	}
	for i, e := range values {
		if e.Type() != elem {
			a.err = fmt.Errorf("ArrayOf: element %d has type %s, want %s", i, e.Type(), elem)
			return v
		}
	}
	switch elem {
	case ValString:
		a.strs = make([]string, len(values))
		for i, e := range values {
			a.strs[i] = e.str
		}
	case ValArray:
		a.vals = append([]Value(nil), values...)
	default:
		sz := elem.size()
		a.raw = make([]byte, len(values)*sz)
		for i, e := range values {
			putBits(a.raw[i*sz:], sz, e.bits)
		}
	}
	return v
}

func putBits(b []byte, sz int, bits uint64) {
	switch sz {
	case 1:
		b[0] = uint8(bits)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(bits))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(bits))
	default:
		binary.LittleEndian.PutUint64(b, bits)
	}
}
