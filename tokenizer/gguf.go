package tokenizer

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
)

// GGUF metadata keys read by FromGGUF.
const (
	keyModel     = "tokenizer.ggml.model"
	keyPre       = "tokenizer.ggml.pre"
	keyTokens    = "tokenizer.ggml.tokens"
	keyScores    = "tokenizer.ggml.scores"
	keyTypes     = "tokenizer.ggml.token_type"
	keyMerges    = "tokenizer.ggml.merges"
	keyAddBOS    = "tokenizer.ggml.add_bos_token"
	keyAddEOS    = "tokenizer.ggml.add_eos_token"
	keyAddPrefix = "tokenizer.ggml.add_space_prefix"
	keyBOS       = "tokenizer.ggml.bos_token_id"
	keyEOS       = "tokenizer.ggml.eos_token_id"
	keyUNK       = "tokenizer.ggml.unknown_token_id"
	keyPAD       = "tokenizer.ggml.padding_token_id"
	keyEOT       = "tokenizer.ggml.eot_token_id"
	keyEOM       = "tokenizer.ggml.eom_token_id"
	keySEP       = "tokenizer.ggml.seperator_token_id" // sic, as llama.cpp spells it
)

// VocabFromGGUF reads the tokenizer.ggml.* keys of a GGUF file into a Vocab.
// A key of the wrong type is an error naming the key.
func VocabFromGGUF(f *gguf.File) (*Vocab, error) {
	if f == nil {
		return nil, fmt.Errorf("tokenizer: nil GGUF file")
	}
	has := func(k string) bool { _, ok := f.Get(k); return ok }
	bad := func(k, want string) error { return fmt.Errorf("tokenizer: GGUF key %s is not %s", k, want) }
	v := &Vocab{}
	var ok bool
	if has(keyModel) {
		if v.Model, ok = f.GetString(keyModel); !ok {
			return nil, bad(keyModel, "a string")
		}
	}
	if has(keyPre) {
		if v.Pre, ok = f.GetString(keyPre); !ok {
			return nil, bad(keyPre, "a string")
		}
	}
	if !has(keyTokens) {
		if v.Model == "" {
			return nil, fmt.Errorf("tokenizer: the file has no tokenizer (%s and %s are missing)", keyModel, keyTokens)
		}
		return nil, fmt.Errorf("tokenizer: cannot find the vocabulary (%s is missing)", keyTokens)
	}
	if v.Tokens, ok = f.GetStrings(keyTokens); !ok {
		return nil, bad(keyTokens, "an array of strings")
	}
	if has(keyScores) {
		if v.Scores, ok = f.GetFloat32s(keyScores); !ok {
			is, ok := f.GetInt32s(keyScores) // llama.cpp also accepts i32 scores
			if !ok {
				return nil, bad(keyScores, "an array of f32 or i32")
			}
			v.Scores = make([]float32, len(is))
			for i, s := range is {
				v.Scores[i] = float32(s)
			}
		}
	}
	if has(keyTypes) {
		ts, ok := f.GetInt32s(keyTypes)
		if !ok {
			return nil, bad(keyTypes, "an array of integers")
		}
		v.Types = make([]TokenType, len(ts))
		for i, x := range ts {
			v.Types[i] = TokenType(x)
		}
	}
	if has(keyMerges) {
		if v.Merges, ok = f.GetStrings(keyMerges); !ok {
			return nil, bad(keyMerges, "an array of strings")
		}
	}
	for _, s := range []struct {
		key string
		dst **int32
	}{{keyBOS, &v.BOS}, {keyEOS, &v.EOS}, {keyUNK, &v.UNK}, {keyPAD, &v.PAD}, {keyEOT, &v.EOT}, {keyEOM, &v.EOM}, {keySEP, &v.SEP}} {
		if !has(s.key) {
			continue
		}
		u, ok := f.GetUint(s.key)
		if !ok {
			return nil, bad(s.key, "a non-negative integer")
		}
		// A value of 2^31 or more (often a u32 -1) means "none"; a smaller
		// one outside the vocabulary is ignored by New with a warning, as
		// llama.cpp does.
		if u < 1<<31 {
			*s.dst = ID(int32(u))
		}
	}
	for _, s := range []struct {
		key string
		dst **bool
	}{{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keyAddPrefix, &v.AddSpacePrefix}} {
		if !has(s.key) {
			continue
		}
		b, ok := f.GetBool(s.key)
		if !ok {
			return nil, bad(s.key, "a bool")
		}
		*s.dst = Flag(b)
	}
	return v, nil
}

// FromGGUF builds the tokenizer described by a GGUF file's metadata. It works
// on vocabulary-only files (no tensors) as well as on full models.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}
