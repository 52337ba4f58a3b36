package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/target"
	"github.com/irtool/irtool/viz"
)

// The partition and lowering stages of irtool compile. The driver's
// partition stage places every node of the compiled graph for --target
// (optionally after requantising weights the NPU cannot multiply,
// --requant); its lowering stage specialises that graph for one decode
// step (n_tokens = 1 over a full cache of --ctx cells), plans it, lowers
// it to a cann.Program and runs the cost model for the eager and
// graph-replay predictions. This file prints them; --out DIR writes
// program.json and DOT drawings of the partition and of the segments.

// partitionJSON is the "partition" object of compile --json.
type partitionJSON struct {
	Target      string  `json:"target"`
	Bindings    string  `json:"bindings"`
	Segments    int     `json:"segments"`
	Copies      int     `json:"copies"`
	CopyBytes   int64   `json:"copy_bytes"`
	CPUNodes    int     `json:"cpu_nodes"`
	NPUNodes    int     `json:"npu_nodes"`
	Moved       int     `json:"moved"`
	PredictedUS float64 `json:"predicted_us"`
	// DeviceWeightBytes = GGMLWeightBytes + ConvertedWeightBytes: the
	// NPU's weights in ggml's blocks and their copies converted at load
	// (partition.Result).
	DeviceWeightBytes    int64                    `json:"device_weight_bytes"`
	GGMLWeightBytes      int64                    `json:"ggml_weight_bytes"`
	ConvertedWeightBytes int64                    `json:"converted_weight_bytes"`
	Fallbacks            []partition.Fallback     `json:"fallbacks"`
	Requant              *partition.RequantReport `json:"requant,omitempty"`
}

// programJSON is the "program" object of compile --json.
type programJSON struct {
	Bucket             string          `json:"bucket"`
	Kernels            int             `json:"kernels"`
	Segments           int             `json:"segments"`
	CapturableSegments int             `json:"capturable_segments"`
	Copies             int             `json:"copies"`
	KernelsByName      map[string]int  `json:"kernels_by_name"`
	SplitCalls         []splitJSON     `json:"split_calls,omitempty"`
	Attention          []attentionJSON `json:"attention,omitempty"`
	Regions            []cann.Region   `json:"regions"`
	Blockers           []string        `json:"blockers,omitempty"`
}

// splitJSON is one kernel whose operator is called more than once in an
// eager launch because one call would break the operator's limits
// (docs/CANN-CONSTRAINTS.md): Qwen's vocabulary projection makes three
// aclnnWeightQuantBatchMatmulV2 calls.
type splitJSON struct {
	Node   int      `json:"node"`
	Name   string   `json:"name"`
	Kernel string   `json:"kernel"`
	Count  int      `json:"count"`
	Calls  []string `json:"calls"`
}

// splitCalls lists the kernels of prog whose calls split their operator
// (target.WQBMMChunks), in program order.
func splitCalls(prog *cann.Program) []splitJSON {
	var out []splitJSON
	for _, s := range prog.Segments {
		for _, k := range s.Kernels {
			if k.Name != "aclnnWeightQuantBatchMatmulV2" || k.Op != ir.OpMulMat && k.Op != ir.OpMulMatAdd {
				continue
			}
			n := 0
			for _, c := range k.Calls {
				if c == k.Name {
					n++
				}
			}
			if n > 1 {
				out = append(out, splitJSON{Node: k.Node, Name: k.NodeName, Kernel: k.Name, Count: n, Calls: k.Calls})
			}
		}
	}
	return out
}

// attentionJSON is how the attention kernels of the program lower, one
// entry per distinct lowering: the aclnn operator, the calls of an eager
// launch, the target rule's reason (target/attention.go: FIA on Atlas A2,
// the unfused calls where the part or the views do not allow it) and how
// many kernels lower so.
type attentionJSON struct {
	Kernel  string   `json:"kernel"`
	Calls   []string `json:"calls"`
	Reason  string   `json:"reason"`
	Kernels int      `json:"kernels"`
}

// attentionLowering groups the NPU attention kernels of prog by kernel,
// calls and reason, in program order of first appearance.
func attentionLowering(prog *cann.Program) []attentionJSON {
	var out []attentionJSON
	for _, s := range prog.Segments {
		for _, k := range s.Kernels {
			if k.Op != ir.OpAttention || strings.HasPrefix(k.Name, "cpu.") {
				continue
			}
			i := slices.IndexFunc(out, func(a attentionJSON) bool {
				return a.Kernel == k.Name && a.Reason == k.Note && slices.Equal(a.Calls, k.Calls)
			})
			if i < 0 {
				out = append(out, attentionJSON{Kernel: k.Name, Calls: k.Calls, Reason: k.Note})
				i = len(out) - 1
			}
			out[i].Kernels++
		}
	}
	return out
}

