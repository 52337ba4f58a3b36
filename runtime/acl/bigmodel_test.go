//go:build cann

package acl

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/models"
)

// TestModelFileOnEmulatedCANN is opt-in: it runs one model file of any
// size through the CANN path on the emulator, graph mode on, against a
// llama.cpp run of it in the reference data's JSON format (llama-ref's
// "format": "llama-ref" or llamacpp-reference/v1: prompt tokens, prefill
// and first-decode logits, 32 greedy tokens with their top-5 logits), with
// the bounds of the reference models: max|Δlogit|/max|logit| within wqbmmModeBound (3e-2)
// in the "wqbmm" QuantMatmul mode and within emuTolerance (1e-2 for
// quantised files) in the "ggml" mode, the greedy token llama.cpp's
// wherever its top-1/top-2 gap exceeds 6e-2 of max|logit|.
//
//	IRTOOL_EMU_MODEL  the GGUF file (the test is skipped without it)
//	IRTOOL_EMU_REF    llama.cpp's run of it (JSON)
//	IRTOOL_EMU_MODES  modes to run, comma-separated (default "wqbmm"; the
//	                  "ggml" mode keeps every quantised matrix's integers
//	                  in f32 in the pool: 4 bytes per value, 8 for q6_K)
//	IRTOOL_EMU_POOL_MB  the emulated device's pool (default 3072; the
//	                  emulated HBM grows past its 4 GiB to hold it)
//
// docs/RUNTIME.md has the command for a Llama-3.2-1B-shaped Q4_K_M file.
func TestModelFileOnEmulatedCANN(t *testing.T) {
	path, refPath := os.Getenv("IRTOOL_EMU_MODEL"), os.Getenv("IRTOOL_EMU_REF")
	if path == "" {
		t.Skip("IRTOOL_EMU_MODEL (a GGUF file) and IRTOOL_EMU_REF (llama.cpp's run of it) not set")
	}
	if refPath == "" {
		t.Fatal("IRTOOL_EMU_MODEL is set but IRTOOL_EMU_REF (llama.cpp's run of the file) is not")
	}
	poolMB := int64(3072)
	if s := os.Getenv("IRTOOL_EMU_POOL_MB"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v <= 0 {
			t.Fatalf("IRTOOL_EMU_POOL_MB=%q: want a positive number of MiB", s)
		}
		poolMB = v
	}
	modes := []string{QuantMatmulWQBMM}
	if s := os.Getenv("IRTOOL_EMU_MODES"); s != "" {
		modes = strings.Split(s, ",")
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref := testmodel.LoadRun(t, refPath)
	m, err := models.Build(f, ref.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(path[strings.LastIndex(path, "/")+1:], ".gguf")
	for _, mode := range modes {
		if err := checkQuantMatmul(mode); err != nil || mode == "" {
			t.Fatalf("IRTOOL_EMU_MODES: %q is not a QuantMatmul mode (%v)", mode, err)
		}
		t.Run(mode, func(t *testing.T) {
			tol, gap := wqbmmModeBound, quantTieGap
			if mode == QuantMatmulGGML {
				tol, gap = emuTolerance(name, f)
			}
			// The emulated HBM (4 GiB by default) grows to hold the pool.
			if need := (poolMB + 512) << 20; need > 1<<32 {
				fake.Set("total_mem", need)
				t.Cleanup(func() { fake.Set("total_mem", 1<<32) })
			}
			d := newDevice(t, Options{PoolBytes: poolMB << 20, WorkspaceReserve: 64 << 20, QuantMatmul: mode})
			t0 := time.Now()
			r := runOnEmulatorWithin(t, m, f, ref, d, true, tol, gap)
			c := d.Counters()
			dec := r.stats.Decode
			t.Logf("%s %s: worst max|Δ|/max|logit| %.2e over %d steps (bound %.0e); %d argmax differences at near-ties; %.1f s; converted at load %d MiB in %.1f s; decode %d captures, %d replays, %d hits",
				name, mode, r.worst, len(ref.Generation.Tokens), tol, r.mismatches, time.Since(t0).Seconds(),
				c.ConvertedBytes>>20, float64(c.ConvertNS)/1e9, dec.Captures, dec.Replays, dec.CacheHits)
		})
	}
}
