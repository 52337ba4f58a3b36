// Package planner assigns arena offsets to tensors whose lifetimes are known,
// so that a whole forward step runs out of one pre-allocated buffer.
//
// Why a separate, IR-free core: static memory planning is the Dynamic Storage
// Allocation problem (pack rectangles whose x-extent, the lifetime, is fixed
// and whose y-position, the offset, is free, into a strip of least height).
// It is strongly NP-hard, and the algorithms for it do not care where the
// rectangles came from. This package therefore works on a plain Problem (a
// list of Buffers with half-open lifetimes [Start, End) in execution steps and
// byte sizes) and returns an Assignment (one offset per buffer and the arena
// size). The IR-side liveness analysis only has to produce a Problem; the
// same code scores public benchmark traces read from CSV files
// (id,lower,upper,size), which is how every strategy here is measured against
// published numbers.
//
// Every result is scored against LowerBound, the LOAD of the instance: the
// largest sum of (aligned) sizes live at one step. No assignment can beat it,
// and an arena equal to it is optimal, so arena/LB certifies quality for free.
//
// Strategies (see Strategies and Solve):
//
//   - "naive": no reuse, every buffer gets its own range (Σ sizes).
//   - "greedy-size": TFLite's greedy-by-size offset calculation (Pisarchyk &
//     Lee, arXiv 2001.03288), the same as XLA's GlobalDecreasingSizeBestFit
//     kSpatial: largest first, each into the smallest gap between
//     time-overlapping buffers that fits, else on top.
//   - "greedy-lifetime": the same best-fit placement, longest lifetime first
//     (XLA kTemporal).
//   - "greedy-breadth": steps in decreasing breadth (live bytes), each step's
//     unplaced tensors largest first, best-fit placement.
//   - "online-bestfit": allocation and free events replayed in time order
//     through a ggml-style best-fit free list (Gallocr) with no block limit.
//   - "search": starts from the best greedy result, then runs an exact
//     depth-first search over canonical solutions in the spirit of MiniMalloc
//     (Moffitt, ASPLOS 2023: canonical placement order, cross-section
//     inference, dominance pruning, dynamic decomposition) on a ladder of
//     capacities, and a deterministic perturbation search over placement
//     orders. It stops at the lower bound or when its budget runs out.
//   - "best": all of the above, keeping the smallest arena; never worse than
//     greedy-size.
//
// Gallocr reproduces ggml-alloc's dynamic allocator (ggml_dyn_tallocr,
// llama.cpp c392e50) call for call, so that the IR side can replay a graph in
// ggml's node order and obtain llama.cpp's compute-buffer size byte for byte.
//
// The graph layer (PlanMemory) turns a static ir.Graph into such a Problem:
// liveness over an execution order (views alias their root, cpy and
// set_rows results alias the tensor they write, inputs, outputs, weights,
// KV caches and constants are persistent), in-place merges allowed by a
// per-target InPlacePolicy (CPUPolicy is ggml-alloc's rule), kernel
// workspaces as one-step tensors, and optionally another topological
// order when it lowers the bound. It runs ggml-alloc's own bookkeeping
// symbolically, so the "gallocr" strategy replays exactly the allocator
// calls llama.cpp makes and gives its compute buffer to the byte (with
// MemoryOptions.ArenaIO, which places inputs and outputs in the arena as
// ggml does). ValidateMemoryPlan re-checks every plan against the graph
// without trusting that analysis, and the planned-execution tests run
// each reference model inside one arena and compare logits bit for bit.
package planner
