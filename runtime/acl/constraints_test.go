//go:build cann

package acl

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// TestConstraintTable holds docs/CANN-CONSTRAINTS.md to the code: every
// operator of IRT_ACLNN_OPS has a row; every self-test check [id] a row
// cites printed "ok" (the emulator refused the call breaking the
// constraint through the public C API), and every [id] the self-test
// prints is cited; every Go test a row cites exists.
func TestConstraintTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "CANN-CONSTRAINTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	cited := map[string]bool{}
	goTests := map[string]bool{}
	idRe := regexp.MustCompile(`\[([a-z0-9.-]+)\]`)
	testRe := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`")
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 8 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows++
		ops[strings.Trim(strings.TrimSpace(cells[1]), "`")] = true
		test := cells[5]
		if strings.TrimSpace(test) == "" {
			t.Errorf("row %q cites no test", line)
		}
		for _, m := range idRe.FindAllStringSubmatch(test, -1) {
			cited[m[1]] = true
		}
		for _, m := range testRe.FindAllStringSubmatch(cells[5]+cells[6], -1) {
			goTests[m[1]] = true
		}
	}
	if rows < 50 {
		t.Fatalf("docs/CANN-CONSTRAINTS.md: %d table rows", rows)
	}
	for _, n := range opNames() {
		if !ops[n] {
			t.Errorf("operator %s of IRT_ACLNN_OPS has no row in docs/CANN-CONSTRAINTS.md", n)
		}
	}
	out, err := selftest(t)
	if err != nil {
		t.Fatalf("selftest: %v\n%s", err, out)
	}
	printed := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		m := regexp.MustCompile(`^(ok  |FAIL) \[([a-z0-9.-]+)\]`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] != "ok  " {
			t.Errorf("selftest: %s", line)
		}
		printed[m[2]] = true
	}
	for id := range cited {
		if !printed[id] {
			t.Errorf("docs/CANN-CONSTRAINTS.md cites [%s], which the self-test does not check", id)
		}
	}
	for id := range printed {
		if !cited[id] {
			t.Errorf("the self-test checks [%s], which docs/CANN-CONSTRAINTS.md does not cite", id)
		}
	}
	src := goTestSources(t)
	for name := range goTests {
		if !strings.Contains(src, "func "+name+"(") {
			t.Errorf("docs/CANN-CONSTRAINTS.md cites %s, which no test defines", name)
		}
	}
}

// goTestSources concatenates the _test.go files of the packages the
// constraint table cites.
func goTestSources(t *testing.T) string {
	var b strings.Builder
	for _, dir := range []string{".", filepath.Join("..", "..", "target")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
	}
	return b.String()
}

