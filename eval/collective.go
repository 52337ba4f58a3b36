package eval

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Communicator is one rank's endpoint of a group of ranks, shaped like
// HCCL's calls (HcclAllReduce, HcclAllGather, HcclReduceScatter,
// HcclSend, HcclRecv): contiguous byte buffers, an element type, and the
// promise that every rank of the group makes the same calls in the same
// order. runtime/device implements it for ranks that run in one process
// (device.NewGroup).
type Communicator interface {
	// Group names the communicator; a collective node's group attribute
	// must equal it.
	Group() string
	Rank() int
	Size() int
	// AllReduce writes the sum over the ranks of send into recv (equal
	// lengths).
	AllReduce(send, recv []byte, dt ir.DType) error
	// AllGather writes every rank's send into recv, rank 0 first
	// (len(recv) == Size()*len(send)).
	AllGather(send, recv []byte, dt ir.DType) error
	// AllGatherV is AllGather with ranks of different sizes: rank r
	// sends sizes[r] bytes, recv holds their sum.
	AllGatherV(send, recv []byte, sizes []int, dt ir.DType) error
	// ReduceScatter writes slice Rank() of the sum of send into recv
	// (len(send) == Size()*len(recv)).
	ReduceScatter(send, recv []byte, dt ir.DType) error
	// Send sends buf to rank peer; Recv receives buf from rank peer.
	Send(buf []byte, dt ir.DType, peer int) error
	Recv(buf []byte, dt ir.DType, peer int) error
}

// The kernels of the collective ops without a communicator: over one rank
// every collective is a copy; over more they need a Communicator
// (NewCollectiveKernels) and fail, naming the op and the rank count.
func init() {
	for _, op := range ir.CollectiveOps() {
		mustKernel(op, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
			if r := n.Attrs.Ranks(); r != 1 || n.Op == ir.OpSend || n.Op == ir.OpRecv {
				return fmt.Errorf("%s over %d ranks of group %s needs a communicator (the ranks' graphs run together, eval.NewCollectiveKernels)", n.Op, r, n.Attrs.Group())
			}
			return kernels.Cpy(dst, a[0])
		}, nil)
	}
}

// NewCollectiveKernels returns a kernel set layered over parent (nil:
// DefaultKernels) whose collective kernels communicate through the
// communicator of each node's group among comms (a rank of a tensor- and
// pipeline-parallel model is in two groups): the set a rank's executor,
// device and program session run with.
func NewCollectiveKernels(parent *KernelSet, comms ...Communicator) *KernelSet {
	if parent == nil {
		parent = DefaultKernels()
	}
	s := newKernelSet(parent)
	k := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		g := n.Attrs.Group()
		for _, c := range comms {
			if c.Group() == g {
				return runCollective(c, n, dst, a)
			}
		}
		groups := make([]string, len(comms))
		for i, c := range comms {
			groups[i] = c.Group()
		}
		return fmt.Errorf("%s of group %s: the rank's communicators are of groups %v", n.Op, g, groups)
	}
	for _, op := range ir.CollectiveOps() {
		s.r.Set(op, KernelDef{Run: k})
	}
	return s
}

// contiguousBytes returns t's bytes densely packed (t's own when it is
// contiguous).
func contiguousBytes(t kernels.Tensor) ([]byte, error) {
	if t.IsContiguous() {
		return t.Data[:t.NBytes()], nil
	}
	c, err := t.Contiguous()
	if err != nil {
		return nil, err
	}
	return c.Data[:c.NBytes()], nil
}

// runCollective is the kernel of every collective op over c.
func runCollective(c Communicator, n *ir.Node, dst kernels.Tensor, a []kernels.Tensor) error {
	if g := n.Attrs.Group(); g != c.Group() {
		return fmt.Errorf("%s of group %s on a communicator of group %s", n.Op, g, c.Group())
	}
	if r := n.Attrs.Ranks(); r != int64(c.Size()) {
		return fmt.Errorf("%s over %d ranks on a communicator of %d", n.Op, r, c.Size())
	}
	if !dst.IsContiguous() {
		return fmt.Errorf("%s: the result is not contiguous", n.Op)
	}
	out := dst.Data[:dst.NBytes()]
	dt := n.Type.DType
	if n.Op == ir.OpRecv {
		return c.Recv(out, dt, int(n.Attrs.Peer()))
	}
	src, err := contiguousBytes(a[0])
	if err != nil {
		return fmt.Errorf("%s: %w", n.Op, err)
	}
	switch n.Op {
	case ir.OpAllReduce:
		return c.AllReduce(src, out, dt)
	case ir.OpSend:
		if err := c.Send(src, dt, int(n.Attrs.Peer())); err != nil {
			return err
		}
		copy(out, src)
		return nil
	case ir.OpAllGather:
		return allGather(c, n, dst, a[0], src)
	case ir.OpReduceScatter:
		return reduceScatter(c, n, dst, a[0], src)
	}
	return fmt.Errorf("%s is not a collective", n.Op)
}

