package device

import (
	"fmt"
	"time"

	"github.com/irtool/irtool/eval"
)

// Grid is the communicators of n tensor-parallel ranks each split into m
// pipeline stages (rank i = t×m+s is tensor-parallel rank t's stage s): a
// tensor-parallel group per stage (stage s of every rank) and a pipeline
// group per tensor-parallel rank (its own stages), one goroutine per rank
// in one process (irtool run --tp N --pp M).
type Grid struct {
	tp, pp []*Group
	m      int
}

// NewGrid makes the groups of an n × m grid, named tpName and ppName.
func NewGrid(tpName, ppName string, n, m int, timeout time.Duration) (*Grid, error) {
	g := &Grid{tp: make([]*Group, m), pp: make([]*Group, n), m: m}
	var err error
	for s := range m {
		if g.tp[s], err = NewGroup(tpName, n, timeout); err != nil {
			return nil, err
		}
	}
	for t := range n {
		if g.pp[t], err = NewGroup(ppName, m, timeout); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Comms returns rank i's communicators: its tensor-parallel group's, then
// its pipeline group's.
func (g *Grid) Comms(i int) ([]eval.Communicator, error) {
	t, s := i/g.m, i%g.m
	ct, err := g.tp[s].Comm(t)
	if err != nil {
		return nil, err
	}
	cp, err := g.pp[t].Comm(s)
	if err != nil {
		return nil, err
	}
	return []eval.Communicator{ct, cp}, nil
}

// Fail fails every group for rank i's error, so that no rank waits: its
// own groups with err, the others naming the rank that failed.
func (g *Grid) Fail(i int, err error) {
	t, s := i/g.m, i%g.m
	for k, gr := range g.tp {
		if k == s {
			gr.Fail(t, err)
		} else {
			gr.Fail(t, fmt.Errorf("rank %d of stage %d failed: %w", t, s, err))
		}
	}
	for k, gr := range g.pp {
		if k == t {
			gr.Fail(s, err)
		} else {
			gr.Fail(s, fmt.Errorf("stage %d of rank %d failed: %w", s, t, err))
		}
	}
}

// Comms returns every rank's communicator of the group, one slice each
// (the form a session's collective kernels take).
func (g *Group) Comms() ([][]eval.Communicator, error) {
	out := make([][]eval.Communicator, g.n)
	for i := range out {
		c, err := g.Comm(i)
		if err != nil {
			return nil, err
		}
		out[i] = []eval.Communicator{c}
	}
	return out, nil
}
