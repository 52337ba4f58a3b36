package target

import "github.com/irtool/irtool/ir"

// archRules are the records of the ops of the newer architectures
// (ir/op_arch.go). They stay on the host, each for the reason given; the
// partition pass places them on the CPU and copies their operands across
// (docs/MODELS.md, "On the NPU").
func archRules() map[ir.Op]OpRule {
	return map[ir.Op]OpRule{
		ir.OpGelu: {CPUOnly: "ggml-cann's GELU (aclnnGelu) computes the function on the device, not ggml's CPU F16 table, " +
			"so its logits would leave llama.cpp's CPU reference; runs on the CPU", Traffic: streamTraffic(1)},
		ir.OpDiv:     {CPUOnly: "no aclnn recipe (aclnnDiv) in runtime/acl yet; runs on the CPU", Traffic: streamTraffic(1)},
		ir.OpSumRows: {CPUOnly: "no aclnn recipe (aclnnReduceSum) in runtime/acl yet; runs on the CPU", Traffic: streamTraffic(1)},
		ir.OpTopK: {CPUOnly: "expert routing is not lowered yet (ggml-cann uses aclnnArgsort); the router runs on the host " +
			"and the NPU segments around it stay capturable", Traffic: streamTraffic(1)},
		ir.OpMulMatID: {CPUOnly: "expert matmuls are not lowered yet (ggml-cann's mul_mat_id keeps every expert resident and " +
			"multiplies the chosen ones per token); they run on the host", Traffic: matmulIDTraffic},
		ir.OpSWAMask: {CPUOnly: "llama.cpp builds the sliding-window mask on the host (set_input); it is one more input copy per step",
			Traffic: streamTraffic(1)},
	}
}

// matmulIDTraffic: 2·k·n FLOPs per token and chosen expert; only the
// chosen experts' matrices are read.
func matmulIDTraffic(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	_, out, _, err := ioBytes(n, b)
	if err != nil {
		return 0, 0, err
	}
	sa, err := n.Args[0].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	so, err := n.Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	k, m := float64(sa[0].Val), float64(sa[1].Val)
	prods := float64(so[1].Val * so[2].Val)
	dt := n.Args[0].Type.DType
	w := k * m * prods * float64(dt.TypeSize()) / float64(dt.BlockSize())
	act, err := bytesOf(n.Args[1].Type, b)
	if err != nil {
		return 0, 0, err
	}
	ids, _ := bytesOf(n.Args[2].Type, b)
	return 2 * k * m * prods, w + act + ids + out, nil
}
