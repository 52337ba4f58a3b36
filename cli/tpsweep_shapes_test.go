package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/target"
	"github.com/stretchr/testify/require"
)

var updateSweep = flag.Bool("update-tp-sweep", false, "rewrite testdata/tp-sweep-shapes.txt")

// sweepShape is a published model's shape: its hyper-parameters and the
// GGUF tensors llama.cpp's converter writes for it, in one weight type.
type sweepShape struct {
	name string
	hp   models.HParams
	bias bool // q/k/v biases (qwen2)
	tied bool // no output.weight
}

func (s sweepShape) lookup(dt ir.DType) models.WeightLookup {
	hp := s.hp
	q, kv := hp.NHead*hp.HeadDimK, hp.NHeadKV*hp.HeadDimK
	w := map[string][2]int64{"token_embd.weight": {hp.NEmbd, hp.NVocab}, "output_norm.weight": {hp.NEmbd, 1}}
	if !s.tied {
		w["output.weight"] = [2]int64{hp.NEmbd, hp.NVocab}
	}
	for l := range hp.NLayer {
		p := fmt.Sprintf("blk.%d.", l)
		for name, ne := range map[string][2]int64{
			"attn_norm.weight": {hp.NEmbd, 1}, "ffn_norm.weight": {hp.NEmbd, 1},
			"attn_q.weight": {hp.NEmbd, q}, "attn_k.weight": {hp.NEmbd, kv}, "attn_v.weight": {hp.NEmbd, kv},
			"attn_output.weight": {q, hp.NEmbd},
			"ffn_gate.weight":    {hp.NEmbd, hp.NFF}, "ffn_up.weight": {hp.NEmbd, hp.NFF}, "ffn_down.weight": {hp.NFF, hp.NEmbd},
		} {
			w[p+name] = ne
		}
		if s.bias {
			w[p+"attn_q.bias"], w[p+"attn_k.bias"], w[p+"attn_v.bias"] = [2]int64{q, 1}, [2]int64{kv, 1}, [2]int64{kv, 1}
		}
	}
	return func(name string) (models.Weight, bool) {
		ne, ok := w[name]
		if !ok {
			return models.Weight{}, false
		}
		t := dt
		if ne[1] == 1 {
			t = ir.F32 // norms and biases
		}
		return models.Weight{Type: t, Ne: [4]int64{ne[0], ne[1], 1, 1}}, true
	}
}

// The shapes of docs/LOWERING.md's table (the models' config.json on
// Hugging Face: Qwen/Qwen2.5-0.5B-Instruct, Qwen/Qwen2.5-7B-Instruct,
// meta-llama/Llama-2-7b-hf).
var sweepShapes = []sweepShape{
	{name: "Qwen2.5-0.5B", bias: true, tied: true, hp: models.HParams{Arch: "qwen2", NVocab: 151936, NCtxTrain: 32768, NEmbd: 896, NLayer: 24,
		NHead: 14, NHeadKV: 2, NFF: 4864, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeMode: 2}},
	{name: "Qwen2.5-7B", bias: true, hp: models.HParams{Arch: "qwen2", NVocab: 152064, NCtxTrain: 32768, NEmbd: 3584, NLayer: 28,
		NHead: 28, NHeadKV: 4, NFF: 18944, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeMode: 2}},
	{name: "Llama-2-7B", hp: models.HParams{Arch: "llama", NVocab: 32000, NCtxTrain: 4096, NEmbd: 4096, NLayer: 32,
		NHead: 32, NHeadKV: 32, NFF: 11008, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-5, RopeFreqBase: 1e4, RopeFreqScale: 1}},
}

// TestTPSweepShapes is the table of docs/LOWERING.md: the link model's
// predicted decode at TP 1/2/4/8 on the 910B profile for F16 weights of
// three published shapes, 4096 cache cells. go test ./cli -run
// TestTPSweepShapes -update-tp-sweep rewrites it.
func TestTPSweepShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 7B-shaped graphs")
	}
	prof, err := parallel.Profile("ascend910b")
	require.NoError(t, err)
	var flags compileFlags
	flags.declare(flag.NewFlagSet("x", flag.ContinueOnError))
	opts, err := flags.options(0)
	require.NoError(t, err)
	opts.Ctx, opts.UBatch = 4096, 512
	mo, err := models.ParseOptions(4096, "f16", "set_rows")
	require.NoError(t, err)
	var buf bytes.Buffer
	for _, s := range sweepShapes {
		for _, algo := range []target.Algorithm{target.Mesh, target.Ring} {
			ic := *prof.Interconnect
			ic.Algorithm = algo
			p := *prof
			p.Interconnect = &ic
			rows, err := parallel.Sweep(s.hp, s.lookup(ir.F16), mo, opts, &p, []int{1, 2, 4, 8}, false)
			require.NoError(t, err, s.name)
			fmt.Fprintf(&buf, "%s, F16, n_kv=4096, %s:\n", s.name, algo)
			parallel.WriteSweep(&buf, rows)
			checkSweep(t, s.name, rows)
		}
	}
	path := filepath.Join("testdata", "tp-sweep-shapes.txt")
	if *updateSweep {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test ./cli -run TestTPSweepShapes -update-tp-sweep writes it")
	require.Equal(t, string(want), buf.String())
}

func checkSweep(t *testing.T, name string, rows []parallel.SweepRow) {
	t.Helper()
	{
		for _, r := range rows {
			if r.Error == "" {
				require.Greater(t, r.PredictedTokS, 0.0, "%s tp %d", name, r.TP)
				require.InDelta(t, 1e6/r.StepUS, r.PredictedTokS, 1e-9, "%s tp %d", name, r.TP)
			}
		}
		// Every rank holds less weight as the degree grows.
		last := int64(1 << 62)
		for _, r := range rows {
			if r.Error == "" {
				require.Less(t, r.WeightBytes, last, "%s tp %d", name, r.TP)
				last = r.WeightBytes
			}
		}
	}
}
