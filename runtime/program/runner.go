package program

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/session"
)

// Options configure a Runner.
type Options struct {
	// Compile configures the runner's own Compiler when Compiler is nil
	// (NewCompiler). Its PrefillGraph is taken from Policy.PrefillGraphs.
	Compile compiler.Options
	// Compiler, when set, is shared (runners of one model may share it).
	Compiler *Compiler
	// Policy decides eager or graph execution and configures the cache.
	Policy device.GraphPolicy
	// DeviceID is the device the runner binds (SetDevice).
	DeviceID int
	// Kernels are the numeric options of CPU segments; keep them equal to
	// the device's (device.SimOptions.Kernels) for bit-identical results.
	Kernels kernels.Options
	// UBatch, when positive, is the most tokens of one step: a longer
	// prompt runs in steps of UBatch tokens (chunked prefill, llama.cpp's
	// n_ubatch), and NewRunner loads the program of the largest step
	// (UBatch tokens over n_ctx cells, Load), so that every device region
	// is allocated at load and none after it (compiler.DeviceMemory plans
	// that step).
	UBatch int64
	// KernelSet holds the kernels of CPU segments; nil means
	// eval.DefaultKernels() (give a context's set for its custom ops, and
	// the same set to the device: device.SimOptions.KernelSet).
	KernelSet *eval.KernelSet
}

// PhaseStats count what the steps of one phase (prefill: steps of more
// than one token; decode: one-token steps) did.
type PhaseStats struct {
	Steps          int64 `json:"steps"`
	Tokens         int64 `json:"tokens"`
	Captures       int64 `json:"captures"`
	Replays        int64 `json:"replays"`
	CacheHits      int64 `json:"cache_hits"`
	CacheMisses    int64 `json:"cache_misses"`
	Evictions      int64 `json:"evictions"`
	KernelLaunches int64 `json:"kernel_launches"`
	// EagerSegments and GraphSegments count NPU segment runs by path.
	EagerSegments int64 `json:"eager_segments"`
	GraphSegments int64 `json:"graph_segments"`
	// HostDispatchNS is the host time spent feeding the device: uploads,
	// cache lookups, kernel launches or graph replays (captures included),
	// copies and downloads; not compilation, not CPU kernels, not waiting.
	HostDispatchNS         int64   `json:"host_dispatch_ns"`
	HostDispatchNSPerToken float64 `json:"host_dispatch_ns_per_token"`
	// HitRate is CacheHits / (CacheHits + CacheMisses), 0 without lookups.
	HitRate float64 `json:"hit_rate"`
}

// Stats describe a Runner.
type Stats struct {
	Graphs    bool       `json:"graphs"` // graph mode on
	Prefill   PhaseStats `json:"prefill"`
	Decode    PhaseStats `json:"decode"`
	Programs  int        `json:"programs"` // programs the runner loaded
	CompileMS float64    `json:"compile_ms"`
	// WeightConvertMS is the host time the device spent placing weights
	// in its own layout at load (device.WeightPlacer: runtime/acl converts
	// quantised weights with gguf/wqconv and uploads them), 0 on a device
	// that reads ggml's blocks.
	WeightConvertMS float64 `json:"weight_convert_ms"`
	// Pool is the device pool after the last step.
	Pool device.PoolStats `json:"pool"`
	// AllocsAfterLoad counts the pool's allocations after Load (0 before
	// it): regions grown, scratch the plan did not hold.
	AllocsAfterLoad int64 `json:"allocs_after_load"`
}

func (p *PhaseStats) finish() {
	if p.Tokens > 0 {
		p.HostDispatchNSPerToken = math.Round(float64(p.HostDispatchNS) / float64(p.Tokens))
	}
	if n := p.CacheHits + p.CacheMisses; n > 0 {
		p.HitRate = math.Round(1e4*float64(p.CacheHits)/float64(n)) / 1e4
	}
}

