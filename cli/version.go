package cli

import (
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/kernels"
)

func init() {
	register(&command{
		Name:    "version",
		Summary: "print the version, the build and the CPU features the kernels use",
		Usage: `irtool version [--json]

Prints the module version, the VCS revision it was built from (with
"+modified" when the tree had uncommitted changes), the Go version, the
build tags (purego: pure-Go kernels only; cann: the CANN backend), the
platform, and the CPU features the assembly kernels need (AVX2, FMA and
F16C on amd64, read with golang.org/x/sys/cpu) with the kernel path this
binary takes on this machine. --json prints the same as one object:
{"module", "version", "revision", "revision_time", "modified", "go",
"tags", "os", "arch", "cpu_features", "kernels"}.`,
		Run: cmdVersion,
	})
}

// versionInfo is what version prints.
type versionInfo struct {
	Module       string          `json:"module"`
	Version      string          `json:"version"`
	Revision     string          `json:"revision"`
	RevisionTime string          `json:"revision_time"`
	Modified     bool            `json:"modified"`
	Go           string          `json:"go"`
	Tags         []string        `json:"tags"`
	OS           string          `json:"os"`
	Arch         string          `json:"arch"`
	CPUFeatures  map[string]bool `json:"cpu_features"`
	Kernels      string          `json:"kernels"`
}

func readVersion() versionInfo {
	v := versionInfo{Module: "github.com/irtool/irtool", Version: "(unknown)", Revision: "(unknown: built without VCS information)",
		Go: runtime.Version(), Tags: []string{}, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUFeatures: kernels.CPUFeatures(), Kernels: kernels.Implementation()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version // "(devel)" for a build in the module's tree
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.RevisionTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "-tags":
				for _, t := range strings.Split(s.Value, ",") {
					if t = strings.TrimSpace(t); t != "" {
						v.Tags = append(v.Tags, t)
					}
				}
			}
		}
	}
	return v
}

func cmdVersion(_ *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 0 {
		return usageError(stderr, "version", "takes no arguments, got %q", pos)
	}
	v := readVersion()
	if *asJSON {
		if err := jsonout.Write(stdout, v); err != nil {
			fmt.Fprintf(stderr, "irtool version: %v\n", err)
			return 1
		}
		return 0
	}
	rev := v.Revision
	if v.Modified {
		rev += "+modified"
	}
	if v.RevisionTime != "" {
		rev += " (" + v.RevisionTime + ")"
	}
	tags := strings.Join(v.Tags, ",")
	if tags == "" {
		tags = "none"
	}
	var feats []string
	for _, f := range []string{"avx2", "fma", "f16c"} {
		if has, ok := v.CPUFeatures[f]; ok {
			mark := "no"
			if has {
				mark = "yes"
			}
			feats = append(feats, f+"="+mark)
		}
	}
	if len(feats) == 0 {
		feats = []string{"none used on " + v.Arch}
	}
	fmt.Fprintf(stdout, "irtool %s %s\nrevision  %s\ngo        %s %s/%s\ntags      %s\ncpu       %s\nkernels   %s\n",
		v.Module, v.Version, rev, v.Go, v.OS, v.Arch, tags, strings.Join(feats, " "), v.Kernels)
	return 0
}
