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
	// execTokens is the n_tokens of each cached executor.
	execTokens map[string]int64
	// Stats
	Steps int
}

// NewSession allocates the KV cache (zeroed) for a built model.
func NewSession(m *models.Model, w eval.WeightSource, opts SessionOptions) (*Session, error) {
	s := &Session{model: m, weights: w, opts: opts, state: map[string][]byte{}, execs: map[string]*eval.Executor{}, execTokens: map[string]int64{}}
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
	// Keep the decode executors (one token, one per n_kv) and only the
	// latest multi-token one: the prefill steps of a long prompt each have
	// their own shape, and caching them all would hold every step's
	// activations at once.
	if b[models.SymTokens] > 1 {
		for k := range s.execs {
			if s.execTokens[k] > 1 {
				delete(s.execs, k)
				delete(s.execTokens, k)
			}
		}
	}
	if len(s.execs) > 64 {
		clear(s.execs)
		clear(s.execTokens)
	}
	s.execTokens[key] = b[models.SymTokens]
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
// as llama.cpp's greedy sampler) of the previous step's last logits. The
// prompt is one step; GenerateWith can split it and check the logits.
func Generate(s Stepper, prompt []int32, n int, keepLogits bool, onToken func(int32)) (*GenerateResult, error) {
	return GenerateWith(s, prompt, n, GenerateOptions{KeepLogits: keepLogits, OnToken: onToken})
}

// GenerateOptions configure GenerateWith.
type GenerateOptions struct {
	// UBatch splits the prompt into steps of at most UBatch tokens
	// (llama.cpp's n_ubatch), so that a step's activations (the KQ matrix
	// is n_tokens x n_kv per head) stay bounded and prefill time and
	// memory grow linearly with the prompt. 0 runs the prompt as one step.
	UBatch int
	// KeepLogits returns the distribution each token was chosen from.
	KeepLogits bool
	// OnToken, if set, is called with each generated token as soon as it
	// exists.
	OnToken func(int32)
	// CheckFinite fails with a *NonFiniteError as soon as a step's logits
	// hold NaN or an infinity, instead of sampling from them.
	CheckFinite bool
}

// NonFiniteError reports logits that are NaN or infinite: the model (its
// weights, or an op on its way) produced them. Step is the 0-based step
// (the prefill steps first), Tokens the tokens fed so far including that
// step's, so a checked re-run can replay them (see eval.ExecOptions).
type NonFiniteError struct {
	Step   int
	Tokens []int32
	Index  int     // the first non-finite logit (the token id)
	Value  float32 // its value
}

// Error says which step and logit went wrong.
func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("session: the logits of step %d (after %d tokens) are not finite: logit %d is %v", e.Step, len(e.Tokens), e.Index, e.Value)
}

// firstNonFinite returns the index of the first NaN or infinity in v, or -1.
func firstNonFinite(v []float32) int {
	for i, x := range v {
		if x-x != 0 { // NaN or ±Inf
			return i
		}
	}
	return -1
}

// GenerateWith is Generate with options: the prompt in UBatch-token steps,
// and the logits checked for NaN and infinities.
func GenerateWith(s Stepper, prompt []int32, n int, o GenerateOptions) (*GenerateResult, error) {
	res := &GenerateResult{}
	if n <= 0 {
		return res, nil
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("session: empty prompt")
	}
	fed := make([]int32, 0, len(prompt)+n)
	steps := 0
	step1 := func(tokens []int32) (*StepResult, error) {
		fed = append(fed, tokens...)
		r, err := s.Step(tokens)
		if err != nil {
			return nil, err
		}
		if len(r.Logits) == 0 {
			return nil, fmt.Errorf("session: step %d returned no logits", steps)
		}
		if o.CheckFinite {
			for _, row := range r.Logits {
				if i := firstNonFinite(row); i >= 0 {
					return nil, &NonFiniteError{Step: steps, Tokens: fed, Index: i, Value: row[i]}
				}
			}
		}
		steps++
		return r, nil
	}
	t0 := time.Now()
	chunk := len(prompt)
	if o.UBatch > 0 {
		chunk = o.UBatch
	}
	var step *StepResult
	var err error
	for i := 0; i < len(prompt); i += chunk {
		if step, err = step1(prompt[i:min(i+chunk, len(prompt))]); err != nil {
			return nil, err
		}
	}
	res.PrefillMS = float64(time.Since(t0).Microseconds()) / 1000
	t1 := time.Now()
	for i := 0; ; i++ {
		logits := step.Logits[len(step.Logits)-1]
		tok := Argmax(logits)
		res.Tokens = append(res.Tokens, tok)
		if o.KeepLogits {
			res.Logits = append(res.Logits, append([]float32(nil), logits...))
		}
		if o.OnToken != nil {
			o.OnToken(tok)
		}
		if i == n-1 {
			break
		}
		if step, err = step1([]int32{tok}); err != nil {
			return nil, err
		}
	}
	res.DecodeMS = float64(time.Since(t1).Microseconds()) / 1000
	return res, nil
}
