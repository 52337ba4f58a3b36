package irtool

import (
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
)

// What a Context creates runs with its kernels: the executors, CPU
// sessions, simulated devices and program runners below get c.Kernels
// wherever their options leave the kernel set unset, so an op registered
// with RegisterOp runs everywhere without handing its KernelSet to each.

// ExecOptions returns o with the context's kernel set when o has none.
func (c *Context) ExecOptions(o eval.ExecOptions) eval.ExecOptions {
	if o.KernelSet == nil {
		o.KernelSet = c.Kernels
	}
	return o
}

// NewExecutor is eval.NewExecutor with the context's kernels.
func (c *Context) NewExecutor(g *ir.Graph, w eval.WeightSource, o eval.ExecOptions) (*eval.Executor, error) {
	return eval.NewExecutor(g, w, c.ExecOptions(o))
}

// NewSession is session.NewSession (the CPU session over a KV cache) with
// the context's kernels.
func (c *Context) NewSession(m *models.Model, w eval.WeightSource, o session.SessionOptions) (*session.Session, error) {
	o.Exec = c.ExecOptions(o.Exec)
	return session.NewSession(m, w, o)
}

// NewSimDevice is device.NewSimDevice (the simulated Ascend device) with
// the context's kernels standing in for the aclnn calls.
func (c *Context) NewSimDevice(o device.SimOptions) (*device.SimDevice, error) {
	if o.KernelSet == nil {
		o.KernelSet = c.Kernels
	}
	return device.NewSimDevice(o)
}

// NewRunner is program.NewRunner (a model compiled, lowered and run on a
// device) with the context's kernels for CPU segments and its registries
// (passes, target rules, strategies) in the compile driver.
func (c *Context) NewRunner(m *models.Model, w eval.WeightSource, dev device.Device, o program.Options) (*program.Runner, error) {
	if o.KernelSet == nil {
		o.KernelSet = c.Kernels
	}
	o.Compile = c.CompileOptions(o.Compile)
	return program.NewRunner(m, w, dev, o)
}
