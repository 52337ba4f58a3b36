//go:build cann

// Package rootjoin joins ranks that run in separate processes into one
// HCCL communicator through a root info file, as irtool run --backend
// cann --tp N --root-info FILE --rank R does: rank 0 makes the root info
// (HcclGetRootInfo) and writes it to the file, the others wait for it and
// read it, and every rank calls HcclCommInitRootInfo. Its errors name the
// file as --root-info FILE, the flag that gives it.
package rootjoin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/acl"
)

// rootJoin is what a rank owns while the ranks join: the root info it
// made, the file it wrote it to (rank 0), released by an interrupt.
type rootJoin struct {
	mu   sync.Mutex
	info []byte // rank 0's root info, until every rank has joined
	tmp  string // the temporary file being written
	file string // the root info file written
}

// Join makes (rank 0) or reads (the others) the root info in
// path and joins the communicator. SIGINT and SIGTERM while the ranks
// join remove rank 0's root info file and segment and exit with status
// 130 or 143 after one line on stderr; the handler is removed on return.
func Join(dev *acl.Device, group, path string, n, r int, timeout time.Duration, stderr io.Writer) (*acl.Comm, error) {
	j := &rootJoin{}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() {
		signal.Stop(sigs)
		close(done)
	}()
	go func() {
		select {
		case s := <-sigs:
			j.mu.Lock() // kept: nothing is made past this point
			code, name := 130, "SIGINT"
			if s == syscall.SIGTERM {
				code, name = 143, "SIGTERM"
			}
			what := ""
			if j.info != nil {
				what = ": its root info file and segment are removed"
			}
			j.release(fmt.Sprintf("rank %d was interrupted (%s) while the ranks joined", r, name))
			fmt.Fprintf(stderr, "irtool run: --root-info %s: rank %d interrupted by %s while the ranks joined%s\n", path, r, name, what)
			os.Exit(code)
		case <-done:
		}
	}()
	if r == 0 {
		return makeRootInfo(dev, j, group, path, n)
	}
	return awaitRootInfo(dev, group, path, n, r, timeout)
}

// makeRootInfo is rank 0's part: it refuses a path holding anything but a
// root info file of an earlier run, makes the root info, writes it to a
// temporary file beside path (made first: a directory it cannot write to
// costs nothing) renamed to path, joins, and removes path. The root info
// is released on every failure.
func makeRootInfo(dev *acl.Device, j *rootJoin, group, path string, n int) (*acl.Comm, error) {
	if st, err := os.Lstat(path); err == nil && (!st.Mode().IsRegular() || st.Size() != acl.RootInfoBytes) {
		what := fmt.Sprintf("a file of %d bytes", st.Size())
		if !st.Mode().IsRegular() {
			what = "not a regular file (" + st.Mode().Type().String() + ")"
		}
		return nil, fmt.Errorf("--root-info %s: exists and is %s, not a root info file (%d bytes) of an earlier run: rank 0 replaces only those", path, what, acl.RootInfoBytes)
	}
	j.mu.Lock()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".root-info-*")
	if err != nil {
		j.mu.Unlock()
		return nil, fmt.Errorf("--root-info %s: rank 0 cannot write it: %w", path, err)
	}
	j.tmp = tmp.Name()
	info, err := acl.HcclGetRootInfo()
	j.info = info
	j.mu.Unlock()
	fail := func(err error) (*acl.Comm, error) {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.release("rank 0 could not write its root info to " + path)
		j.tmp, j.file, j.info = "", "", nil
		return nil, err
	}
	if err != nil {
		tmp.Close()
		return fail(err)
	}
	_, werr := tmp.Write(info)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return fail(fmt.Errorf("--root-info %s: %w", path, err))
	}
	j.mu.Lock()
	err = os.Rename(j.tmp, path)
	if err == nil {
		j.tmp, j.file = "", path
	}
	j.mu.Unlock()
	if err != nil {
		return fail(fmt.Errorf("--root-info %s: %w", path, err))
	}
	c, err := dev.HcclCommInitRootInfo(group, n, 0, info)
	// Every rank has joined (or the communicator failed): the file and
	// the root info's name are no longer needed.
	j.mu.Lock()
	defer j.mu.Unlock()
	j.release("rank 0 has stopped waiting for the other ranks")
	j.tmp, j.file, j.info = "", "", nil
	if err != nil {
		return nil, fmt.Errorf("--root-info %s: rank 0: %w", path, err)
	}
	return c, nil
}

// rootInfoSettle is how long a root info file of the wrong size must stay
// unchanged to be refused (rank 0 renames a whole file into place, so
// such a file is not one being written by it).
const rootInfoSettle = 200 * time.Millisecond

