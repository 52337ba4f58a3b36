//go:build cann

package acl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/target"
)

// TestRecipeCallsMatchTarget runs decode steps of reference models
// eagerly on the emulator with the default Options (the non-default
// QuantMatmul "ggml", FlashAttention and TableRoPEAngles change some
// recipes' calls, and target describes the defaults), reads
// the aclnn calls each kernel launch made from the emulator's trace (the
// phase-1 GetWorkspaceSize calls since the previous launch) and compares them with
// the Calls the lowered program (that is, target.Support, what the cost
// model of lower/cann counts) declares for the kernel's node: they must
// be equal, in order, for every NPU kernel. For rope_cache this holds the
// recipe to one gather from the precomputed angle table, not a chain of
// D/2 aclnnMuls.
func TestRecipeCallsMatchTarget(t *testing.T) {
	for _, c := range []struct {
		file, passes string
		want         []string // the rope_cache calls expected, to show which variant ran
	}{
		{"stories260K.gguf", "", []string{"aclnnGatherV2", "aclnnCos", "aclnnSin", "aclnnInplaceCopy", "aclnnInplaceCopy"}},
		// llama 3's rope_freqs: the frequency factors divide the angles.
		{"synth-llama3rope-Q4_0.gguf", "", []string{"aclnnGatherV2", "aclnnDiv", "aclnnCos", "aclnnSin", "aclnnInplaceCopy", "aclnnInplaceCopy"}},
		{"synth-qwen2-tied-Q4_0.gguf", "", nil},
		// K-quants: q4_K and q6_K weights converted at load, the WQBMM
		// calls with an offset and without.
		{"synth-llama256-Q4_K.gguf", "", nil},
		// Unfused: the plain ops, rope making its own tables (with the
		// frequency factors for llama 3's rope).
		{"stories260K.gguf", "none", nil},
		{"synth-llama3rope-Q4_0.gguf", "none", nil},
		// ggml-cann's rope table, rope_set_rows, merge-qkv's concat.
		{"stories260K.gguf", coveragePipelines[3], nil},
		{"stories260K.gguf", coveragePipelines[4], nil},
		{"synth-qwen2-tied-Q4_0.gguf", coveragePipelines[2], nil},
	} {
		t.Run(strings.TrimSuffix(c.file, ".gguf")+"/passes="+c.passes, func(t *testing.T) {
			const nctx = 64
			f, m := testmodel.Build(t, testref.Testdata(c.file), models.Options{NCtx: nctx, KVType: models.KVF16})
			d := newDevice(t, Options{PoolBytes: 128 << 20, WorkspaceReserve: 16 << 20})
			var (
				mu      sync.Mutex
				got     = map[int][]string{}
				readErr error
			)
			d.onLaunch = func(k *device.KernelLaunch, calls []string) {
				mu.Lock()
				defer mu.Unlock()
				tr, err := fake.Trace()
				if err != nil {
					readErr = err
					return
				}
				fake.Reset() // the next launch reads its own calls only
				var ops []string
				for _, r := range tr {
					if name, ok := strings.CutSuffix(r.Fn, "GetWorkspaceSize"); ok && strings.HasPrefix(name, "aclnn") {
						ops = append(ops, name)
					}
				}
				if !slices.Equal(ops, calls) {
					readErr = errors.Join(readErr, fmt.Errorf("node %d (%s): the trace shows %v, the binding reports %v", k.Node, k.Op, ops, calls))
				}
				got[k.Node] = ops
			}
			pol := device.DefaultGraphPolicy()
			pol.Graphs = false // every step launches its kernels
			_, opts := npuPinned(t)
			opts.Passes = c.passes
			sess, err := program.NewRunner(m, f, d, program.Options{Policy: pol, Compile: opts})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := sess.Close(); err != nil {
					t.Error(err)
				}
			}()
			checked := 0
			ops := map[ir.Op]int{}
			for step, tok := range []int32{1, 5, 9} {
				mu.Lock()
				clear(got)
				mu.Unlock()
				pos := sess.Pos()
				b := ir.Bindings{models.SymTokens: 1, models.SymKV: models.KVLen(pos+1, nctx), models.SymOutputs: 1, models.SymKVHead: pos}
				prog, err := sess.Compiler().Program(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := sess.Step([]int32{tok}); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				mu.Lock()
				if readErr != nil {
					t.Fatal(readErr)
				}
				for _, s := range prog.Segments {
					if s.Device != string(target.NPU) {
						continue
					}
					for _, k := range s.Kernels {
						launched, ok := got[k.Node]
						if !ok {
							continue // a copy step, not a recipe
						}
						want := k.Calls
						if len(want) == 0 {
							want = []string{k.Name}
						}
						ops[k.Op]++
						if !slices.Equal(launched, want) {
							t.Errorf("step %d: %s (node %d %s) launched %v, target declares %v", step, k.Op, k.Node, k.NodeName, launched, want)
						}
						if k.Op == ir.OpRopeCache {
							checked++
							if c.want != nil && !slices.Equal(launched, c.want) {
								t.Errorf("step %d: %s (node %d) launched %v, want %v", step, k.Op, k.Node, launched, c.want)
							}
						}
					}
				}
				mu.Unlock()
			}
			if checked == 0 && ops[ir.OpRope]+ops[ir.OpRopeCacheTable]+ops[ir.OpRopeSetRows] == 0 {
				t.Fatal("no op making RoPE tables ran on the NPU")
			}
			t.Logf("kernels compared by op: %v", ops)
		})
	}
}

// TestRopeCachePositionOutsideTheTable launches rope_cache with a position
// at the table's end (n_pos): aclnnGatherV2 reports CANN's error (an AI
// core exception on the emulator), never a crash of the host.
func TestRopeCachePositionOutsideTheTable(t *testing.T) {
	const D, T, nPos = 32, 4, 16
	d := newDevice(t, Options{WorkspaceReserve: 1 << 20})
	buf := malloc(t, d, 1<<16)
	pb := make([]byte, 4*T)
	for i, p := range []uint32{0, 3, nPos - 1, nPos} {
		binary.LittleEndian.PutUint32(pb[4*i:], p)
	}
	if err := d.MemcpyH2D(buf, pb); err != nil {
		t.Fatal(err)
	}
	attrs := ir.Attrs{"n_dims": int64(D), "mode": int64(0), "freq_base": 10000.0, "freq_scale": 1.0,
		"ext_factor": 0.0, "attn_factor": 1.0, ropePositionsAttr: int64(nPos)}
	ptab := device.TensorDesc{DType: ir.I32, Ne: [4]int64{T, 1, 1, 1}, Nb: ir.ContiguousStrides(ir.I32, [4]int64{T, 1, 1, 1}), Addr: buf}
	k := &device.KernelLaunch{Name: "aclnnSin", Op: ir.OpRopeCache, Node: 7, Attrs: attrs,
		Inputs: []device.TensorDesc{ptab}, Output: f32(buf+8192, D, T)}
	err := d.Launch(device.DefaultStream, k)
	if err == nil {
		err = d.SynchronizeStream(device.DefaultStream)
	}
	var ae *device.ACLError
	if !errors.As(err, &ae) {
		t.Fatalf("position %d of a %d-position table: got %v, want an ACL error", nPos, nPos, err)
	}
	if !strings.Contains(err.Error(), "aclnnGatherV2") {
		t.Errorf("the error does not name aclnnGatherV2: %v", err)
	}
	t.Logf("%v", err)
}
