package parallel

import (
	"fmt"
	"io"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// This file holds what a split adds to each rank's compile (compile --tp
// N and --pp M): the rank's record, with its collectives, their buffers,
// its device memory against the device's (2 × HCCL_BUFFSIZE per
// communicator, CANN's HCCL_BUFFSIZE documentation) and the link model's
// decode step (target.Profile.EstimateStep); and the tables it prints.

// Rank is one rank's part of compile --json with --tp or --pp.
type Rank struct {
	Rank int `json:"rank"`
	// TPRank and Stage place the rank: its tensor-parallel rank and its
	// pipeline stage (0 without --tp or --pp).
	TPRank       int            `json:"tp_rank"`
	Stage        int            `json:"stage"`
	Nodes        int            `json:"nodes"`
	Ops          map[string]int `json:"ops"`
	Collectives  []string       `json:"collectives"`
	Memory       any            `json:"memory,omitempty"`
	MemoryDecode any            `json:"memory_decode,omitempty"`
	Partition    any            `json:"partition,omitempty"`
	Program      any            `json:"program,omitempty"`
	// Predicted is the cost model's decode step of the rank's lowered
	// program (the "predicted" object of the whole model, cann.Predict).
	Predicted any `json:"predicted,omitempty"`
	// CollectiveBuffers are the collectives' operands and results in the
	// rank's decode arena: planned like any tensor, at fixed offsets.
	CollectiveBuffers CollectiveBuffers `json:"collective_buffers"`
	// CollectiveBytes is CollectiveBuffers.Bytes.
	CollectiveBytes int64         `json:"collective_bytes"`
	DeviceMemory    *DeviceMemory `json:"device_memory,omitempty"`
	// Step is the link model's decode step of the rank.
	Step *target.StepEstimate `json:"step,omitempty"`
}

// AnalyzeRank fills rank i's record from its compile result r (the
// rank's stages, which the caller's records fill, aside): the graph's
// ops and collectives, the collective buffers, the device memory under
// prof with buffMB MB of HCCL_BUFFSIZE (an error naming the rank when it
// does not fit) and the link model's step, which it adds to p. It prints
// one line for each to w.
func AnalyzeRank(out *Rank, r *compiler.Result, rm RankModel, prof *target.Profile, buffMB int64, p *Prediction, w io.Writer) error {
	i := out.Rank
	g := r.Graph()
	var colls []string
	for _, c := range ir.Collectives(g) {
		colls = append(colls, c.String())
	}
	fmt.Fprintf(w, "  %d ops, %d collectives per step\n", g.NumOps(), len(colls))
	out.TPRank, out.Stage, out.Nodes, out.Ops, out.Collectives = rm.TPRank, rm.Stage, g.NumOps(), g.OpCounts(), colls
	var err error
	if out.CollectiveBuffers, err = CollectiveBuffersOf(r); err != nil {
		return fmt.Errorf("rank %d: %w", i, err)
	}
	out.CollectiveBytes = out.CollectiveBuffers.Bytes
	fmt.Fprintf(w, "  collective buffers: %d planned in the decode arena, %d B at fixed offsets\n", out.CollectiveBuffers.Count, out.CollectiveBytes)
	if mem := MemoryOf(r, prof, rm.Comms, buffMB); mem != nil {
		out.DeviceMemory = mem
		fmt.Fprintf(w, "  device memory: %d B = weights %d + KV %d + arena %d + other %d + HCCL buffers %d (%d communicator(s) x 2 x %d MB) of %d B\n",
			mem.TotalBytes, mem.WeightBytes, mem.KVBytes, mem.ArenaBytes, mem.OtherBytes, mem.HCCLBufferBytes, mem.Communicators, buffMB, mem.CapacityBytes)
		if !mem.Fits {
			return fmt.Errorf("rank %d (tp rank %d, stage %d): needs %d B of device memory (weights %d, KV cache %d, arena %d, other %d, HCCL buffers %d = %d communicator(s) x 2 x HCCL_BUFFSIZE %d MB), more than the %s's %d B",
				i, rm.TPRank, rm.Stage, mem.TotalBytes, mem.WeightBytes, mem.KVBytes, mem.ArenaBytes, mem.OtherBytes, mem.HCCLBufferBytes, mem.Communicators, buffMB, prof.NPU.Name, mem.CapacityBytes)
		}
	}
	st, err := StepOf(r, prof)
	if err != nil {
		return fmt.Errorf("rank %d: %w", i, err)
	}
	if st != nil {
		out.Step = st
		p.Add(rm, st)
		fmt.Fprintf(w, "  link model: decode step %.0f us = compute %.0f + collectives %.0f + launch and copies %.0f\n",
			st.StepUS, st.ComputeUS, st.CollectiveUS, st.LaunchUS)
	}
	return nil
}

// LinkProfile is target name's profile under the ranks' rules (Profile)
// with the link model's collective algorithm algo ("": the target's);
// the error names compile's --link-algo.
func LinkProfile(name, algo string) (*target.Profile, error) {
	prof, err := Profile(name)
	if err != nil {
		return nil, err
	}
	if algo != "" {
		if prof.Interconnect == nil {
			return nil, fmt.Errorf("--link-algo %s: target %s has no NPU interconnect", algo, prof.Name)
		}
		ic := *prof.Interconnect
		ic.Algorithm = target.Algorithm(algo)
		prof.Interconnect = &ic
	}
	return prof, nil
}

// WriteSweep prints a sweep's table (compile --tp-sweep): one row per
// degree, or why it was refused.
func WriteSweep(w io.Writer, rows []SweepRow) {
	fmt.Fprintf(w, "  %-4s %10s %10s %11s %14s %10s  %s\n", "tp", "step us", "tok/s", "compute us", "collective us", "rank MB", "collectives per step (n summed)")
	for _, row := range rows {
		if row.Error != "" {
			fmt.Fprintf(w, "  %-4d refused: %s\n", row.TP, row.Error)
			continue
		}
		var cs []string
		for _, c := range row.Collectives {
			cs = append(cs, fmt.Sprintf("%s x%d %.1f KB", c.Op, c.Count, c.Bytes/1024))
		}
		if len(cs) == 0 {
			cs = []string{"none"}
		}
		fmt.Fprintf(w, "  %-4d %10.0f %10.1f %11.0f %14.0f %10.1f  %s\n", row.TP, row.StepUS, row.PredictedTokS, row.ComputeUS, row.CollectiveUS,
			float64(row.WeightBytes)/(1<<20), strings.Join(cs, ", "))
	}
}
