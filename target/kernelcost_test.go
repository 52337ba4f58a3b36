package target

import (
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/stretchr/testify/require"
)

// TestKernelCostClasses: each class is priced by its own rule with the
// profile's calibration.
func TestKernelCostClasses(t *testing.T) {
	p, err := Get("ascend910b4")
	require.NoError(t, err)
	c := Calibration{LaunchUS: 10, WQLaunchUS: 20, TaskUS: 5, GraphLaunchUS: 30,
		Costs: Costs{StreamEff: 0.5, VectorEff: 0.25, CubeEff: 1, CubeHalfGFLOP: 1, WQCubeEff: 0.5, AntiquantGElemS: 100}}
	p.Calibrate(c)
	bw, peak := p.NPU.MemBW, p.NPU.MatmulFLOPS
	wq := *p
	wq.Calibrate(Calibration{LaunchUS: 10, WQLaunchUS: 20, TaskUS: 5, GraphLaunchUS: 30,
		Costs: Costs{StreamEff: 0.5, VectorEff: 0.25, CubeEff: 1, CubeHalfGFLOP: 1, WQCubeEff: 0.5, AntiquantGElemS: 100, WQMatmulGElemS: 40}})
	for _, tc := range []struct {
		name         string
		w            Work
		device, host float64
	}{
		{"gemv streams at stream_eff", Work{Class: ClassGEMV, Calls: 2, Bytes: 1e6}, 2*5 + 1e6/(bw*0.5)*1e6, 20},
		{"wq-gemv adds its antiquant and host time", Work{Class: ClassWQGEMV, Calls: 1, WQCalls: 1, Bytes: 1e6, WeightElems: 1e8}, 5 + (1e6/(bw*0.5)+1e8/100e9)*1e6, 30},
		{"vector streams at vector_eff", Work{Class: ClassVector, Calls: 3, Bytes: 1e6}, 15 + 1e6/(bw*0.25)*1e6, 30},
		{"matmul on the curve", Work{Class: ClassMatmul, Calls: 1, FLOPs: 1e9, Bytes: 1}, 5 + 1e9/(peak*(1e9/(1e9+1e9)))*1e6, 10},
		{"wq-matmul on the curve at wq_cube_eff", Work{Class: ClassWQMatmul, Calls: 1, WQCalls: 1, FLOPs: 1e9, Bytes: 1}, 5 + 1e9/(peak*0.5*(1e9/(1e9+1e9)))*1e6, 30},
		{"wq-matmul adds its per-weight time", Work{Class: ClassWQMatmul, Calls: 1, WQCalls: 1, FLOPs: 1e9, Bytes: 1, WeightElems: 1e8},
			5 + (1e9/(peak*0.5*(1e9/(1e9+1e9)))+1e8/40e9)*1e6, 30},
		{"collective: the link model's time", Work{Class: ClassLink, Calls: 1, LinkUS: 42}, 42, 10},
	} {
		q := p
		if tc.w.WeightElems > 0 && tc.w.Class == ClassWQMatmul {
			q = &wq
		}
		d, h := q.KernelCost(tc.w)
		require.InDelta(t, tc.device, d, 1e-9*tc.device, tc.name)
		require.InDelta(t, tc.host, h, 1e-12, tc.name)
	}
	// The curve: more work, higher throughput, never above cube_eff.
	last := 0.0
	for _, f := range []float64{1e6, 1e8, 1e10, 1e12} {
		d, _ := p.KernelCost(Work{Class: ClassMatmul, FLOPs: f})
		tp := f / (d * 1e-6)
		require.Greater(t, tp, last)
		require.LessOrEqual(t, tp, peak)
		last = tp
	}
}

// TestCalibrate310P: the 310P's bandwidth efficiencies are the A2
// parts' scaled by mem_eff_310p; the A2 parts take them as they are.
func TestCalibrate310P(t *testing.T) {
	c := Calibration{LaunchUS: 10, TaskUS: 5, MemEff310P: 0.5, Costs: Costs{StreamEff: 0.8, VectorEff: 0.4, CubeEff: 1}}
	p, err := Get("ascend310p")
	require.NoError(t, err)
	p.Calibrate(c)
	require.InDelta(t, 0.4, p.Costs.StreamEff, 1e-12)
	require.InDelta(t, 0.2, p.Costs.VectorEff, 1e-12)
	a2, err := Get("ascend910b")
	require.NoError(t, err)
	a2.Calibrate(c)
	require.Equal(t, c.Costs, a2.Costs)
	fresh, err := Get("ascend310p")
	require.NoError(t, err)
	require.Equal(t, Calibrated().costs310P(), fresh.Costs)
}

// TestAttentionIntermediates: the fused attention run as ggml-cann's
// unfused calls (on the 310B, which has no aclnnFusedInferAttentionScoreV2)
// carries the traffic of its f32 scores and probabilities (38 B per score)
// on top of its operands and result; through FIA (Atlas A2) it does not.
func TestAttentionIntermediates(t *testing.T) {
	g, err := ir.ParseString(`graph "attention" {
  %0 = input() : f32[4,4,3] "Qcur-0"
  %1 = state() : f16[8,16] "cache_k_l0"
  %2 = state() : f16[8,16] "cache_v_l0"
  %3 = input() : f32[8,3] "KQ_mask"
  %4 = permute(%0) {axes=[0,2,1,3]} : f32[4,3,4] "q-0" layer=0
  %5 = view(%1) {nb=[2,16,8,256], offset=dim(0)} : f16[4,8,2] "k-0" layer=0
  %6 = view(%2) {nb=[16,2,8,16], offset=dim(0)} : f16[8,4,2] "v-0" layer=0
  %7 = attention(%4, %5, %6, %3) {max_bias=0.0, scale=0.5} : f32[16,3] "kqv_merged_cont-0" layer=0
  outputs(%7)
}`)
	require.NoError(t, err)
	for _, c := range []struct {
		target string
		fused  bool
	}{{"ascend310b", false}, {"ascend910b", true}} {
		p, err := Get(c.target)
		require.NoError(t, err)
		n := g.Nodes[7]
		s := p.Supports(n)
		require.True(t, s.OK, s.Reason)
		require.Equal(t, c.fused, s.Kernel == FIA, c.target)
		_, bytes, err := Traffic(n, nil)
		require.NoError(t, err)
		w, err := p.Work(n, nil)
		require.NoError(t, err)
		scores := 3.0 * 4 * 8 // query rows x heads x cells
		if c.fused {
			scores = 0
		}
		require.InDelta(t, bytes+38*scores, w.Bytes, 1e-9, c.target)
		require.Equal(t, ClassGEMV, w.Class, "3 query rows stream like a GEMV")
	}
}
