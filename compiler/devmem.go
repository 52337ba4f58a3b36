package compiler

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/target"
)

// StreamReserveBytes is the workspace reserve runtime/acl takes from its
// pool for each stream (acl.Options.WorkspaceReserve, run's
// --acl-workspace default): scratch for an aclnn operator whose
// GetWorkspaceSize answer exceeds what the plan gave its kernel.
const StreamReserveBytes = 64 << 20

// ReservedStreams are the streams a runner's device holds a reserve for:
// the device's default stream (aclrtSetDevice) and the runner's own.
const ReservedStreams = 2

// TableBytes is the device memory runtime/acl keeps per device for the
// small tables it uploads while preparing kernels (acl.Options.ConstBytes);
// DeviceMemory.TablesBytes adds the RoPE tables of the program.
const TableBytes = 1 << 20

// RuntimeBytes is the device memory CANN itself holds on a device that
// runs a job, outside every allocation of the program: llama.cpp's memory
// breakdown on an Ascend 910B4 (ggml-org/llama.cpp PR 16752, the CANN0
// line "30196 = 28468 + (1300 = 942 + 48 + 310) + 427" MiB: total = free
// + (self = model + context + compute) + unaccounted) leaves 427 MiB
// unaccounted; CANN 8.5's "Precautions for Memory Usage"
// (aclcppdevg_03_0093) says the system package loaded on an A2 device
// occupies "about 300 MB". Assumption: the same 427 MiB on every SKU.
const RuntimeBytes = 427 << 20

// DeviceMemory is the device memory of one device running the compiled
// model: what runtime/program and runtime/acl allocate (PoolBytes, one
// aclrtMalloc at load), what CANN holds besides (RuntimeBytes), and the
// largest context that fits the target's device.
type DeviceMemory struct {
	Target string `json:"target"`
	// CapacityBytes is the device's memory (target.Chip.MemBytes).
	CapacityBytes int64 `json:"capacity_bytes"`
	// Ctx and UBatch are the KV cells and the tokens of the largest
	// step (chunked prefill: a longer prompt runs in steps of UBatch).
	Ctx    int64 `json:"ctx"`
	UBatch int64 `json:"ubatch"`
	// WeightsBytes are the NPU's weights, each as the device holds it
	// (partition.DeviceWeights: its blocks and, or only, the copy
	// runtime/acl converts at load): partition's device_weight_bytes. The
	// weights region holds them at the target's alignment.
	WeightsBytes int64 `json:"weights_bytes"`
	KVBytes      int64 `json:"kv_bytes"`
	// ArenaBytes is the arena of the largest step (UBatch tokens over Ctx
	// cells): intermediates, and every kernel's planned workspace
	// (staging, scratch such as attention scores, aclnn workspaces).
	ArenaBytes int64 `json:"arena_bytes"`
	// WorkspaceBytes is the largest kernel workspace planned in the arena
	// (part of ArenaBytes).
	WorkspaceBytes int64 `json:"workspace_bytes"`
	// OtherBytes are the constants, inputs and outputs regions and
	// TablesBytes.
	OtherBytes int64 `json:"other_bytes"`
	// TablesBytes is runtime/acl's table block (acl.Options.TableBytes,
	// reserved at load): TableBytes for small tables, the RoPE angle
	// table of each distinct rope (n_pos × head dim f32, the positions'
	// angles precomputed), each rope_cache node's tables for UBatch
	// positions (positions, angles, cos and sin: 4·(T + 3·T·D) bytes)
	// and, when the NPU multiplies a q5_0 weight, the −0.5 offsets of its
	// high-bit matmuls (target.HighBitsOffsetTable f16 values).
	TablesBytes int64 `json:"tables_bytes"`
	// ReserveBytes is StreamReserveBytes per reserved stream.
	ReserveBytes int64 `json:"reserve_bytes"`
	// RuntimeBytes is CANN's own (the constant RuntimeBytes).
	RuntimeBytes int64 `json:"runtime_bytes"`
	// PoolBytes is what irtool allocates: weights, KV, arena, other and
	// reserve, each region rounded as the pool rounds it.
	PoolBytes int64 `json:"pool_bytes"`
	// TotalBytes is PoolBytes + RuntimeBytes, Fits whether it is at most
	// CapacityBytes.
	TotalBytes int64 `json:"total_bytes"`
	Fits       bool  `json:"fits"`
	// MaxCtx is the largest context (a multiple of models.KVPad) whose
	// total fits, with the KV cache and arena grown linearly in the
	// context from two plans (0: none fits).
	MaxCtx int64 `json:"max_ctx"`
}

