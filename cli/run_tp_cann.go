//go:build cann

package cli

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/runtime/acl"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
)

// This file holds run --backend cann --tp N: one Ascend device per rank
// (device --device + rank), each rank a program.Runner whose collectives
// are HCCL calls on its segments' streams (target.HCCLRules), captured
// with the segments; the ranks are goroutines of this process
// (HcclCommInitAll), or, with --root-info, one rank per process
// (HcclGetRootInfo written to the file by rank 0, HcclCommInitRootInfo).

// cannRank is one rank: its runner, device and communicators (one per
// group it joins: tp, pp, or both with --tp and --pp).
type cannRank struct {
	*program.Runner
	dev   *acl.Device
	comms []*acl.Comm
	mode  string // --acl-quant-matmul
}

func (r *cannRank) stats() simStatsJSON {
	st := programStats(r.Runner, r.dev.Stats())
	st.QuantMatmul = r.mode
	return st
}

// destroyComms destroys the rank's communicators, so that the other
// ranks' pending HCCL calls on them fail at once.
func (r *cannRank) destroyComms() error {
	var errs []error
	for _, c := range r.comms {
		errs = append(errs, c.Destroy())
	}
	return errors.Join(errs...)
}

// close ends the runner, then destroys the communicators and the device.
func (r *cannRank) close() error {
	var errs []error
	if r.Runner != nil {
		errs = append(errs, r.Runner.Close())
	}
	r.dev.DetachComms()
	errs = append(errs, r.destroyComms())
	return errors.Join(append(errs, r.dev.Close())...)
}

func closeCann(rs []*cannRank) {
	for _, r := range rs {
		r.close()
	}
}

// newRankDevice opens device id with the pool of one rank's model and the
// llama.cpp build of run's --llama-build (the "ggml" QuantMatmul mode's
// summation orders), as the single-device backend does.
func newRankDevice(f *gguf.File, cf *cannFlags, lb kernels.LlamaBuild, id, ranks int) (*acl.Device, error) {
	dev, err := acl.New(acl.Options{PoolBytes: cannPool(f, cf), WorkspaceReserve: cf.Workspace, QuantMatmul: cf.QuantMatmul, LlamaBuild: lb})
	if err != nil {
		return nil, fmt.Errorf("--backend cann: %w (irtool doctor explains what is missing)", err)
	}
	if err := dev.SetDevice(id); err != nil {
		hint := ""
		var ae *device.ACLError
		if acl.Emulated() && errors.As(err, &ae) && ae.Code == device.ACLErrInvalidDeviceID {
			hint = fmt.Sprintf(" (the emulator has IRTFAKE_DEVICE_COUNT devices: set it to %d or more)", id+1)
		}
		return nil, errors.Join(fmt.Errorf("%d rank(s): rank on device %d: %w%s", ranks, id, err, hint), dev.Close())
	}
	return dev, nil
}

// rankSession builds rank's runner on dev with parallel.Rules, the rules
// compile --tp lowers with: the collectives HCCL can do run on the NPU,
// any other on the host through hostComms (none in a process of its own:
// there every collective must be HCCL's).
func rankSession(m *models.Model, w eval.WeightSource, dev *acl.Device, id int, hostComms []eval.Communicator, flags *simFlags, fs *flag.FlagSet) (*program.Runner, error) {
	pol, err := flags.policy(fs)
	if err != nil {
		return nil, err
	}
	// Each rank captures on its own thread while the others run: a
	// GLOBAL-mode capture would forbid their synchronous copies.
	pol.Cache.Mode = device.CaptureThreadLocal
	rules, err := parallel.Rules()
	if err != nil {
		return nil, err
	}
	ks := eval.NewCollectiveKernels(flags.reg.Kernels, hostComms...)
	return flags.reg.NewRunner(m, w, dev, program.Options{Policy: pol, DeviceID: id, Kernels: flags.Kernels, KernelSet: ks,
		Compile: compiler.Options{Target: flags.Target, Passes: "none", Rules: rules}})
}

// cannGroup is one communicator of the ranks of this process: its group
// name and its members, indices of the ranks in communicator rank order.
type cannGroup struct {
	name    string
	members []int
}

// startCann starts the ranks of group (the tensor-parallel ranks, or the
// pipeline stages) as goroutines of this process, rank i on device
// --device + i.
func (b *tpBackend) startCann(group string, ms []*models.Model, ws []eval.WeightSource, f *gguf.File, flags *simFlags, cf *cannFlags, fs *flag.FlagSet) error {
	all := make([]int, len(ms))
	for i := range all {
		all[i] = i
	}
	return b.startCannGroups([]cannGroup{{group, all}}, ms, ws, f, flags, cf, fs)
}

