package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/stretchr/testify/require"
)

type deviceMemoryOut struct {
	DeviceMemory *compiler.DeviceMemory `json:"device_memory"`
}

// TestCompileDeviceMemory: compile --json has device_memory on an NPU
// target (none on cpu) and the text report a device memory line; on a
// device too small for the context compile exits 1 with one line naming
// the largest context that fits, and compiles at that context.
func TestCompileDeviceMemory(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"compile", "-c", "512", "--json"}, &out, &errb), errb.String())
	var got deviceMemoryOut
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	m := got.DeviceMemory
	require.NotNil(t, m)
	require.Equal(t, "ascend910b", m.Target)
	require.Equal(t, int64(512), m.Ctx)
	require.True(t, m.Fits)
	require.Equal(t, m.PoolBytes+m.RuntimeBytes, m.TotalBytes)
	require.Equal(t, int64(compiler.ReservedStreams*compiler.StreamReserveBytes), m.ReserveBytes)
	require.Greater(t, m.ArenaBytes, m.WorkspaceBytes)

	out.Reset()
	require.Equal(t, 0, run([]string{"compile", "-c", "512"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "device memory (ascend910b, ctx 512, ubatch 512): total")

	out.Reset()
	require.Equal(t, 0, run([]string{"compile", "-c", "512", "--target", "cpu", "--json"}, &out, &errb), errb.String())
	require.NotContains(t, out.String(), "device_memory")

	// A device one byte short of the total.
	out.Reset()
	require.Equal(t, 0, run([]string{"targets", "--json"}, &out, &errb), errb.String())
	var all []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &all))
	var prof map[string]any
	for _, p := range all {
		if p["name"] == "ascend910b" {
			prof = p
		}
	}
	require.NotNil(t, prof)
	prof["name"] = "small-npu"
	prof["npu"].(map[string]any)["mem_bytes"] = m.TotalBytes - 1
	data, err := json.Marshal(prof)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "small.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run([]string{"compile", "-c", "512", "--target-file", path, "--json"}, &out, &errb))
	line := strings.TrimSpace(errb.String()[strings.LastIndex(strings.TrimSpace(errb.String()), "\n")+1:])
	mm := regexp.MustCompile(`context 512 needs \d+ B, more than the \d+ B of small-npu; the largest context that fits is (\d+) \(--ctx \d+\)$`).FindStringSubmatch(line)
	require.NotNil(t, mm, "stderr: %s", errb.String())
	fit, _ := strconv.ParseInt(mm[1], 10, 64)
	require.Greater(t, fit, int64(0))
	require.Less(t, fit, int64(512))
	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"compile", "-c", mm[1], "--target-file", path, "--json"}, &out, &errb), errb.String())
	got = deviceMemoryOut{}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.True(t, got.DeviceMemory.Fits)
	require.Equal(t, fit, got.DeviceMemory.Ctx)
}
