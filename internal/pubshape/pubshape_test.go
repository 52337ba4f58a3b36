package pubshape

import (
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// Every shape builds in every type the tables use, and the Q4_0 mix puts
// the output projection where llama-quantize does.
func TestShapesBuild(t *testing.T) {
	for _, s := range []*Shape{Qwen25_05B, Qwen25_7B, Qwen2_7B, Llama2_7B, Llama32_1B, TinyLlama_1B, Phi3_Mini, Qwen3_32B} {
		for _, dt := range []ir.DType{ir.F16, ir.Q8_0, ir.Q4_0} {
			if _, err := models.BuildHParams(s.HP, s.Lookup(dt), models.Options{NCtx: 64}); err != nil {
				t.Errorf("%s %s: %v", s.Name, dt, err)
			}
		}
	}
	for _, c := range []struct {
		s    *Shape
		name string
		want ir.DType
	}{
		{Qwen25_05B, "token_embd.weight", ir.Q8_0}, // tied, 896 wide: not whole Q6_K blocks
		{Qwen25_7B, "output.weight", ir.Q6_K},
		{Llama2_7B, "token_embd.weight", ir.Q4_0},
		{Llama2_7B, "blk.0.attn_norm.weight", ir.F32},
		{Llama32_1B, "token_embd.weight", ir.Q6_K}, // tied, 2048 wide
		{Phi3_Mini, "blk.0.attn_qkv.weight", ir.Q4_0},
		{Phi3_Mini, "output.weight", ir.Q6_K},
	} {
		w, ok := c.s.Lookup(ir.Q4_0)(c.name)
		if !ok || w.Type != c.want {
			t.Errorf("%s %s: %v %v, want %v", c.s.Name, c.name, w.Type, ok, c.want)
		}
	}
}
