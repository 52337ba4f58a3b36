package target

import (
	"github.com/irtool/irtool/ir"
)

// Costs are the shape-dependent efficiencies of a profile's kernel
// classes: what fraction of the chip's peak bandwidth or matrix throughput
// one aclnn kernel reaches. Together with Overheads (the per-call host and
// device costs) they are the calibration docs/LOWERING.md's table fits on
// public figures (go run ./scripts/costfit); the fields the fit does not
// pin are assumptions, and say so there.
type Costs struct {
	// StreamEff is the fraction of MemBW the weight stream of a matmul
	// with few rows reaches (a GEMV at M ≤ GEMVRows: aclnnMm/aclnnMatmul
	// on f16 weights, aclnnWeightQuantBatchMatmulV2 on int4/int8 ones).
	StreamEff float64 `json:"stream_eff"`
	// VectorEff is the fraction of MemBW the vector kernels reach
	// (elementwise, norms, RoPE, softmax, copies, gathers).
	VectorEff float64 `json:"vector_eff"`
	// CubeEff is the fraction of MatmulFLOPS a large aclnnMm reaches, and
	// CubeHalfGFLOP the work (2·M·N·K, in GFLOP) at which a matmul
	// reaches half of it: efficiency = CubeEff · F/(F + CubeHalfGFLOP).
	CubeEff       float64 `json:"cube_eff"`
	CubeHalfGFLOP float64 `json:"cube_half_gflop"`
	// WQCubeEff is the fraction of MatmulFLOPS an
	// aclnnWeightQuantBatchMatmulV2 with many rows (prefill) reaches:
	// its antiquant (int → f16 with scale and offset) runs in its loop.
	WQCubeEff float64 `json:"wq_cube_eff"`
	// AntiquantGElemS is the rate, in 10⁹ weights/s, at which
	// aclnnWeightQuantBatchMatmulV2 dequantises its weight at few rows,
	// on top of streaming it.
	AntiquantGElemS float64 `json:"antiquant_gelem_s"`
	// WQMatmulGElemS is the rate, in 10⁹ weights/s, of the per-weight
	// work aclnnWeightQuantBatchMatmulV2 does at more rows (prefill), on
	// top of its cube time: a time per weight that does not grow with
	// the rows (0: none).
	WQMatmulGElemS float64 `json:"wq_matmul_gelem_s"`
}

// GEMVRows is the row count up to which a matmul is costed as a stream of
// its weight: the cube unit works on 16-row fractals, so fewer rows cost
// the same pass over the weight.
const GEMVRows = 16

// KernelClass names the cost class of an aclnn kernel.
type KernelClass string

// The kernel classes of the cost model.
const (
	ClassGEMV      KernelClass = "gemv"      // aclnnMm/Matmul/BatchMatMul at ≤ 16 rows: the weight stream
	ClassMatmul    KernelClass = "matmul"    // aclnnMm/Matmul/BatchMatMul at more rows: the cube curve
	ClassWQGEMV    KernelClass = "wq-gemv"   // aclnnWeightQuantBatchMatmulV2 at ≤ 16 rows: stream + antiquant
	ClassWQMatmul  KernelClass = "wq-matmul" // aclnnWeightQuantBatchMatmulV2 at more rows
	ClassAttention KernelClass = "fused-attention"
	ClassVector    KernelClass = "vector"
	ClassLink      KernelClass = "collective"
)

// Work is what the cost model needs of one NPU kernel: its class, its
// calls, its traffic and its matmul shape. Profile.Work extracts it from a
// node; Profile.KernelCost prices it. The two are split so that a fit can
// price the same kernels under many calibrations.
type Work struct {
	Class   KernelClass
	Kernel  string
	Calls   int
	WQCalls int // aclnnWeightQuantBatchMatmulV2 calls among Calls
	FLOPs   float64
	Bytes   float64
	// Rows is the matmul's M (rows of its activation per matrix).
	Rows float64
	// WeightElems are the quantised weights a WQBMM dequantises.
	WeightElems float64
	// LinkUS is a collective's link-model time.
	LinkUS float64
}

// classify gives the class of a kernel of n's support s.
func classify(n *ir.Node, s Support, b ir.Bindings) (KernelClass, float64) {
	rows := 0.0
	if sh, err := n.Type.Shape.Eval(b); err == nil && len(sh) > 1 {
		rows = float64(sh[1].Val)
	}
	switch s.Kernel {
	case "aclnnWeightQuantBatchMatmulV2":
		if rows <= GEMVRows {
			return ClassWQGEMV, rows
		}
		return ClassWQMatmul, rows
	case "aclnnMm", "aclnnMatmul", "aclnnBatchMatMul":
		if rows <= GEMVRows {
			return ClassGEMV, rows
		}
		return ClassMatmul, rows
	case "aclnnFusedInferAttentionScoreV2":
		return ClassAttention, rows
	}
	return ClassVector, rows
}

