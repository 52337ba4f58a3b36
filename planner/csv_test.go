package planner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadCSV(t *testing.T) {
	in := "\uFEFFid,lower,upper,size\r\n0,995328,1000448,656384\r\n\n 1 , 0 , 5 , 7 \n2,3,3,0\n"
	p, err := ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &Problem{Buffers: []Buffer{{0, 995328, 1000448, 656384}, {1, 0, 5, 7}, {2, 3, 3, 0}}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("ReadCSV mismatch (-want +got):\n%s", diff)
	}
}

func TestReadCSVErrors(t *testing.T) {
	long := "id,lower,upper,size\n0,0,1," + strings.Repeat("9", 70000) + "\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"only blank lines", "\n\n", "empty input"},
		{"bad header", "id,start,end,size\n", `line 1: header "id,start,end,size"`},
		{"too few fields", "id,lower,upper,size\n0,1,2\n", "line 2: 3 fields, want 4"},
		{"too many fields", "id,lower,upper,size\n0,1,2,3\n1,1,2,3,4\n", "line 3: 5 fields"},
		{"not an integer", "id,lower,upper,size\n0,1,2,x\n", `line 2: field 4 (size): "x" is not an integer`},
		{"float", "id,lower,upper,size\n0,1.5,2,3\n", "line 2: field 2 (lower)"},
		{"overflow", "id,lower,upper,size\n0,1,2,99999999999999999999\n", "line 2: field 4"},
		{"inverted", "id,lower,upper,size\n\n0,5,2,3\n", "line 3: lower 5 > upper 2"},
		{"steps out of range", "id,lower,upper,size\n0,-9223372036854775807,2,3\n", "line 2: steps"},
		{"negative size", "id,lower,upper,size\n0,1,2,-3\n", "line 2: size -3 out of range"},
		{"huge size", "id,lower,upper,size\n0,1,2,2305843009213693952\n", "line 2: size"},
		{"duplicate id", "id,lower,upper,size\n4,1,2,3\n4,2,3,3\n", "line 3: duplicate id 4 (first on line 2)"},
		{"total too large", "id,lower,upper,size\n0,0,1,1152921504606846976\n1,0,1,1\n", "line 3: total size"},
		{"line too long", long, "line 2: line longer than"},
	}
	for _, tt := range tests {
		_, err := ReadCSV(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestReadCSVFileNamesFile(t *testing.T) {
	_, err := ReadCSVFile("testdata/does-not-exist.csv")
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.csv") {
		t.Errorf("error %v does not name the file", err)
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	p := pisarchykLee()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, p); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "id,lower,upper,size\n0,0,2,32\n") {
		t.Errorf("unexpected CSV:\n%s", buf.String())
	}
	q, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, q); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("id,lower,upper,size\n0,0,2,32\n1,1,5,28\n")
	f.Add("id,lower,upper,size\n0,995328,1000448,656384\n")
	f.Add("id,lower,upper,size\n0,5,2,3\n")
	f.Add("id,lower,upper,size\n0,1,2\n")
	f.Add("")
	f.Add("id,lower,upper,size\n\n  \r\n0,0,1,1\n\t\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadCSV(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "planner: csv") {
				t.Fatalf("error without context: %v", err)
			}
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("ReadCSV accepted an invalid problem: %v", err)
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, p); err != nil {
			t.Fatal(err)
		}
		q, err := ReadCSV(&buf)
		if err != nil {
			t.Fatalf("re-reading written CSV: %v", err)
		}
		if len(p.Buffers) == 0 {
			p.Buffers = nil
		}
		if len(q.Buffers) == 0 {
			q.Buffers = nil
		}
		if diff := cmp.Diff(p, q); diff != "" {
			t.Fatalf("round trip mismatch:\n%s", diff)
		}
		if len(p.Buffers) <= 40 {
			a, rep, err := Solve(t.Context(), p, StrategyBest, Options{Budget: time.Second, MaxNodes: 2000})
			if err != nil {
				t.Fatalf("best on a valid problem: %v", err)
			}
			if a.Arena < LowerBound(p) || a.Arena > rep.Strategies[StrategyGreedySize] {
				t.Fatalf("arena %d outside [lower bound %d, greedy-size %d]", a.Arena, LowerBound(p), rep.Strategies[StrategyGreedySize])
			}
		}
	})
}

// A file with more rows than MaxCSVBuffers is refused by a count before
// any row is parsed or allocated.
func TestReadCSVFileRowCap(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 34 MB file")
	}
	path := filepath.Join(t.TempDir(), "big.csv")
	body := bytes.Repeat([]byte("0,0,1,1\n"), MaxCSVBuffers+1)
	if err := os.WriteFile(path, append([]byte("id,lower,upper,size\n"), body...), 0o644); err != nil {
		t.Fatal(err)
	}
	body = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadCSVFile(path)
	runtime.ReadMemStats(&after)
	want := fmt.Sprintf("planner: csv line %d: more than %d buffers", MaxCSVBuffers+2, MaxCSVBuffers)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ReadCSVFile = %v, want %q", err, want)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing allocated %d bytes; want the count before parsing", grew)
	}
}
