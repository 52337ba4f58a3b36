package passes_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/device"
)

func TestTP2Debug(t *testing.T) {
	toks := []int32{1, 403, 407, 261, 378}
	f := openModel(t, "../testdata/stories260K.gguf")
	b := ir.Bindings{"n_tokens": 5, "n_kv": 32, "n_outputs": 1}
	in := models.Inputs(toks, 0, b)
	m, _ := models.Build(f, models.Options{})
	g1, err := m.Graph.Specialize(b)
	if err != nil {
		t.Fatal(err)
	}
	e1, err := eval.NewExecutor(g1, f, eval.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bindStates(e1)
	for k, v := range in {
		if e1.HasInput(k) {
			e1.SetInput(k, v)
		}
	}
	if err := e1.Run(); err != nil {
		t.Fatal(err)
	}
	tp, _ := passes.ShardTPFile(f, models.Options{}, passes.TPOptions{Ranks: 2, Exact: true})
	grp, _ := device.NewGroup("tp", 2, time.Second)
	ex := make([]*eval.Executor, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		c, _ := grp.Comm(r)
		g, err := tp.Ranks[r].Model.Graph.Specialize(b)
		if err != nil {
			t.Fatal(err)
		}
		e, err := eval.NewExecutor(g, tp.Ranks[r].Weights(f), eval.ExecOptions{KernelSet: eval.NewCollectiveKernels(nil, c)})
		if err != nil {
			t.Fatal(err)
		}
		bindStates(e)
		for k, v := range in {
			if e.HasInput(k) {
				e.SetInput(k, v)
			}
		}
		ex[r] = e
		wg.Add(1)
		go func() { defer wg.Done(); if err := e.Run(); err != nil { t.Error(err); grp.Fail(r, err) } }()
	}
	wg.Wait()
	g0 := ex[0].Graph()
	bytesOf := func(e *eval.Executor, n *ir.Node) []byte {
		x, err := e.Tensor(n)
		if err != nil {
			return nil
		}
		c, err := x.Contiguous()
		if err != nil {
			return nil
		}
		return c.Data[:c.NBytes()]
	}
	for _, n := range g0.Nodes {
		if n.IsLeaf() {
			continue
		}
		o := g1.Find(n.Name)
		if o == nil {
			continue
		}
		a, bb := bytesOf(ex[0], n), bytesOf(e1, o)
		same := "?"
		if n.Type.Equal(o.Type) {
			same = "full"
			if !bytes.Equal(a, bb) {
				t.Logf("DIFF %s %s %q %s", n, n.Op, n.Name, n.Type)
			}
		} else if len(a) <= len(bb) && bytes.Equal(a, bb[:len(a)]) {
			same = "prefix"
		} else {
			same = "notprefix"
		}
		_ = same
		if n.Layer == 0 && (n.Op == ir.OpMulMat || n.Op == ir.OpAllGather || n.Op == ir.OpMul || n.Op == ir.OpSilu) {
			t.Logf("%s %s %q %s vs %s: %s", n, n.Op, n.Name, n.Type, o.Type, cmpSlice(a, bb, n.Type, o.Type))
		}
	}
}

func bindStates(e *eval.Executor) {
	for _, n := range e.Graph().Leaves(ir.OpState) {
		sz, _ := n.Type.Bytes()
		e.BindState(n.Name, make([]byte, sz))
	}
}

func cmpSlice(a, b []byte, ta, tb ir.Type) string {
	r0, _ := ta.Shape[0].Eval(nil)
	r1, _ := tb.Shape[0].Eval(nil)
	if r0 == 0 || r1 == 0 { return "?" }
	cols := int64(len(a)) / 4 / r0
	diff := 0
	for c := int64(0); c < cols; c++ {
		for i := int64(0); i < r0 && i < r1; i++ {
			if !bytes.Equal(a[4*(c*r0+i):4*(c*r0+i)+4], b[4*(c*r1+i):4*(c*r1+i)+4]) { diff++ }
		}
	}
	return fmt.Sprintf("%d elements differ of %d", diff, cols*min(r0,r1))
}