// KernelCost prices one NPU kernel: its device time (a per-call floor plus
// the larger of its traffic at its class's bandwidth and its FLOPs at its
// class's throughput, plus a WQBMM's antiquant at few rows) and its eager
// host time (per call, more for a WQBMM call).
func (p *Profile) KernelCost(w Work) (deviceUS, launchUS float64) {
	o, c := p.Overheads, p.Costs
	launchUS = float64(w.Calls)*o.LaunchUS + float64(w.WQCalls)*o.WQLaunchUS
	if w.Class == ClassLink {
		return w.LinkUS, launchUS
	}
	if p.NPU == nil {
		return 0, launchUS
	}
	bw, peak := p.NPU.MemBW, p.NPU.MatmulFLOPS
	eff := func(e float64) float64 {
		if e <= 0 {
			return 1
		}
		return e
	}
	var work float64
	switch w.Class {
	case ClassGEMV:
		work = w.Bytes / (bw * eff(c.StreamEff))
	case ClassWQGEMV:
		work = w.Bytes / (bw * eff(c.StreamEff))
		if c.AntiquantGElemS > 0 {
			work += w.WeightElems / (c.AntiquantGElemS * 1e9)
		}
	case ClassMatmul, ClassAttention:
		curve := eff(c.CubeEff)
		if c.CubeHalfGFLOP > 0 {
			curve *= w.FLOPs / (w.FLOPs + c.CubeHalfGFLOP*1e9)
		}
		work = max(w.Bytes/(bw*eff(c.VectorEff)), w.FLOPs/(peak*max(curve, 1e-6)))
	case ClassWQMatmul:
		curve := eff(c.WQCubeEff)
		if c.CubeHalfGFLOP > 0 {
			curve *= w.FLOPs / (w.FLOPs + c.CubeHalfGFLOP*1e9)
		}
		work = max(w.Bytes/(bw*eff(c.StreamEff)), w.FLOPs/(peak*max(curve, 1e-6)))
		if c.WQMatmulGElemS > 0 {
			work += w.WeightElems / (c.WQMatmulGElemS * 1e9)
		}
	default:
		work = w.Bytes / (bw * eff(c.VectorEff))
	}
	return float64(w.Calls)*o.TaskUS + work*1e6, launchUS
}

// Calibration is what scripts/costfit fits: the per-call overheads and
// the kernel classes' efficiencies every Atlas A2 profile shares, and the
// 310P's memory efficiency relative to them.
type Calibration struct {
	LaunchUS      float64 `json:"launch_us"`
	WQLaunchUS    float64 `json:"wq_launch_us"`
	TaskUS        float64 `json:"task_us"`
	GraphLaunchUS float64 `json:"graph_launch_us"`
	Costs         Costs   `json:"costs"`
	// EarlyLaunchUS is LaunchUS of ggml-cann's builds before August 2025
	// (the public figures' builds differ; scripts/costfit prices those
	// figures with it). The profiles use LaunchUS, the later builds'.
	EarlyLaunchUS float64 `json:"early_launch_us"`
	// MemEff310P is the fraction of the A2 parts' bandwidth efficiencies
	// (StreamEff, VectorEff) the 310P's LPDDR4X sustains: the 310P
	// profile's costs are Costs with both scaled by it (0: by 1).
	MemEff310P float64 `json:"mem_eff_310p"`
}

// costs310P are the kernel costs of the 310P profile under c.
func (c Calibration) costs310P() Costs {
	k := c.Costs
	if c.MemEff310P > 0 {
		k.StreamEff *= c.MemEff310P
		k.VectorEff *= c.MemEff310P
	}
	return k
}

// Calibrated returns the built-in calibration (calibration.go).
func Calibrated() Calibration { return calibrated }

// Calibrate sets p's per-call overheads and kernel efficiencies to c
// (the copy and CPU costs stay).
func (p *Profile) Calibrate(c Calibration) {
	p.Overheads.LaunchUS, p.Overheads.WQLaunchUS, p.Overheads.TaskUS, p.Overheads.GraphLaunchUS = c.LaunchUS, c.WQLaunchUS, c.TaskUS, c.GraphLaunchUS
	p.Costs = c.Costs
	if p.Family == "310p" {
		p.Costs = c.costs310P()
	}
}
