package testref

import (
	"encoding/json"
	"fmt"
	"math"
)

// Float is a number in llama.cpp's reference JSON, where the non-finite
// values are the strings "NaN", "+Inf" and "-Inf".
type Float float64

// UnmarshalJSON reads a JSON number or one of the three strings.
func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "NaN":
			*f = Float(math.NaN())
		case "+Inf":
			*f = Float(math.Inf(1))
		case "-Inf":
			*f = Float(math.Inf(-1))
		default:
			return fmt.Errorf("bad float %q", s)
		}
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*f = Float(x)
	return nil
}
