package cli

import (
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"io"
	"os"
	"strings"

	"github.com/irtool/irtool"
)

// "irtool doctor" answers one question: can this irtool run on Ascend
// hardware here? The probe itself needs the cgo binding of runtime/acl and
// lives in doctor_cann.go (built with -tags cann); a default build answers
// that it has no CANN support and how to get it (cann_stub.go).

func init() {
	register(&command{
		Name:    "doctor",
		Summary: "check whether CANN and an Ascend NPU are usable",
		Usage: `irtool doctor [--device N] [--json]

Reports whether this irtool can run models on Ascend hardware: whether it
was built with CANN support (go build -tags cann), where the CANN toolkit is
($ASCEND_TOOLKIT_HOME, set by CANN's set_env.sh, or the libraries listed in
$IRTOOL_ACL_LIBS), the number of NPUs, the SoC name, free and total device
memory of device N, whether ACL graph capture works there, and which aclnn
operators the binding needs are missing. Exits 0 when the device is usable,
1 otherwise. See docs/RUNTIME.md, "Real hardware".`,
		Run: cmdDoctor,
		Flags: func(fs *flag.FlagSet) {
			fs.Int("device", 0, "the NPU to inspect (its device id)")
			fs.Bool("json", false, "print one JSON object")
		},
	})
}

// doctorReport is what doctor prints (--json writes it as is).
type doctorReport struct {
	// CANNSupport: this binary was built with -tags cann.
	CANNSupport bool `json:"cann_support"`
	// Build says how to build with CANN support when it is missing.
	Build   string `json:"build,omitempty"`
	Toolkit string `json:"toolkit"` // $ASCEND_TOOLKIT_HOME
	// Found: the CANN libraries were loaded and initialised.
	Found     bool     `json:"found"`
	Libraries []string `json:"libraries,omitempty"`
	Devices   int      `json:"devices"`
	Device    int      `json:"device"`
	SoC       string   `json:"soc,omitempty"`
	FreeBytes int64    `json:"free_bytes"`
	Total     int64    `json:"total_bytes"`
	// CaptureAPI: the runtime exports aclmdlRICapture*; GraphCapture: an
	// empty capture succeeded on the device.
	CaptureAPI   bool     `json:"capture_api"`
	GraphCapture bool     `json:"graph_capture"`
	CaptureError string   `json:"capture_error,omitempty"`
	Missing      []string `json:"missing_kernels,omitempty"`
	// Emulated: the libraries are irtool's host emulator of CANN
	// (scripts/fakeacl.sh): the CANN path runs, numbers are computed on
	// the host.
	Emulated bool   `json:"emulated"`
	Error    string `json:"error,omitempty"`
}

// usable reports whether a model can run on the device.
func (r *doctorReport) usable() bool { return r.CANNSupport && r.Found && r.Error == "" }

// buildHint says how to get CANN support.
const buildHint = "go build -tags cann ./cmd/irtool (needs cgo and a C compiler; the CANN toolkit is loaded at run time from $ASCEND_TOOLKIT_HOME)"

// emulatorHint says how to try the CANN path without a toolkit or an NPU.
const emulatorHint = "to try the CANN path without an NPU, build irtool's emulator of libascendcl and point irtool at it:\n  scripts/fakeacl.sh /tmp/fakeacl && IRTOOL_ACL_LIBS=/tmp/fakeacl irtool doctor"

func cmdDoctor(_ *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	device := fs.Int("device", 0, "the NPU to inspect (its device id)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 0 {
		return usageError(stderr, "doctor", "unexpected argument %q", pos[0])
	}
	if err := flagRange("--device", int64(*device), 0, maxDevice, ""); err != nil {
		return usageError(stderr, "doctor", "%v", err)
	}
	rep := probeCANN(*device)
	rep.Toolkit = os.Getenv("ASCEND_TOOLKIT_HOME")
	if *asJSON {
		if err := jsonout.Write(stdout, rep); err != nil {
			fmt.Fprintf(stderr, "irtool doctor: %v\n", err)
			return 1
		}
	} else {
		printDoctor(stdout, &rep)
	}
	if !rep.usable() {
		return 1
	}
	return 0
}

