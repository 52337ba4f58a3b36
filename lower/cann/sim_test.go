package cann_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/target"
)

// TestSimDeviceGivesReferenceLogits runs every reference model's lowered
// programs for every target on the runtime's simulated Ascend device (ACL
// graph capture and replay where the target allows it) and checks every
// step's logits bit for bit against the reference executor.
func TestSimDeviceGivesReferenceLogits(t *testing.T) {
	for _, path := range testref.Models(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := models.Build(f, models.Options{NCtx: 64})
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range target.Names() {
			dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			pol := device.DefaultGraphPolicy()
			pol.Graphs = true
			ps, err := program.NewRunner(m, f, dev, program.Options{Compile: compiler.Options{Target: tn}, Policy: pol})
			if err != nil {
				t.Fatalf("%s %s: %v", name, tn, err)
			}
			ref, err := session.NewSession(m, f, session.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for step, toks := range [][]int32{{1, 403, 407, 261, 378}, {42}, {7}} {
				got, err := ps.Step(toks)
				if err != nil {
					t.Fatalf("%s %s step %d: %v", name, tn, step, err)
				}
				want, err := ref.Step(toks)
				if err != nil {
					t.Fatal(err)
				}
				g, w := got.Logits[len(got.Logits)-1], want.Logits[len(want.Logits)-1]
				for i := range w {
					if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
						t.Fatalf("%s %s step %d: logit %d = %g, reference %g", name, tn, step, i, g[i], w[i])
					}
				}
			}
			if err := ps.Close(); err != nil {
				t.Errorf("%s %s: close: %v", name, tn, err)
			}
		}
	}
}
