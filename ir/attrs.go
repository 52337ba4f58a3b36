package ir

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Attrs are an op's static parameters. Values are int64, float64, bool,
// string, []int64, []float64 or Dim; the text format prints them sorted by key.
type Attrs map[string]any

// Clone returns a deep copy.
func (a Attrs) Clone() Attrs {
	if a == nil {
		return nil
	}
	out := make(Attrs, len(a))
	for k, v := range a {
		switch x := v.(type) {
		case []int64:
			out[k] = append([]int64(nil), x...)
		case []float64:
			out[k] = append([]float64(nil), x...)
		default:
			out[k] = v
		}
	}
	return out
}

// Keys returns the keys in sorted order.
func (a Attrs) Keys() []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Int returns an integer attribute.
func (a Attrs) Int(key string) (int64, bool) {
	v, ok := a[key].(int64)
	return v, ok
}

// Float returns a float attribute (an integer attribute converts).
func (a Attrs) Float(key string) (float64, bool) {
	switch v := a[key].(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// Ints returns an integer-list attribute.
func (a Attrs) Ints(key string) ([]int64, bool) {
	v, ok := a[key].([]int64)
	return v, ok
}

// Str returns a string attribute.
func (a Attrs) Str(key string) (string, bool) {
	v, ok := a[key].(string)
	return v, ok
}

// Bool returns a boolean attribute.
func (a Attrs) Bool(key string) (bool, bool) {
	v, ok := a[key].(bool)
	return v, ok
}

// Dim returns a dimension-valued attribute (an integer converts).
func (a Attrs) Dim(key string) (Dim, bool) {
	switch v := a[key].(type) {
	case Dim:
		return v, true
	case int64:
		return C(v), true
	}
	return Dim{}, false
}

// floatOr returns a float attribute (an integer converts), def when absent:
// the typed accessors of the op families (Attrs.Eps, Attrs.Rope, ...) read
// through it, so that each default is written once, with its op.
func (a Attrs) floatOr(key string, def float64) float64 {
	if v, ok := a.Float(key); ok {
		return v
	}
	return def
}

// intOr returns an integer attribute, def when absent.
func (a Attrs) intOr(key string, def int64) int64 {
	if v, ok := a.Int(key); ok {
		return v
	}
	return def
}

// Equal compares two attribute sets.
func (a Attrs) Equal(b Attrs) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || formatAttr(v) != formatAttr(w) {
			return false
		}
	}
	return true
}

// String prints the attributes as the text format writes them, without braces.
func (a Attrs) String() string {
	var b strings.Builder
	for i, k := range a.Keys() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(formatAttr(a[k]))
	}
	return b.String()
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func formatAttr(v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return strconv.Quote(x)
	case Dim:
		// A bare constant would read back as an int64, and a symbol spelt
		// like a keyword as that keyword.
		switch {
		case x.IsConst(), x.Sym == "true", x.Sym == "false", x.Sym == "inf", x.Sym == "nan":
			return "dim(" + x.String() + ")"
		}
		return x.String()
	case []int64:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = strconv.FormatInt(e, 10)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatFloat(e)
		}
		return "f[" + strings.Join(parts, ",") + "]"
	default:
		return fmt.Sprintf("?%T", v)
	}
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// parseAttr parses one attribute value as formatAttr prints it.
func parseAttr(s string) (any, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, fmt.Errorf("empty attribute value")
	case s == "true" || s == "false":
		return s == "true", nil
	case s[0] == '"':
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("bad string %s", s)
		}
		return v, nil
	case strings.HasPrefix(s, "f["):
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("bad float list %s", s)
		}
		var out []float64
		for _, p := range splitTop(s[2 : len(s)-1]) {
			f, err := parseFloat(p)
			if err != nil {
				return nil, fmt.Errorf("bad float %q in list", p)
			}
			out = append(out, f)
		}
		if out == nil {
			out = []float64{}
		}
		return out, nil
	case s[0] == '[':
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("bad int list %s", s)
		}
		var out []int64
		for _, p := range splitTop(s[1 : len(s)-1]) {
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad integer %q in list", p)
			}
			out = append(out, v)
		}
		if out == nil {
			out = []int64{}
		}
		return out, nil
	case strings.HasPrefix(s, "dim(") && strings.HasSuffix(s, ")"):
		return ParseDim(s[4 : len(s)-1])
	case s == "inf" || s == "-inf" || s == "nan" || s == "+inf":
		return parseFloat(s)
	case s[0] == '-' || s[0] == '+' || s[0] >= '0' && s[0] <= '9' || s[0] == '.':
		if strings.ContainsAny(s, ".eE") {
			f, err := parseFloat(s)
			if err != nil {
				return nil, fmt.Errorf("bad number %q", s)
			}
			return f, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", s)
		}
		return v, nil
	default:
		d, err := ParseDim(s)
		if err != nil {
			return nil, fmt.Errorf("bad attribute value %q", s)
		}
		return d, nil
	}
}
