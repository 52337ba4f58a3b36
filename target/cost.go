package target

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// Estimate is the modelled cost of one node on one device.
type Estimate struct {
	FLOPs float64 // arithmetic operations
	Bytes float64 // bytes read and written
	// Calls is the number of aclnn calls (NPU) or kernel calls (CPU).
	Calls int
	// DeviceUS is the time the device is busy with the node.
	DeviceUS float64
	// LaunchUS is the host time to launch it eagerly (NPU only).
	LaunchUS float64
}

// numel is the element count of a type under bindings.
func numel(t ir.Type, b ir.Bindings) (float64, error) {
	s, err := t.Shape.Eval(b)
	if err != nil {
		return 0, err
	}
	n := 1.0
	for _, d := range s {
		n *= float64(d.Val)
	}
	return n, nil
}

// bytesOf is the storage a value of type t occupies (elements times the
// dtype's bytes per element, blocks accounted).
func bytesOf(t ir.Type, b ir.Bindings) (float64, error) {
	n, err := numel(t, b)
	if err != nil {
		return 0, err
	}
	return n * float64(t.DType.TypeSize()) / float64(t.DType.BlockSize()), nil
}

// Traffic returns the FLOPs and bytes of node n under bindings b (nil for a
// static graph), by the op's rule in DefaultRules. Leaves and pure views
// cost nothing; an op without a rule is an error naming it.
func Traffic(n *ir.Node, b ir.Bindings) (flops, bytes float64, err error) {
	return defaultRules.traffic(n, b)
}

func (r *Rules) traffic(n *ir.Node, b ir.Bindings) (flops, bytes float64, err error) {
	info, ok := n.Info()
	if !ok {
		return 0, 0, fmt.Errorf("target: %s: unknown op %q", n, n.Op)
	}
	if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
		return 0, 0, nil
	}
	rule, ok := r.Lookup(n.Op)
	if !ok || rule.Traffic == nil {
		return 0, 0, fmt.Errorf("target: %s (%s %q): op %q has no cost rule", n, n.Op, n.Name, n.Op)
	}
	return rule.Traffic(n, b)
}

// ioBytes is the bytes of n's operands and of its result, and the element
// count of its result.
func ioBytes(n *ir.Node, b ir.Bindings) (in, out, elems float64, err error) {
	if out, err = bytesOf(n.Type, b); err != nil {
		return 0, 0, 0, fmt.Errorf("target: %s (%s %q): %w", n, n.Op, n.Name, err)
	}
	elems, _ = numel(n.Type, b)
	for i, a := range n.Args {
		ab, err := bytesOf(a.Type, b)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("target: %s (%s %q) operand %d: %w", n, n.Op, n.Name, i, err)
		}
		in += ab
	}
	return in, out, elems, nil
}

// streamTraffic costs an op that streams its operands once: k FLOPs per
// result element, every operand read and the result written.
func streamTraffic(k float64) func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	return func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
		in, out, elems, err := ioBytes(n, b)
		return k * elems, in + out, err
	}
}

// writeTraffic costs a write into a window of persistent state (cpy,
// set_rows and the fused writers): it reads its other operands and writes
// as many elements of the destination as its first source holds, never the
// whole destination; k FLOPs per written element.
func writeTraffic(k float64) func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	return func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
		info, ok := n.Info()
		if !ok {
			return 0, 0, fmt.Errorf("target: %s: unknown op %q", n, n.Op)
		}
		alias := info.AliasArg
		read, written := 0.0, -1.0
		for i, a := range n.Args {
			if i == alias {
				continue
			}
			ab, err := bytesOf(a.Type, b)
			if err != nil {
				return 0, 0, fmt.Errorf("target: %s (%s %q) operand %d: %w", n, n.Op, n.Name, i, err)
			}
			read += ab
			if written < 0 {
				written, _ = numel(a.Type, b)
			}
		}
		written = max(written, 0)
		dt := n.Args[alias].Type.DType
		return k * written, read + written*float64(dt.TypeSize())/float64(dt.BlockSize()), nil
	}
}

// Estimate costs node n on device d under bindings b (nil when static).
func (p *Profile) Estimate(n *ir.Node, d Device, b ir.Bindings) (Estimate, error) {
	flops, bytes, err := p.rules.traffic(n, b)
	if err != nil {
		return Estimate{}, err
	}
	e := Estimate{FLOPs: flops, Bytes: bytes}
	if bytes == 0 && flops == 0 {
		return e, nil // leaves and views launch nothing
	}
	o := p.Overheads
	switch d {
	case NPU:
		w, err := p.Work(n, b)
		if err != nil {
			return e, err
		}
		e.Bytes, e.Calls = w.Bytes, w.Calls
		e.DeviceUS, e.LaunchUS = p.KernelCost(w)
	case CPU:
		e.Calls = 1
		work := max(bytes/p.Host.MemBW, flops/p.Host.MatmulFLOPS)
		e.DeviceUS = o.CPUOpUS + work*1e6
		if ir.IsCollective(n.Op) && p.Interconnect != nil {
			// A host collective still moves the ranks' bytes between
			// the NPUs: the link model's time too, so that where a
			// collective runs is decided by the copies around it, not by
			// the link. Over more ranks than the fabric joins the model
			// has no figure and the host op is all that is costed.
			if us, err := p.linkUS(n, b); err == nil {
				e.DeviceUS += us
			}
		}
	default:
		return e, fmt.Errorf("target: unknown device %q", d)
	}
	return e, nil
}