// Runner runs a model's lowered programs step by step on a device:
// prefill, then greedy decode, over a KV cache that lives in device memory
// (what session.Session does on the CPU; both are session.Steppers). It is
// not safe for concurrent use; runners sharing a device are.
type Runner struct {
	model   *models.Model
	weights eval.WeightSource
	dev     device.Device
	opts    Options
	comp    *Compiler
	policy  device.GraphPolicy
	stream  device.Stream
	cache   *device.GraphCache
	// hostPool runs the CPU segments' kernels (nil until the first one;
	// unused when opts.Kernels.Pool is set).
	hostPool *kernels.Pool

	regions map[string]*region
	gen     int
	ref     *cann.Program // the program whose shared layout was loaded
	progs   map[string]*loaded
	stage   []byte // pinned upload staging, laid out like the inputs region
	down    []byte // pinned download buffer

	pos       int64
	loaded    bool  // Load ran
	allocs0   int64 // the pool's allocations at the end of Load
	stats     Stats
	convertNS int64 // PlaceWeight and TakeWeight time
	// weightBytes are the ggml bytes of the weights written to device
	// regions (a weight the device took is not).
	weightBytes int64
	launches    int64
	closed      bool
	lock        *sync.RWMutex // the device's lock (device.AcquireDeviceLock) until Close
}

