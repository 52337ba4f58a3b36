//go:build cann

package launch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/runtime/acl"
	"github.com/irtool/irtool/runtime/acl/rootjoin"
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

func (r *cannRank) stats() Stats {
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
// llama.cpp build lb (the "ggml" QuantMatmul mode's summation orders), as
// the single-device backend does.
func newRankDevice(f *gguf.File, cf CannOptions, lb kernels.LlamaBuild, id, ranks int) (*acl.Device, error) {
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
func rankSession(m *models.Model, w eval.WeightSource, dev *acl.Device, id int, hostComms []eval.Communicator, o Options) (*program.Runner, error) {
	pol, err := o.Policy()
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
	ks := eval.NewCollectiveKernels(o.KernelSet, hostComms...)
	return o.NewRunner(m, w, dev, program.Options{Policy: pol, DeviceID: id, Kernels: o.Kernels, KernelSet: ks,
		Compile: compiler.Options{Target: o.Target, Passes: "none", Rules: rules}})
}

// cannGroup is one communicator of the ranks of this process: its group
// name and its members, indices of the ranks in communicator rank order.
type cannGroup struct {
	name    string
	members []int
}

// startCann starts the ranks of group (the tensor-parallel ranks, or the
// pipeline stages) as goroutines of this process, rank i on device
// Cann.Device + i.
func (b *Ranks) startCann(group string, ms []*models.Model, ws []eval.WeightSource, f *gguf.File, o Options) error {
	all := make([]int, len(ms))
	for i := range all {
		all[i] = i
	}
	return b.startCannGroups([]cannGroup{{group, all}}, ms, ws, f, o)
}

// startCannGroups starts the ranks ms as goroutines of this process, rank
// i on device Cann.Device + i, with one HCCL communicator (HcclCommInitAll)
// and one host group per entry of groups.
func (b *Ranks) startCannGroups(groups []cannGroup, ms []*models.Model, ws []eval.WeightSource, f *gguf.File, o Options) error {
	n, cf := len(ms), o.Cann
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
		dev, err := newRankDevice(f, cf, o.Kernels.LlamaBuild, ids[i], n)
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
		if r.Runner, err = rankSession(ms[i], ws[i], r.dev, ids[i], hostComms[i], o); err != nil {
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

// NewTPProc runs rank o.Cann.Rank of the split alone in this process;
// the other ranks run in other processes started with the same settings
// and their own rank. Rank 0 writes the HCCL root info to o.Cann.RootInfo;
// the others wait for it (a file left by an earlier run is refused by HCCL
// and read again until rank 0 has replaced it), within
// HCCL_CONNECT_TIMEOUT. Once joined, the ranks check that they were given
// the same model and o.Cann.Agree.
func NewTPProc(tp *models.TP, f *gguf.File, o Options) (*Ranks, error) {
	cf := o.Cann
	n, r := len(tp.Ranks), cf.Rank
	id := cf.Device
	if !cf.DeviceSet {
		id = r // one device per rank unless --device says which
	}
	b := &Ranks{TP: tp, first: r, proc: true}
	dev, err := newRankDevice(f, cf, o.Kernels.LlamaBuild, id, n)
	if err != nil {
		return nil, err
	}
	rank := &cannRank{dev: dev, mode: cf.QuantMatmul}
	b.canns = []*cannRank{rank}
	fail := func(err error) (*Ranks, error) {
		closeCann(b.canns)
		return nil, err
	}
	to, err := hcclTimeouts()
	if err != nil {
		return fail(err)
	}
	comm, err := rootjoin.Join(dev, models.TPGroup, cf.RootInfo, n, r, to.Connect, cf.Log)
	if err != nil {
		return fail(err)
	}
	rank.comms = []*acl.Comm{comm}
	if err := agreeFlags(dev, comm, f, cf.Agree); err != nil {
		return fail(fmt.Errorf("--root-info %s: rank %d: %w", cf.RootInfo, r, err))
	}
	dev.AttachComm(comm)
	if rank.Runner, err = rankSession(tp.Ranks[r].Model, tp.Ranks[r].Weights(f), dev, id, nil, o); err != nil {
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

// agreeFlags checks that every rank of comm runs the same model and
// settings: each rank all-gathers one hash per setting (the model's size,
// tensor count and data offset first), and the first that differs is
// named with this rank's value and the other rank.
func agreeFlags(dev *acl.Device, comm *acl.Comm, f *gguf.File, settings []Setting) error {
	names := []string{"model"}
	vals := []string{fmt.Sprintf("%d bytes, %d tensors, data at %d", f.Size, len(f.Tensors), f.DataOffset)}
	for _, st := range settings {
		names, vals = append(names, st.Name), append(vals, st.Value)
	}
	k := len(names)
	mine := make([]byte, 8*k)
	for i, v := range vals {
		h := fnv.New64a()
		h.Write([]byte(v))
		binary.LittleEndian.PutUint64(mine[8*i:], h.Sum64())
	}
	all, err := rootjoin.AllGatherBytes(dev, comm, mine)
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
