package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/irtool/irtool/compiler/summary"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/target"
)

// The partition and lowering stages of irtool compile. The driver's
// partition stage places every node of the compiled graph for --target
// (optionally after requantising weights the NPU cannot multiply,
// --requant); its lowering stage specialises that graph for one decode
// step (n_tokens = 1 over a full cache of --ctx cells), plans it, lowers
// it to a cann.Program and runs the cost model for the eager and
// graph-replay predictions. This file prints them; --out DIR writes
// program.json and DOT drawings of the partition and of the segments.

func outPartition(j *compileJob) error {
	r := j.R
	if rep := r.Requant; rep != nil {
		fmt.Fprintf(j.Text, "requant to %s: %d weights, %d -> %d B, worst relative RMS error %.3g\n",
			rep.To, len(rep.Tensors), rep.BytesBefore, rep.BytesAfter, rep.WorstRelRMSE)
	}
	res, prof, used := r.Partition, r.Profile, r.PartitionBindings
	j.Out.Partition = summary.PartitionOf(r)
	fmt.Fprintf(j.Text, "partition (%s, %s): %d nodes on the NPU, %d on the CPU, %d segments, %d copies moving %d B per step\n",
		prof.Name, used, res.NPUNodes, res.CPUNodes, len(res.Segments), len(res.Copies), res.CopyBytes)
	if res.DeviceWeightBytes > 0 {
		fmt.Fprintf(j.Text, "  device weights: %d B (%d B of ggml blocks, %d B converted at load for aclnnWeightQuantBatchMatmulV2 and get_rows)\n",
			res.DeviceWeightBytes, res.GGMLWeightBytes, res.ConvertedWeightBytes)
	}
	for _, line := range summary.SummariseFallbacks(res.Fallbacks) {
		fmt.Fprintf(j.Text, "  cpu: %s\n", line)
	}
	return nil
}

func outLower(j *compileJob) error {
	f := j.Flags
	prog, pr := j.R.Program, *j.R.Prediction
	out := summary.ProgramOf(prog)
	j.Out.Program = out
	if j.forecast && j.R.Profile.HasNPU() {
		fmt.Fprintf(j.Stderr, "irtool compile: forecast (prefill of %d tokens; llama.cpp's program)\n", f.PromptTokens)
		if err := forecast(j); err != nil {
			return err
		}
	}
	pj := summary.PredictedOf(pr, j.Forecast)
	j.Out.Predicted = pj
	speedup := pj.Speedup
	fmt.Fprintf(j.Text, "lower (%s): %d kernels in %d segments (%d capturable), %d copies\n",
		prog.Bucket, out.Kernels, out.Segments, out.CapturableSegments, out.Copies)
	fmt.Fprintf(j.Text, "  kernels: %s\n", summary.KernelSummary(out.KernelsByName))
	for _, sp := range out.SplitCalls {
		fmt.Fprintf(j.Text, "  split: node %d %s: %d %s calls (one per %d output columns)\n", sp.Node, sp.Name, sp.Count, sp.Kernel, target.WQBMMMaxDim)
	}
	for _, a := range out.Attention {
		fmt.Fprintf(j.Text, "  attention x%d: %s (%s): %s\n", a.Kernels, a.Kernel, strings.Join(a.Calls, ", "), a.Reason)
	}
	for _, b := range out.Blockers {
		fmt.Fprintf(j.Text, "  not captured: %s\n", b)
	}
	fmt.Fprintf(j.Text, "predicted decode step: eager %.0f us (%.1f tok/s), graph replay %.0f us (%.1f tok/s), %.2fx",
		pr.EagerUS, summary.PerSecond(pr.EagerUS), pr.GraphUS, summary.PerSecond(pr.GraphUS), speedup)
	if fc := j.Forecast; fc != nil {
		fmt.Fprintf(j.Text, "; prefill %.0f tok/s (%d tokens)", fc.PrefillTokPerS(), fc.PromptTokens)
	}
	fmt.Fprintln(j.Text)
	if lc := j.LlamaCpp; lc != nil {
		lj := summary.PredictedOf(lc.Decode, lc)
		j.Out.PredictedLlamaCpp = lj
		j.Out.VsLlamaCpp = summary.KernelDiffs(prog, lc.Program)
		fmt.Fprintf(j.Text, "  llama.cpp's program (CANN backend, same file): eager %.1f tok/s, ACL graph %.1f tok/s, %.2fx; prefill %.0f tok/s\n",
			lj.EagerTokPerS, lj.GraphTokPerS, lj.Speedup, lj.PrefillTokPerS)
	}
	if f.Out != "" {
		if err := writeLowerOut(j); err != nil {
			return err
		}
	}
	return nil
}

// writeLowerOut writes program.json, partition.dot and segments.dot
// (summary.OutFiles), all or none (safeio.WriteFiles).
func writeLowerOut(j *compileJob) error {
	dir := j.Flags.Out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	files, err := summary.OutFiles(j.Out.Model, j.R)
	if err != nil {
		return err
	}
	if err := safeio.WriteFiles(dir, files, func(path string) { fmt.Fprintf(j.Stderr, "irtool compile: wrote %s\n", path) }); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
