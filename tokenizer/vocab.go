package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// TokenType is the per-token type stored in tokenizer.ggml.token_type, with
// llama.cpp's numbering (llama_token_type).
type TokenType int32

// Token types, numbered as in GGUF files.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// attr is llama.cpp's llama_token_attr: a bit set derived from TokenType.
type attr uint16

const (
	attrUndefined attr = 0
	attrUnknown   attr = 1 << 0
	attrUnused    attr = 1 << 1
	attrNormal    attr = 1 << 2
	attrControl   attr = 1 << 3
	attrUserDef   attr = 1 << 4
	attrByte      attr = 1 << 5
)

func attrOf(t TokenType) attr {
	switch t {
	case TypeUnknown:
		return attrUnknown
	case TypeUnused:
		return attrUnused
	case TypeNormal:
		return attrNormal
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDef
	case TypeByte:
		return attrByte
	}
	return attrUndefined
}

// NoToken is the id returned by BOS, EOS, UNK and PAD when the vocabulary has
// no such token (llama.cpp's LLAMA_TOKEN_NULL).
const NoToken int32 = -1

// Vocab is a tokenizer description as stored in GGUF metadata
// (tokenizer.ggml.*). Only Model and Tokens are required. Pointer fields are
// nil when the corresponding key is absent; llama.cpp's per-model default then
// applies (for "llama": bos 1, eos 2, unk 0, add_bos true, add_eos false).
type Vocab struct {
	Model  string      // tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
	Pre    string      // tokenizer.ggml.pre: pre-tokenizer name for "gpt2" ("default", "llama-bpe", "qwen2", ...)
	Tokens []string    // tokenizer.ggml.tokens
	Scores []float32   // tokenizer.ggml.scores (optional; at least len(Tokens) when present)
	Types  []TokenType // tokenizer.ggml.token_type (optional; all TypeNormal when absent)
	Merges []string    // tokenizer.ggml.merges ("left right"), required for "gpt2"

	BOS, EOS, UNK, PAD, EOT, EOM, SEP *int32 // tokenizer.ggml.*_token_id
	AddBOS, AddEOS, AddSpacePrefix    *bool  // tokenizer.ggml.add_bos_token, add_eos_token, add_space_prefix
}

// ID returns a pointer to id, for filling Vocab's optional id fields.
func ID(id int32) *int32 { return &id }

// Flag returns a pointer to b, for filling Vocab's optional flag fields.
func Flag(b bool) *bool { return &b }

type vocabKind int

const (
	kindSPM vocabKind = iota + 1
	kindBPE
)

// preKind selects a pre-tokenizer (a list of splitters) for BPE vocabularies.
type preKind int

const (
	preDefault preKind = iota
	preGPT2
	preLlama3
	preQwen2
	preStarcoder
	preFalcon
)

type preInfo struct {
	kind         preKind
	cleanSpaces  bool
	ignoreMerges bool
	addBOS       bool
}

// preTypes maps tokenizer.ggml.pre names to llama.cpp's pre-tokenizer types
// (llama_vocab::impl::load). Only the types whose regexes this package
// implements are listed; others are rejected with an error.
var preTypes = map[string]preInfo{
	"":                 {preDefault, true, false, false},
	"default":          {preDefault, true, false, false},
	"llama3":           {preLlama3, true, true, true},
	"llama-v3":         {preLlama3, true, true, true},
	"llama-bpe":        {preLlama3, true, true, true},
	"falcon3":          {preLlama3, true, true, true},
	"pixtral":          {preLlama3, true, true, true},
	"dbrx":             {preLlama3, true, false, false},
	"smaug-bpe":        {preLlama3, true, false, false},
	"qwen2":            {preQwen2, false, false, false},
	"deepseek-r1-qwen": {preQwen2, false, false, false},
	"stablelm2":        {preQwen2, true, false, false},
	"gpt-2":            {preGPT2, true, false, false},
	"phi-2":            {preGPT2, true, false, false},
	"mpt":              {preGPT2, true, false, false},
	"olmo":             {preGPT2, true, false, false},
	"starcoder":        {preStarcoder, true, false, false},
	"refact":           {preStarcoder, true, false, false},
	"command-r":        {preStarcoder, false, false, false},
	"smollm":           {preStarcoder, true, false, false},
	"codeshell":        {preStarcoder, true, false, false},
	"exaone":           {preStarcoder, true, false, false},
	"minerva-7b":       {preStarcoder, true, false, false},
	"falcon":           {preFalcon, true, false, false},
}

