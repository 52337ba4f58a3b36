//go:build cann

package acl

import (
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// TestRecipeOps checks the recipe tables, keyed by op name, against
// package ir's registry and the target rules (the other direction of
// TestEveryClaimedOpHasARecipe): every op with a recipe is a computing op
// of ir that a default target rule can put on the NPU, whose recipe needs
// no more operands than a node of it may have, and every op with
// quantised recipe types has a recipe. A renamed or removed op fails here,
// naming it.
func TestRecipeOps(t *testing.T) {
	for op, r := range recipes {
		info, ok := ir.Lookup(op)
		if !ok {
			t.Errorf("recipe of op %q, which package ir does not define", op)
			continue
		}
		if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
			t.Errorf("recipe of op %q, which computes nothing (a %s op)", op, info.Kind)
		}
		if r.operands > info.MinArgs {
			t.Errorf("recipe of op %q needs %d operands; a node of the op may have %d", op, r.operands, info.MinArgs)
		}
		if rule, ok := target.DefaultRules().Lookup(op); !ok || rule.NPU == nil {
			t.Errorf("recipe of op %q, which no default target rule puts on the NPU", op)
		}
	}
	for op := range quantRecipeTypes {
		if _, ok := recipes[op]; !ok {
			t.Errorf("quantised recipe types of op %q, which has no recipe", op)
		}
	}
}
