package device

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// Group is a communicator of n ranks that run in one process, one
// goroutine per rank (what HcclCommInitAll sets up for the cards of one
// server): the emulated HCCL of the simulated devices. Each rank's calls
// are numbered; the calls of the ranks with the same number meet, and the
// last to arrive checks that they agree (op, element count, dtype, the
// reduction) and computes for all. Sends and receives meet by (sender,
// receiver, their own number). Sums of f32 are taken in rank order
// (rank 0 + rank 1 + ...), so the result does not depend on which rank
// arrives first. A mismatch, a rank that fails (Fail) or a rank that does
// not arrive within the timeout is an error on every rank, naming the op
// and the ranks; a failed group fails every later call at once. The group
// starts no goroutine of its own.
type Group struct {
	name    string
	n       int
	timeout time.Duration

	mu     sync.Mutex
	seq    []int64          // next group-collective number, per rank
	p2pSeq map[[3]int]int64 // next send/recv number, per (from, to, sender 0 / receiver 1)
	rounds map[roundKey]*round
	failed chan struct{}
	err    error
}

// DefaultCollectiveTimeout is how long a rank waits for the others at a
// collective before the group fails (HCCL's HCCL_CONNECT_TIMEOUT plays
// this role on hardware).
const DefaultCollectiveTimeout = 30 * time.Second

type roundKey struct {
	p2p      bool
	from, to int // p2p only
	seq      int64
}

// call is one rank's side of a collective.
type call struct {
	rank       int
	op         ir.Op
	dt         ir.DType
	send, recv []byte
	peer       int
	sizes      []int // AllGatherV: the bytes of each rank
}

type round struct {
	calls []*call // by rank (group collectives) or [sender, receiver]
	count int
	done  chan struct{}
	err   error
}

// NewGroup returns a communicator of n ranks named name (the group
// attribute of the collective nodes it serves); timeout 0 means
// DefaultCollectiveTimeout.
func NewGroup(name string, n int, timeout time.Duration) (*Group, error) {
	if n < 1 || n > 1<<16 {
		return nil, fmt.Errorf("device: group %s of %d ranks", name, n)
	}
	if timeout <= 0 {
		timeout = DefaultCollectiveTimeout
	}
	return &Group{name: name, n: n, timeout: timeout, seq: make([]int64, n), p2pSeq: map[[3]int]int64{},
		rounds: map[roundKey]*round{}, failed: make(chan struct{})}, nil
}

// Size is the number of ranks.
func (g *Group) Size() int { return g.n }

// Comm returns rank r's endpoint, an eval.Communicator.
func (g *Group) Comm(r int) (*Comm, error) {
	if r < 0 || r >= g.n {
		return nil, fmt.Errorf("device: group %s has no rank %d (%d ranks)", g.name, r, g.n)
	}
	return &Comm{g: g, rank: r}, nil
}

// Fail marks the group failed because rank r failed with err: every rank
// waiting at a collective, and every later call, returns an error naming
// rank r. The first failure wins.
func (g *Group) Fail(r int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failLocked(fmt.Errorf("rank %d failed: %w", r, err))
}

func (g *Group) failLocked(err error) {
	if g.err != nil {
		return
	}
	g.err = fmt.Errorf("device: group %s: %w", g.name, err)
	close(g.failed)
}

// Err returns the error the group failed with, nil while it has not.
func (g *Group) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Comm is one rank's endpoint of a Group. It implements eval.Communicator.
type Comm struct {
	g    *Group
	rank int
}

// Group names the communicator.
func (c *Comm) Group() string { return c.g.name }

// Rank is the endpoint's rank.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.g.n }

// AllReduce sums send over the ranks into recv, in rank order.
func (c *Comm) AllReduce(send, recv []byte, dt ir.DType) error {
	return c.collective(&call{rank: c.rank, op: ir.OpAllReduce, dt: dt, send: send, recv: recv})
}

// AllGather writes every rank's send into recv, rank 0 first.
func (c *Comm) AllGather(send, recv []byte, dt ir.DType) error {
	return c.collective(&call{rank: c.rank, op: ir.OpAllGather, dt: dt, send: send, recv: recv})
}

// AllGatherV writes every rank's send into recv, rank 0 first; rank r
// sends sizes[r] bytes.
func (c *Comm) AllGatherV(send, recv []byte, sizes []int, dt ir.DType) error {
	return c.collective(&call{rank: c.rank, op: ir.OpAllGather, dt: dt, send: send, recv: recv, sizes: append([]int{}, sizes...)})
}

