package cann

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

func init() {
	for _, op := range []ir.Op{ir.OpRMSNorm, ir.OpRMSNormMul, ir.OpAddRMSNormMul} {
		kernelExtras[op] = rmsNormExtras
	}
}

// rmsNormExtras adds the gamma and rstd descriptors of an RMS norm kernel.
func rmsNormExtras(l *lowerer, n *ir.Node, k *Kernel, d target.Device) {
	// aclnnRmsNorm(x, gamma, eps, y, rstd) and aclnnAddRmsNorm: the
	// fused forms take the weight as gamma; plain rms_norm gets a table
	// of ones built at load time. rstd lands in the planned workspace.
	ne := k.Inputs[0].Ne
	if n.Op == ir.OpRMSNorm {
		gamma := l.onesTable(ne[0], d)
		g := newDesc(ir.F32, [4]int64{ne[0], 1, 1, 1}, ir.ContiguousStrides(ir.F32, [4]int64{ne[0], 1, 1, 1}), gamma)
		g.Role = "gamma"
		k.Extra = append(k.Extra, g)
	}
	if k.WorkspaceBytes >= 4*ne[1]*ne[2]*ne[3] {
		rne := [4]int64{1, ne[1], ne[2], ne[3]}
		r := newDesc(ir.F32, rne, ir.ContiguousStrides(ir.F32, rne), k.Workspace)
		r.Role = "rstd"
		k.Extra = append(k.Extra, r)
	}
}

// onesTable returns the address of an f32 table of n ones on device d,
// built once per length (llama.cpp PR #20747: the constant is made before capture).
func (l *lowerer) onesTable(n int64, d target.Device) Addr {
	if a, ok := l.ones[n][d]; ok {
		return a
	}
	data := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		data[4*i+2], data[4*i+3] = 0x80, 0x3f // 1.0f little endian
	}
	a := l.alloc(regionFor(d, RegionConsts, RegionHostConsts), 4*n)
	l.p.Consts = append(l.p.Consts, Const{Name: fmt.Sprintf("ones_f32[%d]", n), Addr: a, Data: data})
	if l.ones[n] == nil {
		l.ones[n] = map[target.Device]Addr{}
	}
	l.ones[n][d] = a
	return a
}
