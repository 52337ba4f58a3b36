package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
)

// The hostile-corpus generator: fresh malformed models
// made from the embedded stories260K by the gguf writer (metadata of the
// wrong type or out of range, tensors with other shapes, types or
// non-finite data, missing keys and tensors) and by byte damage to the
// written file (flips in the header, truncation), each run through the
// commands that read models. No run may panic or hang; every failure is an
// error message. The seed is new each run and logged; IRTOOL_HOSTILE_SEED
// replays one.

// hostileValues are replacements for a metadata value.
var hostileValues = []gguf.Value{
	gguf.Str("x"), gguf.U32(0), gguf.U32(1 << 31), gguf.I32(-8), gguf.U64(math.MaxUint64),
	gguf.F32(float32(math.NaN())), gguf.F32(float32(math.Inf(1))), gguf.F64(-1), gguf.Bool(true),
	gguf.Strs([]string{"a", "b"}), gguf.U32(1e9), gguf.I64(-1),
}

// hostileKeys are the metadata keys the commands read.
var hostileKeys = []string{
	"general.architecture", "llama.embedding_length", "llama.block_count", "llama.attention.head_count",
	"llama.attention.head_count_kv", "llama.feed_forward_length", "llama.context_length",
	"llama.rope.dimension_count", "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base",
	"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token",
	"general.alignment",
}

