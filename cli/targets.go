package cli

import (
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"io"
	"os"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/target"
)

func init() {
	register(&command{
		Name:    "targets",
		Summary: "print every target's profile (memory, bandwidth, op rules, costs)",
		Usage: `irtool targets [--json]

Prints every target profile: the NPU's peak matrix throughput, memory
bandwidth and memory, the AI cores, whether it captures ACL graphs, the
per-call overheads and kernel efficiencies of the cost model, and the ops it
claims for the NPU. --json prints them as an array of objects in the format
--target-file reads: copy one object to a file, change its name (and
anything else), and compile --target-file FILE compiles for it under that
name (docs/LOWERING.md, "Targets as data").`,
		Run:   cmdTargets,
		Flags: func(fs *flag.FlagSet) { declareTargetsFlags(fs, new(bool)) },
	})
}

func declareTargetsFlags(fs *flag.FlagSet, asJSON *bool) {
	fs.BoolVar(asJSON, "json", false, "print the profiles as a JSON array, one object per target in the format --target-file reads")
}

func cmdTargets(_ *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var asJSON bool
	declareTargetsFlags(fs, &asJSON)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 0 {
		return usageError(stderr, "targets", "takes no arguments, got %q", pos)
	}
	var files []target.File
	for _, name := range target.Names() {
		p, err := target.Get(name)
		if err != nil {
			fmt.Fprintf(stderr, "irtool targets: %v\n", err)
			return 1
		}
		files = append(files, p.File())
	}
	if asJSON {
		if err := jsonout.Write(stdout, files); err != nil {
			fmt.Fprintf(stderr, "irtool targets: %v\n", err)
			return 1
		}
		return 0
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "%s: %s\n", f.Name, f.Description)
		if f.NPU != nil {
			fmt.Fprintf(stdout, "  npu: %s, %.0f TFLOP/s FP16, %.0f GB/s, %d MiB, %d AI cores, graph capture %v\n", f.NPU.Name, f.NPU.MatmulFLOPS/1e12,
				f.NPU.MemBW/1e9, f.NPU.MemBytes>>20, f.NPU.AICores, f.GraphCapture)
			o, c := f.Overheads, f.Costs
			fmt.Fprintf(stdout, "  costs: launch %.3g us (+%.3g per WQBMM), task %.3g us, graph launch %.3g us; stream %.2g, vector %.2g, cube %.3g (half at %.3g GFLOP), WQBMM cube %.3g, antiquant %.4g G/s\n",
				o.LaunchUS, o.WQLaunchUS, o.TaskUS, o.GraphLaunchUS, c.StreamEff, c.VectorEff, c.CubeEff, c.CubeHalfGFLOP, c.WQCubeEff, c.AntiquantGElemS)
			fmt.Fprintf(stdout, "  rules: %s, %d ops on the NPU, %d call limits\n", f.Rules, len(f.NPUOps), len(f.CallLimits))
		} else {
			fmt.Fprintf(stdout, "  no NPU; host %.0f GFLOP/s, %.0f GB/s\n", f.Host.MatmulFLOPS/1e9, f.Host.MemBW/1e9)
		}
	}
	return 0
}

// readTargetFile reads --target-file: the profile under its own name,
// registered in a fresh rule set the compile then decides with.
func readTargetFile(path string) (*target.Rules, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--target-file: %w", err)
	}
	rules, p, err := target.LoadFile(data)
	if err != nil {
		return nil, "", fmt.Errorf("--target-file %s: %w", path, err)
	}
	return rules, p.Name, nil
}
