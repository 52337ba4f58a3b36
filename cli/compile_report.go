package cli

import (
	"bytes"
	"fmt"
	"github.com/irtool/irtool/compiler/summary"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/viz"
)

// The report runs last: with --report FILE.html it gathers what the
// driver's stages produced (the graph after every pass, the memory
// plans, the partition, the lowered program) into one self-contained HTML
// page (viz.Report). Parts whose stage did not run are left out.

func outReport(j *compileJob) error {
	if j.Flags.Report == "" {
		return nil
	}
	r, err := summary.Report(summary.ReportInfo{Model: j.Out.Model, Arch: j.Out.Arch, Target: j.Flags.Target, Passes: j.Flags.Passes,
		Ctx: j.Flags.Ctx, UBatch: j.Flags.UBatch, KVType: j.Flags.KVType, KVWrite: j.Flags.KVWrite}, j.Input, j.R)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		return err
	}
	if err := safeio.WriteFile(j.Flags.Report, buf.Bytes()); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	fmt.Fprintf(j.Stderr, "irtool compile: wrote %s (%s; %d columns, %d charts)\n", j.Flags.Report, viz.HumanBytes(int64(buf.Len())), len(r.Columns), len(r.Charts))
	return nil
}
