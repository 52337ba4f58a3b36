// Package viz draws the compiler's stages so that a person can check them by
// eye: the IR as a DOT graph (one cluster per layer, stacked top to bottom),
// the memory plan as a liveness chart and as an interference matrix per
// layer ("which buffers may share memory") or graph, the partition and the
// lowered segments as clustered DOT graphs, and one self-contained HTML page
// that shows the IR after every pass side by side.
//
// Why pictures at all: a graph compiler's bugs are mostly structural (a
// fusion that captured the wrong operand, a buffer reused while still live, a
// cut edge that forces a copy every token), and structure is what a text dump
// hides and a drawing shows. Every view is therefore built from the same data
// the compiler itself uses (ir.Graph, planner.Problem and
// planner.Assignment, a node-to-device mapping) rather than from a separate
// description that could drift.
//
// Output is deterministic: the same graph gives byte-identical DOT, SVG and
// HTML, so views can be golden-tested and diffed between compiler versions.
// DOT is written by the package itself (type DOT: node n12 draws IR node
// %12, the ID of the text IR, the report and irtool's JSON) and turned into
// SVG by Graphviz's dot program (RenderSVG), which is optional: when it is missing
// RenderSVG says so and names the Debian package to install. The liveness
// chart, the interference matrix and the HTML report are written directly
// and need nothing external (they size themselves to their text with
// TextWidth, so titles wrap instead of being cut off);
// the HTML page has its style and script inline and loads nothing from the
// network.
//
// The partition views take a plain mapping (Partition: node ID to device and
// segment) so that any partitioner or lowering can feed them without this
// package depending on it.
package viz
