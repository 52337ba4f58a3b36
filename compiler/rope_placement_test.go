package compiler_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/target"
)

// The RoPE tables stay on the NPU wherever the NPU runs a rope_apply that
// reads them: runtime/acl's rope_apply reads the full-width cos/sin tables
// the NPU's rope_cache makes, and a table made on the host would cost two
// aclnnInplaceCopy per use that the target does not declare. With the
// calibrated costs the partition used to move the table of
// synth-llama3rope (one table, two layers) to the host on every A2
// profile (target/rope.go's stayWithRope).
func TestRopeTablesStayOnNPU(t *testing.T) {
	// testdata's models and the reference models (synth-llama3rope-F32
	// is the one whose table moved).
	paths, err := filepath.Glob("../testdata/*.gguf")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no models in ../testdata: %v", err)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		seen[filepath.Base(p)] = true
	}
	for _, p := range testref.Models(t) {
		if !seen[filepath.Base(p)] {
			seen[filepath.Base(p)] = true
			paths = append(paths, p)
		}
	}
	checked := 0
	for _, path := range paths {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		// As irtool compile builds it: the cache written with set_rows.
		m, err := models.Build(f, models.Options{NCtx: 512, KVWrite: models.KVSetRows})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		for _, tgt := range target.Names() {
			p, err := target.Get(tgt)
			if err != nil || !p.HasNPU() {
				continue
			}
			r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: tgt, NoMemory: true, Until: compiler.StagePartition})
			if err != nil {
				t.Fatalf("%s on %s: %v", filepath.Base(path), tgt, err)
			}
			g, dev := r.Partitioned, r.Partition.Device
			npuRope := false // some rope_apply runs on the NPU
			for _, n := range g.Nodes {
				if (n.Op == ir.OpRopeApply || n.Op == ir.OpRopeApplySetRows) && dev[n.ID] == target.NPU {
					npuRope = true
				}
			}
			if !npuRope {
				continue
			}
			for _, n := range g.Nodes {
				if n.Op != ir.OpRopeCache && n.Op != ir.OpRopeCacheTable {
					continue
				}
				checked++
				if dev[n.ID] != target.NPU {
					t.Errorf("%s on %s: %s %q is on the %s, rope_apply on the NPU", filepath.Base(path), tgt, n.Op, n.Name, dev[n.ID])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no RoPE table read by an NPU rope_apply in any model: the test checks nothing")
	}
}
