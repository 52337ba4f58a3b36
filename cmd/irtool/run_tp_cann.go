//go:build cann

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
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
}

func (r *cannRank) stats() simStatsJSON { return programStats(r.Runner, r.dev.Stats()) }

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
		if acl.Emulated() {
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
	ks := eval.NewCollectiveKernels(nil, hostComms...)
	return program.NewRunner(m, w, dev, program.Options{Policy: pol, DeviceID: id, Kernels: flags.Kernels, KernelSet: ks,
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
		b.canns = append(b.canns, &cannRank{dev: dev})
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

// rootInfoTimeout bounds how long a rank waits for the root info file
// and a stale one to be replaced.
const rootInfoTimeout = 120 * time.Second

// newTPProcBackend runs rank tf.Rank of the split alone in this process;
// the other ranks run in other processes started with the same flags and
// their own --rank. Rank 0 writes the HCCL root info to tf.RootInfo; the
// others wait for it (a file left by an earlier run is refused by HCCL and
// read again until rank 0 has replaced it).
func newTPProcBackend(tp *models.TP, f *gguf.File, flags *simFlags, cf *cannFlags, tf *tpFlags, fs *flag.FlagSet) (*tpBackend, error) {
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
	rank := &cannRank{dev: dev}
	b.canns = []*cannRank{rank}
	fail := func(err error) (*tpBackend, error) {
		closeCann(b.canns)
		return nil, err
	}
	comm, err := joinRootInfo(dev, tf.RootInfo, n, r)
	if err != nil {
		return fail(err)
	}
	rank.comms = []*acl.Comm{comm}
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

// joinRootInfo makes (rank 0) or reads (the others) the root info in
// path and joins the communicator.
func joinRootInfo(dev *acl.Device, path string, n, r int) (*acl.Comm, error) {
	if r == 0 {
		info, err := acl.HcclGetRootInfo()
		if err != nil {
			return nil, err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".root-info-*")
		if err != nil {
			return nil, fmt.Errorf("--root-info: %w", err)
		}
		_, werr := tmp.Write(info)
		if err := errors.Join(werr, tmp.Close()); err != nil {
			os.Remove(tmp.Name())
			return nil, fmt.Errorf("--root-info: %w", err)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			os.Remove(tmp.Name())
			return nil, fmt.Errorf("--root-info: %w", err)
		}
		c, err := dev.HcclCommInitRootInfo(models.TPGroup, n, 0, info)
		os.Remove(path) // every rank has joined (or given up)
		return c, err
	}
	deadline := time.Now().Add(rootInfoTimeout)
	for {
		info, err := os.ReadFile(path)
		if err == nil && len(info) == acl.RootInfoBytes {
			c, err := dev.HcclCommInitRootInfo(models.TPGroup, n, r, info)
			var he *acl.HCCLError
			if err == nil || !errors.As(err, &he) || he.Code != 6 /* HCCL_E_NOT_FOUND: a stale file */ || time.Now().After(deadline) {
				return c, err
			}
		} else if err == nil {
			err = fmt.Errorf("%d bytes, want %d", len(info), acl.RootInfoBytes)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("--root-info %s: rank %d waited %v for rank 0's root info: %w", path, r, rootInfoTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
