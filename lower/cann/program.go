package cann

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/irtool/irtool/ir"
)

// Version is the Program format version written into every program.
const Version = 1

// Region names. Device regions hold what NPU kernels read and write; the
// host_ ones hold what CPU kernels use. Each is one allocation made before
// any capture.
const (
	RegionArena       = "arena"        // planned intermediates and kernel workspaces
	RegionWeights     = "weights"      // model weights used on the NPU
	RegionKV          = "kv"           // persistent state (KV caches) held on the NPU
	RegionConsts      = "consts"       // constants: const nodes and lowering tables
	RegionInputs      = "inputs"       // per-step inputs uploaded before the first segment
	RegionOutputs     = "outputs"      // graph outputs computed on the NPU
	RegionHostArena   = "host_arena"   // planned intermediates of CPU kernels
	RegionHostWeights = "host_weights" // weights used on the CPU
	RegionHostKV      = "host_kv"      // state held on the CPU
	RegionHostConsts  = "host_consts"  // constants used on the CPU
	RegionHostInputs  = "host_inputs"  // inputs read on the CPU
	RegionHostOutputs = "host_outputs" // graph outputs computed on the CPU
)

// Addr is a device or host address: a region and a byte offset into it.
type Addr struct {
	Region string `json:"region"`
	Offset int64  `json:"offset"`
}

// String prints region+offset.
func (a Addr) String() string { return fmt.Sprintf("%s+%d", a.Region, a.Offset) }

// TensorDesc describes one tensor as aclCreateTensor takes it (ACL order:
// Shape[0] is ggml's outermost dim; strides and storage offset in elements;
// CANN docs, aclCreateTensor and the two-phase aclnn calls) and, alongside, in ggml order (Ne, Nb in bytes), which is
// what the CPU kernels use. Addr is the address of element 0.
type TensorDesc struct {
	DType         ir.DType `json:"-"`
	ACLDType      string   `json:"acl_dtype,omitempty"`
	Ne            [4]int64 `json:"ne"`
	Nb            [4]int64 `json:"nb"`
	Shape         []int64  `json:"shape"`
	Strides       []int64  `json:"strides"`
	StorageOffset int64    `json:"storage_offset"`
	StorageShape  []int64  `json:"storage_shape"`
	Format        string   `json:"format"`
	Addr          Addr     `json:"addr"`
	// Role names an operand that is not an IR operand ("gamma", "rstd").
	Role string `json:"role,omitempty"`
}

type tensorDescJSON struct {
	DType string `json:"dtype"`
	tensorDescAlias
}

type tensorDescAlias TensorDesc

