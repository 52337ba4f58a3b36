package target

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/ir"
)

// attentionGraph is one attention node over a set_rows-style cache (K and
// V contiguous BSND views of their first cells) or, with transposedV, over
// llama.cpp c392e50's transposed V cache; T query tokens, head dim d,
// 4 query heads over 2 KV heads, 8 cells.
func attentionGraph(t *testing.T, T, d int, transposedV bool) *ir.Node {
	t.Helper()
	vnb := fmt.Sprintf("[%d,2,%d,%d]", 2*d*2, 2*d, 2*d*2*8) // cell, dim, head
	if transposedV {
		vnb = fmt.Sprintf("[2,16,%d,%d]", 16*d, 16*d*2) // dims of 8 cells each
	}
	src := fmt.Sprintf(`graph "attention" {
  %%0 = input() : f32[%[1]d,4,%[2]d] "Qcur-0"
  %%1 = state() : f16[%[3]d,8] "cache_k_l0"
  %%2 = state() : f16[%[3]d,8] "cache_v_l0"
  %%3 = input() : f32[8,%[2]d] "KQ_mask"
  %%4 = permute(%%0) {axes=[0,2,1,3]} : f32[%[1]d,%[2]d,4] "q-0" layer=0
  %%5 = view(%%1) {nb=[2,%[4]d,%[5]d,%[6]d], offset=dim(0)} : f16[%[1]d,8,2] "k-0" layer=0
  %%6 = view(%%2) {nb=%[7]s, offset=dim(0)} : f16[8,%[1]d,2] "v-0" layer=0
  %%7 = attention(%%4, %%5, %%6, %%3) {max_bias=0.0, scale=0.5} : f32[%[8]d,%[2]d] "kqv_merged_cont-0" layer=0
  outputs(%%7)
}`, d, T, 2*d, 2*d*2, 2*d, 2*d*2*8, vnb, 4*d)
	g, err := ir.ParseString(src)
	require.NoError(t, err)
	return g.Nodes[7]
}

// TestAttentionLowering: the attention rule per target and node. Atlas A2
// parts lower to aclnnFusedInferAttentionScoreV2 (the mask as attenMask;
// Q, K and V zero-padded for a prefill whose head dim is not a multiple
// of 16); the 310B and 310P keep the unfused calls through their gates, as
// does a transposed V cache, each saying why.
func TestAttentionLowering(t *testing.T) {
	fused := []string{"aclnnCast", "aclnnMuls", "aclnnGeScalar", FIA, "aclnnCast"}
	padded := []string{"aclnnInplaceCopy", "aclnnCast", "aclnnInplaceCopy", "aclnnInplaceCopy", "aclnnMuls", "aclnnGeScalar", FIA, "aclnnCast"}
	unfused := []string{"aclnnCast", "aclnnMatmul", "aclnnMuls", "aclnnAdd", "aclnnSoftmax", "aclnnCast", "aclnnMatmul"}
	for _, c := range []struct {
		target      string
		T, d        int
		transposedV bool
		calls       []string
		reason      string
	}{
		{"ascend910b", 1, 4, false, fused, "fused"},
		{"ascend910b4", 1, 64, false, fused, "fused"},
		{"ascend910b2", 3, 64, false, fused, "fused"},
		{"ascend910b", 3, 8, false, padded, "zero-padded to a multiple of 16"},
		{"ascend910b", 1, 4, true, unfused, "not contiguous BSND"},
		{"ascend310b", 1, 4, false, unfused, "Atlas 200I/500 A2"},
		{"ascend310p", 3, 64, false, unfused, "310P"},
	} {
		t.Run(fmt.Sprintf("%s/T=%d/d=%d/transposedV=%v", c.target, c.T, c.d, c.transposedV), func(t *testing.T) {
			p, err := Get(c.target)
			require.NoError(t, err)
			n := attentionGraph(t, c.T, c.d, c.transposedV)
			s := p.Supports(n)
			require.True(t, s.OK, s.Reason)
			require.Equal(t, c.calls, s.Calls)
			require.Contains(t, s.Reason, c.reason)
			ws := attentionWorkspace(n, s)
			if s.Kernel == FIA {
				dp := int64(c.d)
				if c.T > 1 && c.d%16 != 0 {
					dp = 16
				}
				want := 2 * align32(2*int64(c.T)*4*dp)
				if dp != int64(c.d) {
					want += 2 * align32(2*8*2*dp)
				}
				want += align32(4*int64(c.T)*8) + align32(int64(c.T)*8)
				require.Equal(t, want, ws)
			}
		})
	}
}

// TestAttentionRuleRefusesWhatBothPathsLack: K/V that are not f16, or
// ALiBi, stay on the host whichever lowering the part has.
func TestAttentionRuleRefusesWhatBothPathsLack(t *testing.T) {
	n := attentionGraph(t, 1, 8, false)
	n.Attrs = n.Attrs.Clone()
	n.Attrs[ir.AttrMaxBias] = 8.0
	for _, name := range []string{"ascend910b", "ascend310b"} {
		p, err := Get(name)
		require.NoError(t, err)
		s := p.Supports(n)
		require.False(t, s.OK)
		require.True(t, strings.Contains(s.Reason, "ALiBi"), s.Reason)
	}
}
