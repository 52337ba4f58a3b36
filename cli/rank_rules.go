package cli

import (
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/target"
)

// rankRules is the rule set every rank of a split model (--tp, --pp) is
// partitioned and lowered with, the one definition compile --tp/--pp,
// viz --rank and run --backend cann --tp/--pp share: lower/cann.HCCLRules,
// under which the NPU runs each collective HCCL can compute (HcclAllReduce,
// HcclAllGather, HcclReduceScatter, HcclSend, HcclRecv on the segment's
// stream, captured with its kernels) and the rest stay host collectives
// with their reason. On a target without an NPU every node is the host's
// under any rules. run --backend sim and cpu do not use it: their devices
// have no HCCL, so their collectives are host kernels over the simulated
// group (target's default rules).
func rankRules() (*target.Rules, error) { return cann.HCCLRules() }

// rankProfile is the profile of target name under rankRules: the link
// model (EstimateStep) sees the collectives where the lowering puts them.
func rankProfile(name string) (*target.Profile, error) {
	rules, err := rankRules()
	if err != nil {
		return nil, err
	}
	return rules.Profile(name)
}
