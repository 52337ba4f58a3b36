//go:build cann

package acl

import (
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/target"
)

// npuPinned is ascend910b with host<->device copies and the extra graph
// launch of a split segment priced out of reach, registered as
// "ascend910b-npu-pinned": the partition keeps every node the NPU supports
// on the NPU, whatever the calibrated costs say about moving a cheap node
// (the RoPE tables: seven calls against one more replay) to the host. The recipe tests run
// on it, so that they cover every recipe the target claims.
func npuPinned(t *testing.T) (name string, opts compiler.Options) {
	t.Helper()
	p, err := target.Get("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	p.Name = "ascend910b-npu-pinned"
	p.Overheads.CopyUS, p.Overheads.GraphLaunchUS = 1e9, 1e9
	rules := target.NewRules()
	if err := rules.RegisterTarget(p); err != nil {
		t.Fatal(err)
	}
	return p.Name, compiler.Options{Target: p.Name, Rules: rules}
}
