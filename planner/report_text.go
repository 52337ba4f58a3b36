package planner

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText prints the report as irtool plan does: a short summary of the
// instance name (its buffers at alignment align), the lower bound, the
// arena and its certificate, then a table of the strategies in the order
// set's "best" runs them.
func (rep *Report) WriteText(w io.Writer, name string, align int64, set *StrategySet) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "instance\t%s (%d buffers, alignment %d)\n", name, rep.Buffers, align)
	fmt.Fprintf(tw, "lower bound\t%d B\n", rep.LowerBound)
	fmt.Fprintf(tw, "arena\t%d B\t%.4f x LB, by %s after %.1f ms (of %.1f ms)\n", rep.Arena, rep.Ratio, rep.Winner, rep.BestMS, rep.MS)
	if rep.Optimal {
		fmt.Fprintf(tw, "optimal\tproven\t(arena = proven bound %d B)\n", rep.Bound)
	} else {
		fmt.Fprintf(tw, "optimal\tnot proven\tproven bound %d B, gap %.4f%%\n", rep.Bound, 100*rep.Gap)
	}
	fmt.Fprintf(tw, "naive\t%d B\t%.4f x LB\n", rep.Naive, Ratio(rep.Naive, rep.LowerBound))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "strategy\tarena (B)\tx LB\tms")
	for _, s := range set.Names() {
		arena, ok := rep.Strategies[s]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.1f\n", s, arena, Ratio(arena, rep.LowerBound), rep.StrategyMS[s])
	}
	if len(rep.Unfinished) > 0 {
		fmt.Fprintf(tw, "unfinished\t%s\t(stopped by the budget)\n", strings.Join(rep.Unfinished, ", "))
	}
	return tw.Flush()
}
