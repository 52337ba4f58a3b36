package program

import (
	"runtime"
	"testing"

	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
)

// TestDevicesReleased: a session on a fresh simulated device, run and
// closed, leaves nothing behind; after ten such cycles the live heap is
// back at its baseline, well under one device's memory (the device-lock
// registry must not keep a closed device alive).
func TestDevicesReleased(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 64})
	const devBytes = 32 << 20
	cycle := func() {
		dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: devBytes})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewRunner(m, f, dev, Options{Policy: policy(true)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(prompt, 3, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	live := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	cycle() // warm up (compiler caches, lazily built tables)
	base := live()
	for range 10 {
		cycle()
	}
	after := live()
	t.Logf("live heap: %d KiB before, %d KiB after 10 cycles of a %d MiB device", base>>10, after>>10, devBytes>>20)
	if after > base+devBytes/2 {
		t.Errorf("live heap grew from %d to %d bytes over 10 sessions: devices are kept alive", base, after)
	}
}