// TestWQBMMRecipeSplits runs q8_0 and q4_0 mul_mats whose calls would
// break aclnnWeightQuantBatchMatmulV2's Atlas A2/A3 limits made as one
// call (n = 70000 > 65535; k = 32, where group 32 is not below k) on the
// emulator, which refuses such calls: the recipe splits n into calls of
// at most 65535 columns and passes group 0 for k = 32, the emulator's
// trace shows the calls, the result matches kernels.MulMat within the
// f16 tolerance of TestQuantMatmulModes, and the columns around the chunk
// boundary are bit for bit those of one call over fewer rows.
func TestWQBMMRecipeSplits(t *testing.T) {
	for _, c := range []struct {
		dt     ir.DType
		gg     gguf.GGMLType
		size   int64
		K, N   int64
		groups []int64 // antiquantGroupSize of each call
		ns     []int64 // n of each call
	}{
		{ir.Q8_0, gguf.TypeQ8_0, 34, 64, 70000, []int64{32, 32}, []int64{65535, 4465}},
		{ir.Q4_0, gguf.TypeQ4_0, 18, 64, 70000, []int64{32, 32}, []int64{65535, 4465}},
		{ir.Q8_0, gguf.TypeQ8_0, 34, 32, 100, []int64{0}, []int64{100}},
		{ir.Q4_0, gguf.TypeQ4_0, 18, 32, 100, []int64{0}, []int64{100}},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d", c.gg, c.K, c.N), func(t *testing.T) {
			const M = 2
			K, N := c.K, c.N
			rng := rand.New(rand.NewPCG(3, uint64(N)))
			blocks := make([]byte, N*K/32*c.size)
			for i := range blocks {
				blocks[i] = byte(rng.IntN(256))
			}
			for b := int64(0); b < N*K/32; b++ {
				binary.LittleEndian.PutUint16(blocks[b*c.size:], gguf.F32ToF16(float32(0.002+0.02*rng.Float64())))
			}
			a, _ := kernels.NewTensor(c.gg, K, N)
			copy(a.Data, blocks)
			xb, _ := kernels.NewTensor(gguf.TypeF32, K, M)
			for i := range M * K {
				binary.LittleEndian.PutUint32(xb.Data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
			}
			want, _ := kernels.NewTensor(gguf.TypeF32, N, M)
			if err := kernels.MulMat(want, a, xb); err != nil {
				t.Fatal(err)
			}
			d := newDevice(t, Options{QuantMatmul: QuantMatmulWQBMM, PoolBytes: 64 << 20, WorkspaceReserve: 4 << 20})
			w := malloc(t, d, int64(len(blocks)))
			xbuf := malloc(t, d, 4*M*K)
			obuf := malloc(t, d, 4*M*N)
			ws := malloc(t, d, 2*M*K+2*M*N+64)
			if err := d.MemcpyH2D(w, blocks); err != nil {
				t.Fatal(err)
			}
			if err := d.MemcpyH2D(xbuf, xb.Data); err != nil {
				t.Fatal(err)
			}
			fake.Reset()
			k := &device.KernelLaunch{Name: "aclnnWeightQuantBatchMatmulV2", Op: ir.OpMulMat, Node: 1,
				Inputs: []device.TensorDesc{{DType: c.dt, Ne: [4]int64{K, N, 1, 1}, Nb: [4]int64{c.size, K / 32 * c.size, N * K / 32 * c.size, N * K / 32 * c.size}, Addr: w},
					f32(xbuf, K, M)},
				Output: f32(obuf, N, M), Workspace: ws, WorkspaceBytes: 2*M*K + 2*M*N}
			if err := d.Launch(device.DefaultStream, k); err != nil {
				t.Fatal(err)
			}
			if err := d.SynchronizeStream(device.DefaultStream); err != nil {
				t.Fatal(err)
			}
			calls, err := fake.Trace()
			if err != nil {
				t.Fatal(err)
			}
			shapes := map[int64][]int64{}
			var groups, ns []int64
			for _, cl := range calls {
				switch cl.Fn {
				case "aclCreateTensor":
					shapes[cl.Int("tensor")] = cl.Ints("shape")
				case "aclnnWeightQuantBatchMatmulV2GetWorkspaceSize":
					if cl.RC != 0 {
						t.Errorf("WQBMM refused: rc %d", cl.RC)
					}
					groups = append(groups, cl.Int("antiquantGroupSize"))
					ns = append(ns, shapes[cl.Int("weight")][1])
				}
			}
			if !slices.Equal(groups, c.groups) || !slices.Equal(ns, c.ns) {
				t.Errorf("WQBMM calls: groups %v, n %v; want %v, %v", groups, ns, c.groups, c.ns)
			}
			if want := target.WQBMMChunks(N); len(want) != len(ns) {
				t.Errorf("target.WQBMMChunks(%d) = %v, the recipe made %d calls", N, want, len(ns))
			}
			got := make([]byte, 4*M*N)
			if err := d.MemcpyD2H(got, obuf); err != nil {
				t.Fatal(err)
			}
			var worst, scale float64
			for i := range M * N {
				g := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])))
				r := float64(math.Float32frombits(binary.LittleEndian.Uint32(want.Data[4*i:])))
				worst, scale = max(worst, math.Abs(g-r)), max(scale, math.Abs(r))
			}
			if worst/scale > 2e-2 {
				t.Errorf("max|Δ|/max|out| = %.3g > 2e-2", worst/scale)
			}
			if N <= target.WQBMMMaxDim {
				return
			}
			// The split changes no bit: rows [R0, N) of the weight as a
			// matmul of its own (one call, crossing the chunk boundary
			// at 65535) give the same columns.
			const R0 = 60000
			rb := K / 32 * c.size
			o2 := malloc(t, d, 4*M*(N-R0))
			k2 := &device.KernelLaunch{Name: "aclnnWeightQuantBatchMatmulV2", Op: ir.OpMulMat, Node: 2,
				Inputs: []device.TensorDesc{{DType: c.dt, Ne: [4]int64{K, N - R0, 1, 1}, Nb: [4]int64{c.size, rb, (N - R0) * rb, (N - R0) * rb}, Addr: w + device.Ptr(R0*rb)},
					f32(xbuf, K, M)},
				Output: f32(o2, N-R0, M), Workspace: ws, WorkspaceBytes: 2*M*K + 2*M*N}
			if err := d.Launch(device.DefaultStream, k2); err != nil {
				t.Fatal(err)
			}
			if err := d.SynchronizeStream(device.DefaultStream); err != nil {
				t.Fatal(err)
			}
			got2 := make([]byte, 4*M*(N-R0))
			if err := d.MemcpyD2H(got2, o2); err != nil {
				t.Fatal(err)
			}
			for m := range int64(M) {
				for j := range N - R0 {
					a := binary.LittleEndian.Uint32(got[4*(m*N+R0+j):])
					b := binary.LittleEndian.Uint32(got2[4*(m*(N-R0)+j):])
					if a != b {
						t.Fatalf("row %d column %d: split %#x, one call %#x", m, R0+j, a, b)
					}
				}
			}
		})
	}
}
