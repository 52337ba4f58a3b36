package planner

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the comparison as irtool plan --compare does: the
// instance, its buffers and lower bound, then one row per strategy (arena,
// ratio to the lower bound, milliseconds, optimal or budget exhausted, or
// the strategy's error).
func (c *Comparison) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d buffers, lower bound %d B\n", c.Instance, c.Buffers, c.LowerBound)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  strategy\tarena (B)\tx LB\tms\t")
	for _, r := range c.Rows {
		if r.Err != "" {
			fmt.Fprintf(tw, "  %s\t-\t-\t%.1f\t%s\n", r.Strategy, r.MS, r.Err)
			continue
		}
		note := ""
		switch {
		case r.Optimal:
			note = "optimal"
		case r.BudgetExhausted:
			note = "budget exhausted"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%.4f\t%.1f\t%s\n", r.Strategy, r.Arena, r.Ratio, r.MS, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	_, err := fmt.Fprintln(w)
	return err
}
