package parallel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
)

func embedded(t testing.TB) (*gguf.File, *models.Model) {
	t.Helper()
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

func TestHCCLBuffMB(t *testing.T) {
	for _, c := range []struct {
		flag int64
		env  string
		want int64
		err  string
	}{
		{0, "", parallel.DefaultHCCLBuffMB, ""},
		{64, "512", 64, ""},
		{0, " 512 ", 512, ""},
		{0, "lots", 0, `environment HCCL_BUFFSIZE="lots"`},
		{0, "0", 0, "want an integer number of MB in 1..1048576"},
	} {
		t.Setenv("HCCL_BUFFSIZE", c.env)
		got, err := parallel.HCCLBuffMB(c.flag)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("flag %d env %q: error %v, want %q", c.flag, c.env, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("flag %d env %q: %d, %v; want %d", c.flag, c.env, got, err, c.want)
		}
	}
}

// Split lays out tensor-parallel rank t's stage s as rank t*stages+s,
// each joining one communicator per kind of split.
func TestSplit(t *testing.T) {
	f, m := embedded(t)
	tp, err := models.ShardTPFile(f, m.Options, models.TPOptions{Ranks: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tp     *models.TP
		stages int
		want   string
	}{
		{nil, 1, "0/0 comms 0"},
		{tp, 1, "0/0 comms 1, 1/0 comms 1"},
		{nil, 2, "0/0 comms 1, 0/1 comms 1"},
		{tp, 2, "0/0 comms 2, 0/1 comms 2, 1/0 comms 2, 1/1 comms 2"},
	} {
		rms, err := parallel.Split(m, c.tp, c.stages)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rm := range rms {
			got = append(got, fmt.Sprintf("%d/%d comms %d", rm.TPRank, rm.Stage, rm.Comms))
		}
		if s := strings.Join(got, ", "); s != c.want {
			t.Errorf("tp %v stages %d: %s, want %s", c.tp != nil, c.stages, s, c.want)
		}
	}
	if _, err := parallel.Split(m, nil, 9); err == nil {
		t.Error("9 stages of 5 layers accepted")
	}
}

// Compile one rank of a two-way tensor-parallel split under the ranks'
// rules and look at its collectives' planned buffers, its device memory
// and the link model's decode step.
func Example() {
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		panic(err)
	}
	tp, err := models.ShardTPFile(f, m.Options, models.TPOptions{Ranks: 2})
	if err != nil {
		panic(err)
	}
	rms, err := parallel.Split(m, tp, 1)
	if err != nil {
		panic(err)
	}
	rules, err := parallel.Rules()
	if err != nil {
		panic(err)
	}
	prof, err := parallel.Profile("ascend910b")
	if err != nil {
		panic(err)
	}
	rm := rms[1]
	r, err := compiler.Compile(context.Background(), rm.Model.Graph, compiler.Options{Strategy: "greedy-size", Rules: rules})
	if err != nil {
		panic(err)
	}
	bufs, err := parallel.CollectiveBuffersOf(r)
	if err != nil {
		panic(err)
	}
	mem := parallel.MemoryOf(r, prof, rm.Comms, parallel.DefaultHCCLBuffMB)
	st, err := parallel.StepOf(r, prof)
	if err != nil {
		panic(err)
	}
	fmt.Printf("rank %d: %d collectives, %d planned buffers\n", rm.TPRank, len(ir.Collectives(r.Graph())), bufs.Count)
	fmt.Printf("HCCL buffers %d MB, fits %v\n", mem.HCCLBufferBytes>>20, mem.Fits)
	for _, c := range st.Collectives {
		fmt.Printf("link model: %s x%d per step\n", c.Op, c.Count)
	}
	// Output:
	// rank 1: 11 collectives, 22 planned buffers
	// HCCL buffers 400 MB, fits true
	// link model: all_gather x1 per step
	// link model: all_reduce x10 per step
}
