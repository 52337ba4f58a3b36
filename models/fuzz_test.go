package models

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
)

// FuzzBuildHParams builds graphs from arbitrary hyper-parameters (the
// library entry point that takes no file) with weights that either have the
// shapes the hyper-parameters imply or, when skew is set, a wrong dim.
// Build must return a graph that verifies, or an error with the package
// prefix: never panic.
func FuzzBuildHParams(f *testing.F) {
	f.Add("llama", int64(512), int64(64), int64(5), int64(8), int64(4), int64(172), int64(8), int64(8), int64(8), uint8(0))
	f.Add("qwen2", int64(100), int64(32), int64(1), int64(4), int64(2), int64(48), int64(8), int64(8), int64(8), uint8(0))
	f.Add("llama", int64(512), int64(64), int64(5), int64(8), int64(4), int64(172), int64(8), int64(8), int64(8), uint8(3))
	f.Add("llama", int64(1), int64(0), int64(1), int64(0), int64(0), int64(1), int64(0), int64(0), int64(0), uint8(0))
	f.Fuzz(func(t *testing.T, arch string, nVocab, nEmbd, nLayer, nHead, nHeadKV, nFF, hdK, hdV, nRot int64, skew uint8) {
		hp := HParams{Arch: arch, NVocab: nVocab, NCtxTrain: 2048, NEmbd: nEmbd, NLayer: nLayer, NHead: nHead,
			NHeadKV: nHeadKV, NFF: nFF, HeadDimK: hdK, HeadDimV: hdV, NRot: nRot, RMSEps: 1e-5,
			RopeFreqBase: 10000, RopeFreqScale: 1, RopeAttn: 1, NCtxOrig: 2048}
		if arch == "qwen2" {
			hp.RopeMode = 2
		}
		lookup := func(name string) (Weight, bool) {
			w := Weight{Type: ir.F32, Ne: [4]int64{1, 1, 1, 1}}
			switch {
			case strings.HasSuffix(name, "token_embd.weight"), name == "output.weight":
				w.Ne[0], w.Ne[1] = nEmbd, nVocab
			case strings.HasSuffix(name, "norm.weight"):
				w.Ne[0] = nEmbd
			case strings.HasSuffix(name, "attn_q.weight"):
				w.Ne[0], w.Ne[1] = nEmbd, nHead*hdK
			case strings.HasSuffix(name, "attn_k.weight"):
				w.Ne[0], w.Ne[1] = nEmbd, nHeadKV*hdK
			case strings.HasSuffix(name, "attn_v.weight"):
				w.Ne[0], w.Ne[1] = nEmbd, nHeadKV*hdV
			case strings.HasSuffix(name, "attn_output.weight"):
				w.Ne[0], w.Ne[1] = nHead*hdV, nEmbd
			case strings.HasSuffix(name, "ffn_gate.weight"), strings.HasSuffix(name, "ffn_up.weight"):
				w.Ne[0], w.Ne[1] = nEmbd, nFF
			case strings.HasSuffix(name, "ffn_down.weight"):
				w.Ne[0], w.Ne[1] = nFF, nEmbd
			case strings.HasSuffix(name, "attn_q.bias"):
				w.Ne[0] = nHead * hdK
			case strings.HasSuffix(name, "attn_k.bias"), strings.HasSuffix(name, "attn_v.bias"):
				w.Ne[0] = nHeadKV * hdK
			default:
				return w, false
			}
			if skew != 0 {
				w.Ne[skew%2]++
			}
			return w, true
		}
		m, err := BuildHParams(hp, lookup, Options{NCtx: 64})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "models: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if err := ir.Verify(m.Graph); err != nil {
			t.Fatalf("built graph fails Verify: %v", err)
		}
	})
}

// TestBuildHParamsRejects covers the hostile hyper-parameters a caller of
// BuildHParams can pass: each gives an error naming the value.
func TestBuildHParamsRejects(t *testing.T) {
	good := HParams{Arch: "llama", NVocab: 512, NEmbd: 64, NLayer: 2, NHead: 8, NHeadKV: 4, NFF: 172,
		HeadDimK: 8, HeadDimV: 8, NRot: 8, RMSEps: 1e-5, RopeFreqBase: 10000, RopeFreqScale: 1}
	lookup := func(string) (Weight, bool) { return Weight{Type: ir.F32, Ne: [4]int64{64, 64, 1, 1}}, true }
	for _, c := range []struct {
		edit func(*HParams)
		want string
	}{
		{func(h *HParams) { h.NLayer = 1 << 20 }, "n_layer 1048576 exceeds"},
		{func(h *HParams) { h.NHeadKV = 0 }, "n_head_kv 0 is out of range"},
		{func(h *HParams) { h.NHeadKV = 3 }, "not a multiple of n_head_kv 3"},
		{func(h *HParams) { h.NEmbd = -1 }, "n_embd -1 is out of range"},
		{func(h *HParams) { h.NRot = 9 }, "n_rot 9"},
		{func(h *HParams) { h.RMSEps = 0 }, "rms epsilon"},
		{func(h *HParams) { h.NExpert, h.NExpertUsed, h.NFFExp = 4, 5, 64 }, "4 experts with 5 used"},
		{func(h *HParams) { h.NExpert, h.NExpertUsed = 4, 2 }, "expert n_ff 0"},
		{func(h *HParams) { h.SWAWindow = -1 }, "sliding window -1"},
		{func(h *HParams) { h.Arch = "gpt9" }, `architecture "gpt9"`},
	} {
		hp := good
		c.edit(&hp)
		if _, err := BuildHParams(hp, lookup, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error mentioning %q, got %v", c.want, err)
		}
	}
}
