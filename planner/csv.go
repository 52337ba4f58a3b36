package planner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/irtool/irtool/internal/safeio"
)

// csvHeader is the header line of the benchmark format shared by MiniMalloc
// and idealloc: buffer id, first live step, first step no longer live, bytes.
const csvHeader = "id,lower,upper,size"

// maxCSVLine bounds one CSV line so that hostile input cannot make the reader
// buffer without limit.
const maxCSVLine = 1 << 16

// ReadCSV reads a problem in the benchmark format `id,lower,upper,size`
// (a header line, then one buffer per line, live over [lower, upper)). Blank
// lines are skipped; anything else that is not four integers with
// lower <= upper and 0 <= size <= MaxSize is an error naming the line. The
// problem's alignment is 1.
func ReadCSV(r io.Reader) (*Problem, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxCSVLine)
	p := &Problem{}
	var lines []int32 // line of each buffer
	line := 0
	header := false
	var total int64
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			raw = bytes.TrimPrefix(raw, []byte("\uFEFF"))
		}
		if len(raw) == 0 {
			continue
		}
		if !header {
			text := string(raw)
			if h := strings.ReplaceAll(text, " ", ""); !strings.EqualFold(h, csvHeader) {
				return nil, fmt.Errorf("planner: csv line %d: header %q, want %q", line, clip(text), csvHeader)
			}
			header = true
			continue
		}
		if len(p.Buffers) >= MaxCSVBuffers {
			return nil, fmt.Errorf("planner: csv line %d: more than %d buffers; split the instance", line, MaxCSVBuffers)
		}
		var v [4]int64
		nf := bytes.Count(raw, comma) + 1
		if nf != 4 {
			return nil, fmt.Errorf("planner: csv line %d: %d fields, want 4 (id,lower,upper,size)", line, nf)
		}
		rest := raw
		for k := range v {
			f := rest
			if c := bytes.IndexByte(rest, ','); c >= 0 {
				f, rest = rest[:c], rest[c+1:]
			}
			n, ok := parseInt(bytes.TrimSpace(f))
			if !ok {
				return nil, fmt.Errorf("planner: csv line %d: field %d (%s): %q is not an integer", line, k+1, strings.Split(csvHeader, ",")[k], clip(string(f)))
			}
			v[k] = n
		}
		if v[0] != int64(int(v[0])) || v[1] != int64(int(v[1])) || v[2] != int64(int(v[2])) {
			return nil, fmt.Errorf("planner: csv line %d: value out of range for int", line)
		}
		b := Buffer{ID: int(v[0]), Start: int(v[1]), End: int(v[2]), Size: v[3]}
		switch {
		case b.Start > b.End:
			return nil, fmt.Errorf("planner: csv line %d: lower %d > upper %d", line, b.Start, b.End)
		case b.Start < -MaxStep || b.End > MaxStep:
			return nil, fmt.Errorf("planner: csv line %d: steps [%d, %d) out of range [-2^60, 2^60]", line, b.Start, b.End)
		case b.Size < 0 || b.Size > MaxSize:
			return nil, fmt.Errorf("planner: csv line %d: size %d out of range [0, 2^60]", line, b.Size)
		}
		lines = append(lines, int32(line))
		total += b.Size
		if total > MaxSize {
			return nil, fmt.Errorf("planner: csv line %d: total size exceeds 2^60 bytes", line)
		}
		p.Buffers = append(p.Buffers, b)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("planner: csv line %d: line longer than %d bytes", line+1, maxCSVLine)
		}
		return nil, fmt.Errorf("planner: csv line %d: %w", line+1, err)
	}
	ids := make([]int, len(p.Buffers))
	for i, b := range p.Buffers {
		ids[i] = b.ID
	}
	if i, j := firstDuplicate(ids); i >= 0 {
		return nil, fmt.Errorf("planner: csv line %d: duplicate id %d (first on line %d)", lines[j], p.Buffers[j].ID, lines[i])
	}
	if !header {
		return nil, fmt.Errorf("planner: csv: empty input, want header %q", csvHeader)
	}
	return p, nil
}

// maxCSVStream bounds a CSV read from a pipe or FIFO.
const maxCSVStream = 1 << 30

// ReadCSVFile reads a problem from a CSV file (see ReadCSV); errors name the
// file.
func ReadCSVFile(path string) (*Problem, error) {
	f, err := safeio.Open(path)
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if f.Regular() {
		// Count the rows before reading any: an instance past the limit
		// is refused without parsing or allocating it.
		if line, err := countCSVRows(f); err != nil {
			return nil, fmt.Errorf("%s: planner: csv line %d: %w", path, line, err)
		}
	} else {
		// A FIFO or pipe: do not wait forever for a writer or a line.
		r = safeio.NewStream(f, safeio.Limits{MaxBytes: maxCSVStream})
	}
	p, err := ReadCSV(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// countCSVRows counts the non-blank lines of a file from its current
// position and seeks back; past the header and MaxCSVBuffers rows it
// returns the line of the first row too many.
func countCSVRows(rs io.ReadSeeker) (int, error) {
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, nil
	}
	defer rs.Seek(start, io.SeekStart)
	buf := make([]byte, 64<<10)
	line, rows := 1, 0
	blank := true // the line so far holds only white space
	for {
		n, err := rs.Read(buf)
		for _, c := range buf[:n] {
			switch c {
			case '\n':
				if !blank {
					if rows++; rows > MaxCSVBuffers+1 { // the header and the rows
						return line, fmt.Errorf("more than %d buffers; split the instance", MaxCSVBuffers)
					}
				}
				line++
				blank = true
			case ' ', '\t', '\r':
			default:
				blank = false
			}
		}
		if err != nil {
			return 0, nil // ReadCSV reports read errors
		}
	}
}

// WriteCSV writes p in the benchmark format read by ReadCSV. The alignment is
// not part of the format; sizes are written as given.
func WriteCSV(w io.Writer, p *Problem) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(csvHeader + "\n")
	for _, b := range p.Buffers {
		fmt.Fprintf(bw, "%d,%d,%d,%d\n", b.ID, b.Start, b.End, b.Size)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("planner: write csv: %w", err)
	}
	return nil
}

// MaxCSVBuffers bounds the number of buffers ReadCSV accepts, so that a
// huge or endless input is refused with a clear error instead of exhausting
// memory (the planner needs about 200 bytes per buffer).
const MaxCSVBuffers = 1 << 22

var comma = []byte{','}

// parseInt parses an optionally signed decimal int64 without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	for len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if (!neg && u > math.MaxInt64) || (neg && u > 1<<63) {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
