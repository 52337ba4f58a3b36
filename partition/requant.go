package partition

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// RequantTensor is the numeric cost of requantising one weight: the error
// of dequant(requant(w)) against dequant(w), over every element.
type RequantTensor struct {
	Name        string  `json:"name"`
	From        string  `json:"from"`
	To          string  `json:"to"`
	Elements    int64   `json:"elements"`
	BytesBefore int64   `json:"bytes_before"`
	BytesAfter  int64   `json:"bytes_after"`
	RMSE        float64 `json:"rmse"`
	MaxAbs      float64 `json:"max_abs"`
	// RelRMSE is RMSE over the RMS of the original values.
	RelRMSE float64 `json:"rel_rmse"`
}

// RequantReport lists every requantised weight.
type RequantReport struct {
	To           string          `json:"to"`
	Tensors      []RequantTensor `json:"tensors"`
	BytesBefore  int64           `json:"bytes_before"`
	BytesAfter   int64           `json:"bytes_after"`
	WorstRelRMSE float64         `json:"worst_rel_rmse"`
}

// RequantSource serves weights, converting the requantised ones on first
// use (the load-time conversion a runtime performs).
type RequantSource struct {
	Base eval.WeightSource
	// From and To give each converted weight's stored and new dtype.
	From, To map[string]ir.DType
	mu       sync.Mutex
	cache    map[string][]byte
}

