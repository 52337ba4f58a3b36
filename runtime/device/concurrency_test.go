package device

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"

	"github.com/irtool/irtool/internal/floatbits"
)

// Several users share one device, each with its own stream, buffers and
// graph cache, capturing in GLOBAL mode while the others allocate, copy
// and replay. DeviceLock orders captures against the others'
// capture-unsafe calls; every result must equal the host kernels', and the
// pool must be empty at the end. Run with -race.
func TestConcurrentUsersShareDevice(t *testing.T) {
	d := newTestDevice(t)
	const users, steps = 4, 12
	var wg sync.WaitGroup
	for u := 0; u < users; u++ {
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			if err := concurrentUser(t, d, u, steps); err != nil {
				t.Errorf("user %d: %v", u, err)
			}
		}(u)
	}
	wg.Wait()
	st := d.Stats()
	if p := st.Pools[0]; p.LiveBlocks != 0 || p.UsedBytes != 0 {
		t.Errorf("pool after every user closed: %v", p)
	}
	if d.LiveGraphs() != 0 {
		t.Errorf("%d graphs left", d.LiveGraphs())
	}
	if st.Captures != users {
		t.Errorf("%d captures, want one per user (%d)", st.Captures, users)
	}
}

func concurrentUser(t *testing.T, d *SimDevice, u, steps int) error {
	// Register before the first capture-unsafe call: DeviceLock on a device
	// nobody has registered yet returns a lock of its own, which would not
	// order this user's mallocs against the others' captures.
	lock := AcquireDeviceLock(d)
	defer ReleaseDeviceLock(d)
	lock.RLock()
	st, err := d.CreateStream()
	if err != nil {
		lock.RUnlock()
		return err
	}
	s := newTestSeq(t, d)
	in, err := d.MallocHost(4 * seqRow * seqRows)
	if err != nil {
		lock.RUnlock()
		return err
	}
	out, _ := d.MallocHost(4 * seqRow * seqRows)
	lock.RUnlock()
	r := rand.New(rand.NewSource(int64(u)))
	w, b := floatbits.Rand(r, seqRow, 1), floatbits.Rand(r, seqRow*seqRows, 1)
	// Weights go up with async copies on the user's own stream: safe
	// while another user captures.
	if err := d.MemcpyH2DAsync(s.w, floatbits.Bytes(w...), st); err != nil {
		return err
	}
	if err := d.MemcpyH2DAsync(s.b, floatbits.Bytes(b...), st); err != nil {
		return err
	}
	c, err := NewGraphCache(d, CacheOptions{})
	if err != nil {
		return err
	}
	props := NewGraphProps(s.launches)
	for i := 0; i < steps; i++ {
		x := floatbits.Rand(r, seqRow*seqRows, 1)
		copy(in, floatbits.Bytes(x...))
		if err := d.MemcpyH2DAsync(s.x, in, st); err != nil {
			return err
		}
		if _, err := c.Execute(st, props, func(st Stream) error { return s.launch(d, st) }); err != nil {
			return err
		}
		if err := d.MemcpyD2HAsync(out, s.out, st); err != nil {
			return err
		}
		if err := d.SynchronizeStream(st); err != nil {
			return err
		}
		if !bytes.Equal(out, seqReference(t, x, w, b)) {
			t.Errorf("user %d step %d: wrong result", u, i)
		}
	}
	if cs := c.Stats(); cs.Hits != int64(steps-1) || cs.Captures != 1 {
		t.Errorf("user %d: cache %+v", u, cs)
	}
	if err := c.Close(); err != nil {
		return err
	}
	lock.RLock()
	defer lock.RUnlock()
	for _, p := range []Ptr{s.x, s.w, s.b, s.t1, s.t2, s.t3, s.out} {
		if err := d.Free(p); err != nil {
			return err
		}
	}
	if err := d.FreeHost(in); err != nil {
		return err
	}
	if err := d.FreeHost(out); err != nil {
		return err
	}
	return d.DestroyStream(st)
}
