package main

import (
	"fmt"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// This file holds compile --tp N: after the whole model's stages, the
// model is split over N ranks (passes.ShardTP) and each rank's graph goes
// through the same stages (its own pass pipeline, memory plans in its own
// arena, partition, lowering); --json adds "tp" and a "ranks" array.

// rankJSON is one rank's part of compile --json with --tp.
type rankJSON struct {
	Rank         int            `json:"rank"`
	Nodes        int            `json:"nodes"`
	Ops          map[string]int `json:"ops"`
	Collectives  []string       `json:"collectives"`
	Memory       any            `json:"memory,omitempty"`
	MemoryDecode any            `json:"memory_decode,omitempty"`
	Partition    any            `json:"partition,omitempty"`
	Program      any            `json:"program,omitempty"`
}

// compileTP compiles every rank's graph with opts; files the flags name
// (--out, --report, --dump-dir, --export-buffers) are the whole model's
// only.
func compileTP(j *compileJob, f *tpFlags, opts compiler.Options) error {
	mo, err := modelOptions(j.Flags.Ctx, j.Flags.KVType, j.Flags.KVWrite)
	if err != nil {
		return err
	}
	tp, err := passes.ShardTPFile(j.File, mo, passes.TPOptions{Ranks: f.Ranks, Exact: f.Exact})
	if err != nil {
		return err
	}
	info := tpInfo(tp)
	j.Out.TP = &info
	j.Out.Ranks = []rankJSON{}
	for _, r := range tp.Ranks {
		rj := *j
		rj.Flags.Out, rj.Flags.Report, rj.Flags.DumpDir, rj.Flags.ExportBuffers = "", "", "", ""
		rj.Model, rj.Input, rj.R = r.Model, r.Model.Graph, nil
		rj.Out = compileJSON{}
		fmt.Fprintf(j.Text, "\nrank %d of %d (tensor parallel%s):\n", r.Rank, len(tp.Ranks), map[bool]string{true: ", exact"}[f.Exact])
		o := opts
		o.PassOptions.DumpDir, o.PassOptions.PrintAfter, o.Progress = "", nil, nil
		if err := rj.compile(o); err != nil {
			return fmt.Errorf("rank %d: %w", r.Rank, err)
		}
		for _, s := range []struct {
			stage compiler.Stage
			out   func(*compileJob) error
		}{{compiler.StageMemory, outMemory}, {compiler.StagePartition, outPartition}, {compiler.StageLower, outLower}} {
			if err := s.out(&rj); err != nil {
				return fmt.Errorf("rank %d: %s: %w", r.Rank, s.stage, err)
			}
		}
		g := rj.Graph()
		var colls []string
		for _, c := range ir.Collectives(g) {
			colls = append(colls, c.String())
		}
		fmt.Fprintf(j.Text, "  %d ops, %d collectives per step\n", g.NumOps(), len(colls))
		j.Out.Ranks = append(j.Out.Ranks, rankJSON{Rank: r.Rank, Nodes: g.NumOps(), Ops: opCounts(g), Collectives: colls,
			Memory: rj.Out.Memory, MemoryDecode: rj.Out.MemoryDecode, Partition: rj.Out.Partition, Program: rj.Out.Program})
	}
	return nil
}
