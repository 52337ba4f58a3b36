package eval_test

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
)

// A graph whose buffers need more memory than the machine has (here one
// activation of 2^40 f32 values, as a hostile IR file can declare) is
// refused with an error naming the buffer, before anything is allocated:
// a failed huge allocation would end the process instead.
func TestExecutorRefusesMoreThanTheMachine(t *testing.T) {
	g := ir.New("huge")
	x, err := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 1<<20, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	x.Name = "x"
	y, err := g.Add(ir.OpSilu, []*ir.Node{x}, nil)
	if err != nil {
		t.Fatal(err)
	}
	y.Name = "y"
	g.Outputs = []*ir.Node{y}
	for _, opts := range []eval.ExecOptions{{}, {Offsets: map[int]int64{y.ID: 0}, ArenaSize: 4 << 40}} {
		_, err := eval.NewExecutor(g, nil, opts)
		if err == nil || !strings.Contains(err.Error(), "more than this machine's") || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("arena %d: err %v, want a refusal naming the largest buffer", opts.ArenaSize, err)
		}
	}
}
