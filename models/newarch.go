package models

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

func (b *builder) swaMask(mask, pos *ir.Node) *ir.Node {
	b.fail(fmt.Errorf("sliding-window attention is not supported yet"))
	return nil
}

func (b *builder) moeFFN(lc *layerCtx, cur *ir.Node) *ir.Node {
	b.fail(fmt.Errorf("mixture of experts is not supported yet"))
	return nil
}

func (b *builder) gegluFFN(lc *layerCtx, cur *ir.Node) *ir.Node {
	b.fail(fmt.Errorf("GEGLU is not supported yet"))
	return nil
}
