package target

import "github.com/irtool/irtool/ir"

// The Atlas A2 parts, one profile per SKU. Huawei publishes no per-SKU
// datasheet of the Ascend 910B dies; each figure below names its public
// source, and a figure no source gives is marked an assumption.
// docs/LOWERING.md ("Profiles per SKU") tabulates them.

// sku is the data of one Atlas A2 part.
type sku struct {
	name, desc string
	chip       Chip
}

const (
	srcMem910B2 = "64 GB HBM2e: github.com/ggml-org/llama.cpp/issues/10777 logs \"CANN0 (Ascend910B2) - 62152 MiB free\""
	srcMem910B3 = "64 GB HBM2e: github.com/ggml-org/llama.cpp/issues/10161 logs \"CANN0 (Ascend910B3) - 62120 MiB free\""
	srcMem910B4 = "32 GB HBM: llama.cpp PR 16752 logs \"CANN0 (Ascend910B4) | 30196\" MiB total"
	srcFP16B2   = "FP16 ≈320 TFLOPS (boardor.com, \"Huawei Ascend 910B outperforms H20\"); torch matmul measured 314.5 TFLOPS at 4096³ on a 910B2 (github.com/github.com/zzc0721/torch-performance-test-data/issues/109)"
	srcBW       = "HBM bandwidth 1.2 TB/s (oryoy.com, \"910B算力是多少\")"
)

var (
	sku910B1 = sku{"ascend910b1", "Ascend 910B1 (Atlas 800T A2)", Chip{Name: "Ascend 910B1", MatmulFLOPS: 320 * tf, MemBW: 1.2e12, MemBytes: 64 << 30, AICores: 24,
		Source: srcBW + "; assumption: memory, FP16 peak and 24 AI cores as the 910B2's (no public figure separates B1 from B2)"}}
	sku910B2 = sku{"ascend910b2", "Ascend 910B2 (Atlas 800T/800I A2, Atlas 300T A2)", Chip{Name: "Ascend 910B2", MatmulFLOPS: 320 * tf, MemBW: 1.2e12, MemBytes: 64 << 30, AICores: 24,
		Source: srcFP16B2 + "; " + srcBW + "; " + srcMem910B2 + "; assumption: 24 AI cores"}}
	sku910B3 = sku{"ascend910b3", "Ascend 910B3 (Atlas 800T A2)", Chip{Name: "Ascend 910B3", MatmulFLOPS: 320 * tf * 20 / 24, MemBW: 1.2e12, MemBytes: 64 << 30, AICores: 20,
		Source: srcBW + "; " + srcMem910B3 + "; assumption: 20 AI cores at the 910B2's clock, FP16 peak 20/24 of its 320 TFLOPS"}}
	sku910B4 = sku{"ascend910b4", "Ascend 910B4 (Atlas 800I A2, 32 GB)", Chip{Name: "Ascend 910B4", MatmulFLOPS: 320 * tf * 20 / 24, MemBW: 0.8e12, MemBytes: 30196 << 20, AICores: 20,
		Source: srcMem910B4 + "; HBM bandwidth ≈0.8 TB/s (jishuzhan.net article 1872432607539499010 quotes 768 GB/s for a 910B; assumption: half the 64 GB parts' stacks); assumption: 20 AI cores, FP16 peak as the 910B3's"}}
)

// a2Profile is the profile of one Atlas A2 part: ACL graph capture, the
// HCCS mesh of an 8-NPU server, the A2 operators' call limits.
func a2Profile(s sku) *Profile {
	chip := s.chip
	return &Profile{
		Name:         s.name,
		Description:  s.desc + ": Atlas A2 training/inference series, PCIe-attached, ACL graph capture",
		NPU:          &chip,
		Interconnect: hccs910B(),
		Host:         serverHost(),
		LinkBW:       32 * gb,
		LinkSource:   "PCIe 4.0 x16, ≈32 GB/s per direction (PCI-SIG); assumption that the card sits on such a link",
		GraphCapture: true,
		Align:        64, // aclrtMalloc starts are 64-B aligned and copies want 64-B ends; tensor data needs 32 B (CANN runtime API reference). ggml-cann pads to 128: --align 128
		Overheads:    defaultOverheads(),
		Costs:        calibrated.Costs,
		Family:       "a2",
		rules:        defaultRules,
		limits:       a2Limits,
	}
}

// ascend910B is the generic name: the Ascend 910B3, the part of the
// Atlas 800T A2 servers most public llama.cpp figures without a stated
// SKU come from (docs/LOWERING.md).
func ascend910B() *Profile {
	p := a2Profile(sku910B3)
	p.Name = "ascend910b"
	p.Description = "Ascend 910B (generic: the 910B3's profile): Atlas A2 training/inference series, PCIe-attached, ACL graph capture"
	return p
}

