package target

import "github.com/irtool/irtool/ir"

// The rules of the collective ops (ir/collective.go). They run as CPU
// kernels over an eval.Communicator (the simulated ranks of
// runtime/device); lowering them to HcclAllReduce, HcclAllGather,
// HcclReduceScatter, HcclSend and HcclRecv on a segment's stream is not
// done yet, so no profile claims them for the NPU.
func init() {
	const why = "collectives run over the host communicator of the simulated ranks; the HCCL lowering (HcclAllReduce and the others on the segment's stream) is not implemented"
	for _, op := range []ir.Op{ir.OpAllReduce, ir.OpAllGather, ir.OpReduceScatter, ir.OpSend, ir.OpRecv} {
		mustRule(op, OpRule{CPUOnly: why, Traffic: streamTraffic(1)})
	}
}
