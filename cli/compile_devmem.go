package cli

import "fmt"

// outDeviceMemory fills device_memory (compiler.Result.DeviceMemory) on a
// target with an NPU, prints it, and refuses a context that does not fit.
func outDeviceMemory(j *compileJob) error {
	if !j.R.Profile.HasNPU() {
		return nil
	}
	m, err := j.R.DeviceMemory()
	if err != nil {
		return err
	}
	j.Out.DeviceMemory = m
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(j.Text, "device memory (%s, ctx %d, ubatch %d): total %.0f MiB of %.0f MiB = pool %.0f MiB (weights %.0f, KV %.0f, arena %.0f with workspaces up to %.1f, other %.1f, stream reserves %.0f) + CANN runtime %.0f; fits: %v, largest context %d\n",
		m.Target, m.Ctx, m.UBatch, mib(m.TotalBytes), mib(m.CapacityBytes), mib(m.PoolBytes), mib(m.WeightsBytes), mib(m.KVBytes),
		mib(m.ArenaBytes), mib(m.WorkspaceBytes), mib(m.OtherBytes), mib(m.ReserveBytes), mib(m.RuntimeBytes), m.Fits, m.MaxCtx)
	return m.CheckFits()
}
