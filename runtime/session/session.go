package session

import (
	"fmt"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// SessionOptions configure a Session.
type SessionOptions struct {
	// Exec is passed to every step's executor.
	Exec eval.ExecOptions
	// AllLogits returns logits for every token of a step, not just the last.
	AllLogits bool
	// Plan, if set, is called once for each specialised step graph and
	// returns the options to execute it with, typically a memory plan's
	// offsets, arena size and order (planned execution). Exec is used
	// when Plan is nil.
	Plan func(g *ir.Graph) (eval.ExecOptions, error)
}

// Session runs a model step by step over a persistent KV cache, as
// llama.cpp's llama_decode does for one sequence: token i of the sequence
// lives in KV cell i.
type Session struct {
	model   *models.Model
	weights eval.WeightSource
	opts    SessionOptions
	state   map[string][]byte
	pos     int64
	execs   map[string]*eval.Executor // per binding
	// Stats
	Steps int
}

// NewSession allocates the KV cache (zeroed) for a built model.
func NewSession(m *models.Model, w eval.WeightSource, opts SessionOptions) (*Session, error) {
	s := &Session{model: m, weights: w, opts: opts, state: map[string][]byte{}, execs: map[string]*eval.Executor{}}
	for _, n := range m.Graph.Leaves(ir.OpState) {
		size, err := n.Type.Bytes()
		if err != nil {
			return nil, fmt.Errorf("session: state %q: %w", n.Name, err)
		}
		s.state[n.Name] = make([]byte, size)
	}
	return s, nil
}

// Pos is the number of tokens already in the KV cache.
func (s *Session) Pos() int64 { return s.pos }

// Reset empties the KV cache (zeroing it) and rewinds to position 0, as
// llama.cpp's llama_memory_clear does; the executors built so far are kept,
// so the next steps of the same shapes compile nothing.
func (s *Session) Reset() {
	for _, b := range s.state {
		clear(b)
	}
	s.pos = 0
}

// NCtx is the KV cache capacity.
func (s *Session) NCtx() int64 { return s.model.Options.NCtx }

// Bindings returns the symbol values of a step of nTokens tokens starting at pos.
func (s *Session) Bindings(pos, nTokens, nOutputs int64) ir.Bindings {
	return ir.Bindings{
		models.SymTokens:  nTokens,
		models.SymKV:      models.KVLen(pos+nTokens, s.model.Options.NCtx),
		models.SymOutputs: nOutputs,
		models.SymKVHead:  pos,
	}
}

// StepResult is the outcome of one step.
type StepResult struct {
	Logits [][]float32 // one row of n_vocab per output token
	Time   time.Duration
}

// Step feeds tokens at the current position and returns the logits of the
// last token (or of every token with AllLogits).
func (s *Session) Step(tokens []int32) (*StepResult, error) {
	start := time.Now()
	n := int64(len(tokens))
	if n == 0 {
		return nil, fmt.Errorf("session: step with no tokens")
	}
	if s.pos+n > s.model.Options.NCtx {
		return nil, fmt.Errorf("session: context full: %d + %d tokens exceed n_ctx %d", s.pos, n, s.model.Options.NCtx)
	}
	nVocab := s.model.HParams.NVocab
	for _, t := range tokens {
		if t < 0 || int64(t) >= nVocab {
			return nil, fmt.Errorf("session: token id %d out of range [0, %d)", t, nVocab)
		}
	}
	nOut := int64(1)
	if s.opts.AllLogits {
		nOut = n
	}
	b := s.Bindings(s.pos, n, nOut)
	ex, err := s.executor(b)
	if err != nil {
		return nil, err
	}
	if err := s.setInputs(ex, tokens, b); err != nil {
		return nil, err
	}
	if err := ex.Run(); err != nil {
		return nil, err
	}
	out, ne, err := ex.Output(0)
	if err != nil {
		return nil, err
	}
	res := &StepResult{}
	for r := int64(0); r < ne[1]; r++ {
		res.Logits = append(res.Logits, out[r*ne[0]:(r+1)*ne[0]])
	}
	s.pos += n
	s.Steps++
	res.Time = time.Since(start)
	return res, nil
}

// executor returns the executor specialised for the bindings, building and
// caching it on first use. With the cpy KV mode every position is a new
// binding (its view offsets move), which is exactly ggml-cann's re-capture problem.
func (s *Session) executor(b ir.Bindings) (*eval.Executor, error) {
	key := b.String()
	if s.model.Options.KVWrite == models.KVSetRows {
		bb := ir.Bindings{}
		for k, v := range b {
			if k != models.SymKVHead {
				bb[k] = v
			}
		}
		key = bb.String()
		b = bb
	}
	if ex, ok := s.execs[key]; ok {
		return ex, nil
	}
	g, err := s.model.Graph.Specialize(b)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	eo := s.opts.Exec
	if s.opts.Plan != nil {
		if eo, err = s.opts.Plan(g); err != nil {
			return nil, fmt.Errorf("session: plan for %s: %w", b, err)
		}
	}
	ex, err := eval.NewExecutor(g, s.weights, eo)
	if err != nil {
		return nil, err
	}
	for name, data := range s.state {
		if err := ex.BindState(name, data); err != nil {
			return nil, err
		}
	}
	if len(s.execs) > 64 {
		clear(s.execs)
	}
	s.execs[key] = ex
	return ex, nil
}

func (s *Session) setInputs(ex *eval.Executor, tokens []int32, b ir.Bindings) error {
	for name, data := range models.Inputs(tokens, s.pos, b) {
		if !ex.HasInput(name) {
			continue
		}
		if err := ex.SetInput(name, data); err != nil {
			return err
		}
	}
	return nil
}

// Argmax returns the index of the largest value, the lowest index on ties
// (llama.cpp's greedy sampler).
func Argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// GenerateResult is the outcome of greedy generation.
type GenerateResult struct {
	Tokens    []int32
	Logits    [][]float32 // the distribution each token was chosen from
	PrefillMS float64
	DecodeMS  float64
}

// Stepper runs one step of a model over its KV cache: the reference
// Session here, or a lowered program on a device (package runtime/program).
type Stepper interface {
	Step(tokens []int32) (*StepResult, error)
}

// Generate runs prefill on the prompt and then greedy decode for n tokens.
// onToken, if set, is called with each generated token as soon as it exists.
func (s *Session) Generate(prompt []int32, n int, keepLogits bool, onToken func(int32)) (*GenerateResult, error) {
	return Generate(s, prompt, n, keepLogits, onToken)
}

// Generate runs greedy generation on any Stepper: prefill on the prompt,
// then n-1 decode steps, each feeding back the argmax (lowest id on ties,
// as llama.cpp's greedy sampler) of the previous step's last logits.
func Generate(s Stepper, prompt []int32, n int, keepLogits bool, onToken func(int32)) (*GenerateResult, error) {
	res := &GenerateResult{}
	if n <= 0 {
		return res, nil
	}
	t0 := time.Now()
	step, err := s.Step(prompt)
	if err != nil {
		return nil, err
	}
	res.PrefillMS = float64(time.Since(t0).Microseconds()) / 1000
	t1 := time.Now()
	for i := 0; ; i++ {
		logits := step.Logits[len(step.Logits)-1]
		tok := Argmax(logits)
		res.Tokens = append(res.Tokens, tok)
		if keepLogits {
			res.Logits = append(res.Logits, append([]float32(nil), logits...))
		}
		if onToken != nil {
			onToken(tok)
		}
		if i == n-1 {
			break
		}
		if step, err = s.Step([]int32{tok}); err != nil {
			return nil, err
		}
	}
	res.DecodeMS = float64(time.Since(t1).Microseconds()) / 1000
	return res, nil
}