// startCannGroups starts the ranks ms as goroutines of this process, rank
// i on device --device + i, with one HCCL communicator (HcclCommInitAll)
// and one host group per entry of groups.
func (b *tpBackend) startCannGroups(groups []cannGroup, ms []*models.Model, ws []eval.WeightSource, f *gguf.File, flags *simFlags, cf *cannFlags, fs *flag.FlagSet) error {
	n := len(ms)
	ids := make([]int, n)
	for i := range ids {
		ids[i] = cf.Device + i
	}
	fail := func(err error) error {
		closeCann(b.canns)
		b.canns = nil
		return err
	}
	for i := range ms {
		dev, err := newRankDevice(f, cf, flags.Kernels.LlamaBuild, ids[i], n)
		if err != nil {
			return fail(err)
		}
		b.canns = append(b.canns, &cannRank{dev: dev, mode: cf.QuantMatmul})
	}
	if _, err := hcclTimeouts(); err != nil {
		return fail(err)
	}
	hostComms := make([][]eval.Communicator, n)
	grps := make([]*device.Group, len(groups))
	pos := make([]map[int]int, len(groups)) // rank -> its place in group g
	for g, gr := range groups {
		devs := make([]int, len(gr.members))
		for k, i := range gr.members {
			devs[k] = ids[i]
		}
		comms, err := acl.HcclCommInitAll(gr.name, devs)
		if err != nil {
			return fail(err)
		}
		if grps[g], err = device.NewGroup(gr.name, len(gr.members), device.DefaultCollectiveTimeout); err != nil {
			return fail(err)
		}
		pos[g] = map[int]int{}
		for k, i := range gr.members {
			r := b.canns[i]
			r.comms = append(r.comms, comms[k])
			r.dev.AttachComm(comms[k])
			hc, err := grps[g].Comm(k)
			if err != nil {
				return fail(err)
			}
			hostComms[i] = append(hostComms[i], hc)
			pos[g][i] = k
		}
	}
	var steppers []session.Stepper
	for i, r := range b.canns {
		var err error
		if r.Runner, err = rankSession(ms[i], ws[i], r.dev, ids[i], hostComms[i], flags, fs); err != nil {
			return fail(fmt.Errorf("rank %d: %w", i, err))
		}
		steppers = append(steppers, r)
	}
	// A failed rank fails the others' pending collectives at once: the
	// host ones through its groups, the HCCL ones by destroying its
	// communicators (a rank waiting in another group then fails in turn).
	onFail := func(i int, err error) {
		for g := range groups {
			if k, ok := pos[g][i]; ok {
				grps[g].Fail(k, err)
			}
		}
		b.canns[i].destroyComms()
	}
	var err error
	if b.Ranks, err = session.NewRanks(steppers, onFail); err != nil {
		return fail(err)
	}
	return nil
}

// hcclTimeouts reads HCCL_CONNECT_TIMEOUT and HCCL_EXEC_TIMEOUT (and the
// emulator's IRTFAKE_HCCL_TIMEOUT_MS), refusing a value out of its range
// before any rank starts.
func hcclTimeouts() (acl.HCCLTimeouts, error) {
	return acl.ReadHCCLTimeouts(os.Getenv, acl.Emulated())
}

// newTPProcBackend runs rank tf.Rank of the split alone in this process;
// the other ranks run in other processes started with the same flags and
// their own --rank. Rank 0 writes the HCCL root info to tf.RootInfo; the
// others wait for it (a file left by an earlier run is refused by HCCL and
// read again until rank 0 has replaced it), within HCCL_CONNECT_TIMEOUT.
// Once joined, the ranks check that they were given the same model and
// flags.
func newTPProcBackend(tp *models.TP, f *gguf.File, flags *simFlags, cf *cannFlags, tf *tpFlags, fs *flag.FlagSet, stderr io.Writer) (*tpBackend, error) {
	n, r := len(tp.Ranks), tf.Rank
	id := cf.Device
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "device" })
	if !set {
		id = r // one device per rank unless --device says which
	}
	b := &tpBackend{tp: tp, first: r, proc: true}
	dev, err := newRankDevice(f, cf, flags.Kernels.LlamaBuild, id, n)
	if err != nil {
		return nil, err
	}
	rank := &cannRank{dev: dev, mode: cf.QuantMatmul}
	b.canns = []*cannRank{rank}
	fail := func(err error) (*tpBackend, error) {
		closeCann(b.canns)
		return nil, err
	}
	to, err := hcclTimeouts()
	if err != nil {
		return fail(err)
	}
	comm, err := joinRootInfo(dev, tf.RootInfo, n, r, to.Connect, stderr)
	if err != nil {
		return fail(err)
	}
	rank.comms = []*acl.Comm{comm}
	if err := agreeFlags(dev, comm, f, fs); err != nil {
		return fail(fmt.Errorf("--root-info %s: rank %d: %w", tf.RootInfo, r, err))
	}
	dev.AttachComm(comm)
	if rank.Runner, err = rankSession(tp.Ranks[r].Model, tp.Ranks[r].Weights(f), dev, id, nil, flags, fs); err != nil {
		return fail(fmt.Errorf("rank %d: %w", r, err))
	}
	// A failure destroys the communicator, so that the other processes'
	// pending collectives fail at once.
	b.procStep = func(tokens []int32) (*session.StepResult, error) {
		res, err := rank.Step(tokens)
		if err != nil {
			rank.destroyComms()
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		return res, nil
	}
	return b, nil
}