// TensorData returns a weight's bytes, converted when it was requantised.
func (s *RequantSource) TensorData(name string) ([]byte, error) {
	to, ok := s.To[name]
	if !ok {
		return s.Base.TensorData(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.cache[name]; ok {
		return b, nil
	}
	raw, err := s.Base.TensorData(name)
	if err != nil {
		return nil, err
	}
	b, err := Convert(raw, s.From[name], to)
	if err != nil {
		return nil, fmt.Errorf("partition: requantise %q: %w", name, err)
	}
	if s.cache == nil {
		s.cache = map[string][]byte{}
	}
	s.cache[name] = b
	return b, nil
}

// Convert re-encodes a weight's data from one dtype to q8_0, q4_0, f16 or
// f32 through f32 values (ggml's reference quantisers, package gguf).
func Convert(data []byte, from, to ir.DType) ([]byte, error) {
	if from.BlockSize() == 0 || len(data)%int(from.TypeSize()) != 0 {
		return nil, fmt.Errorf("%d bytes is not a whole number of %s blocks", len(data), from)
	}
	n := len(data) / int(from.TypeSize()) * int(from.BlockSize())
	f := make([]float32, n)
	if err := gguf.Dequantize(gguf.GGMLType(from), data, f); err != nil {
		return nil, err
	}
	switch to {
	case ir.Q8_0:
		return gguf.QuantizeQ8_0(f)
	case ir.Q4_0:
		return gguf.QuantizeQ4_0(f)
	case ir.F32:
		out := make([]byte, 4*n)
		for i, v := range f {
			u := math.Float32bits(v)
			out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
		return out, nil
	case ir.F16:
		out := make([]byte, 2*n)
		for i, v := range f {
			h := gguf.F32ToF16(v)
			out[2*i], out[2*i+1] = byte(h), byte(h>>8)
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot convert to %s", to)
}

// Requant returns a copy of g in which every quantised weight whose type
// keeps one of its users off the NPU, and would not with type to (q8_0 or
// q4_0), has type to; a source that serves the converted bytes; and the
// numeric cost of each conversion (which reads every converted weight
// once). Weights the NPU already takes are left alone, and so are tables
// whose only refused user is their get_rows (the input layer, which runs
// on the CPU by choice).
func Requant(g *ir.Graph, prof *target.Profile, w eval.WeightSource, to ir.DType) (*ir.Graph, *RequantSource, *RequantReport, error) {
	if to != ir.Q8_0 && to != ir.Q4_0 {
		return nil, nil, nil, fmt.Errorf("partition: requantise to %s: only q8_0 and q4_0 are supported", to)
	}
	if w == nil {
		return nil, nil, nil, fmt.Errorf("partition: requantise: no weight source")
	}
	out := g.Clone()
	users := out.Users()
	src := &RequantSource{Base: w, From: map[string]ir.DType{}, To: map[string]ir.DType{}}
	rep := &RequantReport{To: to.String(), Tensors: []RequantTensor{}}
	if !prof.HasNPU() {
		return out, src, rep, nil
	}
	for _, n := range out.Nodes {
		if n.Op != ir.OpWeight || !n.Type.DType.Quantized() || n.Type.DType == to {
			continue
		}
		if d := n.Type.Shape[0]; !d.IsConst() || d.Val%to.BlockSize() != 0 {
			continue
		}
		helps := false
		for _, u := range users[n.ID] {
			// A table's get_rows off the NPU is a placement, not a
			// missing kernel: the input layer stays on the CPU, as
			// llama.cpp keeps it (target/copy.go), so it asks for no
			// conversion.
			if prof.Supports(u).OK || u.Op == ir.OpGetRows && len(u.Args) > 0 && u.Args[0] == n {
				continue
			}
			// Would u run with the weight converted?
			alt := *n
			alt.Type.DType = to
			uu := *u
			uu.Args = append([]*ir.Node(nil), u.Args...)
			for i, a := range uu.Args {
				if a == n {
					uu.Args[i] = &alt
				}
			}
			if prof.Supports(&uu).OK {
				helps = true
			}
		}
		if !helps {
			continue
		}
		t, err := requantCost(w, n, to)
		if err != nil {
			return nil, nil, nil, err
		}
		src.From[n.Name], src.To[n.Name] = n.Type.DType, to
		n.Type.DType = to
		rep.Tensors = append(rep.Tensors, t)
		rep.BytesBefore += t.BytesBefore
		rep.BytesAfter += t.BytesAfter
		rep.WorstRelRMSE = max(rep.WorstRelRMSE, t.RelRMSE)
	}
	sort.Slice(rep.Tensors, func(i, j int) bool { return rep.Tensors[i].Name < rep.Tensors[j].Name })
	if err := ir.Verify(out); err != nil {
		return nil, nil, nil, fmt.Errorf("partition: requantise: %w", err)
	}
	return out, src, rep, nil
}

func requantCost(w eval.WeightSource, n *ir.Node, to ir.DType) (RequantTensor, error) {
	from := n.Type.DType
	size, err := n.Type.Bytes()
	if err != nil {
		return RequantTensor{}, fmt.Errorf("partition: requantise %q: %w", n.Name, err)
	}
	raw, err := w.TensorData(n.Name)
	if err != nil {
		return RequantTensor{}, fmt.Errorf("partition: requantise %q: %w", n.Name, err)
	}
	if int64(len(raw)) < size {
		return RequantTensor{}, fmt.Errorf("partition: requantise %q: %d bytes, %s needs %d", n.Name, len(raw), n.Type, size)
	}
	raw = raw[:size]
	q, err := Convert(raw, from, to)
	if err != nil {
		return RequantTensor{}, fmt.Errorf("partition: requantise %q: %w", n.Name, err)
	}
	elems := size / from.TypeSize() * from.BlockSize()
	a := make([]float32, elems)
	b := make([]float32, elems)
	if err := gguf.Dequantize(gguf.GGMLType(from), raw, a); err != nil {
		return RequantTensor{}, fmt.Errorf("partition: requantise %q: %w", n.Name, err)
	}
	if err := gguf.Dequantize(gguf.GGMLType(to), q, b); err != nil {
		return RequantTensor{}, fmt.Errorf("partition: requantise %q: %w", n.Name, err)
	}
	var se, ss, mx float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		se += d * d
		ss += float64(a[i]) * float64(a[i])
		mx = max(mx, math.Abs(d))
	}
	t := RequantTensor{Name: n.Name, From: from.String(), To: to.String(), Elements: elems,
		BytesBefore: size, BytesAfter: int64(len(q)), MaxAbs: mx}
	if elems > 0 {
		t.RMSE = math.Sqrt(se / float64(elems))
		if ss > 0 {
			t.RelRMSE = math.Sqrt(se / ss)
		}
	}
	return t, nil
}
