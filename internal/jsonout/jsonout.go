// Package jsonout writes irtool's JSON documents: indented by two spaces,
// fields in the order of the Go structs (stable output), HTML characters
// unescaped, and always valid JSON, with NaN and infinities as null
// (Float) and an {"error": ...} object when a value cannot be encoded.
package jsonout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Write writes v as JSON indented by two spaces with a trailing newline.
// Field order is that of the Go structs, so output is stable; HTML
// characters are not escaped.
//
// The output is valid JSON even when v cannot be encoded (a NaN that
// escaped the non-finite checks): an object {"error": "..."} is written
// instead, and the error is returned.
func Write(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		_ = enc.Encode(struct {
			Error string `json:"error"`
		}{err.Error()})
		if _, werr := w.Write(buf.Bytes()); werr != nil {
			return fmt.Errorf("writing JSON: %w", werr)
		}
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// Float is a float32 that encodes NaN and infinities as null (JSON has
// no spelling for them); the document says why in an error field.
type Float float32

// MarshalJSON writes the value as encoding/json writes a float32, or null.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float32(f))
}

// Floats converts rows of logits to Float rows, reporting whether any
// value was not finite.
func Floats(rows [][]float32) (out [][]Float, nonFinite bool) {
	out = make([][]Float, len(rows))
	for i, r := range rows {
		out[i] = make([]Float, len(r))
		for j, x := range r {
			out[i][j] = Float(x)
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				nonFinite = true
			}
		}
	}
	return out, nonFinite
}
