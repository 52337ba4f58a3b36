package models

import (
	"math"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
)

// TestArchHParams reads the hyper-parameters of qwen3, qwen3moe, gemma3
// and phi3 as llama.cpp does (values after its defaults) and checks the
// ops its graph holds.
func TestArchHParams(t *testing.T) {
	f32 := func(x float64) float64 { return float64(float32(x)) }
	for _, c := range []struct {
		file  string
		check func(t *testing.T, hp HParams)
		ops   []ir.Op
	}{
		{"synth-qwen3-Q4_0.gguf", func(t *testing.T, hp HParams) {
			if hp.HeadDimK != 32 || hp.NRot != 32 || hp.RopeMode != 2 || hp.RMSEps != f32(1e-6) || hp.RopeFreqBase != 1e6 {
				t.Errorf("head_dim %d n_rot %d mode %d eps %g base %g", hp.HeadDimK, hp.NRot, hp.RopeMode, hp.RMSEps, hp.RopeFreqBase)
			}
		}, []ir.Op{ir.OpRMSNorm, ir.OpRope}},
		{"synth-qwen3moe-Q4_0.gguf", func(t *testing.T, hp HParams) {
			if hp.NExpert != 4 || hp.NExpertUsed != 2 || hp.NFFExp != 64 || !hp.ExpertNormW || hp.ExpertWeightsScale != 0 {
				t.Errorf("experts %d used %d n_ff_exp %d norm %v scale %g", hp.NExpert, hp.NExpertUsed, hp.NFFExp, hp.ExpertNormW, hp.ExpertWeightsScale)
			}
		}, []ir.Op{ir.OpTopK, ir.OpMulMatID, ir.OpSumRows, ir.OpDiv}},
		{"synth-gemma3-Q4_0.gguf", func(t *testing.T, hp HParams) {
			if hp.SWAWindow != 8 || hp.SWAPattern != 2 || !hp.IsSWA(0) || hp.IsSWA(1) {
				t.Errorf("window %d pattern %d swa(0) %v swa(1) %v", hp.SWAWindow, hp.SWAPattern, hp.IsSWA(0), hp.IsSWA(1))
			}
			if hp.RopeFreqBase != 1e6 || hp.RopeFreqBaseSWA != 1e4 || hp.RopeFreqScaleSWA != 1 {
				t.Errorf("bases %g / %g", hp.RopeFreqBase, hp.RopeFreqBaseSWA)
			}
			if hp.QScale != f32(1/math.Sqrt(32)) || hp.EmbdScale != 8 {
				t.Errorf("q scale %g, embedding scale %g", hp.QScale, hp.EmbdScale)
			}
		}, []ir.Op{ir.OpGelu, ir.OpSWAMask, ir.OpScale}},
		{"synth-phi3-Q4_0.gguf", func(t *testing.T, hp HParams) {
			if hp.QScale != 0.25 || hp.NRot != 16 || hp.RopeMode != 2 || hp.SWAWindow != 0 {
				t.Errorf("q scale %g n_rot %d mode %d window %d", hp.QScale, hp.NRot, hp.RopeMode, hp.SWAWindow)
			}
		}, []ir.Op{ir.OpView, ir.OpCont, ir.OpScale}},
		{"synth-llamamoe-Q4_0.gguf", func(t *testing.T, hp HParams) {
			if hp.NExpert != 4 || hp.NExpertUsed != 2 || hp.NFFExp != 64 || !hp.ExpertNormW || hp.RopeMode != 0 {
				t.Errorf("experts %d used %d n_ff_exp %d norm %v mode %d", hp.NExpert, hp.NExpertUsed, hp.NFFExp, hp.ExpertNormW, hp.RopeMode)
			}
		}, []ir.Op{ir.OpTopK, ir.OpMulMatID}},
		{"synth-llama3rope-Q4_0.gguf", func(t *testing.T, hp HParams) {
			if hp.RopeMode != 0 || hp.RopeFreqBase != 500000 || hp.RopeFreqScale != 1 {
				t.Errorf("mode %d base %g scale %g", hp.RopeMode, hp.RopeFreqBase, hp.RopeFreqScale)
			}
		}, []ir.Op{ir.OpRope}},
	} {
		t.Run(strings.TrimSuffix(c.file, ".gguf"), func(t *testing.T) {
			f, err := gguf.Open(testref.Testdata(c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := Build(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, m.HParams)
			counts := m.Graph.OpCounts()
			for _, op := range c.ops {
				if counts[string(op)] == 0 {
					t.Errorf("graph has no %s node: %v", op, counts)
				}
			}
			if c.file == "synth-llama3rope-Q4_0.gguf" {
				for _, n := range m.Graph.Nodes {
					if n.Op == ir.OpRope && len(n.Args) != 3 {
						t.Fatalf("rope %q without the rope_freqs factors", n.Name)
					}
				}
			}
		})
	}
}

// TestUnsupportedArchitecture: an architecture without a builder gives an
// error naming it and the supported ones.
func TestUnsupportedArchitecture(t *testing.T) {
	hp := HParams{Arch: "mamba", NVocab: 8, NEmbd: 8, NLayer: 1, NHead: 1, NHeadKV: 1, NFF: 8, HeadDimK: 8, HeadDimV: 8, RMSEps: 1e-5}
	_, err := BuildHParams(hp, func(string) (Weight, bool) { return Weight{}, false }, Options{})
	if err == nil || !strings.Contains(err.Error(), `architecture "mamba" is not supported (gemma3, llama`) {
		t.Fatalf("got %v", err)
	}
}
