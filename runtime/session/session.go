package session

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/sysmem"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
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
	// Threads is the number of worker threads of the compiled CPU plan
	// (0: the number of physical cores, eval.DefaultThreads).
	Threads int
	// Reference runs every step on the reference executor (eval.Executor)
	// instead of the compiled executable (eval.Executable): same results, slower.
	// Without Plan, the compiled plan places intermediates at the memory
	// planner's offsets (planner.CPUPolicy, 32-byte alignment) and the
	// reference executor gives each its own buffer.
	Reference bool
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
	steps   map[stepKey]stepRunner // per step shape
	workers *eval.Workers          // of the compiled plans (nil with Reference)
	// arenaBytes sums the arenas of the compiled plans built so far.
	arenaBytes int64
	// Stats
	Steps int
}

// planBudget bounds the memory planner's search for one step shape (it
// usually reaches the lower bound in a few milliseconds).
const planBudget = 100 * time.Millisecond

// ArenaBytes is the total size of the compute arenas of the step graphs
// compiled so far (one per step shape: prefill length, n_kv bucket).
func (s *Session) ArenaBytes() int64 { return s.arenaBytes }

// PackedBytes is the memory of the weight copies that the compiled plans
// repacked for the SIMD kernels (eval.Workers.Packs; 0 with Reference).
// The copies are shared with every other session on the same model file
// in the process (kernels.SharedPacks counts each once).
func (s *Session) PackedBytes() int64 {
	if s.workers == nil {
		return 0
	}
	return s.workers.Packs().Bytes()
}

// KVBytes is the size of the KV cache.
func (s *Session) KVBytes() int64 {
	var n int64
	for _, b := range s.state {
		n += int64(len(b))
	}
	return n
}

// stepKey identifies the graph of a step: its symbol values (kv_head only
// in the cpy KV mode, where views move with it; -1 otherwise).
type stepKey struct{ tokens, kv, outputs, head int64 }

// stepRunner is what runs a step graph: a compiled plan or the reference
// executor.
type stepRunner interface {
	SetInput(name string, data []byte) error
	HasInput(name string) bool
	BindState(name string, data []byte) error
	Run() error
	Output(i int) ([]float32, [4]int64, error)
}

// NewSession allocates the KV cache (zeroed) for a built model.
func NewSession(m *models.Model, w eval.WeightSource, opts SessionOptions) (*Session, error) {
	s := &Session{model: m, weights: w, opts: opts, state: map[string][]byte{}, steps: map[stepKey]stepRunner{}}
	states := m.Graph.Leaves(ir.OpState)
	sizes := make([]int64, len(states))
	var total int64
	for i, n := range states {
		size, err := n.Type.Bytes()
		if err != nil {
			return nil, fmt.Errorf("session: state %q: %w", n.Name, err)
		}
		sizes[i] = size
		if total += size; total < 0 {
			total = math.MaxInt64
		}
	}
	if len(states) > 0 {
		if err := sysmem.Check(fmt.Sprintf("session: the KV cache (%d state tensors, the first %q %s)", len(states), states[0].Name, states[0].Type), total); err != nil {
			return nil, err
		}
	}
	for i, n := range states {
		s.state[n.Name] = make([]byte, sizes[i])
	}
	if opts.Threads < 0 {
		return nil, fmt.Errorf("session: %d threads", opts.Threads)
	}
	if !opts.Reference {
		s.workers = eval.NewWorkers(opts.Threads)
		// A session dropped without Close still stops its threads.
		runtime.AddCleanup(s, func(w *eval.Workers) { w.Close() }, s.workers)
	}
	return s, nil
}

// Threads is the number of worker threads of the compiled plans (1 with
// the reference executor, which splits kernels its own way).
func (s *Session) Threads() int {
	if s.workers == nil {
		return 1
	}
	return s.workers.Threads()
}

