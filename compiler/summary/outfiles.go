package summary

import (
	"bytes"
	"fmt"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/viz"
)

// OutFiles are the files compile --out DIR writes for the result r of the
// model named model: program.json (the lowered program), partition.dot
// and segments.dot (the graph's nodes coloured by device, and by the
// program's segments).
func OutFiles(model string, r *compiler.Result) (map[string][]byte, error) {
	res, prog, g := r.Partition, r.Program, r.Graph()
	var buf bytes.Buffer
	if err := prog.Write(&buf); err != nil {
		return nil, err
	}
	files := map[string][]byte{"program.json": append([]byte(nil), buf.Bytes()...)}
	part, err := PartitionPlacement(res, g, false)
	if err != nil {
		return nil, err
	}
	segs, err := SegmentPlacement(res, prog, g)
	if err != nil {
		return nil, err
	}
	for name, c := range map[string]struct {
		title string
		p     *viz.Partition
	}{
		"partition.dot": {fmt.Sprintf("%s on %s: partition (%d NPU, %d CPU nodes, %d copies)", model, res.Target, res.NPUNodes, res.CPUNodes, len(res.Copies)), part},
		"segments.dot":  {fmt.Sprintf("%s on %s: segments of %s", model, res.Target, prog.Bucket), segs},
	} {
		d, err := viz.GraphDOT(g, viz.GraphOptions{Title: c.title, Partition: c.p, NoWeights: true})
		if err != nil {
			return nil, err
		}
		files[name] = []byte(d.String())
	}
	return files, nil
}