// MarshalJSON writes the dtype by name.
func (t TensorDesc) MarshalJSON() ([]byte, error) {
	return json.Marshal(tensorDescJSON{DType: t.DType.String(), tensorDescAlias: tensorDescAlias(t)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *TensorDesc) UnmarshalJSON(b []byte) error {
	var v tensorDescJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	dt, ok := ir.ParseDType(v.DType)
	if !ok {
		return fmt.Errorf("cann: unknown dtype %q", v.DType)
	}
	*t = TensorDesc(v.tensorDescAlias)
	t.DType = dt
	return nil
}

// Bytes is the extent of the tensor in bytes (from element 0 to one past
// the last).
func (t TensorDesc) Bytes() int64 {
	return ir.Layout{Ne: t.Ne, Nb: t.Nb}.Extent(t.DType)
}

// Kernel is one kernel launch: an aclnn call on the NPU, or a CPU kernel.
type Kernel struct {
	// Name is the aclnn operator ("aclnnRmsNorm") or, on the CPU, "cpu." + op.
	Name string `json:"name"`
	// Op and Attrs are the IR op and attributes the kernel computes; a
	// runtime executes the kernel through the shared kernel table by Op.
	Op       ir.Op    `json:"op"`
	Attrs    ir.Attrs `json:"-"`
	Node     int      `json:"node"`
	NodeName string   `json:"node_name,omitempty"`
	// Inputs are the IR operands, in order; Output is the result.
	Inputs []TensorDesc `json:"inputs"`
	Output TensorDesc   `json:"output"`
	// Extra are aclnn operands that are not IR operands (the RMSNorm gamma
	// table of ones, its rstd output).
	Extra []TensorDesc `json:"extra,omitempty"`
	// Calls are the aclnn calls an eager launch makes (ggml-cann's supports_op and compute_forward).
	Calls []string `json:"calls,omitempty"`
	// WorkspaceBytes of scratch, planned at Workspace in the arena.
	WorkspaceBytes int64 `json:"workspace_bytes"`
	Workspace      Addr  `json:"workspace"`
	// HostSync marks a kernel that synchronises with the host internally.
	HostSync bool `json:"host_sync,omitempty"`
	// Note is the target rule's note on how the kernel lowers (the
	// attention's fused or unfused calls and why), empty for most.
	Note string `json:"note,omitempty"`
	// Cost model: the kernel's device time and its eager host launch time.
	DeviceUS float64 `json:"device_us"`
	LaunchUS float64 `json:"launch_us"`
}

type kernelJSON struct {
	Attrs map[string]attrJSON `json:"attrs,omitempty"`
	kernelAlias
}

type kernelAlias Kernel

// MarshalJSON writes attributes with their types, so that they read back
// exactly (an integer stays an integer, a symbolic dim stays a dim).
func (k Kernel) MarshalJSON() ([]byte, error) {
	a, err := encodeAttrs(k.Attrs)
	if err != nil {
		return nil, fmt.Errorf("cann: kernel %s (node %d): %w", k.Name, k.Node, err)
	}
	return json.Marshal(kernelJSON{Attrs: a, kernelAlias: kernelAlias(k)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (k *Kernel) UnmarshalJSON(b []byte) error {
	var v kernelJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*k = Kernel(v.kernelAlias)
	a, err := decodeAttrs(v.Attrs)
	if err != nil {
		return fmt.Errorf("cann: kernel %s (node %d): %w", k.Name, k.Node, err)
	}
	k.Attrs = a
	return nil
}

// Segment is a maximal run of one device's kernels between host
// interactions. An NPU segment is captured and replayed as one ACL graph
// when Capturable.
type Segment struct {
	ID         int    `json:"id"`
	Device     string `json:"device"`
	Capturable bool   `json:"capturable"`
	// Blocker says why the segment is not capturable.
	Blocker string `json:"blocker,omitempty"`
	// Key is known at compile time: "s<id>@<bucket>".
	Key string `json:"key"`
	// Fingerprint hashes Props, the property list graph replay matches on.
	Fingerprint string   `json:"fingerprint"`
	Kernels     []Kernel `json:"kernels"`
}

// Step kinds, in the order a runtime performs a Program's Steps.
const (
	StepUpload   = "upload"   // host input -> device input region (before any segment)
	StepSegment  = "segment"  // run (or replay) one segment
	StepCopy     = "copy"     // a transfer between host and device
	StepDownload = "download" // device output -> host
)

// Step is one thing the runtime does, in order.
type Step struct {
	Kind    string  `json:"kind"`
	Segment int     `json:"segment,omitempty"` // StepSegment
	Copy    *Kernel `json:"copy,omitempty"`    // StepCopy: Name is the aclrtMemcpy kind; Op is ir.OpTransfer
	Input   string  `json:"input,omitempty"`   // StepUpload: the input name
	Output  int     `json:"output,omitempty"`  // StepDownload: the output index
}

// Region is one fixed allocation.
type Region struct {
	Name   string `json:"name"`
	Device string `json:"device"`
	Bytes  int64  `json:"bytes"`
}

// Weight places a model weight (by GGUF tensor name) in a weights region.
// When DType differs from SourceDType the loader converts the tensor
// (requantisation at load time, package partition).
type Weight struct {
	Name        string   `json:"name"`
	DType       ir.DType `json:"-"`
	SourceDType ir.DType `json:"-"`
	// Bytes are the weight's ggml bytes, as the file holds them.
	Bytes int64 `json:"bytes"`
	// DeviceBytes are what the weight takes on its device
	// (partition.DeviceWeights on the NPU: its blocks and, or only, the
	// copy converted at load; Bytes on the CPU). The region reserves
	// max(Bytes, DeviceBytes) at Addr.
	DeviceBytes int64 `json:"device_bytes"`
	Addr        Addr  `json:"addr"`
}

type weightJSON struct {
	DType       string `json:"dtype"`
	SourceDType string `json:"source_dtype"`
	weightAlias
}

type weightAlias Weight

// MarshalJSON writes dtypes by name.
func (w Weight) MarshalJSON() ([]byte, error) {
	return json.Marshal(weightJSON{DType: w.DType.String(), SourceDType: w.SourceDType.String(), weightAlias: weightAlias(w)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *Weight) UnmarshalJSON(b []byte) error {
	var v weightJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = Weight(v.weightAlias)
	var ok1, ok2 bool
	w.DType, ok1 = ir.ParseDType(v.DType)
	w.SourceDType, ok2 = ir.ParseDType(v.SourceDType)
	if !ok1 || !ok2 {
		return fmt.Errorf("cann: weight %q: bad dtype %q/%q", w.Name, v.DType, v.SourceDType)
	}
	return nil
}

// State places a persistent state leaf (a KV cache), zeroed at load.
type State struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	Addr  Addr   `json:"addr"`
}

// Const is constant data written at load time.
type Const struct {
	Name string `json:"name"`
	Addr Addr   `json:"addr"`
	Data []byte `json:"data"`
}

// IO places an input or output. A value used on both devices has two
// entries with the same name.
type IO struct {
	Name  string     `json:"name"`
	Desc  TensorDesc `json:"desc"`
	Bytes int64      `json:"bytes"`
}

// Program is a lowered graph for one symbol binding.
type Program struct {
	Version int    `json:"version"`
	Graph   string `json:"graph"`
	Target  string `json:"target"`
	KVWrite string `json:"kv_write"`
	// Bindings are the symbol values the program was lowered for; Bucket
	// is their canonical text, the second half of every segment key.
	Bindings     ir.Bindings `json:"bindings"`
	Bucket       string      `json:"bucket"`
	GraphCapture bool        `json:"graph_capture"`
	Align        int64       `json:"align"`
	Regions      []Region    `json:"regions"`
	Weights      []Weight    `json:"weights"`
	States       []State     `json:"states"`
	Consts       []Const     `json:"consts"`
	Inputs       []IO        `json:"inputs"`
	Outputs      []IO        `json:"outputs"`
	Segments     []Segment   `json:"segments"`
	Steps        []Step      `json:"steps"`
}

// Region returns the named region, or nil.
func (p *Program) Region(name string) *Region {
	for i := range p.Regions {
		if p.Regions[i].Name == name {
			return &p.Regions[i]
		}
	}
	return nil
}

// Kernels counts the kernels of every segment.
func (p *Program) Kernels() int {
	n := 0
	for _, s := range p.Segments {
		n += len(s.Kernels)
	}
	return n
}

// KernelsByName counts NPU kernels by aclnn name (CPU kernels by "cpu.op").
func (p *Program) KernelsByName() map[string]int {
	m := map[string]int{}
	for _, s := range p.Segments {
		for _, k := range s.Kernels {
			m[k.Name]++
		}
	}
	return m
}

// Write encodes the program as indented JSON.
func (p *Program) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(p)
}

// Read decodes a program written by Write and checks its version.
func Read(r io.Reader) (*Program, error) {
	var p Program
	dec := json.NewDecoder(r)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("cann: read program: %w", err)
	}
	if p.Version != Version {
		return nil, fmt.Errorf("cann: program version %d, this build reads %d", p.Version, Version)
	}
	return &p, nil
}

// attrJSON is one attribute with its type spelled out.
type attrJSON struct {
	Int    *int64    `json:"i,omitempty"`
	Float  *string   `json:"f,omitempty"` // strconv 'g' -1 text: exact, and NaN/Inf survive
	Bool   *bool     `json:"b,omitempty"`
	Str    *string   `json:"s,omitempty"`
	Ints   []int64   `json:"ints,omitempty"`
	Floats []string  `json:"floats,omitempty"`
	Dim    *string   `json:"dim,omitempty"`
	Empty  *struct{} `json:"empty,omitempty"` // an empty list, whose element type is lost either way
}

func fmtFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

func encodeAttrs(a ir.Attrs) (map[string]attrJSON, error) {
	if len(a) == 0 {
		return nil, nil
	}
	out := make(map[string]attrJSON, len(a))
	keys := a.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		var v attrJSON
		switch x := a[k].(type) {
		case int64:
			v.Int = &x
		case float64:
			s := fmtFloat(x)
			v.Float = &s
		case bool:
			v.Bool = &x
		case string:
			v.Str = &x
		case []int64:
			if len(x) == 0 {
				v.Empty = &struct{}{}
			}
			v.Ints = x
		case []float64:
			if len(x) == 0 {
				v.Empty = &struct{}{}
			}
			for _, f := range x {
				v.Floats = append(v.Floats, fmtFloat(f))
			}
		case ir.Dim:
			s := x.String()
			v.Dim = &s
		default:
			return nil, fmt.Errorf("attribute %s has unsupported type %T", k, x)
		}
		out[k] = v
	}
	return out, nil
}

func decodeAttrs(m map[string]attrJSON) (ir.Attrs, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(ir.Attrs, len(m))
	for k, v := range m {
		switch {
		case v.Int != nil:
			out[k] = *v.Int
		case v.Float != nil:
			f, err := parseFloat(*v.Float)
			if err != nil {
				return nil, fmt.Errorf("attribute %s: %w", k, err)
			}
			out[k] = f
		case v.Bool != nil:
			out[k] = *v.Bool
		case v.Str != nil:
			out[k] = *v.Str
		case v.Ints != nil:
			out[k] = v.Ints
		case v.Floats != nil:
			fs := make([]float64, len(v.Floats))
			for i, s := range v.Floats {
				f, err := parseFloat(s)
				if err != nil {
					return nil, fmt.Errorf("attribute %s: %w", k, err)
				}
				fs[i] = f
			}
			out[k] = fs
		case v.Dim != nil:
			d, err := ir.ParseDim(*v.Dim)
			if err != nil {
				return nil, fmt.Errorf("attribute %s: %w", k, err)
			}
			out[k] = d
		case v.Empty != nil:
			out[k] = []int64{}
		default:
			return nil, fmt.Errorf("attribute %s has no value", k)
		}
	}
	return out, nil
}