// RunBindings are the bindings of a runtime step of n tokens over kv
// cells with the KV head at 0 and one row of logits, as runtime/program
// runs it.
func RunBindings(n, kv int64) ir.Bindings {
	return ir.Bindings{models.SymTokens: n, models.SymKV: kv, models.SymOutputs: 1, models.SymKVHead: 0}
}

// PoolAlign is the granularity of runtime/device.MemPool's blocks
// (device.PoolBlockAlign; runtime/program's tests check they agree: the
// compiler sits below the runtime).
const PoolAlign = 64

// poolRound is the bytes a pool block of n bytes occupies.
func poolRound(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return (n + PoolAlign - 1) / PoolAlign * PoolAlign
}

// DeviceMemory computes the device memory of the compiled model on one
// device of the target: it lowers the largest step (Options.UBatch
// tokens over Options.Ctx cells) and, for MaxCtx, a step over half the
// cells. It needs the partition stage and a target with an NPU.
func (r *Result) DeviceMemory() (*DeviceMemory, error) {
	if r.Profile == nil || r.Profile.NPU == nil {
		return nil, fmt.Errorf("compiler: device memory: target %s has no NPU", r.Options.Target)
	}
	if r.Partition == nil {
		return nil, fmt.Errorf("compiler: device memory: the partition stage did not run")
	}
	ctx, ub := r.Options.Ctx, min(r.Options.UBatch, r.Options.Ctx)
	m := &DeviceMemory{Target: r.Profile.Name, CapacityBytes: r.Profile.NPU.MemBytes, Ctx: ctx, UBatch: ub,
		ReserveBytes: ReservedStreams * StreamReserveBytes, RuntimeBytes: RuntimeBytes}
	prog, plan, err := r.Lower(RunBindings(ub, ctx))
	if err != nil {
		return nil, fmt.Errorf("compiler: device memory: %w", err)
	}
	for _, w := range prog.Weights {
		if w.Addr.Region == cann.RegionWeights {
			m.WeightsBytes += w.DeviceBytes
		}
	}
	var pool int64
	for _, rg := range prog.Regions {
		if rg.Device != string(target.NPU) {
			continue
		}
		pool += poolRound(rg.Bytes)
		switch rg.Name {
		case cann.RegionWeights:
		case cann.RegionKV:
			m.KVBytes += rg.Bytes
		case cann.RegionArena:
			m.ArenaBytes += rg.Bytes
		default:
			m.OtherBytes += rg.Bytes
		}
	}
	for _, w := range plan.Workspaces {
		m.WorkspaceBytes = max(m.WorkspaceBytes, w.Bytes)
	}
	m.TablesBytes = TableBytes + ropeTablesBytes(prog, ub)
	m.OtherBytes += m.TablesBytes
	pool += poolRound(m.TablesBytes) + m.ReserveBytes
	m.PoolBytes = pool
	m.TotalBytes = m.PoolBytes + m.RuntimeBytes
	m.Fits = m.CapacityBytes == 0 || m.TotalBytes <= m.CapacityBytes // 0: a target file's device of unknown size
	if m.MaxCtx, err = r.maxCtx(m); err != nil {
		return nil, err
	}
	return m, nil
}