// PreTokenizers lists the tokenizer.ggml.pre names this package supports, sorted.
func PreTokenizers() []string {
	var names []string
	for k := range preTypes {
		if k != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// Texts of tokens that llama.cpp treats as end-of-turn / end-of-generation
// when the GGUF file does not name them (llama_vocab::impl::load).
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>"}
	eomTexts = []string{"<|eom_id|>"}
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>"}
)

// Tokenizer encodes text to token ids and decodes ids to bytes, exactly as
// llama.cpp does for the same vocabulary. It is safe for concurrent use.
type Tokenizer struct {
	kind  vocabKind
	model string
	pre   string
	pk    preInfo

	tokens []string
	scores []float32
	attrs  []attr
	index  map[string]int32
	fast   *strIndex // the same as index, for the merge loops

	bos, eos, unk, pad, eot, eom, sep int32
	addBOS, addEOS, addSpacePrefix    bool

	warnings []string // what New fixed up, for the caller to show

	eog     []int32 // sorted
	special []int32 // control / user-defined / unknown tokens, longest text first
	pieces  [][]byte

	// byteTok maps a byte to its token: <0xNN> (or the 1-byte string) for
	// SPM, the byte-to-unicode character for BPE; NoToken when absent.
	byteTok [256]int32
	// merges maps (left id, right id) to the merge rank and merged token (BPE).
	merges map[uint64]merge
	// spmMerge is a bit set of the codepoints that can take part in an SPM
	// merge (see spmMergeable).
	spmMerge []uint64
}

type merge struct {
	rank int32
	id   int32
}

// New builds a tokenizer from a vocabulary description, checking it as
// llama.cpp's loader does (and a little more: BPE merges must name tokens).
func New(v *Vocab) (*Tokenizer, error) {
	if v == nil {
		return nil, errors.New("tokenizer: nil vocabulary")
	}
	t := &Tokenizer{model: v.Model, pre: v.Pre, bos: NoToken, eos: NoToken, unk: NoToken, pad: NoToken, eot: NoToken, eom: NoToken, sep: NoToken}
	if err := t.setModel(v); err != nil {
		return nil, err
	}
	if err := checkVocabSizes(v); err != nil {
		return nil, err
	}
	if v.AddSpacePrefix != nil {
		t.addSpacePrefix = *v.AddSpacePrefix
	}
	if err := t.loadTokens(v); err != nil {
		return nil, err
	}
	if err := t.setSpecialIDs(v); err != nil {
		return nil, err
	}

	t.fast = newStrIndex(t.tokens)
	t.findEOG()

	if err := t.loadByteTokens(v); err != nil {
		return nil, err
	}

	for id := range t.attrs {
		if t.attrs[id]&(attrControl|attrUserDef|attrUnknown) != 0 {
			t.special = append(t.special, int32(id))
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.tokens[t.special[a]]) > len(t.tokens[t.special[b]])
	})

	n := len(v.Tokens)
	t.pieces = make([][]byte, n)
	for id := range t.pieces {
		t.pieces[id] = t.makePiece(int32(id))
	}
	return t, nil
}

// setModel sets the tokenizer kind and llama.cpp's defaults of the
// vocabulary's model (and, for BPE, its pre-tokenizer).
func (t *Tokenizer) setModel(v *Vocab) error {
	switch v.Model {
	case "llama":
		t.kind = kindSPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addBOS, t.addSpacePrefix = true, true
	case "gpt2":
		t.kind = kindBPE
		pk, ok := preTypes[v.Pre]
		if !ok {
			return fmt.Errorf("tokenizer: unsupported pre-tokenizer %q (tokenizer.ggml.pre); supported: %s", v.Pre, strings.Join(PreTokenizers(), ", "))
		}
		t.pk = pk
		t.bos, t.eos = 11, 11 // llama.cpp's defaults for BPE vocabularies
		t.addBOS = pk.addBOS
	case "":
		return errors.New("tokenizer: no tokenizer model (tokenizer.ggml.model is missing)")
	case "none", "no_vocab":
		return fmt.Errorf("tokenizer: the file has no vocabulary (tokenizer.ggml.model = %q)", v.Model)
	default:
		return fmt.Errorf("tokenizer: unsupported tokenizer model %q (supported: llama, gpt2)", v.Model)
	}
	return nil
}

