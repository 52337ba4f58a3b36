package device

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/gocount"
	"github.com/irtool/irtool/ir"
)

var _ eval.Communicator = (*Comm)(nil)

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func fromF32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// onRanks runs f on every rank of a new group, one goroutine per rank,
// and returns the ranks' errors. It checks that the group starts no
// goroutine beyond the ranks' own and that all of them have ended.
func onRanks(t *testing.T, n int, timeout time.Duration, f func(c *Comm) error) []error {
	t.Helper()
	g, err := NewGroup("tp", n, timeout)
	if err != nil {
		t.Fatal(err)
	}
	before := gocount.Created(t)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		c, err := g.Comm(r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(c)
			if errs[r] != nil {
				g.Fail(r, errs[r])
			}
		}()
	}
	wg.Wait()
	if created := gocount.Created(t) - before; created != uint64(n) {
		t.Errorf("%d goroutines created for %d ranks", created, n)
	}
	return errs
}

func TestGroupCollectives(t *testing.T) {
	const n = 4
	// Values whose f32 sum depends on the order: rank order is fixed.
	vals := []float32{1e8, 1, -1e8, 1}
	var mu sync.Mutex
	got := map[int][][]float32{}
	errs := onRanks(t, n, time.Second, func(c *Comm) error {
		r := c.Rank()
		sum := make([]byte, 8)
		if err := c.AllReduce(f32s(vals[r], float32(r)), sum, ir.F32); err != nil {
			return err
		}
		gath := make([]byte, 4*n)
		if err := c.AllGather(f32s(float32(10*r)), gath, ir.F32); err != nil {
			return err
		}
		gv := make([]byte, 4*(1+2+3+4))
		mine := make([]float32, r+1)
		for i := range mine {
			mine[i] = float32(r)
		}
		if err := c.AllGatherV(f32s(mine...), gv, []int{4, 8, 12, 16}, ir.F32); err != nil {
			return err
		}
		if got := fromF32s(gv); got[0] != 0 || got[1] != 1 || got[3] != 2 || got[6] != 3 || got[9] != 3 {
			return fmt.Errorf("rank %d: all_gather_v %v", r, got)
		}
		scat := make([]byte, 4)
		if err := c.ReduceScatter(f32s(0, 1, 2, 3), scat, ir.F32); err != nil {
			return err
		}
		p2p := make([]byte, 4)
		switch r {
		case 0:
			if err := c.Send(f32s(42), ir.F32, 3); err != nil {
				return err
			}
		case 3:
			if err := c.Recv(p2p, ir.F32, 0); err != nil {
				return err
			}
		}
		mu.Lock()
		got[r] = [][]float32{fromF32s(sum), fromF32s(gath), fromF32s(scat), fromF32s(p2p)}
		mu.Unlock()
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	want0 := ((vals[0] + vals[1]) + vals[2]) + vals[3]
	for r := range n {
		g := got[r]
		if g[0][0] != want0 || g[0][1] != 6 {
			t.Errorf("rank %d: all_reduce %v, want [%v 6]", r, g[0], want0)
		}
		if g[1][0] != 0 || g[1][1] != 10 || g[1][2] != 20 || g[1][3] != 30 {
			t.Errorf("rank %d: all_gather %v", r, g[1])
		}
		if g[2][0] != float32(4*r) {
			t.Errorf("rank %d: reduce_scatter %v, want %d", r, g[2], 4*r)
		}
	}
	if got[3][3][0] != 42 {
		t.Errorf("recv %v, want 42", got[3][3])
	}
}

func TestGroupMismatchFailsEveryRank(t *testing.T) {
	cases := []struct {
		name string
		f    func(c *Comm) error
		want string
	}{
		{"count", func(c *Comm) error {
			n := 2 + c.Rank()%2
			return c.AllReduce(make([]byte, 4*n), make([]byte, 4*n), ir.F32)
		}, "collective mismatch: rank 0 calls all_reduce(count 2, f32), rank 1 calls all_reduce(count 3, f32)"},
		{"op", func(c *Comm) error {
			if c.Rank() == 2 {
				return c.AllGather(make([]byte, 8), make([]byte, 24), ir.F32)
			}
			return c.AllReduce(make([]byte, 8), make([]byte, 8), ir.F32)
		}, "rank 2 calls all_gather(count 2, f32)"},
		{"dtype", func(c *Comm) error {
			dt := ir.F32
			if c.Rank() == 1 {
				dt = ir.I32
			}
			return c.AllReduce(make([]byte, 8), make([]byte, 8), dt)
		}, "rank 1 calls all_reduce(count 2, i32)"},
		{"send size", func(c *Comm) error {
			switch c.Rank() {
			case 0:
				return c.Send(make([]byte, 8), ir.F32, 1)
			case 1:
				return c.Recv(make([]byte, 4), ir.F32, 0)
			}
			return c.AllReduce(make([]byte, 4), make([]byte, 4), ir.F32) // waits for the failure
		}, "send/recv mismatch: rank 0 sends send(count 2, f32) to rank 1, rank 1 receives recv(count 1, f32)"},
		{"failing rank", func(c *Comm) error {
			if c.Rank() == 1 {
				return errors.New("kernel exploded")
			}
			return c.AllReduce(make([]byte, 4), make([]byte, 4), ir.F32)
		}, "kernel exploded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			errs := onRanks(t, 3, 10*time.Second, tc.f)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("rank %d: %v\nwant an error containing %q", r, err, tc.want)
				}
				if tc.name == "failing rank" && r != 1 && !strings.Contains(err.Error(), "rank 1 failed") {
					t.Errorf("rank %d: %v does not name the failed rank", r, err)
				}
			}
		})
	}
}

func TestGroupTimeoutFailsEveryRank(t *testing.T) {
	start := time.Now()
	errs := onRanks(t, 3, 100*time.Millisecond, func(c *Comm) error {
		if c.Rank() == 2 {
			return nil // never arrives
		}
		return c.AllReduce(make([]byte, 4), make([]byte, 4), ir.F32)
	})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	for r := range 2 {
		if errs[r] == nil || !strings.Contains(errs[r].Error(), "timed out after 100ms waiting for ranks [2]") {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
}

func TestGroupErrors(t *testing.T) {
	if _, err := NewGroup("tp", 0, 0); err == nil {
		t.Error("a group of 0 ranks")
	}
	g, _ := NewGroup("tp", 2, 0)
	if _, err := g.Comm(2); err == nil {
		t.Error("rank 2 of 2")
	}
	c, _ := g.Comm(0)
	if err := c.Send(nil, ir.F32, 0); err == nil || !strings.Contains(err.Error(), "peer 0") {
		t.Errorf("send to self: %v", err)
	}
	g.Fail(1, errors.New("gone"))
	if err := c.AllReduce(make([]byte, 4), make([]byte, 4), ir.F32); err == nil || !strings.Contains(err.Error(), "rank 1 failed: gone") {
		t.Errorf("after failure: %v", err)
	}
}
