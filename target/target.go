package target

import (
	"fmt"
	"sort"
	"strings"

	"github.com/irtool/irtool/ir"
)

// Device is where a node runs or a value lives.
type Device string

// The two devices a program uses.
const (
	CPU Device = "cpu" // the host, through the CPU kernels
	NPU Device = "npu" // the Ascend NPU, through aclnn calls
)

// Chip is the compute side of one device: peak matrix throughput and memory
// bandwidth. Elementwise and normalisation ops are costed by bandwidth
// alone, which is what bounds them on every device we model.
type Chip struct {
	Name        string  `json:"name"`         // what the numbers describe
	MatmulFLOPS float64 `json:"matmul_flops"` // peak matrix-unit throughput, FLOP/s (FP16 for the NPU, FP32 for a CPU)
	MemBW       float64 `json:"mem_bw"`       // peak memory bandwidth, bytes/s
	Source      string  `json:"source"`       // where the numbers come from
	// MemBytes is the device memory a rank's weights, KV cache, arena
	// and HCCL buffers must fit in (0: not modelled).
	MemBytes int64 `json:"mem_bytes"`
	// AICores is the number of AI (cube) cores, 0 when not stated.
	AICores int `json:"ai_cores,omitempty"`
}

// Overheads are the fixed costs the model adds to compute and traffic. They
// are assumptions, not specifications: docs/LOWERING.md says where each
// value comes from and how the predictions move with it.
type Overheads struct {
	// LaunchUS is the host time of one eager aclnn call: the two-phase
	// aclnnXxxGetWorkspaceSize + aclnnXxx submission (CANN docs, aclCreateTensor and the two-phase aclnn calls).
	LaunchUS float64 `json:"launch_us"`
	// WQLaunchUS is the extra host time of an eager
	// aclnnWeightQuantBatchMatmulV2 call (its heavier host tiling and
	// the antiquant scale and offset tensors it is handed).
	WQLaunchUS float64 `json:"wq_launch_us"`
	// TaskUS is the device time every aclnn call costs on top of its
	// traffic (task dispatch, tiling, pipeline fill); small decode kernels
	// are bounded by it.
	TaskUS float64 `json:"task_us"`
	// GraphLaunchUS is the host time of one aclmdlRIExecuteAsync replay of a
	// captured segment (CANN docs, aclmdlRI capture API).
	GraphLaunchUS float64 `json:"graph_launch_us"`
	// CopyUS is the fixed cost of one host<->device copy, synchronisation
	// included (the copy ends a segment, CANN's single-stream capture rules).
	CopyUS float64 `json:"copy_us"`
	// CPUOpUS is the fixed host cost of one CPU kernel call.
	CPUOpUS float64 `json:"cpu_op_us"`
}

// Profile describes one target machine.
type Profile struct {
	Name        string // the --target name
	Description string
	// NPU is nil for the cpu target.
	NPU *Chip
	// Host is the CPU that runs fallbacks and the host steps.
	Host Chip
	// LinkBW is the host<->device copy bandwidth in bytes/s (0 without an NPU).
	LinkBW     float64
	LinkSource string
	// Interconnect is the NPU-to-NPU fabric the link model of the
	// collectives uses (nil: the target has no multi-NPU server).
	Interconnect *Interconnect
	// GraphCapture reports whether the device supports aclmdlRI capture and
	// replay; without it every NPU segment runs eagerly.
	GraphCapture bool
	// Align is the alignment of every planned device offset, in bytes.
	Align int64
	// Overheads are the fixed per-call, per-task and per-copy costs, and
	// Costs the kernel classes' efficiencies (kernelcost.go).
	Overheads Overheads
	Costs     Costs
	// Family names the op rules, gate and call limits the profile
	// decides with ("a2", "310p", "310b", "310b-strict", "cpu"): what a
	// target file's "rules" field selects.
	Family string
	// only, when set, limits the NPU to these ops (a target file's
	// npu_ops).
	only map[ir.Op]bool
	// rules are the op rules the profile decides with (DefaultRules, or
	// the set Rules.Profile was called on).
	rules *Rules
	// gate vetoes kernels this part lacks (nil: none).
	gate func(n *ir.Node, s Support) Support
	// limits are the operators' documented limits checked on every
	// supported node (limits.go).
	limits []CallLimit
}