// ropeTablesBytes are the RoPE tables runtime/acl keeps for prog's
// kernels: the angle table of each distinct rope with n_pos
// (cann.RopePositionsAttr), n_pos × D f32, and one slot per rope_cache
// node of 4·(ub + 3·ub·D) bytes, each rounded to 64 bytes as the table
// block carves them.
func ropeTablesBytes(prog *cann.Program, ub int64) int64 {
	var n int64
	seen := map[string]bool{}
	for _, sg := range prog.Segments {
		if sg.Device != string(target.NPU) {
			continue
		}
		for _, k := range sg.Kernels {
			D := k.Output.Ne[0]
			if np, ok := k.Attrs.Int(cann.RopePositionsAttr); ok && np > 0 {
				switch {
				case k.Op == ir.OpRope && len(k.Inputs) > 0:
					D = k.Inputs[0].Ne[0] // x [D, H, T]
				case k.Op == ir.OpRopeSetRows && len(k.Inputs) > 1:
					D = k.Inputs[1].Ne[0] // (dst, x, pos, idx)
				}
				rp := k.Attrs.Rope()
				key := fmt.Sprintf("%d %d %d %g", np, D, rp.Mode, rp.FreqBase)
				if !seen[key] {
					seen[key] = true
					n += poolRound(4 * np * D)
				}
			}
			if k.Op == ir.OpRopeCache {
				n += poolRound(4 * (ub + 3*ub*D))
			}
			if (k.Op == ir.OpMulMat || k.Op == ir.OpMulMatAdd) && len(k.Inputs) > 0 && !seen["high bits"] {
				if l, ok := target.WQLayout(k.Inputs[0].DType); ok && l.HighBits {
					// the −0.5 offsets and the shift table of the
					// high-bit matmuls (target.HighBitsOffsetTable)
					seen["high bits"] = true
					n += poolRound(2*target.HighBitsOffsetTable) + poolRound(8)
				}
			}
		}
	}
	return n
}

// maxCtx is the largest multiple of models.KVPad whose pool fits: the KV
// cache grows by its bytes per cell, the arena along the line through
// the plans over ctx and ctx/2 cells (attention's masks and scores are
// linear in the cells).
func (r *Result) maxCtx(m *DeviceMemory) (int64, error) {
	ctx := m.Ctx
	arena0, ctx0 := m.ArenaBytes, ctx
	if half := ctx / 2; half >= max(m.UBatch, 1) {
		_, p, err := r.Lower(RunBindings(min(m.UBatch, half), half))
		if err != nil {
			return 0, fmt.Errorf("compiler: device memory: %w", err)
		}
		arena0, ctx0 = p.ArenaBytes, half
	}
	// total(c) = fixed + c·perCell, with perCell the KV cache's and the
	// arena's growth per cell.
	perCell := float64(m.KVBytes) / float64(ctx)
	if ctx > ctx0 {
		perCell += float64(m.ArenaBytes-arena0) / float64(ctx-ctx0)
	}
	fixed := float64(m.TotalBytes) - perCell*float64(ctx)
	if m.CapacityBytes == 0 {
		return 0, nil
	}
	room := float64(m.CapacityBytes) - fixed
	if room <= 0 || perCell <= 0 {
		return 0, nil
	}
	c := int64(room/perCell) / models.KVPad * models.KVPad
	// Below the compiled context the plans are at hand: step down until
	// one fits, so that the context named is one that does.
	for tries := 0; c > 0 && c < ctx && tries < 64; tries++ {
		t, err := r.poolAt(m, c)
		if err != nil {
			return 0, err
		}
		if t+m.RuntimeBytes <= m.CapacityBytes {
			break
		}
		c -= models.KVPad
	}
	return max(c, 0), nil
}

// poolAt is the pool of the step over c cells: m's, with the KV cache
// scaled to c cells and the arena of that step's plan.
func (r *Result) poolAt(m *DeviceMemory, c int64) (int64, error) {
	_, p, err := r.Lower(RunBindings(min(m.UBatch, c), c))
	if err != nil {
		return 0, fmt.Errorf("compiler: device memory: %w", err)
	}
	kv := m.KVBytes * c / m.Ctx
	return m.PoolBytes - poolRound(m.KVBytes) - poolRound(m.ArenaBytes) + poolRound(kv) + poolRound(p.ArenaBytes), nil
}

// CheckFits is the error of a context that does not fit the device: one
// line naming the largest that does; nil when it fits.
func (m *DeviceMemory) CheckFits() error {
	if m.Fits {
		return nil
	}
	if m.MaxCtx <= 0 {
		return fmt.Errorf("device memory: %d B needed (weights %d B alone) do not fit the %d B of %s at any context", m.TotalBytes, m.WeightsBytes, m.CapacityBytes, m.Target)
	}
	return fmt.Errorf("device memory: context %d needs %d B, more than the %d B of %s; the largest context that fits is %d (--ctx %d)",
		m.Ctx, m.TotalBytes, m.CapacityBytes, m.Target, m.MaxCtx, m.MaxCtx)
}