func printDoctor(w io.Writer, r *doctorReport) {
	if !r.CANNSupport {
		fmt.Fprintf(w, "CANN support: no: this irtool was built without it (the default build is pure Go).\nTo run on Ascend hardware, build with: %s\nThen, %s\n", r.Build, emulatorHint)
		return
	}
	fmt.Fprintln(w, "CANN support: built in (-tags cann)")
	toolkit := r.Toolkit
	if toolkit == "" {
		toolkit = "(ASCEND_TOOLKIT_HOME is not set)"
	}
	fmt.Fprintf(w, "toolkit:      %s\n", toolkit)
	if !r.Found {
		fmt.Fprintf(w, "CANN:         not found: %s\n", r.Error)
		fmt.Fprintf(w, "hint:         %s\n", emulatorHint)
		return
	}
	fmt.Fprintf(w, "libraries:    %s\n", strings.Join(r.Libraries, ", "))
	if r.Emulated {
		fmt.Fprintln(w, "CANN:         emulated: irtool's host emulator of libascendcl (scripts/fakeacl.sh); the aclnn operators compute on the host, no NPU is used")
	}
	fmt.Fprintf(w, "devices:      %d\n", r.Devices)
	if r.Error != "" {
		fmt.Fprintf(w, "device %d:     error: %s\n", r.Device, r.Error)
		return
	}
	fmt.Fprintf(w, "device %d:     %s, %s free of %s\n", r.Device, r.SoC, gib(r.FreeBytes), gib(r.Total))
	switch {
	case r.GraphCapture:
		fmt.Fprintln(w, "graph capture: supported (an empty aclmdlRI capture succeeded)")
	case !r.CaptureAPI:
		fmt.Fprintln(w, "graph capture: no: the runtime does not export aclmdlRICapture* (run with --graph off)")
	default:
		fmt.Fprintf(w, "graph capture: no: %s (run with --graph off)\n", r.CaptureError)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "aclnn:        missing %s (programs using them fail when launched)\n", strings.Join(r.Missing, ", "))
	} else {
		fmt.Fprintln(w, "aclnn:        every operator the binding calls is exported")
	}
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// cannFlags are run's flags for the cann backend.
type cannFlags struct {
	Device    int
	Workspace int64
	Pool      int64
	// QuantMatmul is acl.Options.QuantMatmul ("wqbmm" or "ggml").
	QuantMatmul string
}

// cannOnly lists the flags that only the cann backend reads.
var cannOnly = []string{"device", "acl-workspace", "acl-pool", "acl-quant-matmul"}

func (f *cannFlags) declare(fs *flag.FlagSet) {
	fs.IntVar(&f.Device, "device", 0, "cann: the NPU to run on (its device id)")
	fs.Int64Var(&f.Workspace, "acl-workspace", 64<<20, "cann: `BYTES` of scratch reserved per stream for aclnn workspaces the plan did not foresee")
	fs.Int64Var(&f.Pool, "acl-pool", 0, "cann: `BYTES` of device memory pre-allocated for the model (default: compile's device_memory.pool_bytes)")
	fs.StringVar(&f.QuantMatmul, "acl-quant-matmul", "wqbmm", "cann: quantised matmul `MODE`: wqbmm (aclnnWeightQuantBatchMatmulV2 on f16 activations, fast) or ggml (q8_0/q8_K activations and f32 weights, llama.cpp's numbers)")
}

// check rejects cann-only flags on another backend.
func (f *cannFlags) check(fs *flag.FlagSet, backend string) error {
	if backend == "cann" {
		for _, e := range []error{
			flagRange("--device", int64(f.Device), 0, maxDevice, ""),
			flagRange("--acl-workspace", f.Workspace, 0, maxACLBytes, ""),
			flagRange("--acl-pool", f.Pool, 0, maxACLBytes, ""),
		} {
			if e != nil {
				return e
			}
		}
		if f.QuantMatmul != "wqbmm" && f.QuantMatmul != "ggml" {
			return fmt.Errorf("--acl-quant-matmul %q: want wqbmm or ggml", f.QuantMatmul)
		}
		return nil
	}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		for _, name := range cannOnly {
			if fl.Name == name && err == nil {
				err = fmt.Errorf("--%s applies to --backend cann only", name)
			}
		}
	})
	return err
}