// hostileModel returns one damaged copy of the embedded model and what was
// done to it.
func hostileModel(t *testing.T, rng *rand.Rand) ([]byte, string) {
	t.Helper()
	f, err := gguf.Parse(irtool.EmbeddedModel, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	what := []string{}
	kind := rng.IntN(5)
	key := hostileKeys[rng.IntN(len(hostileKeys))]
	val := hostileValues[rng.IntN(len(hostileValues))]
	for _, kv := range f.KV {
		if kind <= 1 && kv.Key == key {
			if kind == 0 {
				what = append(what, "drop "+key)
				continue
			}
			what = append(what, fmt.Sprintf("%s = %v (%s)", key, val, val.Type()))
			w.SetKV(key, val)
			continue
		}
		w.SetKV(kv.Key, kv.Value)
	}
	if kind == 1 {
		if _, ok := f.Get(key); !ok {
			w.SetKV(key, val)
			what = append(what, fmt.Sprintf("add %s = %v", key, val))
		}
	}
	victim := f.Tensors[rng.IntN(len(f.Tensors))].Name
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ne := ti.Shape()
		typ := ti.Type
		if kind == 2 && ti.Name == victim {
			switch rng.IntN(5) {
			case 0:
				what = append(what, "drop tensor "+ti.Name)
				continue
			case 1: // non-finite data
				data = bytes.Repeat([]byte{0xff}, len(data))
				what = append(what, "NaN bytes in "+ti.Name)
			case 2: // another shape of the same size
				if len(ne) == 2 {
					ne = []int64{ne[1], ne[0]}
					what = append(what, "transpose "+ti.Name)
				}
				if ti.Type.BlockSize() > 1 && ne[0]%int64(ti.Type.BlockSize()) != 0 {
					ne = ti.Shape()
				}
			case 3: // a wrong shape
				ne = append([]int64{}, ne...)
				ne[0] = 32 * int64(1+rng.IntN(4))
				typ = gguf.TypeF32
				n := int64(4)
				for _, d := range ne {
					n *= d
				}
				data = make([]byte, n)
				what = append(what, fmt.Sprintf("%s as f32%v", ti.Name, ne))
			case 4: // another type
				if typ == gguf.TypeF32 && ne[0]%2 == 0 {
					typ = gguf.TypeF16
					data = data[:len(data)/2]
					what = append(what, ti.Name+" as f16")
				}
			}
		}
		if err := w.AddTensor(ti.Name, typ, ne, data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	// A huge general.alignment would make the file gigabytes of padding:
	// that is the writer's output, not a hostile input; damage bytes
	// instead.
	err = errors.New("file larger than 64 MiB")
	if ts, off, lerr := w.Layout(); lerr != nil {
		err = lerr
	} else if len(ts) > 0 && off+int64(ts[len(ts)-1].Offset+ts[len(ts)-1].Size) < 64<<20 {
		_, err = w.WriteTo(&buf)
	}
	if err != nil {
		// The writer refuses what ggml could not load: use the intact
		// metadata and damage bytes instead.
		buf.Reset()
		buf.Write(irtool.EmbeddedModel)
		kind = 3
		what = append(what, "writer refused: "+err.Error())
	}
	b := buf.Bytes()
	switch kind {
	case 3: // flip bytes in the header
		hdr := min(len(b), 16<<10)
		for range 1 + rng.IntN(4) {
			i := rng.IntN(hdr)
			b[i] ^= byte(1 << rng.IntN(8))
			what = append(what, "flip byte "+strconv.Itoa(i))
		}
	case 4: // truncate
		n := rng.IntN(len(b))
		b = b[:n]
		what = append(what, "truncate to "+strconv.Itoa(n))
	}
	return b, strings.Join(what, "; ")
}

// hostileRand returns the generator of a hostile test: seeded anew each
// run (and logged), or from IRTOOL_HOSTILE_SEED to replay a failure; stream
// tells the tests apart.
func hostileRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("IRTOOL_HOSTILE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (IRTOOL_HOSTILE_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, stream))
}

func TestHostileModels(t *testing.T) {
	rng := hostileRand(t, 18)
	cases := 24
	if testing.Short() {
		cases = 8
	}
	dir := t.TempDir()
	for i := range cases {
		b, what := hostileModel(t, rng)
		t.Logf("case %d: %s", i, what)
		p := filepath.Join(dir, fmt.Sprintf("hostile-%d.gguf", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"inspect", p}, {"inspect", "--json", p}, {"tokenize", p, "Once upon a time"},
			{"run", p, "--tokens", "1,2", "-n", "2"}, {"run", p, "-p", "Once", "-n", "2", "--json", "--logits"},
			{"compile", p, "--ctx", "32", "--strategy", "greedy-size", "--json"},
		} {
			type result struct {
				code         int
				stdout, errs string
			}
			done := make(chan result, 1)
			go func() {
				var out, errb bytes.Buffer
				code := run(args, &out, &errb)
				done <- result{code, out.String(), errb.String()}
			}()
			select {
			case r := <-done:
				if strings.Contains(r.errs, "internal error") || strings.Contains(r.errs, "panic") {
					t.Errorf("case %d (%s): %q panicked:\n%s", i, what, args, r.errs)
				}
				if r.code != 0 && strings.TrimSpace(r.errs) == "" {
					t.Errorf("case %d (%s): %q: exit %d without a message", i, what, args, r.code)
				}
				if strings.Contains(strings.Join(args, " "), "--json") && r.code == 0 && !jsonValid(r.stdout) {
					t.Errorf("case %d (%s): %q: invalid JSON on stdout", i, what, args)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("case %d (%s): %q did not finish in 30 s", i, what, args)
			}
		}
	}
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) }

// hostileIRText damages IR text written by irtool ir -o: a line dropped or
// repeated, a number, dtype, op name, attribute or meta value replaced, a
// reference renumbered, or the text cut short.
func hostileIRText(rng *rand.Rand, src string) (string, string) {
	lines := strings.Split(src, "\n")
	body := lines[1 : len(lines)-2] // between "graph {" and "}"
	i := 1 + rng.IntN(len(body))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	switch rng.IntN(8) {
	case 0:
		what := "drop line " + strconv.Itoa(i)
		return strings.Join(append(lines[:i:i], lines[i+1:]...), "\n"), what
	case 1:
		what := "repeat line " + strconv.Itoa(i)
		return strings.Join(append(lines[:i+1:i+1], lines[i:]...), "\n"), what
	case 2: // a number
		num := regexp.MustCompile(`\b[0-9]+\b`)
		locs := num.FindAllStringIndex(lines[i], -1)
		if len(locs) == 0 {
			return src, "no number on line " + strconv.Itoa(i)
		}
		l := locs[rng.IntN(len(locs))]
		v := pick("0", "-1", "1000000000", "2147483648", "99999999999999999999", "3")
		lines[i] = lines[i][:l[0]] + v + lines[i][l[1]:]
		return strings.Join(lines, "\n"), fmt.Sprintf("line %d: number -> %s", i, v)
	case 3: // a dtype
		v := pick("f16", "i32", "q4_0", "q8_0", "i64")
		lines[i] = strings.Replace(lines[i], ": f32[", ": "+v+"[", 1)
		return strings.Join(lines, "\n"), fmt.Sprintf("line %d: dtype -> %s", i, v)
	case 4: // an op
		ops := []string{"mul_mat", "add", "mul", "rms_norm", "rope", "soft_max", "get_rows", "view", "reshape", "permute", "cont", "cpy", "set_rows", "scale", "silu"}
		from, to := ops[rng.IntN(len(ops))], ops[rng.IntN(len(ops))]
		lines[i] = strings.Replace(lines[i], " "+from+"(", " "+to+"(", 1)
		return strings.Join(lines, "\n"), fmt.Sprintf("line %d: %s -> %s", i, from, to)
	case 5: // an attribute
		attr := regexp.MustCompile(`([a-z_]+)=([-0-9.e]+)`)
		v := pick("NaN", "-8", "1e300", "0", "-0.0", "1000000000")
		lines[i] = attr.ReplaceAllString(lines[i], "${1}="+v)
		return strings.Join(lines, "\n"), fmt.Sprintf("line %d: attributes -> %s", i, v)
	case 6: // a meta value
		k := pick("n_ctx", "kv_type", "kv_write", "weights", "n_layer")
		v := pick(`"0"`, `"-5"`, `"99999999999"`, `"q4_0"`, `"/dev/zero"`, `""`)
		re := regexp.MustCompile(`meta ` + k + `="[^"]*"`)
		return re.ReplaceAllString(src, "meta "+k+"="+v), fmt.Sprintf("meta %s=%s", k, v)
	default: // cut short
		n := rng.IntN(len(src))
		return src[:n], "cut at byte " + strconv.Itoa(n)
	}
}

// TestHostileIRText runs the commands that accept IR text on fresh
// damaged IR files: no panic, no hang, every failure an error message.
func TestHostileIRText(t *testing.T) {
	rng := hostileRand(t, 17)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ir")
	if code, _, stderr := runCLI(t, "ir", "-o", good); code != 0 {
		t.Fatalf("ir -o: %s", stderr)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := 24
	if testing.Short() {
		cases = 8
	}
	for i := range cases {
		text, what := hostileIRText(rng, string(b))
		p := filepath.Join(dir, fmt.Sprintf("hostile-%d.ir", i))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("case %d: %s", i, what)
		for _, args := range [][]string{
			{"compile", p, "--strategy", "greedy-size", "--json"}, {"run", p, "--tokens", "1,2", "-n", "2"},
			{"passes", p}, {"viz", p, "--what", "liveness"},
		} {
			done := make(chan [2]string, 1)
			var code int
			go func() {
				var out, errb bytes.Buffer
				code = run(args, &out, &errb)
				done <- [2]string{out.String(), errb.String()}
			}()
			select {
			case r := <-done:
				if strings.Contains(r[1], "internal error") || strings.Contains(r[1], "panic") {
					t.Errorf("case %d (%s): %q panicked:\n%s", i, what, args, r[1])
				}
				if code != 0 && strings.TrimSpace(r[1]) == "" {
					t.Errorf("case %d (%s): %q: exit %d without a message", i, what, args, code)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("case %d (%s): %q did not finish in 30 s", i, what, args)
			}
		}
	}
}

// An IR file that declares an input far larger than the machine's memory
// (a hostile-IR case that once ended the process with "fatal error:
// runtime: out of memory") is refused with an error naming the buffer.
func TestRunRefusesMoreMemoryThanTheMachine(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ir")
	if code, _, stderr := runCLI(t, "ir", "-o", good); code != 0 {
		t.Fatalf("ir -o: %s", stderr)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	mask := regexp.MustCompile(`(input\(\) : f32\[n_kv,)[^\]]*(\] "KQ_mask")`)
	if !mask.Match(b) {
		t.Fatalf("no KQ_mask input in:\n%s", b)
	}
	bad := filepath.Join(dir, "bad.ir")
	if err := os.WriteFile(bad, mask.ReplaceAll(b, []byte("${1}2147483648${2}")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "run", bad, "--tokens", "1,2", "-n", "2")
	if code != 1 || !strings.Contains(stderr, `"KQ_mask"`) || !strings.Contains(stderr, "more than this machine's") {
		t.Errorf("exit %d, stderr %q; want a refusal naming KQ_mask", code, stderr)
	}
}