// ReduceScatter writes slice Rank() of the sum of send into recv.
func (c *Comm) ReduceScatter(send, recv []byte, dt ir.DType) error {
	return c.collective(&call{rank: c.rank, op: ir.OpReduceScatter, dt: dt, send: send, recv: recv})
}

// Send sends buf to rank peer; it returns when the peer has received it.
func (c *Comm) Send(buf []byte, dt ir.DType, peer int) error {
	return c.p2p(&call{rank: c.rank, op: ir.OpSend, dt: dt, send: buf, peer: peer}, c.rank, peer)
}

// Recv receives buf from rank peer.
func (c *Comm) Recv(buf []byte, dt ir.DType, peer int) error {
	return c.p2p(&call{rank: c.rank, op: ir.OpRecv, dt: dt, recv: buf, peer: peer}, peer, c.rank)
}

func (c *Comm) collective(cl *call) error {
	g := c.g
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return g.err
	}
	key := roundKey{seq: g.seq[c.rank]}
	g.seq[c.rank]++
	return g.join(key, cl, c.rank, g.n, g.reduceRound)
}

func (c *Comm) p2p(cl *call, from, to int) error {
	g := c.g
	if cl.peer < 0 || cl.peer >= g.n || cl.peer == c.rank {
		return fmt.Errorf("device: group %s: rank %d: %s with peer %d (%d ranks)", g.name, c.rank, cl.op, cl.peer, g.n)
	}
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return g.err
	}
	// The sender and the receiver each count their calls for the pair;
	// the two counts advance together when the program is correct.
	slot := 0
	if cl.op == ir.OpRecv {
		slot = 1
	}
	k := [3]int{from, to, slot}
	key := roundKey{p2p: true, from: from, to: to, seq: g.p2pSeq[k]}
	g.p2pSeq[k]++
	return g.join(key, cl, slot, 2, g.p2pRound)
}

// join adds cl to the round of key at position slot (g.mu held; released
// here) and waits for the round to complete, the group to fail or the
// timeout.
func (g *Group) join(key roundKey, cl *call, slot, want int, finish func(*round) error) error {
	r := g.rounds[key]
	if r == nil {
		r = &round{calls: make([]*call, want), done: make(chan struct{})}
		g.rounds[key] = r
	}
	if r.calls[slot] != nil {
		g.mu.Unlock()
		return fmt.Errorf("device: group %s: rank %d: %s joined a round twice", g.name, cl.rank, cl.op)
	}
	r.calls[slot] = cl
	r.count++
	if r.count == want {
		delete(g.rounds, key)
		r.err = finish(r)
		if r.err != nil {
			g.failLocked(r.err)
		}
		close(r.done)
		g.mu.Unlock()
		return r.errFor(g)
	}
	g.mu.Unlock()
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case <-r.done:
		return r.errFor(g)
	case <-g.failed:
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.err
	case <-t.C:
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-r.done: // completed as the timer fired
			return r.errFor(g)
		default:
		}
		var missing []int
		for i, c := range r.calls {
			if c == nil {
				missing = append(missing, i)
			}
		}
		what := "ranks"
		if key.p2p {
			what = "slots (0: sender, 1: receiver)"
		}
		g.failLocked(fmt.Errorf("rank %d: %s #%d timed out after %s waiting for %s %v", cl.rank, cl.op, key.seq, g.timeout, what, missing))
		return g.err
	}
}

func (r *round) errFor(g *Group) error {
	if r.err != nil {
		return g.errOr(r.err)
	}
	return nil
}

func (g *Group) errOr(err error) error {
	if g.err != nil {
		return g.err
	}
	return err
}

