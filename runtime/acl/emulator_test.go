//go:build cann

package acl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
)

// TestEmulatorOperators builds the emulator's self-test (fakeacl/selftest) against the
// emulator and runs it: operator results checked against the formulas of
// the aclnn reference pages through the C API alone (WQBMM with
// antiquantScale and antiquantOffset, RoPE modes, cubeMathType, SwiGlu,
// Softmax, Cat, Cast, InplaceIndexCopy), and the
// faults CANN reports as AI core exceptions (an index outside its dim, a
// replay reading freed memory), each naming the operator.
func TestEmulatorOperators(t *testing.T) {
	out, err := selftest(t)
	t.Logf("selftest:\n%s", out)
	if err != nil {
		t.Fatalf("selftest failed: %v", err)
	}
}

// selftest builds the emulator's self-test and returns what it printed.
func selftest(t *testing.T) (string, error) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "selftest")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	args := []string{"-O1", "-Wall", "-Werror", "-I", ".", "-o", bin, filepath.Join("fakeacl", "selftest", "selftest.c"),
		fakePath, "-Wl,-rpath," + filepath.Dir(fakePath), "-lm"}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	return string(out), err
}

// TestKVWriteCpyRecapturesEveryStep: with the cpy KV write the cache
// window's address moves with every token, so every decode step misses the
// graph cache and captures anew (the set_rows write hits after the first
// step of a bucket); on the emulator the re-captured graphs still compute
// the reference executor's logits.
func TestKVWriteCpyRecapturesEveryStep(t *testing.T) {
	for _, kv := range []models.KVWrite{models.KVCpy, models.KVSetRows} {
		t.Run(kv.String(), func(t *testing.T) {
			f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64, KVWrite: kv})
			d := newDevice(t, Options{PoolBytes: 128 << 20, WorkspaceReserve: 16 << 20})
			s, ref := pairedSessions(t, m, f, d, program.Options{Policy: device.DefaultGraphPolicy()})
			feed := []int32{1, 403, 407, 261, 378}
			for step := 0; step < 8; step++ {
				before, dev0 := s.Cache().Stats(), d.Stats()
				g, w := stepBoth(t, step, s, ref, feed)
				if e := testmodel.RelErr(g, w); e > 1e-3 {
					t.Errorf("step %d: max|Δ|/max|logit| = %.3g against the reference executor", step, e)
				}
				after, dev1 := s.Cache().Stats(), d.Stats()
				misses, hits := after.Misses-before.Misses, after.Hits-before.Hits
				captures, replays := dev1.Captures-dev0.Captures, dev1.GraphLaunches-dev0.GraphLaunches
				if step > 0 { // decode
					switch {
					case kv == models.KVCpy && (misses == 0 || captures == 0):
						t.Errorf("decode step %d: cpy KV write, yet %d misses and %d captures (%d hits)", step, misses, captures, hits)
					case kv == models.KVSetRows && step > 1 && (hits == 0 || captures != 0):
						t.Errorf("decode step %d: set_rows KV write, yet %d hits and %d captures", step, hits, captures)
					}
					if replays == 0 {
						t.Errorf("decode step %d: no graph replayed", step)
					}
				}
				feed = []int32{session.Argmax(w)}
			}
		})
	}
}

// TestRejectedLayoutsAreCANNErrors: a kernel whose descriptors CANN
// refuses fails with CANN's status code and the operator's name, and the
// process and the device stay usable.
func TestRejectedLayoutsAreCANNErrors(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 1<<16)
	pos := device.TensorDesc{DType: ir.I32, Ne: [4]int64{4, 1, 1, 1}, Nb: [4]int64{4, 16, 16, 16}, Addr: buf + 8192}
	cases := []struct {
		name string
		k    device.KernelLaunch
		code device.ACLCode
		call string
	}{
		{"rms_norm into a shorter row", device.KernelLaunch{Name: "aclnnRmsNorm", Op: ir.OpRMSNorm, Attrs: ir.Attrs{"eps": 1e-5},
			Inputs: []device.TensorDesc{f32(buf, 64, 4)}, Output: f32(buf+2048, 32, 4), Workspace: buf + 4096, WorkspaceBytes: 16},
			161002, "aclnnRmsNormGetWorkspaceSize"},
		{"mul_mat with unequal reduce dims", device.KernelLaunch{Name: "aclnnMm", Op: ir.OpMulMat,
			Inputs: []device.TensorDesc{f32(buf, 64, 4), f32(buf+2048, 32, 2)}, Output: f32(buf+4096, 4, 2)},
			161002, "aclnnMmGetWorkspaceSize"},
		{"a tensor reaching past the device pool", device.KernelLaunch{Name: "aclnnSilu", Op: ir.OpSilu,
			Inputs: []device.TensorDesc{f32(buf, 64, 4)}, Output: f32(buf+device.Ptr(d.Stats().Pools[0].Capacity), 64, 4)},
			161002, "aclCreateTensor"},
		{"rope whose output is not x's shape", device.KernelLaunch{Name: "aclnnRotaryPositionEmbedding", Op: ir.OpRope,
			Attrs:  ir.Attrs{"n_dims": int64(8), "mode": int64(0), "freq_base": 10000.0},
			Inputs: []device.TensorDesc{f32(buf, 8, 2, 4), pos}, Output: f32(buf+2048, 8, 2, 3)},
			161002, "aclnnRotaryPositionEmbeddingGetWorkspaceSize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := d.Launch(device.DefaultStream, &c.k)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want an *acl.Error", err)
			}
			if e.ACL.Code != c.code || e.ACL.Call != c.call || !strings.Contains(err.Error(), c.k.Name) {
				t.Errorf("error %q: want code %d from %s naming %s", err, c.code, c.call, c.k.Name)
			}
		})
	}
	// The device still computes.
	k := rmsLaunch(d, t, buf)
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatalf("after the refusals: %v", err)
	}
}

// TestFlashAttentionOnEmulatedCANN runs the attention op through
// aclnnFusedInferAttentionScoreV2 (Options.FlashAttention) and compares
// with the reference executor: its f16 output costs precision (bounded
// here at 5e-3 of max|logit| on stories260K and synth-llama-F32).
func TestFlashAttentionOnEmulatedCANN(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "synth-llama-F32.gguf"} {
		t.Run(name, func(t *testing.T) {
			f, m := testmodel.Build(t, testref.Testdata(name), models.Options{NCtx: 64})
			d := newDevice(t, Options{PoolBytes: 128 << 20, WorkspaceReserve: 16 << 20, FlashAttention: true})
			fia := 0
			d.onLaunch = func(k *device.KernelLaunch, calls []string) {
				if slices.Contains(calls, "aclnnFusedInferAttentionScoreV2") {
					fia++
				}
			}
			s, ref := pairedSessions(t, m, f, d, program.Options{Policy: device.DefaultGraphPolicy()})
			worst := 0.0
			for step, toks := range [][]int32{{1, 403, 407, 261, 378}, {42}, {7}, {300}} {
				worst = max(worst, testmodel.RelErr(stepBoth(t, step, s, ref, toks)))
			}
			if fia == 0 {
				t.Error("no launch called aclnnFusedInferAttentionScoreV2")
			}
			if worst > 5e-3 {
				t.Errorf("worst max|Δ|/max|logit| %.3g > 5e-3", worst)
			}
			t.Logf("FIA: worst max|Δ|/max|logit| %.2e against the reference executor", worst)
		})
	}
}
