package eval

import (
	"fmt"

	"github.com/irtool/irtool/internal/threadpool"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Workers is a persistent set of worker threads that executables run
// their kernels on (one per session, shared by the session's
// executables). The threads are started once; between kernels they spin
// briefly and then park, as ggml's CPU thread pool does. Running an
// Executable on them creates no goroutine, sends on no channel and
// allocates nothing.
//
// The executables run on the same Workers also share the weights that their
// matmuls read from a copy repacked once for the SIMD kernels (Packs).
type Workers struct {
	pool  *threadpool.Pool
	packs *kernels.WeightPacks
}

// NewWorkers starts threads worker threads (the goroutine that runs an
// executable is one of them); threads <= 0 means DefaultThreads().
func NewWorkers(threads int) *Workers {
	return &Workers{pool: threadpool.New(threads), packs: kernels.NewWeightPacks()}
}

// Packs holds the repacked weight copies of the executables run on w (used
// when their ExecOptions.Kernels.Packs is nil): made when an executable is
// compiled, once per weight matrix of a model file in the process
// (shared with every other Workers using the same file, see
// kernels.WeightPacks), and held until Close.
func (w *Workers) Packs() *kernels.WeightPacks { return w.packs }

// DefaultThreads is the number of physical cores (llama.cpp's default
// thread count), at most GOMAXPROCS.
func DefaultThreads() int { return threadpool.DefaultThreads() }

// Threads is the number of threads that work on each kernel.
func (w *Workers) Threads() int { return w.pool.Threads() }

// Close stops the threads and releases the repacked copies held through
// Packs (copies other Workers share stay). Executables using them fail
// afterwards. Idempotent.
func (w *Workers) Close() {
	w.pool.Close()
	w.packs.Release()
}

// Executable is a static graph compiled for the CPU: every node's storage
// is resolved once (the planner's offsets inside one arena when the
// options carry a memory plan, as the NPU path uses them), and every
// compute node is lowered to a prepared kernel (kernels.Job) bound to
// those slices, so that a step is a loop over a flat list of kernel calls.
// Each kernel's phases are split by rows into chunks across the Workers.
// Running an Executable whose ops all have prepared kernels allocates
// nothing (the default pass pipeline's graphs and the unfused ones, MoE
// included: see PreparedOp and KernelDef);
// the ops without one (a rope whose factors the graph computes, for
// instance) run through the kernel table on the calling goroutine.
//
// Results are bit for bit those of the Executor on the same graph.
type Executable struct {
	ex      *Executor
	workers *Workers
	steps   []planStep
	ready   bool // steps match the current bindings
}

type planStep struct {
	node     *ir.Node
	prepared bool        // the node has a prepared kernel (else: fallback)
	tasks    []phaseTask // its phases with work, in order
}

// phaseTask runs one phase of a job as a thread pool task. Its size and
// chunking are fixed when the executable is compiled (a prepared kernel's
// operands, hence its sizes, do not change).
type phaseTask struct {
	job      kernels.Job
	phase    int
	n, chunk int
	// alone: the phase runs on the calling goroutine in one call (one
	// thread, or all its work fits in one chunk): no hand-off to the
	// workers and no barrier.
	alone bool
}

func (t *phaseTask) Run(worker, lo, hi int) { t.job.Run(t.phase, worker, lo, hi) }

// NewExecutable resolves the storage of a static graph as NewExecutor does
// (weights from w, opts' memory plan and order) and returns the
// executable; the kernels are prepared on the first Run after the states
// are bound.
func NewExecutable(g *ir.Graph, w WeightSource, opts ExecOptions, workers *Workers) (*Executable, error) {
	if workers == nil {
		return nil, fmt.Errorf("eval: plan of graph %q: no workers", g.Name)
	}
	ex, err := NewExecutor(g, w, opts)
	if err != nil {
		return nil, err
	}
	return &Executable{ex: ex, workers: workers}, nil
}

// Graph returns the graph the executable runs.
func (p *Executable) Graph() *ir.Graph { return p.ex.g }

// BindState gives a state leaf (a KV cache) its persistent storage.
func (p *Executable) BindState(name string, data []byte) error {
	p.ready = false
	return p.ex.BindState(name, data)
}

// SetInput copies raw little-endian bytes into an input.
func (p *Executable) SetInput(name string, data []byte) error { return p.ex.SetInput(name, data) }

// HasInput reports whether the graph reads the named input.
func (p *Executable) HasInput(name string) bool { return p.ex.HasInput(name) }

// Input returns the storage of an input, to be written in place before Run
// (nil when the graph has no such input).
func (p *Executable) Input(name string) []byte {
	n, ok := p.ex.inputs[name]
	if !ok {
		return nil
	}
	return p.ex.bufs[n.ID]
}

// Output returns the f32 values of output i (a copy).
func (p *Executable) Output(i int) ([]float32, [4]int64, error) { return p.ex.Output(i) }

// OutputView returns output i as a float32 view of its storage, without
// copying, valid until the next Run; it fails when the output is not dense
// F32.
func (p *Executable) OutputView(i int) ([]float32, [4]int64, error) {
	if i < 0 || i >= len(p.ex.g.Outputs) {
		return nil, [4]int64{}, fmt.Errorf("eval: graph %q has %d outputs", p.ex.g.Name, len(p.ex.g.Outputs))
	}
	t, err := p.ex.Tensor(p.ex.g.Outputs[i])
	if err != nil {
		return nil, t.Ne, err
	}
	v, ok := t.F32()
	if !ok {
		return nil, t.Ne, fmt.Errorf("eval: output %d %s is not dense f32", i, t)
	}
	return v, t.Ne, nil
}

// Prepared reports how many compute nodes run as prepared kernels and how
// many through the kernel table (after the first Run).
func (p *Executable) Prepared() (prepared, fallback int) {
	for _, s := range p.steps {
		if s.prepared {
			prepared++
		} else {
			fallback++
		}
	}
	return
}

// compile prepares every compute node's kernel.
func (p *Executable) compile() error {
	nodes := p.ex.g.Nodes
	if p.ex.order != nil {
		nodes = p.ex.order
	}
	p.steps = p.steps[:0]
	threads := p.workers.Threads()
	for _, n := range nodes {
		info, _ := n.Info()
		if info == nil || info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
			continue
		}
		job, err := p.prepare(n, threads)
		if err != nil {
			return fmt.Errorf("eval: %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		st := planStep{node: n, prepared: job != nil}
		if job != nil {
			for ph := range job.Phases() {
				n, grain := job.Size(ph)
				if n <= 0 {
					continue // e.g. a matmul's conversion of columns read in place
				}
				// A few chunks per thread balance uneven progress (the
				// machine may be shared) without many claims.
				chunk := max(grain, (n+8*threads-1)/(8*threads), 1)
				st.tasks = append(st.tasks, phaseTask{job: job, phase: ph, n: n, chunk: chunk,
					alone: threads == 1 || n <= chunk})
			}
		}
		p.steps = append(p.steps, st)
	}
	p.ready = true
	return nil
}

// prepare returns the prepared kernel of n (its KernelDef's Prepare, in the
// executor's kernel set), or nil when n's op has none.
func (p *Executable) prepare(n *ir.Node, threads int) (kernels.Job, error) {
	ks := p.ex.opts.KernelSet
	if ks == nil {
		ks = defaultKernels
	}
	def, _ := ks.LookupDef(n.Op)
	if def.Prepare == nil {
		return nil, nil
	}
	dst, err := p.ex.Tensor(n)
	if err != nil {
		return nil, err
	}
	a := make([]kernels.Tensor, len(n.Args))
	for i, x := range n.Args {
		if a[i], err = p.ex.Tensor(x); err != nil {
			return nil, err
		}
	}
	o := p.ex.opts.Kernels
	if o.Packs == nil {
		o.Packs = p.workers.packs
	}
	return def.Prepare(n, dst, a, o, threads)
}

// Run runs the graph once: each kernel's phases in order, each phase split
// into chunks across the workers, except phases whose work fits in one
// chunk (decided when the executable is compiled, from the kernel's size),
// which run on the calling goroutine alone.
func (p *Executable) Run() error {
	if !p.ready {
		if err := p.compile(); err != nil {
			return err
		}
	}
	cur := -1
	err := p.runSteps(&cur)
	if err != nil && cur >= 0 {
		n := p.steps[cur].node
		return fmt.Errorf("eval: %s (%s %q): %w", n, n.Op, n.Name, err)
	}
	return err
}

// runSteps runs the steps, keeping the index of the current one in *cur;
// a panic of a kernel running on the calling goroutine (an index out of
// range in the data) becomes an error, once for the whole run rather than
// per step.
func (p *Executable) runSteps(cur *int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kernel panicked: %v", r)
		}
	}()
	pool := p.workers.pool
	for i := range p.steps {
		*cur = i
		st := &p.steps[i]
		if !st.prepared {
			if err := p.ex.runNode(st.node); err != nil {
				return err
			}
			continue
		}
		for ph := range st.tasks {
			t := &st.tasks[ph]
			if t.alone {
				t.job.Run(t.phase, 0, 0, t.n)
				continue
			}
			if err := pool.Run(t, t.n, t.chunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// isWeightData reports whether n's data is (a view of) a model weight:
// constant for the life of the executable, so a copy of it made once
// stays true.
func isWeightData(n *ir.Node) bool {
	for n != nil {
		info, ok := n.Info()
		if !ok || info.Kind != ir.KindView || info.AliasArg >= len(n.Args) {
			break
		}
		n = n.Args[info.AliasArg]
	}
	return n != nil && n.Op == ir.OpWeight
}
