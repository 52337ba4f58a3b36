package device_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/irtool/irtool/runtime/device"
)

// TestGrid: rank t×m+s holds tensor-parallel rank t of stage s's group and
// stage s of rank t's pipeline group; a rank's failure fails every group.
func TestGrid(t *testing.T) {
	const n, m = 2, 3
	g, err := device.NewGrid("tp", "pp", n, m, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n * m {
		cs, err := g.Comms(i)
		if err != nil {
			t.Fatal(err)
		}
		ct, cp := cs[0].(*device.Comm), cs[1].(*device.Comm)
		if ct.Group() != "tp" || ct.Rank() != i/m || ct.Size() != n || cp.Group() != "pp" || cp.Rank() != i%m || cp.Size() != m {
			t.Errorf("rank %d: tp %s %d/%d, pp %s %d/%d", i, ct.Group(), ct.Rank(), ct.Size(), cp.Group(), cp.Rank(), cp.Size())
		}
	}
	boom := errors.New("boom")
	g.Fail(4, boom) // rank 1's stage 1
	for i := range n * m {
		cs, _ := g.Comms(i)
		for _, c := range cs {
			err := c.(*device.Comm).AllReduce(make([]byte, 4), make([]byte, 4), 0)
			if err == nil || !strings.Contains(err.Error(), "boom") {
				t.Errorf("rank %d %s after the failure: %v", i, c.(*device.Comm).Group(), err)
			}
		}
	}
}

func TestGroupComms(t *testing.T) {
	g, err := device.NewGroup("tp", 3, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := g.Comms()
	if err != nil || len(cs) != 3 {
		t.Fatalf("Comms: %v, %d", err, len(cs))
	}
	for i, c := range cs {
		if len(c) != 1 || c[0].(*device.Comm).Rank() != i {
			t.Errorf("rank %d: %v", i, c)
		}
	}
}