// rootJoin is what a rank owns while the ranks join: the root info it
// made, the file it wrote it to (rank 0), released by an interrupt.
type rootJoin struct {
	mu   sync.Mutex
	info []byte // rank 0's root info, until every rank has joined
	tmp  string // the temporary file being written
	file string // the root info file written
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

// joinRootInfo makes (rank 0) or reads (the others) the root info in
// path and joins the communicator. SIGINT and SIGTERM while the ranks
// join remove rank 0's root info file and segment and exit with status
// 130 or 143 after one line on stderr; the handler is removed on return.
func joinRootInfo(dev *acl.Device, path string, n, r int, timeout time.Duration, stderr io.Writer) (*acl.Comm, error) {
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
		return makeRootInfo(dev, j, path, n)
	}
	return awaitRootInfo(dev, path, n, r, timeout)
}

// makeRootInfo is rank 0's part: it refuses a path holding anything but a
// root info file of an earlier run, makes the root info, writes it to a
// temporary file beside path (made first: a directory it cannot write to
// costs nothing) renamed to path, joins, and removes path. The root info
// is released on every failure.
func makeRootInfo(dev *acl.Device, j *rootJoin, path string, n int) (*acl.Comm, error) {
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
	c, err := dev.HcclCommInitRootInfo(models.TPGroup, n, 0, info)
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
func awaitRootInfo(dev *acl.Device, path string, n, r int, timeout time.Duration) (*acl.Comm, error) {
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
			c, err := dev.HcclCommInitRootInfo(models.TPGroup, n, r, info)
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

// agreeFlags checks that every rank of comm runs the same model and the
// flags that shape the run (all but --rank, --device, --json, --logits,
// --root-info and the CPU's --threads and --check-numerics): each rank
// all-gathers one hash per flag, and the first that differs is named with
// this rank's value and the other rank.
func agreeFlags(dev *acl.Device, comm *acl.Comm, f *gguf.File, fs *flag.FlagSet) error {
	names := []string{"model", "ctx", "n", "p", "tokens", "ubatch", "kv-type", "kv-write", "passes", "tp", "tp-exact",
		"graph", "prefill-graph", "graph-cache", "target", "llama-build", "acl-quant-matmul", "acl-workspace", "acl-pool"}
	vals := make([]string, len(names))
	for i, name := range names {
		if name == "model" {
			vals[i] = fmt.Sprintf("%d bytes, %d tensors, data at %d", f.Size, len(f.Tensors), f.DataOffset)
		} else if fl := fs.Lookup(name); fl != nil {
			vals[i] = fl.Value.String()
		}
	}
	k := len(names)
	mine := make([]byte, 8*k)
	for i, v := range vals {
		h := fnv.New64a()
		h.Write([]byte(v))
		binary.LittleEndian.PutUint64(mine[8*i:], h.Sum64())
	}
	all, err := allGatherBytes(dev, comm, mine)
	if err != nil {
		return fmt.Errorf("comparing the ranks' flags: %w", err)
	}
	for i, name := range names {
		for o := range comm.Size() {
			if o == comm.Rank() || bytes.Equal(all[o*8*k+8*i:o*8*k+8*i+8], mine[8*i:8*i+8]) {
				continue
			}
			what := "--" + name + " " + vals[i]
			if name == "model" {
				what = "the model (" + vals[i] + ")"
			} else if len(name) == 1 {
				what = fmt.Sprintf("-%s %q", name, vals[i])
			}
			return fmt.Errorf("this rank runs with %s, rank %d with another value: every rank needs the same model and flags (all but --rank and --device)", what, o)
		}
	}
	return nil
}

// allGatherBytes all-gathers b (a multiple of 8 bytes, the same length on
// every rank) over comm on a stream of its own: the ranks' b in rank
// order.
func allGatherBytes(dev *acl.Device, comm *acl.Comm, b []byte) (out []byte, err error) {
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
