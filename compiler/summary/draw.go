package summary

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/viz"
)

// Picture says which picture of a compiler result Draw makes (irtool viz).
type Picture struct {
	// View is graph, liveness, interference, buffers, partition or
	// segments; Format is dot, svg, html or (buffers) txt.
	View, Format string
	// Title heads the DOT drawings and their pages. ChartWhat begins the
	// memory chart's title, followed by the step's shape (UBatch tokens,
	// Ctx KV cells) and the plan's strategy.
	Title, ChartWhat string
	UBatch, Ctx      int64
	// Layer zooms the memory views to one transformer layer (-1: all).
	Layer int
	// NoWeights leaves weights out of the graph drawings.
	NoWeights bool
	// Target names the target in the error of a partition view without a
	// partition stage.
	Target string
}

// Draw draws the picture p of the result r of the compile driver, run up
// to the stage the view needs. SVG of a DOT view needs Graphviz's dot
// (viz.RenderSVG).
func Draw(ctx context.Context, r *compiler.Result, p Picture) ([]byte, error) {
	switch {
	case p.View == "liveness":
		return drawLiveness(r, p)
	case p.View == "interference" && p.Format != "dot":
		chart, _, err := memoryChart(r, p)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := chart.WriteInterferenceSVG(&buf); err != nil {
			return nil, err
		}
		if p.Format == "svg" {
			return buf.Bytes(), nil
		}
		var page bytes.Buffer
		err = viz.WriteSVGPage(&page, chart.Title, buf.Bytes())
		return page.Bytes(), err
	case p.View == "buffers":
		chart, _, err := memoryChart(r, p)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		err = chart.WriteTable(&buf)
		return buf.Bytes(), err
	}
	d, err := drawDOT(r, p)
	if err != nil {
		return nil, err
	}
	src := []byte(d.String())
	if p.Format == "dot" {
		return src, nil
	}
	svg, err := viz.RenderSVG(ctx, src)
	if err != nil {
		if errors.Is(err, viz.ErrNoGraphviz) {
			return nil, fmt.Errorf("cannot write %s: %w", p.Format, err)
		}
		return nil, err
	}
	if p.Format == "svg" {
		return svg, nil
	}
	var buf bytes.Buffer
	err = viz.WriteSVGPage(&buf, p.Title, svg)
	return buf.Bytes(), err
}

// memoryChart returns the liveness chart of the result's worst-case plan.
func memoryChart(r *compiler.Result, p Picture) (*viz.Chart, *planner.MemoryPlan, error) {
	if r.Memory == nil {
		return nil, nil, fmt.Errorf("--what %s needs the memory plan, and this build's compile has no memory planning stage", p.View)
	}
	plan := r.Memory.Plan
	chart, err := viz.ChartFromPlan(plan)
	if err != nil {
		return nil, nil, err
	}
	chart.Title = fmt.Sprintf("%s n_tokens=%d, n_kv=%d, %s plan", p.ChartWhat, p.UBatch, p.Ctx, plan.Strategy)
	if p.Layer >= 0 {
		if chart, err = chart.Layer(p.Layer); err != nil {
			return nil, nil, fmt.Errorf("--layer: %w", err)
		}
	}
	return chart, plan, nil
}

// drawLiveness draws the liveness chart as SVG, or as a report page whose
// boxes link to the planned graph.
func drawLiveness(r *compiler.Result, p Picture) ([]byte, error) {
	chart, plan, err := memoryChart(r, p)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if p.Format == "html" {
		rep := &viz.Report{Title: chart.Title, Columns: []viz.Column{{Name: "planned graph", Graph: plan.Graph}},
			Charts: []viz.ReportChart{{Chart: chart, Graph: plan.Graph}}}
		err = rep.WriteHTML(&buf)
	} else {
		err = chart.WriteSVG(&buf)
	}
	return buf.Bytes(), err
}

// drawDOT draws the DOT views.
func drawDOT(r *compiler.Result, p Picture) (*viz.DOT, error) {
	switch p.View {
	case "interference":
		chart, _, err := memoryChart(r, p)
		if err != nil {
			return nil, err
		}
		return viz.InterferenceDOT(chart)
	case "partition", "segments":
		g, part, err := PartitionView(r, p.Target, p.View == "segments")
		if err != nil {
			return nil, err
		}
		return viz.GraphDOT(g, viz.GraphOptions{Title: p.Title, Partition: part, NoWeights: p.NoWeights})
	}
	return viz.GraphDOT(r.Graph(), viz.GraphOptions{Title: p.Title, NoWeights: p.NoWeights})
}
