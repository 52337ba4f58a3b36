package target_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/target"
)

// TestWQBMMCallsSplit: on ascend910b a q8_0/q4_0 mul_mat declares one
// aclnnWeightQuantBatchMatmulV2 per 65535 output columns (Qwen2.5's
// vocabulary projection, n = 151936, makes three), and a node whose k
// breaks the operator's [1, 65535] limit, or whose activations have more
// than 2^31-1 rows (x's m), stays on the host with a reason naming the
// node, the operator and the argument.
func TestWQBMMCallsSplit(t *testing.T) {
	const src = `graph "wqbmm" {
  %0 = input() : f32[896,1] "x"
  %1 = weight() : q8_0[896,151936] "output.weight"
  %2 = mul_mat(%1, %0) : f32[151936,1] "result_output"
  %3 = weight() : q4_0[896,65535] "w65535"
  %4 = mul_mat(%3, %0) : f32[65535,1] "y65535"
  %5 = input() : f32[70016,1] "xk"
  %6 = weight() : q8_0[70016,8] "wk"
  %7 = mul_mat(%6, %5) : f32[8,1] "yk"
  %8 = weight() : q4_0[65536,8] "wk2"
  %9 = input() : f32[65536,1] "xk2"
  %10 = mul_mat(%8, %9) : f32[8,1] "yk2"
  %11 = input() : f32[896,2147483648] "xm"
  %12 = mul_mat(%1, %11) : f32[151936,2147483648] "ym"
}`
	p, err := target.Get("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	wq := "aclnnWeightQuantBatchMatmulV2"
	for _, c := range []struct {
		name  string
		calls []string // nil: refused
		why   string
	}{
		{"result_output", []string{"aclnnCast", wq, wq, wq, "aclnnCast"}, ""},
		{"y65535", []string{"aclnnCast", wq, "aclnnCast"}, ""},
		{"yk", nil, "aclnnWeightQuantBatchMatmulV2 weight (k): k = 70016 outside [1, 65535]"},
		{"yk2", nil, "aclnnWeightQuantBatchMatmulV2 weight (k): k = 65536 outside [1, 65535]"},
		{"ym", nil, "aclnnWeightQuantBatchMatmulV2 x (m): m = 2147483648 outside [1, 2^31-1]"},
	} {
		n := node(t, src, c.name)
		s := p.Supports(n)
		if c.calls != nil {
			if !s.OK || !slices.Equal(s.Calls, c.calls) {
				t.Errorf("%s: %+v, want calls %v", c.name, s, c.calls)
			}
			continue
		}
		t.Logf("%s: %s", c.name, s.Reason)
		if s.OK || !strings.Contains(s.Reason, c.why) || !strings.Contains(s.Reason, "node ") || !strings.Contains(s.Reason, "mul_mat") {
			t.Errorf("%s: %+v, want a refusal naming the node and %q", c.name, s, c.why)
		}
	}
	if got := target.WQBMMChunks(151936); !slices.Equal(got, []target.Chunk{{N0: 0, N: 65535}, {N0: 65535, N: 65535}, {N0: 131070, N: 20866}}) {
		t.Errorf("WQBMMChunks(151936) = %v", got)
	}
	for k, want := range map[int64]int64{32: 0, 64: 32, 256: 32} {
		if g := target.WQBMMGroup(k, 32); g != want {
			t.Errorf("WQBMMGroup(%d, 32) = %d, want %d", k, g, want)
		}
	}
}