// NewRunner compiles nothing yet: programs are compiled and loaded on the
// first step of each shape bucket. It binds the device, creates the
// runner's stream and its graph cache.
func NewRunner(m *models.Model, w eval.WeightSource, dev device.Device, opts Options) (*Runner, error) {
	comp := opts.Compiler
	if comp == nil {
		co := opts.Compile
		co.PrefillGraph = opts.Policy.Graphs && opts.Policy.PrefillGraphs
		var err error
		if comp, err = NewCompiler(m, co); err != nil {
			return nil, err
		}
	}
	if comp.model != m {
		return nil, fmt.Errorf("program: the compiler was built for another model")
	}
	if err := dev.SetDevice(opts.DeviceID); err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	s := &Runner{model: m, weights: w, dev: dev, opts: opts, comp: comp, policy: opts.Policy,
		regions: map[string]*region{}, progs: map[string]*loaded{}}
	s.stats.Graphs = opts.Policy.Graphs
	// The runner is a user of the device's lock until Close, which lets
	// the device go.
	s.lock = device.AcquireDeviceLock(dev)
	s.lock.RLock()
	st, err := dev.CreateStream()
	s.lock.RUnlock()
	if err != nil {
		device.ReleaseDeviceLock(dev)
		return nil, fmt.Errorf("program: %w", err)
	}
	s.stream = st
	if s.cache, err = device.NewGraphCache(dev, opts.Policy.Cache); err != nil {
		dev.DestroyStream(st)
		device.ReleaseDeviceLock(dev)
		return nil, fmt.Errorf("program: %w", err)
	}
	if opts.UBatch > 0 {
		if err := s.Load(); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	return s, nil
}

// Load allocates and fills every region at the size of the largest step,
// Options.UBatch tokens (n_ctx when 0) over n_ctx cells, and marks the
// point after which Stats counts the pool's allocations
// (AllocsAfterLoad).
func (s *Runner) Load() error {
	nctx := s.model.Options.NCtx
	n := nctx
	if s.opts.UBatch > 0 {
		n = min(s.opts.UBatch, nctx)
	}
	b := ir.Bindings{models.SymTokens: n, models.SymKV: models.KVLen(nctx, nctx), models.SymOutputs: 1, models.SymKVHead: 0}
	if _, err := s.load(b); err != nil {
		return err
	}
	s.loaded = true
	if pools := s.dev.Stats().Pools; s.opts.DeviceID < len(pools) {
		s.allocs0 = pools[s.opts.DeviceID].Allocs
	}
	return nil
}

// Pos is the number of tokens in the KV cache.
func (s *Runner) Pos() int64 { return s.pos }

// Rewind forgets the tokens from position pos on (llama.cpp's
// llama_kv_cache_seq_rm on the tail): the next step writes cell pos
// again. Cells past the new position keep stale rows, which the mask
// hides and later steps overwrite before reading.
func (s *Runner) Rewind(pos int64) error {
	if pos < 0 || pos > s.pos {
		return fmt.Errorf("program: rewind to %d: the cache holds %d tokens", pos, s.pos)
	}
	s.pos = pos
	return nil
}

// WeightBytes is the ggml bytes of the weights the runner wrote to the
// device: the weights region's contents, without its alignment padding or
// a weight the device holds in its own layouts alone
// (device.WeightTaker). With the device's own copies (runtime/acl's
// Counters.ConvertedBytes) it is what partition.Result.DeviceWeightBytes
// predicts.
func (s *Runner) WeightBytes() int64 { return s.weightBytes }

// Cache returns the runner's graph cache.
func (s *Runner) Cache() *device.GraphCache { return s.cache }

// Compiler returns the runner's compiler.
func (s *Runner) Compiler() *Compiler { return s.comp }

// Stats returns the runner's statistics so far.
func (s *Runner) Stats() Stats {
	st := s.stats
	st.Prefill.finish()
	st.Decode.finish()
	_, d := s.comp.Compiled()
	st.CompileMS = float64(d.Microseconds()) / 1000
	st.WeightConvertMS = float64(s.convertNS/1000) / 1000
	st.Programs = len(s.progs)
	if pools := s.dev.Stats().Pools; s.opts.DeviceID < len(pools) {
		st.Pool = pools[s.opts.DeviceID]
		if s.loaded {
			st.AllocsAfterLoad = st.Pool.Allocs - s.allocs0
		}
	}
	return st
}

// bindings are the symbol values of a step of n tokens at pos.
func (s *Runner) bindings(pos, n int64) ir.Bindings {
	return ir.Bindings{
		models.SymTokens:  n,
		models.SymKV:      models.KVLen(pos+n, s.model.Options.NCtx),
		models.SymOutputs: 1,
		models.SymKVHead:  pos,
	}
}

// Step feeds tokens at the current position and returns the logits of the
// last one. With prefill graphs on, a prompt is padded to its bucket
// length (the padding tokens' KV rows land past the prompt and are
// overwritten by later tokens before anything reads them).
func (s *Runner) Step(tokens []int32) (*session.StepResult, error) {
	if s.closed {
		return nil, fmt.Errorf("program: session is closed")
	}
	start := time.Now()
	n := int64(len(tokens))
	nctx := s.model.Options.NCtx
	if n == 0 {
		return nil, fmt.Errorf("program: step with no tokens")
	}
	if s.pos+n > nctx {
		return nil, fmt.Errorf("program: context full: %d + %d tokens exceed n_ctx %d", s.pos, n, nctx)
	}
	if ub := s.opts.UBatch; ub > 0 && n > ub {
		// Chunked prefill: every chunk but the last only fills the cache.
		for len(tokens) > int(ub) {
			if _, err := s.Step(tokens[:ub]); err != nil {
				return nil, err
			}
			tokens = tokens[ub:]
		}
		return s.Step(tokens)
	}
	for _, t := range tokens {
		if t < 0 || int64(t) >= s.model.HParams.NVocab {
			return nil, fmt.Errorf("program: token id %d out of range [0, %d)", t, s.model.HParams.NVocab)
		}
	}
	limit := nctx - s.pos
	if s.opts.UBatch > 0 {
		limit = min(limit, s.opts.UBatch)
	}
	padded := s.policy.PrefillLength(n, limit)
	feed := tokens
	if padded > n {
		feed = append(slices.Clone(tokens), make([]int32, padded-n)...)
		for i := n; i < padded; i++ {
			feed[i] = tokens[n-1]
		}
	}
	b := s.bindings(s.pos, padded)
	lp, err := s.load(b)
	if err != nil {
		return nil, err
	}
	inputs := models.Inputs(feed, s.pos, b)
	inputs[models.InputOutIDs] = i32le(int32(n - 1))

	phase := &s.stats.Decode
	if n > 1 {
		phase = &s.stats.Prefill
	}
	before := s.cache.Stats()
	launches0 := s.launches
	dispatch, err := s.run(lp, inputs, phase)
	if err != nil {
		return nil, fmt.Errorf("program: step at position %d (%s): %w", s.pos, lp.prog.Bucket, err)
	}
	logits, err := s.output(lp, 0)
	if err != nil {
		return nil, fmt.Errorf("program: step at position %d: %w", s.pos, err)
	}
	after := s.cache.Stats()
	phase.Steps++
	phase.Tokens += n
	phase.Captures += after.Captures - before.Captures
	phase.Replays += after.Replays - before.Replays
	phase.CacheHits += after.Hits - before.Hits
	phase.CacheMisses += after.Misses - before.Misses
	phase.Evictions += after.Evictions - before.Evictions
	phase.KernelLaunches += s.launches - launches0
	phase.HostDispatchNS += int64(dispatch)
	s.pos += n
	nv := s.model.HParams.NVocab
	if int64(len(logits)) < nv {
		return nil, fmt.Errorf("program: output 0 holds %d values, want at least %d logits", len(logits), nv)
	}
	return &session.StepResult{Logits: [][]float32{logits[len(logits)-int(nv):]}, Time: time.Since(start)}, nil
}

func i32le(v int32) []byte {
	return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
}

// Generate runs prefill on the prompt, then greedy decode (argmax, lowest
// id on ties) for n tokens in all; onToken, if set, sees each token as
// soon as it exists.
func (s *Runner) Generate(prompt []int32, n int, keepLogits bool, onToken func(int32)) (*session.GenerateResult, error) {
	return session.Generate(s, prompt, n, keepLogits, onToken)
}

// run performs a program's steps and waits for the device. It returns the
// host dispatch time.
func (s *Runner) run(lp *loaded, inputs map[string][]byte, phase *PhaseStats) (time.Duration, error) {
	p := lp.prog
	var dispatch time.Duration
	// Inputs read on the CPU are written in place; device inputs are
	// staged in pinned memory and uploaded by the upload steps.
	for _, in := range p.Inputs {
		data, ok := inputs[in.Name]
		if !ok {
			return 0, fmt.Errorf("input %q: no value for it", in.Name)
		}
		if int64(len(data)) != in.Bytes {
			return 0, fmt.Errorf("input %q: %d bytes, the program expects %d", in.Name, len(data), in.Bytes)
		}
		if in.Desc.Addr.Region == cann.RegionInputs {
			if in.Desc.Addr.Offset+in.Bytes > int64(len(s.stage)) {
				return 0, fmt.Errorf("input %q does not fit the staging buffer", in.Name)
			}
			copy(s.stage[in.Desc.Addr.Offset:], data)
			continue
		}
		b, err := s.hostBytes(in.Desc.Addr, in.Bytes)
		if err != nil {
			return 0, fmt.Errorf("input %q: %w", in.Name, err)
		}
		copy(b, data)
	}
	for _, st := range p.Steps {
		switch st.Kind {
		case cann.StepUpload:
			t0 := time.Now()
			for _, in := range p.Inputs {
				if in.Name != st.Input || in.Desc.Addr.Region != cann.RegionInputs {
					continue
				}
				dst, err := s.ptr(in.Desc.Addr, in.Bytes)
				if err != nil {
					return 0, fmt.Errorf("upload %q: %w", in.Name, err)
				}
				off := in.Desc.Addr.Offset
				if err := s.dev.MemcpyH2DAsync(dst, s.stage[off:off+in.Bytes], s.stream); err != nil {
					return 0, fmt.Errorf("upload %q: %w", in.Name, err)
				}
			}
			dispatch += time.Since(t0)
		case cann.StepSegment:
			if st.Segment < 0 || st.Segment >= len(lp.segs) {
				return 0, fmt.Errorf("step names segment %d of %d", st.Segment, len(lp.segs))
			}
			ls := &lp.segs[st.Segment]
			if !ls.npu {
				if err := s.runHost(ls); err != nil {
					return 0, err
				}
				continue
			}
			t0 := time.Now()
			err := s.runNPU(ls, phase)
			dispatch += time.Since(t0)
			if err != nil {
				return 0, err
			}
		case cann.StepCopy:
			d, err := s.copyStep(st.Copy)
			dispatch += d
			if err != nil {
				return 0, err
			}
		case cann.StepDownload:
			if st.Output < 0 || st.Output >= len(p.Outputs) {
				return 0, fmt.Errorf("download of output %d of %d", st.Output, len(p.Outputs))
			}
			if st.Output != 0 {
				continue // only the logits are read back
			}
			o := p.Outputs[st.Output]
			t0 := time.Now()
			src, err := s.ptr(o.Desc.Addr, o.Desc.Bytes())
			if err != nil {
				return 0, fmt.Errorf("download %q: %w", o.Name, err)
			}
			if err := s.dev.MemcpyD2HAsync(s.down[:o.Desc.Bytes()], src, s.stream); err != nil {
				return 0, fmt.Errorf("download %q: %w", o.Name, err)
			}
			dispatch += time.Since(t0)
		default:
			return 0, fmt.Errorf("unknown step kind %q", st.Kind)
		}
	}
	if err := s.dev.SynchronizeStream(s.stream); err != nil {
		return 0, err
	}
	return dispatch, nil
}

// runNPU dispatches one NPU segment: through the graph cache when graph
// mode is on and the segment is capturable, kernel by kernel otherwise.
func (s *Runner) runNPU(ls *loadedSeg, phase *PhaseStats) error {
	launch := func(st device.Stream) error {
		for i := range ls.launches {
			if err := s.dev.Launch(st, &ls.launches[i]); err != nil {
				return fmt.Errorf("segment %d: %w", ls.seg.ID, err)
			}
			s.launches++
		}
		return nil
	}
	if s.policy.Graphs && ls.props != nil {
		phase.GraphSegments++
		_, err := s.cache.Execute(s.stream, ls.props, launch)
		return err
	}
	phase.EagerSegments++
	return launch(s.stream)
}

// runHost runs a CPU segment after the device has finished what it reads.
func (s *Runner) runHost(ls *loadedSeg) error {
	if err := s.dev.SynchronizeStream(s.stream); err != nil {
		return err
	}
	o := s.opts.Kernels
	if o.Pool == nil {
		// The CPU segments' kernels run on a persistent pool of the
		// runner's, started by the first CPU segment and closed by Close,
		// so a step starts no goroutine for them.
		if s.hostPool == nil {
			s.hostPool = kernels.NewPool(o.Threads)
		}
		o.Pool = s.hostPool
	}
	for _, k := range ls.host {
		if err := runHostKernel(k, o); err != nil {
			return fmt.Errorf("segment %d: %s (node %d): %w", ls.seg.ID, k.name, k.node.ID, err)
		}
	}
	return nil
}

func runHostKernel(k hostKernel, o kernels.Options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kernel panic: %v", r)
		}
	}()
	return k.fn(k.node, k.dst, k.args, o)
}

