package compiler_test

import (
	"context"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/target"
)

// compileFor compiles stories260K (n_ctx 512) for the target up to the
// partition, the stage DeviceMemory needs.
func compileFor(t *testing.T, tgt string, ctx, ubatch int64) *compiler.Result {
	t.Helper()
	m, _ := build(t, "", 512)
	r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: tgt, Ctx: ctx, UBatch: ubatch,
		Until: compiler.StagePartition, NoMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// withCapacity gives r a copy of its profile whose device holds bytes.
func withCapacity(r *compiler.Result, bytes int64) {
	prof := *r.Profile
	chip := *prof.NPU
	chip.MemBytes = bytes
	prof.NPU = &chip
	r.Profile = &prof
}

// TestDeviceMemory: the pool is the largest step's NPU regions (each
// rounded to a pool block; the weights region holds each weight as
// partition's device_weight_bytes counts it), the table block and
// two stream reserves; the unfused attention's scores are planned in the
// arena; the total adds CANN's runtime; a device too small is refused
// naming a context that fits, and that context compiles and fits.
func TestDeviceMemory(t *testing.T) {
	for _, c := range []struct {
		target      string
		ctx, ubatch int64
	}{
		{"ascend910b", 512, 128},
		{"ascend910b4", 256, 256},
		{"ascend310p", 512, 64},
	} {
		t.Run(c.target, func(t *testing.T) {
			r := compileFor(t, c.target, c.ctx, c.ubatch)
			m, err := r.DeviceMemory()
			if err != nil {
				t.Fatal(err)
			}
			prog, plan, err := r.Lower(compiler.RunBindings(c.ubatch, c.ctx))
			if err != nil {
				t.Fatal(err)
			}
			// The table block: 1 MiB, the RoPE angle table (512
			// positions × head dim 8 f32) and the one rope_cache's
			// slot for ubatch positions (positions, angles, cos, sin).
			// (when the partition puts rope_cache on the NPU).
			tables := int64(compiler.TableBytes)
			for _, sg := range prog.Segments {
				for _, k := range sg.Kernels {
					if sg.Device == string(target.NPU) && k.Op == ir.OpRopeCache {
						tables += 4*512*8 + (4*(c.ubatch+3*c.ubatch*8)+63)/64*64
					}
				}
			}
			if m.TablesBytes != tables {
				t.Errorf("tables_bytes %d, want %d", m.TablesBytes, tables)
			}
			if m.WeightsBytes != r.Partition.DeviceWeightBytes {
				t.Errorf("weights_bytes %d, partition's device_weight_bytes %d", m.WeightsBytes, r.Partition.DeviceWeightBytes)
			}
			want := tables + compiler.ReservedStreams*compiler.StreamReserveBytes
			for _, rg := range prog.Regions {
				if rg.Device == string(target.NPU) {
					want += (rg.Bytes + compiler.PoolAlign - 1) / compiler.PoolAlign * compiler.PoolAlign
				}
			}
			if m.PoolBytes != want || m.TotalBytes != m.PoolBytes+compiler.RuntimeBytes || m.RuntimeBytes != 427<<20 {
				t.Errorf("pool %d, total %d; want pool %d, total pool + %d", m.PoolBytes, m.TotalBytes, want, compiler.RuntimeBytes)
			}
			if rg := prog.Region(cann.RegionKV); rg == nil || m.KVBytes != rg.Bytes || m.ArenaBytes != prog.Region(cann.RegionArena).Bytes {
				t.Errorf("kv %d, arena %d: not the program's regions", m.KVBytes, m.ArenaBytes)
			}
			if m.CapacityBytes != r.Profile.NPU.MemBytes || !m.Fits || m.MaxCtx <= c.ctx {
				t.Errorf("capacity %d (target %d), fits %v, max_ctx %d", m.CapacityBytes, r.Profile.NPU.MemBytes, m.Fits, m.MaxCtx)
			}
			// stories260K: 8 heads; unfused attention plans its scores
			// in its workspace; FIA (Atlas A2's rule) keeps them on chip,
			// so no workspace holds them.
			scores := target.AttentionScoresBytes(8, c.ubatch, c.ctx)
			fused := false
			for _, sg := range prog.Segments {
				for _, k := range sg.Kernels {
					fused = fused || k.Op == ir.OpAttention && k.Name == target.FIA
				}
			}
			if !fused && (m.WorkspaceBytes < scores || m.ArenaBytes < scores) {
				t.Errorf("workspace %d, arena %d: the attention scores (%d B) are not planned", m.WorkspaceBytes, m.ArenaBytes, scores)
			}
			if fused && m.WorkspaceBytes >= scores {
				t.Errorf("workspace %d with FIA: the scores (%d B) should stay on chip", m.WorkspaceBytes, scores)
			}
			var ws int64
			for _, w := range plan.Workspaces {
				ws = max(ws, w.Bytes)
			}
			if ws != m.WorkspaceBytes {
				t.Errorf("workspace_bytes %d, largest planned workspace %d", m.WorkspaceBytes, ws)
			}

			// One byte short of the total: refused, naming a context
			// below, which fits.
			withCapacity(r, m.TotalBytes-1)
			small, err := r.DeviceMemory()
			if err != nil {
				t.Fatal(err)
			}
			err = small.CheckFits()
			if small.Fits || err == nil || small.MaxCtx <= 0 || small.MaxCtx >= c.ctx {
				t.Fatalf("capacity %d: fits %v, max_ctx %d, error %v", m.TotalBytes-1, small.Fits, small.MaxCtx, err)
			}
			if !strings.Contains(err.Error(), "the largest context that fits is") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line naming the context", err)
			}
			r2 := compileFor(t, c.target, small.MaxCtx, min(c.ubatch, small.MaxCtx))
			withCapacity(r2, m.TotalBytes-1)
			m2, err := r2.DeviceMemory()
			if err != nil {
				t.Fatal(err)
			}
			if !m2.Fits || m2.CheckFits() != nil {
				t.Errorf("the context named, %d, needs %d B of %d", small.MaxCtx, m2.TotalBytes, m2.CapacityBytes)
			}
		})
	}
	// No NPU, no device memory.
	r := compileFor(t, "cpu", 512, 64)
	if _, err := r.DeviceMemory(); err == nil {
		t.Error("DeviceMemory on the cpu target: want an error")
	}
}
