package passes

import (
	"fmt"
	"io"
	"slices"

	"github.com/irtool/irtool/ir"
)

// Instrument observes a pipeline run, as MLIR's PassInstrumentation and
// TVM's PassInstrument do: Run calls Before with the graph a pass is about
// to transform and After with the graph it left and its statistics, for
// every pass, instruments in the order of Options.Instruments. The hooks
// must not modify the graph. An error from a hook stops the run; Run's
// error names the pass and the instrument. Printing (PrintBefore,
// PrintAfter), dumping (DumpDir) and translation validation (Check) are
// instruments too, run before the ones of Options.Instruments.
type Instrument struct {
	Name   string
	Before func(p Pass, index int, g *ir.Graph) error
	After  func(p Pass, index int, g *ir.Graph, st PassStat) error
}

// printHeader is mlir-opt's dump header: "// -----// IR Dump After cse //----- //".
func printHeader(w io.Writer, when, pass string) {
	fmt.Fprintf(w, "// -----// IR Dump %s %s //----- //\n", when, pass)
}

// selected reports whether names select pass ("all" selects every pass).
func selected(names []string, pass string) bool {
	return slices.Contains(names, "all") || slices.Contains(names, pass)
}

// instruments returns the built-in instruments the options ask for, then
// opts.Instruments. The dump directory gets 00-input.ir at once.
func (opts Options) instruments(g *ir.Graph, res *Result) ([]Instrument, error) {
	var out []Instrument
	if opts.Print != nil && len(opts.PrintBefore) > 0 {
		out = append(out, Instrument{Name: "print-ir-before", Before: func(p Pass, _ int, g *ir.Graph) error {
			if !selected(opts.PrintBefore, p.Name) {
				return nil
			}
			printHeader(opts.Print, "Before", p.Name)
			return ir.Print(opts.Print, g)
		}})
	}
	if opts.Print != nil && (len(opts.PrintAfter) > 0 || opts.PrintAfterChange) {
		out = append(out, Instrument{Name: "print-ir-after", After: func(p Pass, _ int, g *ir.Graph, st PassStat) error {
			if len(opts.PrintAfter) > 0 && !selected(opts.PrintAfter, p.Name) || opts.PrintAfterChange && !st.Changed {
				return nil
			}
			printHeader(opts.Print, "After", p.Name)
			return ir.Print(opts.Print, g)
		}})
	}
	if opts.DumpDir != "" {
		d, err := newDumper(opts.DumpDir, g)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if opts.Check != nil {
		out = append(out, opts.Check.instrument(res))
	}
	return append(out, opts.Instruments...), nil
}
