//go:build cann

package acl

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/target"
)

// TestAclnnWorkspacesWithinPlan: reference models prefill and decode on
// the emulator (eagerly and with graphs), and every workspace an aclnn
// operator asks for (its GetWorkspaceSize answer, read from the
// emulator's trace) is at most target.AclnnWorkspace's, the size the plan
// reserves, so no call takes the stream reserve and no device memory is
// allocated after the runner's load. With the emulator made to ask for
// more than the plan holds, the calls take the reserve instead.
func TestAclnnWorkspacesWithinPlan(t *testing.T) {
	run := func(t *testing.T, file string, graphs bool, extra int64) (Counters, program.Stats) {
		f, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64, KVType: models.KVF16})
		d := newDevice(t, Options{PoolBytes: 128 << 20, WorkspaceReserve: 16 << 20})
		if extra > 0 {
			fake.Set("workspace:aclnnRmsNorm", extra)
		}
		pol := device.DefaultGraphPolicy()
		pol.Graphs = graphs
		_, opts := npuPinned(t)
		s, err := program.NewRunner(m, f, d, program.Options{Policy: pol, Compile: opts, UBatch: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Generate([]int32{1, 403, 407, 261, 378, 1, 403, 407, 261, 378, 9}, 4, false, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range trace(t) {
			op, ok := strings.CutSuffix(c.Fn, "GetWorkspaceSize")
			if !ok || c.RC != 0 {
				continue
			}
			if ws := c.Int("ws"); ws > target.AclnnWorkspace(op, nil) && extra == 0 {
				t.Errorf("%s asks for %d B, the plan reserves %d B", c.Fn, ws, target.AclnnWorkspace(op, nil))
			}
		}
		return d.Counters(), s.Stats()
	}
	for _, file := range []string{"stories260K.gguf", "synth-llama-Q8_0.gguf", "synth-gemma3-Q4_0.gguf", "synth-qwen3moe-Q4_0.gguf"} {
		for _, graphs := range []bool{false, true} {
			t.Run(strings.TrimSuffix(file, ".gguf")+map[bool]string{false: "/eager", true: "/graph"}[graphs], func(t *testing.T) {
				c, st := run(t, file, graphs, 0)
				if c.ReserveUses != 0 || c.AclnnCalls == 0 {
					t.Errorf("%d of %d aclnn calls took the stream reserve", c.ReserveUses, c.AclnnCalls)
				}
				if st.Prefill.Steps != 2 || st.AllocsAfterLoad != 0 {
					t.Errorf("%d prefill steps (want 2 of at most 8 tokens), %d allocations after load", st.Prefill.Steps, st.AllocsAfterLoad)
				}
			})
		}
	}
	t.Run("beyond the plan", func(t *testing.T) {
		c, _ := run(t, "stories260K.gguf", false, 1<<20)
		if c.ReserveUses == 0 {
			t.Error("aclnnRmsNorm asking for 1 MiB: no call took the stream reserve")
		}
	})
}
