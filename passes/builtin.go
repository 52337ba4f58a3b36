package passes

import "fmt"

// builtin is the one list of the built-in passes, in the order irtool
// passes lists them; inDefault marks the members of the default pipeline,
// which runs them in this order.
func builtin() []struct {
	pass      Pass
	inDefault bool
} {
	return []struct {
		pass      Pass
		inDefault bool
	}{
		{RulePass("noop", "no-op elimination: reshape/view/permute/cont/cast chains that do nothing, scale by 1, mul/div by a constant 1, add of a constant -0", append(noopRules(), identityRules()...)...), true},
		{RulePass("rope-cache", "RoPE cache: rope -> rope_apply of a rope_cache table of the positions (one table per step once CSE has run)", ropeCacheRules()...), true},
		{RulePass("rope-table", "ggml-cann's RoPE cache: rope_cache -> rope_cache_table(pos, rope_theta()); fold then makes the inverse frequencies a constant (not ggml's float32 recurrence, so not in the default pipeline)", ropeTableRules()...), false},
		{foldPass(), true},
		{csePass(), true},
		{RulePass("fuse-norm", "fuse rms_norm with its weight multiply, and the residual add before it", normRules()...), true},
		{RulePass("fuse-matmul-bias", "fuse mul_mat with the add of a bias (qwen2's Q/K/V biases)", matmulBiasRules()...), true},
		{RulePass("fuse-swiglu", "fuse silu(gate) * up", swigluRules()...), true},
		{RulePass("fuse-softmax", "fold a scale and a mask add into soft_max", softmaxRules()...), true},
		{RulePass("fuse-attention", "fuse kq = k·q, softmax, kqv = v·kq, permute and cont into one attention op", attentionRules()...), true},
		{RulePass("fuse-rope-set-rows", "fuse the RoPE of K with its row write into the KV cache", ropeSetRowsRules()...), true},
		{mergeQKVPass(), false},
		{dcePass(), true},
	}
}

func init() {
	for _, b := range builtin() {
		mustRegisterPass(b.pass)
		if b.inDefault {
			defaultNames = append(defaultNames, b.pass.Name)
		}
	}
	for _, c := range []Constraint{
		{"rope-cache", "cse", "CSE shares the rope_cache tables of the layers"},
		{"rope-cache", "fuse-rope-set-rows", "a rope fused into its K-cache write would compute its own sin/cos"},
		{"rope-cache", "rope-table", "rope-table rewrites the tables rope-cache makes"},
		{"rope-table", "fold", "fold turns rope-table's inverse frequencies into a constant"},
		{"fuse-softmax", "fuse-attention", "the attention pattern expects the scale and mask inside soft_max"},
		{"fuse-matmul-bias", "merge-qkv", "merge-qkv merges biased projections once they are mul_mat_add"},
		{"fuse-norm", "fuse-matmul-bias", "a residual add after a matmul belongs to the norm fusion"},
	} {
		if err := AddConstraint(c); err != nil {
			panic(err)
		}
	}
	// Start-up check (Go's passOrder): the default pipeline obeys the
	// constraints.
	if err := Default().Check(); err != nil {
		panic(fmt.Sprintf("passes: default pipeline: %v", err))
	}
}
