package acl

import (
	"fmt"
	"strconv"
	"time"
)

// The HCCL environment variables bounding a communicator's waits, in
// seconds, with the ranges and defaults of CANN's environment variable
// reference (HCCL_CONNECT_TIMEOUT,
// https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/envvar/envref_07_0077.html:
// an integer in [120, 7200], default 120; HCCL_EXEC_TIMEOUT,
// https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/envvar/envref_07_0078.html:
// on Atlas A2 an integer in [0, 2147483647], default 1836, 0 never times
// out). irtool's emulator reads them the same way
// (fakeacl/hccl/hccl.c), and IRTFAKE_HCCL_TIMEOUT_MS, milliseconds in
// [1, 2147483647], overrides both there (tests).
const (
	EnvConnectTimeout = "HCCL_CONNECT_TIMEOUT"
	EnvExecTimeout    = "HCCL_EXEC_TIMEOUT"
	EnvFakeTimeoutMS  = "IRTFAKE_HCCL_TIMEOUT_MS"

	ConnectTimeoutMin, ConnectTimeoutMax, ConnectTimeoutDefault = 120, 7200, 120
	ExecTimeoutMax, ExecTimeoutDefault                          = 2147483647, 1836
)

// HCCLTimeouts are a communicator's waits: Connect bounds joining it
// (HcclCommInitRootInfo, and irtool's wait for the root info file), Exec
// a collective's wait for the other ranks (0: no bound).
type HCCLTimeouts struct {
	Connect, Exec time.Duration
}

// ReadHCCLTimeouts reads HCCL_CONNECT_TIMEOUT and HCCL_EXEC_TIMEOUT
// through getenv (os.Getenv), and with emulated IRTFAKE_HCCL_TIMEOUT_MS,
// which overrides both. A value that is not a whole number in its range
// is an error naming the variable and the range.
func ReadHCCLTimeouts(getenv func(string) string, emulated bool) (HCCLTimeouts, error) {
	if emulated {
		ms, set, err := envInt(getenv, EnvFakeTimeoutMS, 1, 2147483647)
		if err != nil {
			return HCCLTimeouts{}, err
		}
		if set {
			d := time.Duration(ms) * time.Millisecond
			return HCCLTimeouts{Connect: d, Exec: d}, nil
		}
	}
	t := HCCLTimeouts{Connect: ConnectTimeoutDefault * time.Second, Exec: ExecTimeoutDefault * time.Second}
	c, set, err := envInt(getenv, EnvConnectTimeout, ConnectTimeoutMin, ConnectTimeoutMax)
	if err != nil {
		return HCCLTimeouts{}, err
	}
	if set {
		t.Connect = time.Duration(c) * time.Second
	}
	e, set, err := envInt(getenv, EnvExecTimeout, 0, ExecTimeoutMax)
	if err != nil {
		return HCCLTimeouts{}, err
	}
	if set {
		t.Exec = time.Duration(e) * time.Second // at most 2^31-1 s: no overflow
	}
	return t, nil
}

// envInt reads variable name: a decimal integer in [lo, hi], or unset
// (empty).
func envInt(getenv func(string) string, name string, lo, hi int64) (int64, bool, error) {
	v := getenv(name)
	if v == "" {
		return 0, false, nil
	}
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil || x < lo || x > hi {
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return 0, false, fmt.Errorf("%s=%q: want a whole number in [%d, %d]", name, v, lo, hi)
	}
	return x, true, nil
}
