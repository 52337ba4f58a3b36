package launch_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/launch"
	"github.com/irtool/irtool/runtime/session"
)

// embedded opens the module's embedded model and builds it.
func embedded(t *testing.T) (*gguf.File, *models.Model) {
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

// options are the default registries' constructors, the default graph
// policy and backend.
func options(backend string) launch.Options {
	reg := irtool.DefaultContext()
	return launch.Options{Backend: backend, Target: compiler.DefaultTarget, Policy: func() (device.GraphPolicy, error) {
		return device.DefaultGraphPolicy(), nil
	}, KernelSet: reg.Kernels, NewSimDevice: reg.NewSimDevice, NewRunner: reg.NewRunner, CompileOptions: reg.CompileOptions, Threads: 1}
}

// generate runs 4 greedy steps of a prompt on s.
func generate(t *testing.T, s session.Stepper) []int32 {
	t.Helper()
	res, err := session.Generate(s, []int32{1, 403, 407}, 4, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens
}

// The sim backend, the tensor-parallel ranks (exact: one device's logits
// bit for bit) and the pipeline stages, on the CPU and the simulated
// device, generate the same tokens as a CPU session of the whole model,
// and report their steps.
func TestBackendsGenerateAlike(t *testing.T) {
	f, m := embedded(t)
	cpu, err := session.NewSession(m, f, session.SessionOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	want := generate(t, cpu)

	sim, err := launch.NewSim(m, f, options("sim"))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if got := generate(t, sim); !slices.Equal(got, want) {
		t.Errorf("sim: tokens %v, want %v", got, want)
	}
	st := sim.Stats()
	if st.Decode.Steps != 3 || st.Mode != "graph" || st.Target != compiler.DefaultTarget {
		t.Errorf("sim stats: %+v", st)
	}
	var buf bytes.Buffer
	sim.WriteSummary(&buf)
	if !strings.Contains(buf.String(), "irtool run: sim decode (graph): 3 steps") {
		t.Errorf("sim summary:\n%s", buf.String())
	}

	for _, backend := range []string{"cpu", "sim"} {
		tp, err := models.ShardTPFile(f, models.Options{NCtx: 64}, models.TPOptions{Ranks: 2, Exact: true})
		if err != nil {
			t.Fatal(err)
		}
		r, err := launch.NewTP(tp, f, options(backend))
		if err != nil {
			t.Fatal(err)
		}
		if got := generate(t, r); !slices.Equal(got, want) {
			t.Errorf("%s --tp 2: tokens %v, want %v", backend, got, want)
		}
		st := r.Stats()
		if st.TP == nil || st.TP.Ranks != 2 || (backend == "sim") != (len(st.Ranks) == 2) {
			t.Errorf("%s --tp 2: stats %+v", backend, st)
		}
		if got, want := r.OpsText(), fmt.Sprintf("2 ranks of %d ops", tp.Ranks[0].Model.Graph.NumOps()); got != want {
			t.Errorf("%s --tp 2: OpsText %q, want %q", backend, got, want)
		}
		r.Close()

		stages, err := parallel.Stages(m, 2)
		if err != nil {
			t.Fatal(err)
		}
		p, err := launch.NewPP(stages, f, options(backend))
		if err != nil {
			t.Fatal(err)
		}
		if got := generate(t, p); !slices.Equal(got, want) {
			t.Errorf("%s --pp 2: tokens %v, want %v", backend, got, want)
		}
		if got, want := p.OpsText(), fmt.Sprintf("2 stages of %d+%d ops", stages[0].Graph.NumOps(), stages[1].Graph.NumOps()); got != want {
			t.Errorf("%s --pp 2: OpsText %q, want %q", backend, got, want)
		}
		buf.Reset()
		p.WriteSummary(&buf)
		if !strings.Contains(buf.String(), "irtool run: pipeline of 2 stages: stage 0: layers 0-2") {
			t.Errorf("%s --pp 2 summary:\n%s", backend, buf.String())
		}
		p.Close()
	}
}

// A graph policy's error stops the sim backend before any device exists.
func TestPolicyError(t *testing.T) {
	f, m := embedded(t)
	o := options("sim")
	o.Policy = func() (device.GraphPolicy, error) { return device.GraphPolicy{}, errBad }
	if _, err := launch.NewSim(m, f, o); err != errBad {
		t.Errorf("NewSim: %v, want %v", err, errBad)
	}
}

var errBad = errors.New("bad policy")

// WritePhases names what the weights were converted for in each
// QuantMatmul mode.
func TestWritePhasesConversion(t *testing.T) {
	for _, c := range []struct {
		mode, want string
	}{{"", "for aclnnWeightQuantBatchMatmulV2"}, {"wqbmm", "for aclnnWeightQuantBatchMatmulV2"}, {"ggml", "to the integer and f32 layouts of the ggml mode's matmuls"}} {
		var buf bytes.Buffer
		launch.WritePhases(&buf, "cann", launch.Stats{WeightConvertMS: 1.5, QuantMatmul: c.mode})
		got := buf.String()
		if !strings.Contains(got, "irtool run: cann load: quantised weights converted "+c.want) || !strings.HasSuffix(got, " in 1.5 ms (host)\n") ||
			c.mode == "ggml" && strings.Contains(got, "WeightQuant") {
			t.Errorf("mode %q: %q, want %q", c.mode, got, c.want)
		}
	}
}