// checkVocabSizes checks the vocabulary's size and that scores and types
// cover every token.
func checkVocabSizes(v *Vocab) error {
	n := len(v.Tokens)
	if n == 0 {
		return errors.New("tokenizer: empty vocabulary (tokenizer.ggml.tokens has no entries)")
	}
	if n > 1<<31-2 {
		return fmt.Errorf("tokenizer: vocabulary too large (%d tokens)", n)
	}
	if v.Scores != nil && len(v.Scores) < n {
		return fmt.Errorf("tokenizer: %d scores for %d tokens (tokenizer.ggml.scores)", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) < n {
		return fmt.Errorf("tokenizer: %d token types for %d tokens (tokenizer.ggml.token_type)", len(v.Types), n)
	}
	return nil
}

// loadTokens indexes the token strings, scores and attributes.
func (t *Tokenizer) loadTokens(v *Vocab) error {
	n := len(v.Tokens)
	t.tokens = make([]string, n)
	t.scores = make([]float32, n)
	t.attrs = make([]attr, n)
	t.index = make(map[string]int32, n)
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i) // as llama.cpp does
		}
		if j, dup := t.index[s]; dup {
			return fmt.Errorf("tokenizer: duplicate token %q has ids %d and %d", s, j, i)
		}
		s = strings.Clone(s) // independent of the (possibly memory-mapped) source
		t.index[s] = int32(i)
		t.tokens[i] = s
		if v.Scores != nil {
			t.scores[i] = v.Scores[i]
		}
		t.attrs[i] = attrNormal
		if v.Types != nil {
			t.attrs[i] = attrOf(v.Types[i])
		}
	}
	return nil
}

// setSpecialIDs sets the special token ids and the add_bos/add_eos flags
// from the file over the defaults.
func (t *Tokenizer) setSpecialIDs(v *Vocab) error {
	n := len(v.Tokens)
	// Special token ids: a default outside the vocabulary is disabled; a
	// value from the file outside the vocabulary is ignored (llama.cpp warns).
	for _, s := range []struct {
		dst *int32
		src *int32
		key string
	}{{&t.bos, v.BOS, keyBOS}, {&t.eos, v.EOS, keyEOS}, {&t.unk, v.UNK, keyUNK}, {&t.pad, v.PAD, keyPAD}, {&t.eot, v.EOT, keyEOT}, {&t.eom, v.EOM, keyEOM}, {&t.sep, v.SEP, keySEP}} {
		if *s.dst >= int32(n) {
			*s.dst = NoToken
		}
		if s.src == nil {
			continue
		}
		if *s.src >= 0 && *s.src < int32(n) {
			*s.dst = *s.src
			continue
		}
		// As llama.cpp ("bad special token"), but said: the caller
		// shows Warnings.
		using := "none"
		if *s.dst != NoToken {
			using = fmt.Sprintf("the default %d", *s.dst)
		}
		t.warnings = append(t.warnings, fmt.Sprintf("%s = %d is outside the vocabulary of %d tokens; using %s", s.key, *s.src, n, using))
	}
	if v.AddBOS != nil {
		t.addBOS = *v.AddBOS
	}
	if v.AddEOS != nil {
		t.addEOS = *v.AddEOS
	}
	if t.addBOS && t.bos == NoToken {
		return errors.New("tokenizer: add_bos_token is true, but bos_token_id is not set")
	}
	if t.addEOS && t.eos == NoToken {
		return errors.New("tokenizer: add_eos_token is true, but eos_token_id is not set")
	}
	return nil
}

// loadByteTokens finds each byte's token and, for BPE, loads the merges.
func (t *Tokenizer) loadByteTokens(v *Vocab) error {
	for i := range t.byteTok {
		t.byteTok[i] = NoToken
	}
	switch t.kind {
	case kindSPM:
		t.spmMerge = spmMergeable(t.tokens)
		for b := 0; b < 256; b++ {
			if id, ok := t.index[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteTok[b] = id
			} else if id, ok := t.index[string([]byte{byte(b)})]; ok {
				t.byteTok[b] = id
			}
		}
	case kindBPE:
		for b := 0; b < 256; b++ {
			if id, ok := t.index[string(byteToRune[b])]; ok {
				t.byteTok[b] = id
			}
		}
		if err := t.loadMerges(v.Merges); err != nil {
			return err
		}
	}
	return nil
}