// Close stops the session's worker threads. Idempotent; a closed session
// cannot step.
func (s *Session) Close() error {
	if s.workers != nil {
		s.workers.Close()
	}
	return nil
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
	if err := s.checkStep(tokens); err != nil {
		return nil, err
	}
	nOut := int64(1)
	if s.opts.AllLogits {
		nOut = n
	}
	r, err := s.run(tokens, nOut)
	if err != nil {
		return nil, err
	}
	out, ne, err := r.Output(0)
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

// run feeds tokens at the current position into the step graph of their
// shape and runs it, leaving the position unchanged.
func (s *Session) run(tokens []int32, nOut int64) (stepRunner, error) {
	n := int64(len(tokens))
	nCtx := s.model.Options.NCtx
	key := stepKey{tokens: n, kv: models.KVLen(s.pos+n, nCtx), outputs: nOut, head: -1}
	if s.model.Options.KVWrite != models.KVSetRows {
		key.head = s.pos
	}
	r, ok := s.steps[key]
	if !ok {
		var err error
		if r, err = s.runner(key); err != nil {
			return nil, err
		}
	}
	if p, ok := r.(*eval.Executable); ok {
		// Write the inputs in place: no allocation per step.
		for _, name := range models.StepInputs {
			if buf := p.Input(name); buf != nil && !models.FillInput(name, buf, tokens, s.pos, key.kv, nOut) {
				return nil, fmt.Errorf("session: input %q: %d bytes do not fit %d tokens", name, len(buf), n)
			}
		}
	} else {
		b := s.Bindings(s.pos, n, nOut)
		for name, data := range models.Inputs(tokens, s.pos, b) {
			if !r.HasInput(name) {
				continue
			}
			if err := r.SetInput(name, data); err != nil {
				return nil, err
			}
		}
	}
	if err := r.Run(); err != nil {
		return nil, err
	}
	return r, nil
}

// StepLogits is Step without copies: it returns the logits of the last
// token as a view of the plan's output, valid until the next step. On the
// compiled plan a decode step through StepLogits allocates nothing.
func (s *Session) StepLogits(tokens []int32) ([]float32, error) {
	n := int64(len(tokens))
	if err := s.checkStep(tokens); err != nil {
		return nil, err
	}
	r, err := s.run(tokens, 1)
	if err != nil {
		return nil, err
	}
	var out []float32
	var ne [4]int64
	if p, ok := r.(*eval.Executable); ok {
		out, ne, err = p.OutputView(0)
	} else {
		out, ne, err = r.Output(0)
	}
	if err != nil {
		return nil, err
	}
	s.pos += n
	s.Steps++
	return out[(ne[1]-1)*ne[0] : ne[1]*ne[0]], nil
}

// checkStep validates the tokens of a step against the context and vocab.
func (s *Session) checkStep(tokens []int32) error {
	n := int64(len(tokens))
	if n == 0 {
		return fmt.Errorf("session: step with no tokens")
	}
	if s.pos+n > s.model.Options.NCtx {
		return fmt.Errorf("session: context full: %d + %d tokens exceed n_ctx %d", s.pos, n, s.model.Options.NCtx)
	}
	nVocab := s.model.HParams.NVocab
	for _, t := range tokens {
		if t < 0 || int64(t) >= nVocab {
			return fmt.Errorf("session: token id %d out of range [0, %d)", t, nVocab)
		}
	}
	return nil
}

// runner builds the step graph of a shape (specialised, planned when
// SessionOptions.Plan is set, compiled unless Reference) and caches it.
// With the cpy KV mode every position is a new shape (its view offsets
// move), which is exactly ggml-cann's re-capture problem.
func (s *Session) runner(key stepKey) (stepRunner, error) {
	b := ir.Bindings{models.SymTokens: key.tokens, models.SymKV: key.kv, models.SymOutputs: key.outputs}
	if key.head >= 0 {
		b[models.SymKVHead] = key.head
	}
	g, err := s.model.Graph.Specialize(b)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	eo := s.opts.Exec
	switch {
	case s.opts.Plan != nil:
		if eo, err = s.opts.Plan(g); err != nil {
			return nil, fmt.Errorf("session: plan for %s: %w", b, err)
		}
	case s.workers != nil && eo.Offsets == nil:
		// The compiled plan keeps every intermediate in one arena at
		// the memory planner's offsets (ggml-alloc's in-place rule and
		// alignment, as on the CPU backend of llama.cpp).
		p, err := planner.PlanMemory(g, planner.MemoryOptions{Align: 32, Policy: planner.CPUPolicy(), Budget: planBudget})
		if err != nil {
			return nil, fmt.Errorf("session: memory plan for %s: %w", b, err)
		}
		eo.Offsets, eo.ArenaSize, eo.Order = p.Offsets, p.ArenaBytes, p.OrderIDs()
		s.arenaBytes += p.ArenaBytes
	}
	var r stepRunner
	if s.workers != nil {
		r, err = eval.NewExecutable(g, s.weights, eo, s.workers)
	} else {
		r, err = eval.NewExecutor(g, s.weights, eo)
	}
	if err != nil {
		return nil, err
	}
	for name, data := range s.state {
		if err := r.BindState(name, data); err != nil {
			return nil, err
		}
	}
	// Keep the decode steps (one token, one per n_kv bucket) and only the
	// latest multi-token one: the prefill steps of a long prompt in
	// ubatch chunks each have their own shape, and caching them all would
	// hold every step's activations at once.
	if key.tokens > 1 {
		for k := range s.steps {
			if k.tokens > 1 {
				delete(s.steps, k)
			}
		}
	}
	if len(s.steps) > 64 {
		clear(s.steps)
	}
	s.steps[key] = r
	return r, nil
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
	// Sampler, if set, picks each token from the last logits of a step
	// (llama.cpp's sampler chain, on the host, so every Stepper draws the
	// same tokens from the same logits and seed); GenerateWith accepts the
	// prompt's tokens and each token it picks. Nil is greedy decoding.
	Sampler *Sampler
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

// Replay steps s through tokens as a generation did: the first nPrompt
// (the prompt) in steps of ubatch tokens, then one token per step; it
// returns the first step's error. A run whose logits were not finite
// (NonFiniteError.Tokens) is replayed this way on a session that checks
// every op's output, to name the op at fault.
func Replay(s Stepper, tokens []int32, nPrompt, ubatch int) error {
	steps := [][]int32{}
	for i := 0; i < nPrompt && i < len(tokens); i += ubatch {
		steps = append(steps, tokens[i:min(i+ubatch, nPrompt, len(tokens))])
	}
	for i := nPrompt; i < len(tokens); i++ {
		steps = append(steps, tokens[i:i+1])
	}
	for _, st := range steps {
		if _, err := s.Step(st); err != nil {
			return err
		}
	}
	return nil
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
// the logits checked for NaN and infinities, the tokens drawn by a Sampler.
func GenerateWith(s Stepper, prompt []int32, n int, o GenerateOptions) (*GenerateResult, error) {
	res := &GenerateResult{}
	if n <= 0 {
		return res, nil
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("session: empty prompt")
	}
	pick := Argmax
	if o.Sampler != nil {
		for _, t := range prompt {
			o.Sampler.Accept(t)
		}
		pick = o.Sampler.Sample
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
		tok := pick(logits)
		if o.Sampler != nil {
			o.Sampler.Accept(tok)
		}
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