// ascend310P is one chip of an Atlas 300I Pro / Duo card. llama.cpp's
// CANN backend runs F32 and F16 models on it (PR 10216) without ACL
// graphs or quantised matmul; irtool applies the 310-class gate. Its
// bandwidth efficiencies are the A2 parts' scaled by the fitted
// Calibration.MemEff310P.
func ascend310P() *Profile {
	npu := Chip{Name: "Ascend 310P (Atlas 300I Pro/Duo, one chip)", MatmulFLOPS: 70 * tf, MemBW: 204.8 * gb, MemBytes: 24 << 30, AICores: 8,
		Source: "Atlas 300I Pro inference card specifications (huawei.com): 70 TFLOPS FP16, 140 TOPS INT8, 24 GB LPDDR4X at 204.8 GB/s; assumption: 8 AI cores"}
	return &Profile{
		Name:         "ascend310p",
		Description:  "Atlas 300I Pro/Duo inference cards (Ascend 310P, one chip): no ACL graph, no quantised matmul, no aclnn RoPE",
		NPU:          &npu,
		Host:         serverHost(),
		LinkBW:       32 * gb,
		LinkSource:   "PCIe 4.0 x16, ≈32 GB/s per direction (PCI-SIG); assumption that the card sits on such a link",
		GraphCapture: false, // ggml-cann builds no ACL graph for 310P (PR 10216)
		Align:        64,
		Overheads:    defaultOverheads(),
		Costs:        calibrated.costs310P(),
		Family:       "310p",
		rules:        defaultRules,
		gate:         gate310P,
	}
}

// LlamaCpp returns the profile as llama.cpp's CANN backend drives the
// part, to cost its program (compiler.Options.LlamaCpp): every node the
// NPU can run stays there, since ggml's scheduler places an op on the
// backend that supports it, not by cost; and on 310P ggml-cann runs RoPE
// on the NPU, emulated without aclnnRotaryPositionEmbedding
// (gateLlamaCpp310P).
func (p *Profile) LlamaCpp() *Profile {
	if p.NPU == nil {
		return p
	}
	c := p.clone()
	gate := p.gate
	if p.Family == "310p" {
		gate = gateLlamaCpp310P
	}
	c.gate = func(n *ir.Node, s Support) Support {
		if gate != nil {
			s = gate(n, s)
		}
		if s.OK && s.Stay == "" {
			s.Stay = llamaCppStay
		}
		return s
	}
	return c
}

const llamaCppStay = "llama.cpp's scheduler runs every op ggml-cann's supports_op accepts on the NPU, whatever its cost"

// rope310P are the calls ggml-cann's ROPE makes on 310P for an f32
// input after its sin/cos cache (aclnn_ops.cpp, the ASCEND_310P branch
// of ggml_cann_rope): the input rolled by half a head (NeoX) or by one
// element in pairs (normal), the sign vector filled and negated on its
// first half, the rolled input times the signs, the input times cos and
// the rolled input times sin in place, and their sum.
var rope310P = []string{"aclnnRoll", "aclnnInplaceFillScalar", "aclnnInplaceMuls", "aclnnMul", "aclnnInplaceMul", "aclnnInplaceMul", "aclnnAdd"}

// gateLlamaCpp310P is gate310P for llama.cpp's program: a rope runs on
// the NPU with ggml-cann's 310P calls in place of
// aclnnRotaryPositionEmbedding.
func gateLlamaCpp310P(n *ir.Node, s Support) Support {
	if n.Op == ir.OpRope && s.OK {
		var calls []string
		for _, c := range s.Calls {
			if c == "aclnnRotaryPositionEmbedding" {
				calls = append(calls, rope310P...)
				continue
			}
			calls = append(calls, c)
		}
		s.Calls, s.Kernel = calls, "aclnnAdd"
	}
	return gate310P(n, s)
}

// gate310P is llama.cpp's CANN backend on 310P (ggml-cann's supports_op
// under ASCEND_310P): no quantised matmul, no flash attention, no BF16;
// RoPE, which ggml-cann emulates there with roll/mul/add, stays on the
// CPU in irtool.
func gate310P(n *ir.Node, s Support) Support {
	s = attentionWithoutFIA(n, s, "flash attention is off on 310P in llama.cpp's CANN backend (ggml-cann's supports_op for ASCEND_310P), and CANN's aclnnFusedInferAttentionScoreV2 page lists Atlas inference products (310P) as unsupported")
	for _, c := range s.Calls {
		switch c {
		case "aclnnRotaryPositionEmbedding":
			return no("aclnnRotaryPositionEmbedding is not used on 310P: ggml-cann emulates RoPE there with roll, mul and add (its ASCEND_310P branch of ggml_cann_rope), which irtool's runtime does not bind, so RoPE stays on the host")
		case "aclnnWeightQuantBatchMatmulV2", "aclnnFusedInferAttentionScoreV2":
			return no("%s is not used on 310P by llama.cpp's CANN backend (ggml-cann's supports_op for ASCEND_310P)", c)
		}
	}
	for _, a := range n.Args {
		if a.Type.DType == ir.BF16 {
			return no("bf16 is not supported on 310-class parts (ggml-cann's supports_op and compute_forward)")
		}
	}
	return s
}
