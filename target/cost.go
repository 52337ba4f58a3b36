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
// static graph). Leaves and pure views cost nothing.
func Traffic(n *ir.Node, b ir.Bindings) (flops, bytes float64, err error) {
	info, ok := ir.Lookup(n.Op)
	if !ok {
		return 0, 0, fmt.Errorf("target: %s: unknown op %q", n, n.Op)
	}
	if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
		return 0, 0, nil
	}
	out, err := bytesOf(n.Type, b)
	if err != nil {
		return 0, 0, fmt.Errorf("target: %s (%s %q): %w", n, n.Op, n.Name, err)
	}
	elems, _ := numel(n.Type, b)
	in := 0.0
	for i, a := range n.Args {
		ab, err := bytesOf(a.Type, b)
		if err != nil {
			return 0, 0, fmt.Errorf("target: %s (%s %q) operand %d: %w", n, n.Op, n.Name, i, err)
		}
		in += ab
	}
	if info.SideEffect {
		// A write into a window of persistent state (cpy, set_rows and the
		// fused writers): it reads its other operands and writes as many
		// elements of the destination as its first source holds, never the
		// whole destination.
		alias := info.AliasArg
		read, written := 0.0, -1.0
		for i, a := range n.Args {
			if i == alias {
				continue
			}
			ab, _ := bytesOf(a.Type, b)
			read += ab
			if written < 0 {
				written, _ = numel(a.Type, b)
			}
		}
		dt := n.Args[alias].Type.DType
		flops := 0.0
		if n.Op == ir.OpRopeSetRows || n.Op == ir.OpRopeApplySetRows {
			flops = 6 * written
		}
		return flops, read + max(written, 0)*float64(dt.TypeSize())/float64(dt.BlockSize()), nil
	}
	switch n.Op {
	case ir.OpGetRows:
		// Only the picked rows of the table are read.
		idx, _ := bytesOf(n.Args[1].Type, b)
		rows := elems * float64(n.Args[0].Type.DType.TypeSize()) / float64(n.Args[0].Type.DType.BlockSize())
		return 0, rows + idx + out, nil
	case ir.OpMulMat, ir.OpMulMatAdd:
		a, bb := n.Args[0].Type, n.Args[1].Type
		sa, err := a.Shape.Eval(b)
		if err != nil {
			return 0, 0, err
		}
		sb, err := bb.Shape.Eval(b)
		if err != nil {
			return 0, 0, err
		}
		k := float64(sa[0].Val)
		m := float64(sa[1].Val)
		cols := float64(sb[1].Val * sb[2].Val * sb[3].Val)
		return 2 * k * m * cols, in + out, nil
	case ir.OpAttention:
		// softmax(k·q)·v per head: q [hd, T, H], k [hd, n_kv, Hkv], v [n_kv, hd_v, Hkv].
		q, err := n.Args[0].Type.Shape.Eval(b)
		if err != nil {
			return 0, 0, err
		}
		k, err := n.Args[1].Type.Shape.Eval(b)
		if err != nil {
			return 0, 0, err
		}
		v, err := n.Args[2].Type.Shape.Eval(b)
		if err != nil {
			return 0, 0, err
		}
		rows := float64(q[1].Val * q[2].Val * q[3].Val)
		return 2*rows*float64(k[1].Val)*float64(q[0].Val+v[1].Val) + 5*rows*float64(k[1].Val), in + out, nil
	case ir.OpRMSNorm, ir.OpSoftMax, ir.OpRMSNormMul, ir.OpAddRMSNormMul:
		return 5 * elems, in + out, nil
	case ir.OpRope, ir.OpRopeApply, ir.OpRopeCache, ir.OpRopeCacheTable:
		return 6 * elems, in + out, nil
	}
	return elems, in + out, nil
}

// matrixKernels run on the NPU's matrix (cube) unit; every other kernel is
// costed by its memory traffic.
var matrixKernels = map[string]bool{
	"aclnnMm": true, "aclnnBatchMatMul": true, "aclnnMatmul": true,
	"aclnnWeightQuantBatchMatmulV2": true, "aclnnFusedInferAttentionScoreV2": true,
}

// Estimate costs node n on device d under bindings b (nil when static).
func (p *Profile) Estimate(n *ir.Node, d Device, b ir.Bindings) (Estimate, error) {
	flops, bytes, err := Traffic(n, b)
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
		if p.NPU == nil {
			return e, fmt.Errorf("target: %s has no NPU for %s (%s %q)", p.Name, n, n.Op, n.Name)
		}
		s := p.Supports(n)
		if !s.OK {
			return e, fmt.Errorf("target: %s cannot run %s (%s %q) on the NPU: %s", p.Name, n, n.Op, n.Name, s.Reason)
		}
		e.Calls = len(s.Calls)
		work := bytes / p.NPU.MemBW
		if matrixKernels[s.Kernel] {
			work = max(work, flops/p.NPU.MatmulFLOPS)
		}
		e.DeviceUS = float64(e.Calls)*o.TaskUS + work*1e6
		e.LaunchUS = float64(e.Calls) * o.LaunchUS
	case CPU:
		e.Calls = 1
		work := max(bytes/p.Host.MemBW, flops/p.Host.MatmulFLOPS)
		e.DeviceUS = o.CPUOpUS + work*1e6
	default:
		return e, fmt.Errorf("target: unknown device %q", d)
	}
	return e, nil
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
	elems := func(t ir.Type) int64 {
		ne, err := t.Shape.Ne()
		if err != nil {
			return 0
		}
		return ne[0] * ne[1] * ne[2] * ne[3]
	}
	switch n.Op {
	case ir.OpMulMat, ir.OpMulMatAdd:
		if s.Kernel == "aclnnWeightQuantBatchMatmulV2" {
			return 2*elems(n.Args[1].Type) + 2*elems(n.Type)
		}
	case ir.OpSoftMax:
		if len(s.Calls) > 1 {
			return 4 * elems(n.Type)
		}
	case ir.OpRMSNorm, ir.OpRMSNormMul, ir.OpAddRMSNormMul:
		// The rstd output: one f32 per row of the normalised input.
		x := n.Args[0].Type
		ne, err := x.Shape.Ne()
		if err == nil && ne[0] > 0 {
			return 4 * elems(x) / ne[0]
		}
	case ir.OpSetRows:
		if n.Args[0].Type.DType == ir.F16 {
			return 2 * elems(n.Args[1].Type)
		}
	case ir.OpRopeSetRows, ir.OpRopeApplySetRows:
		// The rotated rows, and their f16 cast for an f16 cache.
		ws := 4 * elems(n.Args[1].Type)
		if n.Args[0].Type.DType == ir.F16 {
			ws += 2 * elems(n.Args[1].Type)
		}
		return ws
	case ir.OpAttention:
		// Q cast to f16 and the f16 result before its cast back.
		return 2*elems(n.Args[0].Type) + 2*elems(n.Type)
	case ir.OpGetRows:
		if n.Args[0].Type.DType != ir.F32 {
			return 4 * elems(n.Type)
		}
	}
	return 0
}