// copyStep moves a value between host and device. Same-layout copies are
// one async memcpy; otherwise the value is laid out on the host with a
// strided copy first (D2H: after the download; H2D: before the upload).
func (s *Runner) copyStep(k *cann.Kernel) (time.Duration, error) {
	if k == nil || len(k.Inputs) != 1 {
		return 0, fmt.Errorf("copy step without a source")
	}
	src, dst := k.Inputs[0], k.Output
	fail := func(err error) error { return fmt.Errorf("copy %s (node %d %q): %w", k.Name, k.Node, k.NodeName, err) }
	srcNPU := s.regions[src.Addr.Region] != nil && s.regions[src.Addr.Region].npu
	dstNPU := s.regions[dst.Addr.Region] != nil && s.regions[dst.Addr.Region].npu
	same := src.DType == dst.DType && src.Ne == dst.Ne && src.Nb == dst.Nb
	t0 := time.Now()
	switch {
	case srcNPU && !dstNPU: // D2H
		from, err := s.ptr(src.Addr, src.Bytes())
		if err != nil {
			return 0, fail(err)
		}
		if same {
			to, err := s.hostBytes(dst.Addr, dst.Bytes())
			if err != nil {
				return 0, fail(err)
			}
			err = s.dev.MemcpyD2HAsync(to, from, s.stream)
			return time.Since(t0), fail0(fail, err)
		}
		tmp := make([]byte, src.Bytes())
		if err := s.dev.MemcpyD2HAsync(tmp, from, s.stream); err != nil {
			return 0, fail(err)
		}
		d := time.Since(t0)
		if err := s.dev.SynchronizeStream(s.stream); err != nil {
			return d, fail(err)
		}
		out, err := s.hostTensor(dst)
		if err != nil {
			return d, fail(err)
		}
		in := kernels.Tensor{Type: gguf.GGMLType(src.DType), Ne: src.Ne, Nb: src.Nb, Data: tmp}
		return d, fail0(fail, kernels.Cpy(out, in))
	case !srcNPU && dstNPU: // H2D
		to, err := s.ptr(dst.Addr, dst.Bytes())
		if err != nil {
			return 0, fail(err)
		}
		// The device must be done with the host value's producers: they
		// are CPU kernels, which already ran.
		in, err := s.hostTensor(src)
		if err != nil {
			return 0, fail(err)
		}
		data := in.Data[:src.Bytes()]
		if !same {
			tmp := make([]byte, dst.Bytes())
			out := kernels.Tensor{Type: gguf.GGMLType(dst.DType), Ne: dst.Ne, Nb: dst.Nb, Data: tmp}
			if err := kernels.Cpy(out, in); err != nil {
				return 0, fail(err)
			}
			data = tmp
		}
		// Pageable host memory: the bytes are staged now, so later CPU
		// kernels may reuse the host arena before the copy runs.
		err = s.dev.MemcpyH2DAsync(to, data, s.stream)
		return time.Since(t0), fail0(fail, err)
	}
	return 0, fail(fmt.Errorf("copy between %s and %s: want one host and one device region", src.Addr.Region, dst.Addr.Region))
}

