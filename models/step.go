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
	n := int64(len(tokens))
	in := map[string][]byte{}
	in["inp_tokens"] = i32Bytes(tokens)
	p := make([]int32, n)
	idx := make([]byte, 8*n)
	for i := range p {
		p[i] = int32(pos + int64(i))
		binary.LittleEndian.PutUint64(idx[8*i:], uint64(pos+int64(i)))
	}
	in["inp_pos"] = i32Bytes(p)
	in["kv_idx"] = idx
	nKV := b[SymKV]
	rows := (n + MaskPad - 1) / MaskPad * MaskPad
	mask := make([]byte, 4*nKV*rows)
	negInf := math.Float32bits(float32(math.Inf(-1)))
	for r := int64(0); r < rows; r++ {
		for c := int64(0); c < nKV; c++ {
			v := negInf
			// Cell c holds position c; token r sits at position pos+r.
			if r < n && c <= pos+r {
				v = 0
			}
			binary.LittleEndian.PutUint32(mask[4*(r*nKV+c):], v)
		}
	}
	in["KQ_mask"] = mask
	nOut := b[SymOutputs]
	ids := make([]int32, nOut)
	for i := range ids {
		ids[i] = int32(n - nOut + int64(i))
	}
	in["inp_out_ids"] = i32Bytes(ids)
	return in
}

func i32Bytes(v []int32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(x))
	}
	return out
}