// Work is what the cost model needs of node n run on the NPU under
// bindings b: its kernel class, calls, traffic (quantised weights in the
// layout converted at load) and matmul shape.
func (p *Profile) Work(n *ir.Node, b ir.Bindings) (Work, error) {
	flops, bytes, err := p.rules.traffic(n, b)
	if err != nil {
		return Work{}, err
	}
	if p.NPU == nil {
		return Work{}, fmt.Errorf("target: %s has no NPU for %s (%s %q)", p.Name, n, n.Op, n.Name)
	}
	s := p.Supports(n)
	if !s.OK {
		return Work{}, fmt.Errorf("target: %s cannot run %s (%s %q) on the NPU: %s", p.Name, n, n.Op, n.Name, s.Reason)
	}
	w := Work{Kernel: s.Kernel, Calls: len(s.Calls), FLOPs: flops, Bytes: bytes}
	for _, c := range s.Calls {
		if c == "aclnnWeightQuantBatchMatmulV2" {
			w.WQCalls++
		}
	}
	if ir.IsCollective(n.Op) && p.Interconnect != nil {
		// HCCL on the NPUs' fabric: the link model's time (link.go),
		// the same EstimateStep gives the collective.
		us, err := p.linkUS(n, b)
		if err != nil {
			return w, err
		}
		w.Class, w.LinkUS = ClassLink, us
		return w, nil
	}
	// Quantised weights are read in the layout converted at load.
	w.Bytes += npuWeightBytes(n, s, b)
	w.Class, w.Rows = classify(n, s, b)
	switch n.Op {
	case ir.OpAttention:
		if err := attentionWork(&w, n, s, b); err != nil {
			return w, err
		}
	case ir.OpSoftMax:
		// ggml-cann's scale and mask calls (aclnnMuls, aclnnAdd) each
		// pass over the f32 scores before aclnnSoftmax does.
		if e, err := numel(n.Type, b); err == nil {
			w.Bytes += float64(len(s.Calls)-1) * 8 * e
		}
	}
	if w.WQCalls > 0 && (n.Op == ir.OpMulMat || n.Op == ir.OpMulMatAdd) && n.Args[0].Op == ir.OpWeight {
		w.WeightElems = wqElems(n.Args[0].Type)
	}
	return w, nil
}

// CopyUS is the modelled time of one host<->device copy of the given bytes.
func (p *Profile) CopyUS(bytes float64) float64 {
	if p.LinkBW <= 0 {
		return 0
	}
	return p.Overheads.CopyUS + bytes/p.LinkBW*1e6
}

// Workspace is the device scratch, in bytes, that the aclnn call sequence
// of node n needs beyond its operands and result, for a static node: the
// f16 staging of a weight-quant matmul's input and output, the scaled copy a
// masked softmax works on, the rstd output aclnnRmsNorm requires, the cast
// rows of an f16 set_rows. These are planned into the arena so that nothing
// is allocated while a segment is captured (ggml-cann's VMM pool). The operator's
// own aclnnXxxGetWorkspaceSize answer is only known on a device; a runtime
// checks it against this reservation at load time.
func (p *Profile) Workspace(n *ir.Node) int64 {
	if p.NPU == nil {
		return 0
	}
	s := p.Supports(n)
	if !s.OK || s.Kernel == "" {
		return 0
	}
	rule, ok := p.rules.Lookup(n.Op)
	if !ok || rule.Workspace == nil {
		return 0 // TestOpRecords catches an NPU op without a workspace rule
	}
	return rule.Workspace(n, s) + callsWorkspace(n, s)
}

// elems is the element count of a static type (0 when symbolic).
func elems(t ir.Type) int64 {
	ne, err := t.Shape.Ne()
	if err != nil {
		return 0
	}
	return ne[0] * ne[1] * ne[2] * ne[3]
}

// attentionWork classes the fused attention by its query rows (the
// tokens: ≤ GEMVRows streams its K and V like a GEMV, more follows the cube
// curve) and, when it runs as ggml-cann's unfused calls (Cast, Matmul,
// Muls, Add, Softmax, Cast, Matmul) rather than
// aclnnFusedInferAttentionScoreV2, adds the traffic of its f32 scores and
// probabilities: written by the first matmul, read and written by the
// scale, the mask add and the softmax, cast to f16 and read by the second
// matmul (38 bytes per score).
func attentionWork(w *Work, n *ir.Node, s Support, b ir.Bindings) error {
	q, err := n.Args[0].Type.Shape.Eval(b)
	if err != nil {
		return err
	}
	k, err := n.Args[1].Type.Shape.Eval(b)
	if err != nil {
		return err
	}
	w.Rows = float64(q[1].Val)
	fused := s.Kernel == "aclnnFusedInferAttentionScoreV2"
	switch {
	case w.Rows <= GEMVRows:
		w.Class = ClassGEMV
	case fused:
		w.Class = ClassAttention
	default:
		w.Class = ClassMatmul
	}
	if !fused {
		scores := float64(q[1].Val*q[2].Val*q[3].Val) * float64(k[1].Val)
		w.Bytes += 38 * scores
	}
	return nil
}
