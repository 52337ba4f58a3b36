package main

import (
	"os"
	"strings"
	"testing"

	"github.com/irtool/irtool/target"
	"github.com/stretchr/testify/require"
)

// TestDocTable: docs/LOWERING.md's calibration and hold-out tables are
// this script's output with the built-in calibration (go run ./scripts/costfit -write
// re-fits and rewrites both).
func TestDocTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 7B-shaped graphs")
	}
	doc, err := os.ReadFile("../../docs/LOWERING.md")
	require.NoError(t, err)
	want, err := DocTable(string(doc))
	require.NoError(t, err)
	progs, err := compileAll(figures(), target.Calibrated())
	require.NoError(t, err)
	got, err := tableOn(progs, target.Calibrated())
	require.NoError(t, err)
	require.Equal(t, want, got, "go run ./scripts/costfit -write")

	// Every fitted figure within ±35 % (the bar the calibration is held
	// to); the figures not fitted are reported, not held to it.
	figs := figures()
	pred, err := predictions(figs, progs, target.Calibrated())
	require.NoError(t, err)
	for i, f := range figs {
		if f.heldOut == "" {
			require.InEpsilon(t, f.value, pred[i], 0.35, "%s", f.id)
		}
	}

	// The hold-out table: about twenty refits.
	i, j := strings.Index(string(doc), looBegin), strings.Index(string(doc), looEnd)
	require.True(t, i >= 0 && j > i, "docs/LOWERING.md has no hold-out markers")
	held, err := holdOutOn(progs, target.Calibrated())
	require.NoError(t, err)
	require.Equal(t, string(doc)[i+len(looBegin):j], held, "go run ./scripts/costfit -write")
}
