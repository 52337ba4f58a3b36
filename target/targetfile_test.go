package target

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFileRoundTrip: every built-in profile written as a File and read
// back under a new name decides and costs as the original.
func TestFileRoundTrip(t *testing.T) {
	for _, name := range Names() {
		p, err := Get(name)
		require.NoError(t, err)
		f := p.File()
		f.Name = "copy-of-" + name
		data, err := json.Marshal(f)
		require.NoError(t, err)
		q, err := ParseFile(data, nil)
		require.NoError(t, err, name)
		g := q.File()
		g.Name = name
		require.Equal(t, p.File(), g, name)
	}
}

func TestParseFileErrors(t *testing.T) {
	p, err := Get("ascend910b4")
	require.NoError(t, err)
	for what, edit := range map[string]func(f *File){
		"name":                   func(f *File) { f.Name = "" },
		"rules":                  func(f *File) { f.Rules = "tpu" },
		"npu.mem_bw":             func(f *File) { f.NPU.MemBW = -1 },
		"costs.cube_eff":         func(f *File) { f.Costs.CubeEff = 2 },
		"align":                  func(f *File) { f.Align = 3 },
		"npu_ops":                func(f *File) { f.NPUOps = append(f.NPUOps, "no_such_op") },
		"interconnect.algorithm": func(f *File) { f.Interconnect.Algorithm = "torus" },
	} {
		f := p.File()
		edit(&f)
		data, _ := json.Marshal(f)
		_, err := ParseFile(data, nil)
		require.ErrorContains(t, err, what)
	}
	_, err = ParseFile([]byte(`{"name":"x","bogus":1}`), nil)
	require.ErrorContains(t, err, "bogus")
}

// TestRegisterTarget: a registered target is found by name in its rule
// set only, and cannot shadow a built-in.
func TestRegisterTarget(t *testing.T) {
	p, err := Get("ascend910b2")
	require.NoError(t, err)
	p.Name = "my-npu"
	r := NewRules()
	require.NoError(t, r.RegisterTarget(p))
	q, err := r.Profile("my-npu")
	require.NoError(t, err)
	require.Equal(t, "my-npu", q.Name)
	require.Contains(t, r.TargetNames(), "my-npu")
	_, err = NewRules().Profile("my-npu")
	require.ErrorContains(t, err, "unknown target")
	p.Name = "ascend910b"
	require.ErrorContains(t, r.RegisterTarget(p), "built-in")
}

func FuzzParseFile(f *testing.F) {
	for _, name := range Names() {
		p, _ := Get(name)
		data, _ := json.Marshal(p.File())
		f.Add(data)
	}
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseFile(data, nil)
		if err == nil && p.Name == "" {
			t.Fatal("accepted a profile without a name")
		}
	})
}

// TestLoadFile: a profile file lands in a fresh rule set under its own
// name, not in the defaults; a name already built in is refused.
func TestLoadFile(t *testing.T) {
	base, err := Get("ascend910b")
	require.NoError(t, err)
	f := base.File()
	f.Name = "my-npu"
	data, err := json.Marshal(f)
	require.NoError(t, err)
	rules, p, err := LoadFile(data)
	require.NoError(t, err)
	require.Equal(t, "my-npu", p.Name)
	got, err := rules.Profile("my-npu")
	require.NoError(t, err)
	require.Equal(t, p.Name, got.Name)
	_, err = Get("my-npu")
	require.Error(t, err, "the default rules must not see a loaded file")
	f.Name = "ascend910b"
	data, err = json.Marshal(f)
	require.NoError(t, err)
	_, _, err = LoadFile(data)
	require.Error(t, err)
	_, _, err = LoadFile([]byte(`{"name": 1}`))
	require.Error(t, err)
}
