package gguf

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Description is a file's structure as irtool inspect --json prints it:
// the header, every metadata value (arrays of more than 16 values by type
// and length only) and every tensor. Field order is the output order.
type Description struct {
	Version    uint32              `json:"version"`
	Alignment  uint64              `json:"alignment"`
	DataOffset int64               `json:"data_offset"`
	NKV        int                 `json:"n_kv"`
	NTensors   int                 `json:"n_tensors"`
	KV         []any               `json:"kv"`
	Tensors    []TensorDescription `json:"tensors"`
}

type scalarJSON struct {
	Key   string `json:"key,omitempty"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type arrayJSON struct {
	Key     string `json:"key,omitempty"`
	Type    string `json:"type"`
	ArrType string `json:"arr_type"`
	ArrN    int    `json:"arr_n"`
	Value   *[]any `json:"value,omitempty"`
}

// TensorDescription is one tensor of a Description: its name, type,
// dimensions (ne, innermost first), offset in the data section and size.
type TensorDescription struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Ne     [4]int64 `json:"ne"`
	Offset uint64   `json:"offset"`
	Size   uint64   `json:"size"`
}

// maxJSONArray is the longest array whose values --json prints.
const maxJSONArray = 16

// Describe returns f's structure (irtool inspect --json).
func Describe(f *File) Description {
	doc := Description{
		Version: f.Version, Alignment: f.Alignment, DataOffset: f.DataOffset,
		NKV: len(f.KV), NTensors: len(f.Tensors),
		KV: make([]any, 0, len(f.KV)), Tensors: make([]TensorDescription, 0, len(f.Tensors)),
	}
	for _, kv := range f.KV {
		doc.KV = append(doc.KV, kvJSON(kv.Key, kv.Value))
	}
	for _, t := range f.Tensors {
		doc.Tensors = append(doc.Tensors, TensorDescription{Name: t.Name, Type: t.Type.String(), Ne: t.Ne, Offset: t.Offset, Size: t.Size})
	}
	return doc
}

// kvJSON renders one value; nested arrays (key "") use the same shapes.
func kvJSON(key string, v Value) any {
	if v.Type() != ValArray {
		return scalarJSON{Key: key, Type: v.Type().String(), Value: jsonScalar(v)}
	}
	a := arrayJSON{Key: key, Type: "arr", ArrType: v.ElemType().String(), ArrN: v.Len()}
	if v.Len() <= maxJSONArray {
		vals := make([]any, v.Len())
		for i := range vals {
			e := v.Index(i)
			if e.Type() == ValArray {
				vals[i] = kvJSON("", e)
			} else {
				vals[i] = jsonScalar(e)
			}
		}
		a.Value = &vals
	}
	return a
}

// jsonScalar returns a scalar as a value encoding/json prints faithfully:
// float32 stays float32 (shortest round-trip digits) and non-finite floats
// become the strings llama.cpp's reference JSON uses.
func jsonScalar(v Value) any {
	x := v.Any()
	var f float64
	switch y := x.(type) {
	case float32:
		f = float64(y)
	case float64:
		f = y
	default:
		return x
	}
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return x
}

// llama.cpp's enum llama_ftype (general.file_type), as llama-quantize names
// the presets.
var fileTypes = map[uint64]string{
	0: "all F32", 1: "mostly F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// tokenizerKinds names the tokenizer.ggml.model values llama.cpp knows.
var tokenizerKinds = map[string]string{
	"llama": "SentencePiece", "gpt2": "byte-level BPE", "bert": "WordPiece",
	"t5": "Unigram (T5)", "rwkv": "RWKV greedy", "plamo2": "PLaMo-2 Aho-Corasick", "none": "no vocabulary",
}

// WriteSummary writes the human-readable summary of f that irtool inspect
// prints: the header, the model, the hyper-parameters, the tokenizer, the
// other metadata and the tensor table with the bytes by type.
func WriteSummary(w io.Writer, f *File) error {
	var dataBytes uint64
	for _, t := range f.Tensors {
		dataBytes += t.Size
	}
	fmt.Fprintf(w, "%s: GGUF v%d, %s, %d keys, %d tensors\n", f.Name, f.Version, human(uint64(f.Size)), len(f.KV), len(f.Tensors))

	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	arch := f.Arch()
	fmt.Fprintf(tw, "architecture\t%s\n", orNone(arch))
	if name, ok := f.GetString("general.name"); ok {
		fmt.Fprintf(tw, "name\t%s\n", name)
	}
	if ft, ok := f.GetUint("general.file_type"); ok {
		fmt.Fprintf(tw, "file type\t%d (%s)\n", ft, orNone(fileTypes[ft]))
	}
	fmt.Fprintf(tw, "data\t%s at byte %d, alignment %d\n", human(dataBytes), f.DataOffset, f.Alignment)
	tw.Flush()

	inspectHParams(w, f, arch)
	fmt.Fprintln(w)
	inspectTokenizer(w, f)
	inspectOther(w, f, arch)

	if len(f.Tensors) == 0 {
		fmt.Fprintln(w, "\nno tensors")
		return nil
	}
	inspectTensors(w, f, dataBytes)
	return nil
}

// inspectHParams lists the architecture's own keys (arch.*) without the
// prefix.
func inspectHParams(w io.Writer, f *File, arch string) {
	if arch == "" {
		return
	}
	fmt.Fprintf(w, "\nhyper-parameters (%s.*)\n", arch)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	n := 0
	for _, kv := range f.KV {
		if rest, ok := strings.CutPrefix(kv.Key, arch+"."); ok {
			fmt.Fprintf(tw, "  %s\t%s\n", rest, shortValue(kv.Value))
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(tw, "  (none)")
	}
	tw.Flush()
}

// inspectTokenizer summarises the tokenizer on one line: model, kind,
// tokens, pre-tokenizer, merges and special ids.
func inspectTokenizer(w io.Writer, f *File) {
	tokModel, hasTok := f.GetString("tokenizer.ggml.model")
	if !hasTok {
		fmt.Fprintln(w, "tokenizer: none")
	} else {
		kind := tokenizerKinds[tokModel]
		if kind == "" {
			kind = "unknown kind"
		}
		toks, _ := f.Get("tokenizer.ggml.tokens")
		fmt.Fprintf(w, "tokenizer: %s (%s), %d tokens", tokModel, kind, toks.Len())
		if pre, ok := f.GetString("tokenizer.ggml.pre"); ok {
			fmt.Fprintf(w, ", pre-tokenizer %s", pre)
		}
		if m, ok := f.Get("tokenizer.ggml.merges"); ok {
			fmt.Fprintf(w, ", %d merges", m.Len())
		}
		for _, s := range []string{"bos", "eos", "unknown", "padding"} {
			id, ok := f.GetUint("tokenizer.ggml." + s + "_token_id")
			switch {
			case !ok:
			case id == math.MaxUint32: // llama.cpp's "no token"
				fmt.Fprintf(w, ", %s none", s)
			default:
				fmt.Fprintf(w, ", %s %d", s, id)
			}
		}
		fmt.Fprintln(w)
	}
}

// inspectOther lists the metadata the sections above do not show.
func inspectOther(w io.Writer, f *File, arch string) {
	var other []KV
	for _, kv := range f.KV {
		switch {
		case arch != "" && strings.HasPrefix(kv.Key, arch+"."),
			kv.Key == "general.architecture", kv.Key == "general.name", kv.Key == "general.file_type",
			kv.Key == "tokenizer.ggml.model", kv.Key == "tokenizer.ggml.tokens", kv.Key == "tokenizer.ggml.pre",
			kv.Key == "tokenizer.ggml.merges", strings.HasSuffix(kv.Key, "_token_id") && strings.HasPrefix(kv.Key, "tokenizer.ggml."):
			continue
		}
		other = append(other, kv)
	}
	if len(other) > 0 {
		fmt.Fprintln(w, "\nother metadata")
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		for _, kv := range other {
			fmt.Fprintf(tw, "  %s\t%s\n", kv.Key, shortValue(kv.Value))
		}
		tw.Flush()
	}
}

// inspectTensors writes the tensor table and the bytes by type.
func inspectTensors(w io.Writer, f *File, dataBytes uint64) {
	fmt.Fprintf(w, "\ntensors (%d)\n", len(f.Tensors))
	rows := [][5]string{{"name", "type", "shape", "bytes", "offset"}}
	byType := map[GGMLType][2]uint64{}
	var typeOrder []GGMLType
	for _, t := range f.Tensors {
		dims := make([]string, 0, 4)
		for _, d := range t.Shape() {
			dims = append(dims, fmt.Sprint(d))
		}
		rows = append(rows, [5]string{t.Name, t.Type.String(), strings.Join(dims, " × "), fmt.Sprint(t.Size), fmt.Sprint(t.Offset)})
		if _, seen := byType[t.Type]; !seen {
			typeOrder = append(typeOrder, t.Type)
		}
		c := byType[t.Type]
		byType[t.Type] = [2]uint64{c[0] + 1, c[1] + t.Size}
	}
	var width [5]int
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		// name and type left-aligned, shape and numbers right-aligned
		fmt.Fprintf(w, "  %-*s  %-*s  %*s  %*s  %*s\n", width[0], r[0], width[1], r[1],
			width[2]+len(r[2])-utf8.RuneCountInString(r[2]), r[2], width[3], r[3], width[4], r[4])
	}
	parts := make([]string, 0, len(typeOrder))
	for _, t := range typeOrder {
		c := byType[t]
		parts = append(parts, fmt.Sprintf("%s %d (%s)", t, c[0], human(c[1])))
	}
	fmt.Fprintf(w, "by type: %s; %s in all\n", strings.Join(parts, ", "), human(dataBytes))
}

// shortValue formats a value for the text summary, eliding long arrays.
func shortValue(v Value) string {
	if v.Type() == ValString {
		s, _ := v.Str()
		if r := []rune(s); len(r) > 60 {
			s = string(r[:57]) + "..."
		}
		return fmt.Sprintf("%q", s)
	}
	if v.Type() != ValArray {
		return v.String()
	}
	s := v.String()
	if len(s) > 80 {
		s = fmt.Sprintf("[%d × %s]", v.Len(), v.ElemType())
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// human formats a byte count: exact below 1 KiB, else with one decimal.
func human(n uint64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