var profiles = map[string]func() *Profile{
	"ascend910b":        ascend910B,
	"ascend910b1":       func() *Profile { return a2Profile(sku910B1) },
	"ascend910b2":       func() *Profile { return a2Profile(sku910B2) },
	"ascend910b3":       func() *Profile { return a2Profile(sku910B3) },
	"ascend910b4":       func() *Profile { return a2Profile(sku910B4) },
	"ascend310p":        ascend310P,
	"ascend310b":        ascend310B,
	"ascend310b-strict": ascend310BStrict,
	"cpu":               cpuOnly,
}

// Get returns a fresh copy of the named profile; callers may change its
// fields (for example Overheads, to study their effect) without affecting
// others.
func Get(name string) (*Profile, error) {
	mk, ok := profiles[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("target: unknown target %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return mk(), nil
}

// Names lists the profile names, sorted.
func Names() []string {
	out := make([]string, 0, len(profiles))
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// HasNPU reports whether the profile has an NPU to place nodes on.
func (p *Profile) HasNPU() bool { return p.NPU != nil }

// Support says whether and how the NPU runs one node.
type Support struct {
	// OK: the NPU runs this node.
	OK bool
	// Kernel is the aclnn operator the node lowers to ("aclnnRmsNorm"),
	// empty for nodes that launch nothing (leaves and pure views).
	Kernel string
	// Calls are the aclnn calls the node costs when launched eagerly, in
	// order, as llama.cpp's CANN backend issues them (ggml-cann's supports_op and compute_forward); Kernel
	// is one of them. Captured segments replay them as device tasks.
	Calls []string
	// HostSync marks kernels that synchronise with the host internally;
	// a segment holding one cannot be captured (github.com/ggml-org/llama.cpp/issues/16586).
	HostSync bool
	// Reason says why the NPU does not run the node, or notes a limit.
	Reason string
	// Stay says why a node the NPU runs must stay there: moving it to the
	// host would change the calls its NPU users make, which the node's
	// own cost cannot show (the RoPE tables, rope.go). The partition does
	// not move such a node; empty: it is free to.
	Stay string
}

// Supports decides whether the NPU runs n. Leaves and pure views need no
// kernel and are always supported; they live wherever their users or their
// storage put them. n may be symbolic: rules that need a constant dimension
// refuse when it is not one.
func (p *Profile) Supports(n *ir.Node) Support {
	info, ok := n.Info()
	if !ok {
		return Support{Reason: fmt.Sprintf("op %q is not registered", n.Op)}
	}
	if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
		return Support{OK: true}
	}
	if p.NPU == nil {
		return Support{Reason: "target " + p.Name + " has no NPU"}
	}
	r, ok := p.rules.Lookup(n.Op)
	if !ok {
		return Support{Reason: fmt.Sprintf("no target rule for op %q", n.Op)}
	}
	if r.NPU == nil {
		if r.CPUOnly != "" {
			return Support{Reason: r.CPUOnly}
		}
		return Support{Reason: fmt.Sprintf("no aclnn lowering for op %q", n.Op)}
	}
	if p.only != nil && !p.only[n.Op] {
		return Support{Reason: fmt.Sprintf("target %s does not list op %q among its npu_ops", p.Name, n.Op)}
	}
	s := r.NPU(n)
	if s.OK && len(s.Calls) == 0 {
		s.Calls = []string{s.Kernel}
	}
	if s.OK && p.gate != nil {
		s = p.gate(n, s)
	}
	if s.OK {
		s = checkLimits(p.limits, n, s)
	}
	return s
}

// Ops lists the ops this profile claims for the NPU, sorted: those with an
// NPU rule, none on a profile without an NPU. A node of such an op runs on
// the NPU when the rule accepts it (and, on 310-class parts, the profile's
// gate lets it), so every op listed needs an aclnn recipe in the CANN
// binding (runtime/acl checks that under -tags cann).
func (p *Profile) Ops() []ir.Op {
	if p.NPU == nil {
		return nil
	}
	var out []ir.Op
	for _, op := range p.rules.Ops() {
		if p.only != nil && !p.only[op] {
			continue
		}
		if r, _ := p.rules.Lookup(op); r.NPU != nil {
			out = append(out, op)
		}
	}
	return out
}

const (
	kib = 1024.0
	gb  = 1e9
	tf  = 1e12
)

// The hosts. Their numbers only rank placements against each other and the
// NPU; docs/LOWERING.md states them as assumptions where no datasheet says.
func serverHost() Chip {
	return Chip{Name: "server host CPU (generic, assumed)", MatmulFLOPS: 1 * tf, MemBW: 100 * gb,
		Source: "assumption: a 2-socket server host sustaining 1 TFLOP/s FP32 and 100 GB/s"}
}

// hccs910B is the HCCS full mesh of an 8-NPU Atlas 800T/800I A2 server
// (docs/LOWERING.md, "Link model"): the algorithm and its formulas are the
// HCCL user guide's; the link bandwidth and the step latency are
// assumptions.
func hccs910B() *Interconnect {
	return &Interconnect{
		Name: "HCCS full mesh, 8 NPUs (Atlas 800 A2)", LinkBW: 28 * gb, StepUS: 8,
		ReduceBW:  1.2e12 / 3, // a sum reads two operands and writes one at HBM speed
		Algorithm: Mesh, MaxRanks: 8,
		Source: "HCCL user guide, Collective Communication Algorithms: Mesh (intra-server full mesh, α-β-γ costs); " +
			"assumption: 28 GB/s per direction per HCCS link (the 392 GB/s quoted per 910B read as 7 links x 2 directions) and α = 8 µs",
	}
}

// defaultOverheads are the fitted per-call costs (calibration.go) with
// the copy and CPU-call costs, which no public figure pins (assumptions).
func defaultOverheads() Overheads {
	return Overheads{LaunchUS: calibrated.LaunchUS, WQLaunchUS: calibrated.WQLaunchUS, TaskUS: calibrated.TaskUS,
		GraphLaunchUS: calibrated.GraphLaunchUS, CopyUS: 15, CPUOpUS: 0.5}
}

// The 310B is an SoC: four TaiShan cores and one DaVinci V300 AI core on one
// LPDDR4X bus (Atlas 200I DK A2 datasheet).
func ascend310BChips() (npu Chip, host Chip, link float64) {
	const src = "Atlas 200I DK A2 basic specifications (hiascend.com Atlas200IDKA2DeveloperKit pd_0004): FP16 4 TFLOPS, INT8 8 TOPS, LPDDR4X 3200 Mbps x 64 bit = 25.6 GB/s, 4 TaiShan V200M cores at 1.0 GHz"
	npu = Chip{Name: "Ascend 310B (Atlas 200I/500 A2)", MatmulFLOPS: 4 * tf, MemBW: 25.6 * gb, Source: src}
	host = Chip{Name: "4x TaiShan V200M @1.0 GHz", MatmulFLOPS: 32e9, MemBW: 25.6 * gb,
		Source: src + "; FP32 peak assumed 8 FLOP/cycle/core (one 128-bit FMA)"}
	// Host and device share the DRAM: a copy reads and writes it once each.
	return npu, host, 12.8 * gb
}

func ascend310B() *Profile {
	npu, host, link := ascend310BChips()
	return &Profile{
		Name:         "ascend310b",
		Description:  "Atlas 200I/500 A2 inference products (Ascend 310B SoC): no ACL graph, no quantised matmul, no aclnn RoPE",
		NPU:          &npu,
		Host:         host,
		LinkBW:       link,
		LinkSource:   "shared LPDDR4X: a copy moves every byte twice over the 25.6 GB/s bus",
		GraphCapture: false, // aclmdlRI capture is not offered on Atlas 200I/500 A2 (CANN docs, aclmdlRI capture API)
		Align:        64,
		Overheads:    defaultOverheads(),
		Costs:        calibrated.Costs,
		Family:       "310b",
		rules:        defaultRules,
		gate:         gate310B,
	}
}

func ascend310BStrict() *Profile {
	p := ascend310B()
	p.Name = "ascend310b-strict"
	p.Family = "310b-strict"
	p.Description = "Ascend 310B restricted to the aclnn operators whose CANN product table lists Atlas 200I/500 A2 as supported"
	p.gate = gate310BStrict
	return p
}

func cpuOnly() *Profile {
	return &Profile{
		Name:        "cpu",
		Description: "the host alone; every op runs through the CPU kernels",
		Host:        serverHost(),
		Align:       32, // ggml-cpu TENSOR_ALIGNMENT
		Overheads:   defaultOverheads(),
		Costs:       calibrated.Costs,
		Family:      "cpu",
		rules:       defaultRules,
	}
}
