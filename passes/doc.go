// Package passes is irtool's graph optimiser: a pass manager, a declarative
// pattern-rewrite engine and the passes built on them (dead-code and
// common-subexpression elimination, no-op elimination, constant folding, the
// RoPE cache and the fusions of llama/qwen2 graphs).
//
// The design follows the compilers it borrows from (Go's SSA backend, tinygrad, MLIR):
//
//   - The pipeline is data (Go's SSA pass table): a Pipeline is a list of
//     named passes, parsed from "a,b,c", with ordering constraints checked
//     when the package starts and before every run. Run verifies the graph
//     after every pass (MLIR's verify-each, on by default), records whether
//     each pass changed the graph, its time, rule hits and statistics, can
//     print (mlir-opt's print-ir-before/after/after-change) or dump the IR
//     around any pass, and names the failing pass and the passes before it
//     in every error. Instruments (MLIR's PassInstrumentation) are values
//     in Options whose hooks run before and after every pass.
//   - Translation validation (Options.Check): the graph runs on the CPU
//     reference executor before the first pass and after every pass that
//     changed it, and the run stops at the first pass that changes the
//     outputs or state past a tolerance (0: every bit), naming it. Package
//     passtest is the golden harness for a pass written anywhere.
//   - Rewrites are data (tinygrad's UPat, MLIR's greedy driver): a Rule is
//     a Pattern (op, dtype, attributes, operands, named captures,
//     predicates) and a builder of the replacement. Rewrite applies rules
//     with a worklist to a fixed point under an iteration cap and counts
//     hits per rule. A user adds a rule without touching the engine.
//   - Every rewrite is proven by execution: each fused op is registered in
//     the ir registry and has a reference kernel in the runtime's kernel
//     table that computes the same bits as the chain it replaces, so the
//     optimised graph runs on the reference executor and the tests compare
//     it with the original on random graphs and on every reference model.
//
// Graphs may be symbolic (n_tokens, n_kv) or static; passes never need the
// bindings. Run never modifies its input graph.
package passes