// awaitRootInfo is the part of rank r ≥ 1: it waits for rank 0's root
// info in path, within timeout, and joins. What cannot become a root info
// is refused at once: a directory, a named pipe, a device, a file of the
// wrong size that has stopped changing. A root info whose communicator is
// gone (HCCL_E_NOT_FOUND: a file left by an earlier run) is read again
// until rank 0 replaces it; if instead the file disappears, every rank
// has joined without this one.
func awaitRootInfo(dev *acl.Device, group, path string, n, r int, timeout time.Duration) (*acl.Comm, error) {
	deadline := time.Now().Add(timeout)
	var (
		tried    []byte // the last root info whose communicator was gone
		triedErr error
		size     *acl.RootInfoSizeError
		sizeAt   time.Time
	)
	for {
		info, err := acl.ReadRootInfo(path)
		var se *acl.RootInfoSizeError
		switch {
		case err == nil:
			if tried != nil && bytes.Equal(info, tried) {
				break // not replaced yet
			}
			c, err := dev.HcclCommInitRootInfo(group, n, r, info)
			var he *acl.HCCLError
			if err == nil {
				return c, nil
			}
			if !errors.As(err, &he) || he.Code != hcclNotFound {
				return nil, fmt.Errorf("--root-info %s: rank %d: %w", path, r, err)
			}
			tried, triedErr = info, err
		case errors.Is(err, fs.ErrNotExist):
			if tried != nil {
				return nil, fmt.Errorf("--root-info %s: rank %d: the communicator of %s was formed or failed without this process (rank 0 removed the file once its %d ranks had joined): is --rank %d given to two processes, or was it started late?", path, r, acl.DescribeRootInfo(tried), n, r)
			}
		case errors.Is(err, acl.ErrRootInfoNotRegular):
			return nil, fmt.Errorf("--root-info %s: rank %d: %w: rank 0 writes a regular file of %d bytes there", path, r, err, acl.RootInfoBytes)
		case errors.As(err, &se):
			if size == nil || se.Size != size.Size || !se.ModTime.Equal(size.ModTime) {
				size, sizeAt = se, time.Now()
			} else if time.Since(sizeAt) >= rootInfoSettle {
				return nil, fmt.Errorf("--root-info %s: rank %d: %v: not a root info file (rank 0 writes one of %d bytes; remove it)", path, r, se, acl.RootInfoBytes)
			}
		default:
			return nil, fmt.Errorf("--root-info %s: rank %d: %w", path, r, err)
		}
		if time.Now().After(deadline) {
			if tried != nil {
				return nil, fmt.Errorf("--root-info %s: rank %d: the file names a communicator that is gone (left by an earlier run?) and rank 0 did not replace it within %v (%s): %w", path, r, timeout, acl.EnvConnectTimeout, triedErr)
			}
			if err == nil {
				err = errors.New("no root info")
			}
			return nil, fmt.Errorf("--root-info %s: rank %d waited %v (%s) for rank 0's root info (%w): rank 0 did not start, or it had already formed the communicator with another process (is --rank %d given twice?)", path, r, timeout, acl.EnvConnectTimeout, err, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hcclNotFound is HCCL_E_NOT_FOUND: the emulator's answer to a root info
// whose segment is gone.
const hcclNotFound = 6

// AllGatherBytes all-gathers b (a multiple of 8 bytes, the same length on
// every rank) over comm on a stream of its own: the ranks' b in rank
// order.
func AllGatherBytes(dev *acl.Device, comm *acl.Comm, b []byte) (out []byte, err error) {
	s, err := dev.CreateStream()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, dev.DestroyStream(s)) }()
	n := int64(len(b))
	send, err := dev.Malloc(n)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, dev.Free(send)) }()
	recv, err := dev.Malloc(n * int64(comm.Size()))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, dev.Free(recv)) }()
	if err := dev.MemcpyH2D(send, b); err != nil {
		return nil, err
	}
	x := acl.Collective{Op: ir.OpAllGather, DType: ir.I64, Count: n / 8, Send: send, Recv: recv, Kernel: "the ranks' flags"}
	if err := dev.EnqueueCollective(comm, x, s); err != nil {
		return nil, err
	}
	if err := dev.SynchronizeStream(s); err != nil {
		return nil, err
	}
	out = make([]byte, n*int64(comm.Size()))
	if err := dev.MemcpyD2H(out, recv); err != nil {
		return nil, err
	}
	return out, nil
}

// release removes what j owns; the caller holds j.mu.
func (j *rootJoin) release(why string) {
	if j.tmp != "" {
		os.Remove(j.tmp)
	}
	if j.file != "" {
		os.Remove(j.file)
	}
	if j.info != nil {
		acl.ReleaseRootInfo(j.info, why)
	}
}
