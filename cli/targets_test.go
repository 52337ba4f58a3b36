package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTargetFileRoundTrip: irtool targets --json, one object renamed,
// compile --target-file names the new target everywhere it reports one.
func TestTargetFileRoundTrip(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"targets", "--json"}, &out, &errb), errb.String())
	var all []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &all))
	var prof map[string]any
	for _, p := range all {
		if p["name"] == "ascend910b4" {
			prof = p
		}
	}
	require.NotNil(t, prof, "ascend910b4 in irtool targets --json")
	prof["name"] = "lab-npu"
	data, err := json.Marshal(prof)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "lab.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"compile", "--target-file", path, "--json"}, &out, &errb), errb.String())
	var got struct {
		Target    string `json:"target"`
		Partition struct {
			Target string `json:"target"`
		} `json:"partition"`
		Predicted struct {
			Prefill float64 `json:"prefill_tok_per_s"`
		} `json:"predicted"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, "lab-npu", got.Target)
	require.Equal(t, "lab-npu", got.Partition.Target)
	require.Greater(t, got.Predicted.Prefill, 0.0)

	// A broken file is a one-line error naming the field.
	prof["costs"].(map[string]any)["stream_eff"] = 3.0
	data, _ = json.Marshal(prof)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	errb.Reset()
	require.Equal(t, 2, run([]string{"compile", "--target-file", path}, &out, &errb))
	require.Contains(t, errb.String(), "costs.stream_eff")
	require.Contains(t, strings.SplitN(errb.String(), "\n", 2)[0], "--target-file")
}

// TestTargetsText lists every target with its NPU or host.
func TestTargetsText(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"targets"}, &out, &errb), errb.String())
	for _, name := range []string{"ascend910b:", "ascend910b1:", "ascend910b4:", "ascend310p:", "ascend310b:", "cpu:"} {
		require.Contains(t, out.String(), name)
	}
}