// findEOG fills eot/eom when the file does not name them and collects the
// end-of-generation set, marking those tokens as control tokens (as llama.cpp
// does for "control-looking" tokens).
func (t *Tokenizer) findEOG() {
	in := func(s string, list []string) bool {
		for _, x := range list {
			if s == x {
				return true
			}
		}
		return false
	}
	for id, s := range t.tokens {
		if t.eot == NoToken && in(s, eotTexts) {
			t.eot = int32(id)
			t.attrs[id] |= attrControl
		}
		if t.eom == NoToken && in(s, eomTexts) {
			t.eom = int32(id)
			t.attrs[id] |= attrControl
		}
	}
	set := map[int32]bool{}
	for id, s := range t.tokens {
		if in(s, eogTexts) {
			set[int32(id)] = true
			t.attrs[id] |= attrControl
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != NoToken {
			set[id] = true
		}
	}
	for id := range set {
		t.eog = append(t.eog, id)
	}
	sort.Slice(t.eog, func(a, b int) bool { return t.eog[a] < t.eog[b] })
}

// loadMerges parses "left right" merge rules into ranks keyed by token ids.
// llama.cpp splits at the first space after the first byte and keeps the
// first rank of a repeated pair; unlike llama.cpp (but like Hugging Face's
// tokenizers) it is an error for a rule to name a token that does not exist.
func (t *Tokenizer) loadMerges(rules []string) error {
	if rules == nil {
		return errors.New("tokenizer: byte-level BPE vocabulary without merges (tokenizer.ggml.merges is missing)")
	}
	t.merges = make(map[uint64]merge, len(rules))
	for i, r := range rules {
		sp := -1
		if len(r) > 1 {
			if k := strings.IndexByte(r[1:], ' '); k >= 0 {
				sp = k + 1
			}
		}
		if sp < 0 {
			return fmt.Errorf("tokenizer: merge %d (%q) is not of the form \"left right\"", i, r)
		}
		left, right := r[:sp], r[sp+1:]
		l, ok := t.index[left]
		if !ok {
			return fmt.Errorf("tokenizer: merge %d (%q) refers to unknown token %q", i, r, left)
		}
		rt, ok := t.index[right]
		if !ok {
			return fmt.Errorf("tokenizer: merge %d (%q) refers to unknown token %q", i, r, right)
		}
		res, ok := t.index[left+right]
		if !ok {
			return fmt.Errorf("tokenizer: merge %d (%q) produces %q, which is not a token", i, r, left+right)
		}
		key := uint64(uint32(l))<<32 | uint64(uint32(rt))
		if _, dup := t.merges[key]; !dup {
			t.merges[key] = merge{rank: int32(i), id: res}
		}
	}
	return nil
}

// NVocab returns the number of tokens.
func (t *Tokenizer) NVocab() int { return len(t.tokens) }

// Model returns the tokenizer model name ("llama" or "gpt2").
func (t *Tokenizer) Model() string { return t.model }

// Pre returns the pre-tokenizer name (tokenizer.ggml.pre), "" if none.
func (t *Tokenizer) Pre() string { return t.pre }

// Warnings lists what New had to fix up in the vocabulary, as llama.cpp's
// loader warns about it: a special token id outside the vocabulary (which
// falls back to the model type's default). Callers should show them.
func (t *Tokenizer) Warnings() []string { return slices.Clone(t.warnings) }

// BOS returns the beginning-of-sequence token, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.eos }

// UNK returns the unknown token, or NoToken.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD returns the padding token, or NoToken.
func (t *Tokenizer) PAD() int32 { return t.pad }

// AddBOS reports whether Encode with AddSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with AddSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the tokens
// llama.cpp recognises by their text, such as <|im_end|>).
func (t *Tokenizer) IsEOG(id int32) bool {
	i := sort.Search(len(t.eog), func(i int) bool { return t.eog[i] >= id })
	return i < len(t.eog) && t.eog[i] == id
}

// EOG returns the end-of-generation tokens, sorted.
func (t *Tokenizer) EOG() []int32 { return append([]int32(nil), t.eog...) }

// Text returns the raw vocabulary text of a token (with U+2581 or byte-level
// characters as stored), and false for an id outside the vocabulary.
func (t *Tokenizer) Text(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) {
		return "", false
	}
	return t.tokens[id], true
}

// IsControl reports whether id is a control token (such as <s> or </s>).
func (t *Tokenizer) IsControl(id int32) bool {
	return id >= 0 && int(id) < len(t.attrs) && t.attrs[id]&attrControl != 0
}
