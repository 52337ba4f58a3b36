package target

import "github.com/irtool/irtool/ir"

// The default rules of the collective ops (ir/collective.go): CPU kernels
// over an eval.Communicator (the simulated ranks of runtime/device, which
// have no HCCL). HCCLRules overrides them so that the NPU runs
// them as HcclAllReduce, HcclAllGather, HcclReduceScatter, HcclSend and
// HcclRecv on a segment's stream; the ranks of compile --tp/--pp and of
// run --backend cann are lowered with those.
func init() {
	const why = "under the default rules collectives run over the host communicator of the ranks; target.HCCLRules puts them on the NPU as HCCL calls"
	for _, op := range ir.CollectiveOps() {
		mustRule(op, OpRule{CPUOnly: why, Traffic: streamTraffic(1)})
	}
}
