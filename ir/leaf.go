package ir

import "fmt"

// The leaves: data that exists before the step.
const (
	OpInput  Op = "input"  // leaf: a per-step input (token ids, positions, mask, indices)
	OpWeight Op = "weight" // leaf: a model weight, by GGUF tensor name
	OpState  Op = "state"  // leaf: persistent state carried across steps (KV cache)
	OpConst  Op = "const"  // leaf: a compile-time constant held in Node.Data
)

func leafCheck(n *Node) error {
	if n.Op == OpConst {
		b, err := n.Type.Bytes()
		if err != nil {
			return err
		}
		if int64(len(n.Data)) != b {
			return fmt.Errorf("constant holds %d bytes, type %s needs %d", len(n.Data), n.Type, b)
		}
	}
	return nil
}

func init() {
	for _, leaf := range []struct {
		op  Op
		doc string
	}{
		{OpInput, "a per-step input: token ids, positions, attention mask, row indices"},
		{OpWeight, "a model weight, named by its GGUF tensor name"},
		{OpState, "persistent state carried across steps (the KV cache); written by set_rows or cpy"},
		{OpConst, "a compile-time constant; its bytes are in the node"},
	} {
		MustRegister(OpInfo{Name: leaf.op, Attrs: noAttrs, Kind: KindLeaf, Check: leafCheck, Doc: leaf.doc})
	}
}