// allGather gathers the ranks' x contiguously, rank after rank (what the
// communicator does), then places rank r's part at its slice of dim d.
func allGather(c Communicator, n *ir.Node, dst, x kernels.Tensor, src []byte) error {
	d := n.Attrs.GatherDim()
	outer := true // every dim above d has size 1: the gather is dst itself
	for i := d + 1; i < kernels.MaxDims; i++ {
		if x.Ne[i] != 1 {
			outer = false
		}
	}
	counts := n.Attrs.Counts()
	if counts == nil {
		counts = make([]int64, c.Size())
		for i := range counts {
			counts[i] = x.Ne[d]
		}
	}
	if len(counts) != c.Size() || counts[c.Rank()] != x.Ne[d] {
		return fmt.Errorf("all_gather: rank %d contributes %d along dim %d, counts %v", c.Rank(), x.Ne[d], d, counts)
	}
	// The bytes of one unit of dim d (the dims below it), rank r's size.
	unit := int64(len(src)) / x.Ne[d]
	sizes := make([]int, len(counts))
	for i, k := range counts {
		sizes[i] = int(k * unit)
	}
	equal := n.Attrs.Counts() == nil
	if outer {
		if equal {
			return c.AllGather(src, dst.Data[:dst.NBytes()], n.Type.DType)
		}
		return c.AllGatherV(src, dst.Data[:dst.NBytes()], sizes, n.Type.DType)
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	buf := make([]byte, total)
	var err error
	if equal {
		err = c.AllGather(src, buf, n.Type.DType)
	} else {
		err = c.AllGatherV(src, buf, sizes, n.Type.DType)
	}
	if err != nil {
		return err
	}
	off, at := 0, int64(0)
	for r, k := range counts {
		ne := x.Ne
		ne[d] = k
		nb, err := kernels.ContiguousStrides(gguf.GGMLType(n.Type.DType), ne)
		if err != nil {
			return err
		}
		part, err := dst.View(ne, dst.Nb, at*dst.Nb[d])
		if err != nil {
			return err
		}
		chunk := kernels.Tensor{Type: x.Type, Ne: ne, Nb: nb, Data: buf[off : off+sizes[r]]}
		if err := kernels.Cpy(part, chunk); err != nil {
			return err
		}
		off += sizes[r]
		at += k
	}
	return nil
}

// reduceScatter lays x out as the ranks' slices of dim d one after the
// other (what the communicator scatters), then reduces.
func reduceScatter(c Communicator, n *ir.Node, dst, x kernels.Tensor, src []byte) error {
	d := n.Attrs.GatherDim()
	send := src
	outer := true
	for i := d + 1; i < kernels.MaxDims; i++ {
		if x.Ne[i] != 1 {
			outer = false
		}
	}
	if !outer {
		send = make([]byte, len(src))
		nb, err := kernels.ContiguousStrides(gguf.GGMLType(n.Type.DType), dst.Ne)
		if err != nil {
			return err
		}
		size := len(src) / c.Size()
		for r := range c.Size() {
			part, err := x.View(dst.Ne, x.Nb, int64(r)*dst.Ne[d]*x.Nb[d])
			if err != nil {
				return err
			}
			chunk := kernels.Tensor{Type: x.Type, Ne: dst.Ne, Nb: nb, Data: send[r*size : (r+1)*size]}
			if err := kernels.Cpy(chunk, part); err != nil {
				return err
			}
		}
	}
	return c.ReduceScatter(send, dst.Data[:dst.NBytes()], n.Type.DType)
}