// reduceRound checks that the ranks' calls agree and computes them.
func (g *Group) reduceRound(r *round) error {
	c0 := r.calls[0]
	for _, c := range r.calls[1:] {
		if c.op != c0.op || c.dt != c0.dt || len(c.recv) != len(c0.recv) || (c.sizes == nil) != (c0.sizes == nil) ||
			c.sizes == nil && len(c.send) != len(c0.send) || !slices.Equal(c.sizes, c0.sizes) {
			return fmt.Errorf("collective mismatch: rank 0 calls %s, rank %d calls %s", c0.describe(), c.rank, c.describe())
		}
	}
	if c0.sizes != nil {
		if len(c0.sizes) != g.n {
			return fmt.Errorf("%s: %d sizes for %d ranks", c0.describe(), len(c0.sizes), g.n)
		}
		total := 0
		for i, c := range r.calls {
			if len(c.send) != c0.sizes[i] {
				return fmt.Errorf("collective mismatch: rank %d sends %d bytes, the sizes give it %d", i, len(c.send), c0.sizes[i])
			}
			total += c0.sizes[i]
		}
		if total != len(c0.recv) {
			return fmt.Errorf("%s: recv holds %d bytes, the sizes sum to %d", c0.describe(), len(c0.recv), total)
		}
		for _, c := range r.calls {
			off := 0
			for _, s := range r.calls {
				copy(c.recv[off:], s.send)
				off += len(s.send)
			}
		}
		return nil
	}
	if _, err := elemSize(c0.dt); err != nil {
		return fmt.Errorf("rank 0: %s: %w", c0.describe(), err)
	}
	switch c0.op {
	case ir.OpAllReduce:
		if len(c0.recv) != len(c0.send) {
			return fmt.Errorf("%s: recv and send sizes differ", c0.describe())
		}
		sum, err := g.sum(r, c0.dt, 0, len(c0.send))
		if err != nil {
			return err
		}
		for _, c := range r.calls {
			copy(c.recv, sum)
		}
	case ir.OpAllGather:
		if len(c0.recv) != g.n*len(c0.send) {
			return fmt.Errorf("%s: recv is not %d times send", c0.describe(), g.n)
		}
		for _, c := range r.calls {
			for i, s := range r.calls {
				copy(c.recv[i*len(s.send):], s.send)
			}
		}
	case ir.OpReduceScatter:
		if len(c0.send) != g.n*len(c0.recv) {
			return fmt.Errorf("%s: send is not %d times recv", c0.describe(), g.n)
		}
		for i, c := range r.calls {
			sum, err := g.sum(r, c0.dt, i*len(c.recv), (i+1)*len(c.recv))
			if err != nil {
				return err
			}
			copy(c.recv, sum)
		}
	default:
		return fmt.Errorf("%s is not a group collective", c0.op)
	}
	return nil
}

// p2pRound pairs a send with its recv.
func (g *Group) p2pRound(r *round) error {
	s, v := r.calls[0], r.calls[1]
	if s.dt != v.dt || len(s.send) != len(v.recv) {
		return fmt.Errorf("send/recv mismatch: rank %d sends %s to rank %d, rank %d receives %s", s.rank, s.describe(), s.peer, v.rank, v.describe())
	}
	copy(v.recv, s.send)
	return nil
}

func (c *call) describe() string {
	n := len(c.send)
	if c.op == ir.OpRecv || c.op == ir.OpReduceScatter {
		n = len(c.recv)
	}
	count := ""
	if sz, err := elemSize(c.dt); err == nil {
		count = fmt.Sprintf("%d", n/sz)
	}
	return fmt.Sprintf("%s(count %s, %s)", c.op, count, c.dt)
}

func elemSize(dt ir.DType) (int, error) {
	switch dt {
	case ir.F32, ir.I32:
		return 4, nil
	case ir.F16, ir.BF16, ir.I16:
		return 2, nil
	case ir.I64:
		return 8, nil
	case ir.I8:
		return 1, nil
	}
	return 0, fmt.Errorf("dtype %s is not a collective element type", dt)
}

// sum adds bytes [lo, hi) of the ranks' send buffers, rank 0 first, in
// f32 (f16 values are widened, summed in f32 in rank order and rounded
// once).
func (g *Group) sum(r *round, dt ir.DType, lo, hi int) ([]byte, error) {
	out := make([]byte, hi-lo)
	switch dt {
	case ir.F32:
		for i := lo; i < hi; i += 4 {
			var s float32
			for _, c := range r.calls {
				s += math.Float32frombits(binary.LittleEndian.Uint32(c.send[i:]))
			}
			binary.LittleEndian.PutUint32(out[i-lo:], math.Float32bits(s))
		}
	case ir.F16:
		for i := lo; i < hi; i += 2 {
			var s float32
			for _, c := range r.calls {
				s += gguf.F16ToF32(binary.LittleEndian.Uint16(c.send[i:]))
			}
			binary.LittleEndian.PutUint16(out[i-lo:], gguf.F32ToF16(s))
		}
	default:
		return nil, errors.New("sums are taken over f32 or f16 only, not " + dt.String())
	}
	return out, nil
}