func fail0(fail func(error) error, err error) error {
	if err == nil {
		return nil
	}
	return fail(err)
}

// output reads output i as f32 after a step.
func (s *Runner) output(lp *loaded, i int) ([]float32, error) {
	p := lp.prog
	if i >= len(p.Outputs) {
		return nil, fmt.Errorf("program has %d outputs", len(p.Outputs))
	}
	o := p.Outputs[i].Desc
	var data []byte
	if r := s.regions[o.Addr.Region]; r != nil && r.npu {
		data = s.down[:o.Bytes()]
	} else {
		b, err := s.hostBytes(o.Addr, o.Bytes())
		if err != nil {
			return nil, err
		}
		data = b
	}
	return kernels.ToF32(kernels.Tensor{Type: gguf.GGMLType(o.DType), Ne: o.Ne, Nb: o.Nb, Data: data})
}

// Close waits for the device, destroys the cached graphs, and frees every
// region, staging buffer and the stream.
func (s *Runner) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	first := s.dev.SynchronizeStream(s.stream)
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	keep(s.cache.Close())
	defer device.ReleaseDeviceLock(s.dev) // after the read lock below is released
	s.lock.RLock()
	defer s.lock.RUnlock()
	names := make([]string, 0, len(s.regions))
	for n := range s.regions {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		keep(s.release(s.regions[n]))
	}
	for _, b := range [][]byte{s.stage, s.down} {
		if b != nil {
			keep(s.dev.FreeHost(b))
		}
	}
	s.stage, s.down = nil, nil
	keep(s.dev.DestroyStream(s.stream))
	s.hostPool.Close()
	if first != nil {
		return fmt.Errorf("program: close: %w", first)
	}
	return nil
}
