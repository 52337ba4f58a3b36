package tokenizer

import "hash/maphash"

// strIndex maps token text to id. It is an open-addressing hash table over
// byte slices, so the merge loops can look up a candidate token without
// building a string; it is about twice as fast as a Go map for this use.
type strIndex struct {
	seed  maphash.Seed
	mask  uint64
	slots []int32 // token id, or -1
	texts []string
}

func newStrIndex(texts []string) *strIndex {
	n := uint64(16)
	for n < uint64(len(texts))*2 {
		n <<= 1
	}
	x := &strIndex{seed: maphash.MakeSeed(), mask: n - 1, slots: make([]int32, n), texts: texts}
	for i := range x.slots {
		x.slots[i] = -1
	}
	for id, s := range texts {
		h := maphash.String(x.seed, s) & x.mask
		for x.slots[h] >= 0 {
			h = (h + 1) & x.mask
		}
		x.slots[h] = int32(id)
	}
	return x
}

// get returns the id of the token whose text is b.
func (x *strIndex) get(b []byte) (int32, bool) {
	h := maphash.Bytes(x.seed, b) & x.mask
	for {
		id := x.slots[h]
		if id < 0 {
			return NoToken, false
		}
		if s := x.texts[id]; len(s) == len(b) && s == string(b) {
			return id, true
		}
		h = (h + 1) & x.mask
	}
}
