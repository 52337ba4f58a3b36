package models

import (
	"encoding/binary"
	"math"

	"github.com/irtool/irtool/ir"
)

// The step ABI: what every backend that runs a built model feeds it for
// one step (the input tensors by name) and how the KV cache grows. The
// graph builder defines the inputs (inp_tokens, inp_pos, kv_idx, KQ_mask,
// inp_out_ids) and the KV layout, so it owns their contents too.

// KVLen returns llama.cpp's n_kv for a cache holding used cells: the used
// length padded to 32, at least 32, at most n_ctx.
func KVLen(used, nCtx int64) int64 {
	n := (used + KVPad - 1) / KVPad * KVPad
	if n < KVPad {
		n = KVPad
	}
	return min(n, nCtx)
}

// Inputs computes the input tensors of a step, by name, as raw bytes. It is
// exported so other backends feed exactly the same inputs.
func Inputs(tokens []int32, pos int64, b ir.Bindings) map[string][]byte {
	n, nKV, nOut := int64(len(tokens)), b[SymKV], b[SymOutputs]
	in := map[string][]byte{}
	for _, name := range StepInputs {
		buf := make([]byte, InputSize(name, n, nKV, nOut))
		FillInput(name, buf, tokens, pos, nKV, nOut)
		in[name] = buf
	}
	return in
}

// The names of the step inputs, shared by the graph builder and Inputs.
const (
	InputTokens = "inp_tokens"  // i32[n_tokens]: the token ids
	InputPos    = "inp_pos"     // i32[n_tokens]: their positions
	InputKVIdx  = "kv_idx"      // i64[n_tokens]: the KV cell each token's K/V row goes to (set_rows mode)
	InputMask   = "KQ_mask"     // f32[n_kv, pad(n_tokens, MaskPad)]: the causal mask, 0 or -inf
	InputOutIDs = "inp_out_ids" // i32[n_outputs]: the tokens whose logits the step returns
)

// StepInputs names the inputs of a step (those Inputs computes).
var StepInputs = []string{InputTokens, InputPos, InputKVIdx, InputMask, InputOutIDs}

// InputSize is the byte size of a step input for nTokens tokens, a KV
// window of nKV cells and nOut output rows (0 for an unknown name).
func InputSize(name string, nTokens, nKV, nOut int64) int64 {
	switch name {
	case InputTokens, InputPos:
		return 4 * nTokens
	case InputKVIdx:
		return 8 * nTokens
	case InputMask:
		return 4 * nKV * ((nTokens + MaskPad - 1) / MaskPad * MaskPad)
	case InputOutIDs:
		return 4 * nOut
	}
	return 0
}

// FillInput writes step input name for tokens at pos (KV window nKV, nOut
// output rows) into dst, which holds at least InputSize bytes, without
// allocating: what Inputs computes, for backends that keep the inputs in
// place. It reports false for an unknown name or a short dst.
func FillInput(name string, dst []byte, tokens []int32, pos, nKV, nOut int64) bool {
	n := int64(len(tokens))
	if int64(len(dst)) < InputSize(name, n, nKV, nOut) {
		return false
	}
	switch name {
	case InputTokens:
		for i, t := range tokens {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(t))
		}
	case InputPos:
		for i := range n {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(pos+i)))
		}
	case InputKVIdx:
		for i := range n {
			binary.LittleEndian.PutUint64(dst[8*i:], uint64(pos+i))
		}
	case InputMask:
		rows := (n + MaskPad - 1) / MaskPad * MaskPad
		negInf := math.Float32bits(float32(math.Inf(-1)))
		for r := int64(0); r < n; r++ {
			for c := int64(0); c < nKV; c++ {
				v := negInf
				// Cell c holds position c; token r sits at position pos+r.
				if c <= pos+r {
					v = 0
				}
				binary.LittleEndian.PutUint32(dst[4*(r*nKV+c):], v)
			}
		}
		// The padding rows are all -Inf: one value, then doubling copies.
		if pad := dst[4*n*nKV : 4*rows*nKV]; len(pad) > 0 {
			binary.LittleEndian.PutUint32(pad, negInf)
			for k := 4; k < len(pad); k *= 2 {
				copy(pad[k:], pad[:k])
			}
		}
	case InputOutIDs:
		for i := range nOut {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(n-nOut+i)))
		}
	default:
		return false
	}
	return true
}

// StepBindings binds one step of n tokens at position pos over a KV cache
// of nCtx cells, as runtime/session binds it (one output row).
func StepBindings(n, pos, nCtx int64) ir.Bindings {
	return ir.Bindings{SymTokens: n, SymKV: KVLen(pos+n, nCtx), SymOutputs: 1, SymKVHead: pos}
}

// IsStepGraph reports whether g is a model's step graph (it has the
// InputTokens input).
func IsStepGraph(g *ir.Graph) bool {
	for _, n := range g.Leaves(ir.OpInput) {
		if n.Name == InputTokens {
			return true
		}
	}
	return false
}