// predictedJSON is the "predicted" object of compile --json: the cost
// model's decode step, all eager and with capturable segments replayed.
type predictedJSON struct {
	EagerUSPerToken float64 `json:"eager_us_per_token"`
	GraphUSPerToken float64 `json:"graph_us_per_token"`
	Speedup         float64 `json:"speedup"`
	EagerTokPerS    float64 `json:"eager_tok_per_s"`
	GraphTokPerS    float64 `json:"graph_tok_per_s"`
	Launches        int     `json:"launches"`
	GraphLaunches   int     `json:"graph_launches"`
	DeviceUS        float64 `json:"device_us"`
	HostLaunchUS    float64 `json:"host_launch_us"`
	CopyUS          float64 `json:"copy_us"`
	CPUUS           float64 `json:"cpu_us"`
	// PromptTokens, PrefillUS and PrefillTokPerS are the eager prefill of
	// a prompt of --prompt-tokens tokens over an empty cache.
	PromptTokens   int64   `json:"prompt_tokens,omitempty"`
	PrefillUS      float64 `json:"prefill_us,omitempty"`
	PrefillTokPerS float64 `json:"prefill_tok_per_s,omitempty"`
}

func outPartition(j *compileJob) error {
	r := j.R
	if rep := r.Requant; rep != nil {
		fmt.Fprintf(j.Text, "requant to %s: %d weights, %d -> %d B, worst relative RMS error %.3g\n",
			rep.To, len(rep.Tensors), rep.BytesBefore, rep.BytesAfter, rep.WorstRelRMSE)
	}
	res, prof, used := r.Partition, r.Profile, r.PartitionBindings
	j.Out.Partition = partitionJSON{Target: prof.Name, Bindings: used.String(), Segments: len(res.Segments), Copies: len(res.Copies),
		CopyBytes: res.CopyBytes, CPUNodes: res.CPUNodes, NPUNodes: res.NPUNodes, Moved: res.Moved,
		PredictedUS: res.PredictedUS, Fallbacks: res.Fallbacks, Requant: r.Requant,
		DeviceWeightBytes: res.DeviceWeightBytes, GGMLWeightBytes: res.GGMLWeightBytes, ConvertedWeightBytes: res.ConvertedWeightBytes}
	fmt.Fprintf(j.Text, "partition (%s, %s): %d nodes on the NPU, %d on the CPU, %d segments, %d copies moving %d B per step\n",
		prof.Name, used, res.NPUNodes, res.CPUNodes, len(res.Segments), len(res.Copies), res.CopyBytes)
	if res.DeviceWeightBytes > 0 {
		fmt.Fprintf(j.Text, "  device weights: %d B (%d B of ggml blocks, %d B converted at load for aclnnWeightQuantBatchMatmulV2 and get_rows)\n",
			res.DeviceWeightBytes, res.GGMLWeightBytes, res.ConvertedWeightBytes)
	}
	for _, line := range summariseFallbacks(res.Fallbacks) {
		fmt.Fprintf(j.Text, "  cpu: %s\n", line)
	}
	return nil
}

// summariseFallbacks groups fallbacks by op and reason: "rope x10: ...".
func summariseFallbacks(fs []partition.Fallback) []string {
	count := map[string]int{}
	for _, f := range fs {
		count[string(f.Op)+"\x00"+f.Reason]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		op, reason, _ := strings.Cut(k, "\x00")
		out[i] = fmt.Sprintf("%s x%d: %s", op, count[k], reason)
	}
	return out
}

func outLower(j *compileJob) error {
	f := j.Flags
	res, prog, pr := j.R.Partition, j.R.Program, *j.R.Prediction
	out := programJSON{Bucket: prog.Bucket, Kernels: prog.Kernels(), Segments: len(prog.Segments),
		KernelsByName: prog.KernelsByName(), SplitCalls: splitCalls(prog), Attention: attentionLowering(prog), Regions: prog.Regions}
	blockers := map[string]bool{}
	for _, s := range prog.Segments {
		if s.Capturable {
			out.CapturableSegments++
		} else if s.Device == string(target.NPU) {
			blockers[s.Blocker] = true
		}
	}
	for _, st := range prog.Steps {
		if st.Kind == cann.StepCopy {
			out.Copies++
		}
	}
	for b := range blockers {
		out.Blockers = append(out.Blockers, b)
	}
	sort.Strings(out.Blockers)
	j.Out.Program = out
	if j.forecast && j.R.Profile.HasNPU() {
		fmt.Fprintf(j.Stderr, "irtool compile: forecast (prefill of %d tokens; llama.cpp's program)\n", f.PromptTokens)
		if err := forecast(j); err != nil {
			return err
		}
	}
	pj := predictedOf(pr, j.Forecast)
	j.Out.Predicted = pj
	speedup := pj.Speedup
	fmt.Fprintf(j.Text, "lower (%s): %d kernels in %d segments (%d capturable), %d copies\n",
		prog.Bucket, out.Kernels, out.Segments, out.CapturableSegments, out.Copies)
	fmt.Fprintf(j.Text, "  kernels: %s\n", kernelSummary(out.KernelsByName))
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
		pr.EagerUS, perSecond(pr.EagerUS), pr.GraphUS, perSecond(pr.GraphUS), speedup)
	if fc := j.Forecast; fc != nil {
		fmt.Fprintf(j.Text, "; prefill %.0f tok/s (%d tokens)", fc.PrefillTokPerS(), fc.PromptTokens)
	}
	fmt.Fprintln(j.Text)
	if lc := j.LlamaCpp; lc != nil {
		lj := predictedOf(lc.Decode, lc)
		j.Out.PredictedLlamaCpp = lj
		j.Out.VsLlamaCpp = kernelDiffs(prog, lc.Program)
		fmt.Fprintf(j.Text, "  llama.cpp's program (CANN backend, same file): eager %.1f tok/s, ACL graph %.1f tok/s, %.2fx; prefill %.0f tok/s\n",
			lj.EagerTokPerS, lj.GraphTokPerS, lj.Speedup, lj.PrefillTokPerS)
	}
	if f.Out != "" {
		if err := writeLowerOut(j, res, prog); err != nil {
			return err
		}
	}
	return nil
}

func perSecond(us float64) float64 {
	if us <= 0 {
		return 0
	}
	return 1e6 / us
}

func kernelSummary(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s x%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// writeLowerOut writes program.json, partition.dot and segments.dot.
func writeLowerOut(j *compileJob, res *partition.Result, prog *cann.Program) error {
	dir := j.Flags.Out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	var buf bytes.Buffer
	if err := prog.Write(&buf); err != nil {
		return err
	}
	files := map[string][]byte{"program.json": append([]byte(nil), buf.Bytes()...)}
	part, err := partitionPlacement(res, j.Graph(), false)
	if err != nil {
		return err
	}
	segs, err := segmentPlacement(res, prog, j.Graph())
	if err != nil {
		return err
	}
	for name, c := range map[string]struct {
		title string
		p     *viz.Partition
	}{
		"partition.dot": {fmt.Sprintf("%s on %s: partition (%d NPU, %d CPU nodes, %d copies)", j.Out.Model, res.Target, res.NPUNodes, res.CPUNodes, len(res.Copies)), part},
		"segments.dot":  {fmt.Sprintf("%s on %s: segments of %s", j.Out.Model, res.Target, prog.Bucket), segs},
	} {
		d, err := viz.GraphDOT(j.Graph(), viz.GraphOptions{Title: c.title, Partition: c.p, NoWeights: true})
		if err != nil {
			return err
		}
		files[name] = []byte(d.String())
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	// All files are written to temporaries first and renamed into place
	// only when every one was written: a failure leaves the old files.
	tmp := make([]*safeio.File, 0, len(names))
	defer func() {
		for _, f := range tmp {
			f.Abort()
		}
	}()
	for _, n := range names {
		f, err := safeio.Create(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		tmp = append(tmp, f)
		if _, err := f.Write(files[n]); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	for _, f := range tmp {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	for _, f := range tmp {
		if err := f.Commit(); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintf(j.Stderr, "irtool compile: wrote %s\n", f.Name())
	}
	return nil
}

// segmentPlacement maps every kernel of the program to its lowered segment
// (node IDs of the program are those of the partitioned graph, which
// specialisation keeps), captioned with the segment's key or why it is not
// captured; other nodes keep their device outside any segment.
func segmentPlacement(res *partition.Result, prog *cann.Program, g *ir.Graph) (*viz.Partition, error) {
	p, err := partitionPlacement(res, g, false)
	if err != nil {
		return nil, err
	}
	p.Segments = map[int]string{}
	for _, s := range prog.Segments {
		for _, k := range s.Kernels {
			if k.Node < 0 || k.Node >= len(g.Nodes) {
				return nil, fmt.Errorf("lower: segment %d names node %d, outside graph %q", s.ID, k.Node, g.Name)
			}
			p.Nodes[k.Node] = viz.Placement{Device: s.Device, Segment: s.ID}
		}
		caption := "captured, key " + s.Key
		if !s.Capturable {
			caption = "eager: " + s.Blocker
		}
		p.Segments[s.ID] = fmt.Sprintf("%d kernels, %s", len(s.Kernels), caption)
	}
	return p, nil
}
