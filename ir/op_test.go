package ir

import (
	"strings"
	"sync/atomic"
	"testing"
)

var testOpSeq atomic.Int64

// uniqueOp returns an op name no other test registers.
func uniqueOp(prefix string) Op {
	return Op(prefix + "_" + strings.Repeat("x", int(testOpSeq.Add(1))))
}

func TestRegistry(t *testing.T) {
	name := uniqueOp("test_register")
	if err := Register(OpInfo{Name: name, MinArgs: 1, Infer: sameType, Doc: "a test op"}); err != nil {
		t.Fatal(err)
	}
	info, ok := Lookup(name)
	if !ok || info.Name != name || info.MaxArgs != 1 || info.Doc != "a test op" {
		t.Fatalf("Lookup = %+v, %v", info, ok)
	}
	err := Register(OpInfo{Name: name, MinArgs: 2})
	if err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("duplicate Register: %v", err)
	}
	if info, _ := Lookup(name); info.MinArgs != 1 {
		t.Error("a failed Register replaced the op")
	}
	if err := Register(OpInfo{}); err == nil {
		t.Error("Register of an empty name should fail")
	}
	if err := Register(OpInfo{Name: OpAdd}); err == nil {
		t.Error("Register of a builtin name should fail")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustRegister of a duplicate should panic")
			}
		}()
		MustRegister(OpInfo{Name: name})
	}()
	if _, ok := Lookup("no_such_op"); ok {
		t.Error("Lookup of an unknown op")
	}
	ops := Ops()
	for i := 1; i < len(ops); i++ {
		if ops[i-1].Name >= ops[i].Name {
			t.Fatalf("Ops not sorted: %s before %s", ops[i-1].Name, ops[i].Name)
		}
	}
	// A registered op is usable in a graph and in the text format.
	g := New("custom")
	x, _ := g.AddTyped(OpInput, nil, nil, T(F32, 4))
	y, err := g.Add(name, []*Node{x}, nil)
	if err != nil || !y.Type.Equal(x.Type) {
		t.Fatalf("Add of a registered op: %v, %v", y, err)
	}
	g.Outputs = []*Node{y}
	if _, err := ParseString(g.String()); err != nil {
		t.Errorf("parse of a graph with a registered op: %v", err)
	}
}

func TestBuiltinOpsRegistered(t *testing.T) {
	for _, op := range builtinOps {
		info, ok := Lookup(op)
		if !ok {
			t.Errorf("%s is not registered", op)
			continue
		}
		if info.Doc == "" {
			t.Errorf("%s has no Doc", op)
		}
		if info.Kind != KindLeaf && info.Infer == nil && info.Check == nil {
			t.Errorf("%s has neither Infer nor Check", op)
		}
	}
	for _, op := range []Op{OpCpy, OpSetRows} {
		if info, _ := Lookup(op); !info.SideEffect || info.Kind != KindView {
			t.Errorf("%s should be a side-effecting view", op)
		}
	}
}

// builtinOps lists the ops package ir registers itself.
var builtinOps = []Op{
	OpInput, OpWeight, OpState, OpConst, OpGetRows, OpRMSNorm, OpMul, OpAdd,
	OpScale, OpSilu, OpMulMat, OpReshape, OpView, OpPermute, OpTransp, OpCont,
	OpCast, OpCpy, OpSetRows, OpRope, OpSoftMax,
}

// leafEnv holds leaves of various types for the op tests.
type leafEnv struct {
	g *Graph
	m map[string]*Node
}

func newLeafEnv(t *testing.T) *leafEnv {
	t.Helper()
	e := &leafEnv{g: New("ops"), m: map[string]*Node{}}
	for _, l := range []struct {
		name string
		ty   Type
	}{
		{"x", T(F32, 8, "n")},          // activations
		{"x16", T(F16, 8, "n")},        // f16 activations
		{"x3", T(F32, 4, 2, "n")},      // heads
		{"row", T(F32, 8)},             // a broadcastable row
		{"col", T(F32, 1, "n")},        // a broadcastable column
		{"half", T(F32, 4, "n")},       // divides x's rows: broadcasts
		{"three", T(F32, 3, "n")},      // does not divide x's rows
		{"m", T(F32, "n")},             // wrong rank for x
		{"w", T(Q8_0, 32, 8)},          // quantised weight [in=32, out=8]
		{"w8", T(F16, 8, 16)},          // weight [in=8, out=16]
		{"emb", T(Q4_0, 64, 100)},      // embedding table
		{"emb32", T(I32, 3, 100)},      // integer table
		{"tok", T(I32, "n")},           // token ids
		{"tok64", T(I64, "n")},         // row indices
		{"ftok", T(F32, "n")},          // bad index type
		{"pos", T(I32, "n")},           // positions
		{"kq", T(F32, "n_kv", "n", 2)}, // attention scores
		{"mask", T(F32, "n_kv", Padded("n", 64))},
		{"cache", T(F16, 8, 16)},      // KV cache
		{"qk", T(F32, 4, "n", 2)},     // q permuted
		{"kv", T(F16, 4, "n_kv", 2)},  // k view
		{"kv1", T(F16, 4, "n_kv", 1)}, // k view with one head (broadcast)
		{"kv3", T(F16, 4, "n_kv", 3)}, // k view with three heads
		{"xi", T(I32, 8, "n")},        // integer activations
		{"s", T(F32, 6, 4)},           // static
		{"s3", T(F32, 6, 4, 2)},       // static 3-D
		{"ff", T(F32, 2)},             // rope freq factors
		{"b3", T(F32, 8, 1, 3)},       // broadcast candidate with dim 2 = 3
		{"s12", T(F32, 8, 12)},        // static 12 rows
		{"s4", T(F32, 8, 4)},          // static 4 rows: divides 12
		{"s5", T(F32, 8, 5)},          // static 5 rows: does not
		{"big", T(F32, 8, "n", 2, 2)}, // 4-D
	} {
		n, err := e.g.AddTyped(OpInput, nil, nil, l.ty)
		if err != nil {
			t.Fatalf("leaf %s: %v", l.name, err)
		}
		n.Name = l.name
		e.m[l.name] = n
	}
	return e
}

func (e *leafEnv) args(names string) []*Node {
	if names == "" {
		return nil
	}
	var out []*Node
	for _, s := range strings.Split(names, ",") {
		n, ok := e.m[s]
		if !ok {
			panic("no leaf " + s)
		}
		out = append(out, n)
	}
	return out
}

func ropeAttrs() Attrs {
	return Attrs{"n_dims": int64(4), "mode": int64(0), "freq_base": 10000.0, "freq_scale": 1.0}
}

func TestOpInference(t *testing.T) {
	tests := []struct {
		name  string
		op    Op
		args  string
		attrs Attrs
		want  Type // for inferred ops
		err   string
	}{
		{"get_rows", OpGetRows, "emb,tok", nil, T(F32, 64, "n"), ""},
		{"get_rows i64", OpGetRows, "emb,tok64", nil, T(F32, 64, "n"), ""},
		{"get_rows of i32 stays i32", OpGetRows, "emb32,tok", nil, T(I32, 3, "n"), ""},
		{"get_rows float table index", OpGetRows, "x3,qk", nil, Type{}, "index must be"},
		{"get_rows float index", OpGetRows, "emb,ftok", nil, Type{}, "index must be i32 or i64"},
		{"get_rows arity", OpGetRows, "emb", nil, Type{}, "takes 2 operands, got 1"},
		{"get_rows dim 2 mismatch", OpGetRows, "x3,tok", nil, Type{}, "dim 2 of"},

		{"rms_norm", OpRMSNorm, "x", Attrs{"eps": 1e-5}, T(F32, 8, "n"), ""},
		{"rms_norm f16", OpRMSNorm, "x16", Attrs{"eps": 1e-5}, T(F16, 8, "n"), ""},
		{"rms_norm no eps", OpRMSNorm, "x", nil, Type{}, `missing attribute "eps"`},
		{"rms_norm int", OpRMSNorm, "xi", Attrs{"eps": 1e-5}, Type{}, "must be f32 or f16"},
		{"rms_norm arity", OpRMSNorm, "x,x", Attrs{"eps": 1e-5}, Type{}, "takes 1 operands, got 2"},

		{"mul same", OpMul, "x,x", nil, T(F32, 8, "n"), ""},
		{"mul row", OpMul, "x,row", nil, T(F32, 8, "n"), ""},
		{"mul column", OpMul, "x,col", nil, T(F32, 8, "n"), ""},
		{"mul divides", OpMul, "s12,s4", nil, T(F32, 8, 12), ""},
		{"mul does not divide", OpMul, "s12,s5", nil, Type{}, "cannot broadcast"},
		{"mul repeats a divisor", OpMul, "x,half", nil, T(F32, 8, "n"), ""},
		{"mul wrong size", OpMul, "x,three", nil, Type{}, "cannot broadcast"},
		{"mul not symmetric", OpMul, "row,x", nil, Type{}, "cannot broadcast"},
		{"mul wrong rank", OpMul, "x,m", nil, Type{}, "cannot broadcast"},
		{"mul dim 2", OpMul, "x,b3", nil, Type{}, "cannot broadcast"},
		{"mul int", OpMul, "x,xi", nil, Type{}, "operand 1 must be f32 or f16"},
		{"mul quantised", OpMul, "w,w", nil, Type{}, "operand 0 must be f32 or f16"},
		{"add", OpAdd, "x,row", nil, T(F32, 8, "n"), ""},
		{"add f16 + f32", OpAdd, "x16,x", nil, T(F16, 8, "n"), ""},
		{"add mismatch", OpAdd, "x,three", nil, Type{}, "cannot broadcast"},
		{"add arity", OpAdd, "x", nil, Type{}, "takes 2 operands"},

		{"scale", OpScale, "x", Attrs{"scale": 0.125}, T(F32, 8, "n"), ""},
		{"scale int attr", OpScale, "x", Attrs{"scale": int64(2)}, T(F32, 8, "n"), ""},
		{"scale no attr", OpScale, "x", nil, Type{}, `missing attribute "scale"`},
		{"silu", OpSilu, "x", nil, T(F32, 8, "n"), ""},
		{"silu int", OpSilu, "xi", nil, Type{}, "must be f32 or f16"},

		{"mul_mat", OpMulMat, "w8,x", nil, T(F32, 16, "n"), ""},
		{"mul_mat quantised", OpMulMat, "w,s", nil, Type{}, "inner dims differ"},
		{"mul_mat attention", OpMulMat, "kv,qk", nil, T(F32, "n_kv", "n", 2), ""},
		{"mul_mat broadcast heads", OpMulMat, "kv1,qk", nil, T(F32, "n_kv", "n", 2), ""},
		{"mul_mat heads do not broadcast", OpMulMat, "kv3,qk", nil, Type{}, "does not broadcast"},
		{"mul_mat inner mismatch", OpMulMat, "w8,half", nil, Type{}, "inner dims differ"},
		{"mul_mat f16 rhs", OpMulMat, "w8,x16", nil, Type{}, "operand 1 must be f32"},
		{"mul_mat arity", OpMulMat, "w8", nil, Type{}, "takes 2 operands, got 1"},

		{"permute", OpPermute, "big", Attrs{"axes": []int64{0, 2, 1, 3}}, T(F32, 8, 2, "n", 2), ""},
		{"permute cycle", OpPermute, "big", Attrs{"axes": []int64{1, 2, 3, 0}}, T(F32, 2, 8, "n", 2), ""},
		{"permute repeated axis", OpPermute, "big", Attrs{"axes": []int64{0, 0, 1, 3}}, Type{}, "not a permutation"},
		{"permute out of range", OpPermute, "big", Attrs{"axes": []int64{0, 1, 2, 4}}, Type{}, "not a permutation"},
		{"permute negative", OpPermute, "big", Attrs{"axes": []int64{-1, 1, 2, 3}}, Type{}, "not a permutation"},
		{"permute too short", OpPermute, "big", Attrs{"axes": []int64{1, 0}}, Type{}, "4 entries"},
		{"permute missing", OpPermute, "big", nil, Type{}, "needs attribute axes"},
		{"permute wrong attr type", OpPermute, "big", Attrs{"axes": []float64{0, 1, 2, 3}}, Type{}, "needs attribute axes"},
		{"transpose", OpTransp, "x3", nil, T(F32, 2, 4, "n"), ""},

		{"cpy", OpCpy, "x,x16", nil, T(F16, 8, "n"), ""},
		{"cpy reshaping", OpCpy, "s,s12", nil, Type{}, "element counts differ"},
		{"cpy count mismatch", OpCpy, "x,half", nil, Type{}, "element counts differ"},

		{"set_rows", OpSetRows, "cache,x,tok64", nil, T(F16, 8, 16), ""},
		{"set_rows i32", OpSetRows, "cache,x,tok", nil, T(F16, 8, 16), ""},
		{"set_rows row length", OpSetRows, "cache,half,tok64", nil, Type{}, "row lengths differ"},
		{"set_rows index count", OpSetRows, "cache,s12,tok64", nil, Type{}, "indices for"},
		{"set_rows float index", OpSetRows, "cache,x,ftok", nil, Type{}, "index must be i32 or i64"},
		{"set_rows arity", OpSetRows, "cache,x", nil, Type{}, "takes 3 operands"},

		{"rope", OpRope, "x3,pos", ropeAttrs(), T(F32, 4, 2, "n"), ""},
		{"rope freq factors", OpRope, "x3,pos,ff", ropeAttrs(), T(F32, 4, 2, "n"), ""},
		{"rope missing attrs", OpRope, "x3,pos", Attrs{"n_dims": int64(4)}, Type{}, `missing attribute "mode"`},
		{"rope i64 positions", OpRope, "x3,tok64", ropeAttrs(), Type{}, "positions must be i32"},
		{"rope position count", OpRope, "x,pos", ropeAttrs(), Type{}, "positions for"},
		{"rope arity", OpRope, "x3", ropeAttrs(), Type{}, "takes 2 to 3 operands, got 1"},

		{"soft_max", OpSoftMax, "kq", Attrs{"scale": 0.5}, T(F32, "n_kv", "n", 2), ""},
		{"soft_max mask", OpSoftMax, "kq,mask", Attrs{"scale": 0.5, "max_bias": 0.0}, T(F32, "n_kv", "n", 2), ""},
		{"soft_max bad mask", OpSoftMax, "kq,x", Attrs{"scale": 0.5}, Type{}, "mask rows"},
		{"soft_max no scale", OpSoftMax, "kq", nil, Type{}, `missing attribute "scale"`},

		{"unsupported attr type", OpScale, "x", Attrs{"scale": 2}, Type{}, "unsupported type int"},
		{"bad attr name", OpScale, "x", Attrs{"scale": 2.0, "a b": 1.0}, Type{}, "not an identifier"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newLeafEnv(t)
			n, err := e.g.Add(tc.op, e.args(tc.args), tc.attrs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Add = %v, %v; want error %q", n, err, tc.err)
				}
				if !strings.Contains(err.Error(), string(tc.op)) {
					t.Errorf("error %q does not name the op", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !n.Type.Equal(tc.want) {
				t.Fatalf("type %s, want %s", n.Type, tc.want)
			}
			// A node made by Add passes CheckNode and Verify.
			if err := CheckNode(n); err != nil {
				t.Fatalf("CheckNode: %v", err)
			}
			e.g.Outputs = []*Node{n}
			if err := Verify(e.g); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			// The same node with a declared wrong type is rejected.
			bad := tc.want
			bad.Shape[3] = C(7)
			if _, err := e.g.AddTyped(tc.op, e.args(tc.args), tc.attrs, bad); err == nil || !strings.Contains(err.Error(), "inferred") {
				t.Errorf("AddTyped with type %s: %v", bad, err)
			}
		})
	}
}

func TestDeclaredTypeOps(t *testing.T) {
	tests := []struct {
		name  string
		op    Op
		args  string
		attrs Attrs
		ty    Type
		err   string
	}{
		{"reshape", OpReshape, "x", nil, T(F32, 4, 2, "n"), ""},
		{"reshape flatten", OpReshape, "x3", nil, T(F32, Scaled("n", 8)), ""},
		{"reshape static", OpReshape, "s", nil, T(F32, 24), ""},
		{"reshape wrong count", OpReshape, "x", nil, T(F32, 4, "n"), "element count changes"},
		{"reshape wrong symbol", OpReshape, "x", nil, T(F32, 8, "n_kv"), "element count changes"},
		{"reshape static wrong count", OpReshape, "s", nil, T(F32, 25), "element count changes"},
		{"reshape dtype", OpReshape, "x", nil, T(F16, 8, "n"), "dtype changes"},
		{"reshape arity", OpReshape, "", nil, T(F32, 8), "takes 1 operands, got 0"},

		{"view", OpView, "s", Attrs{"offset": C(0), "nb": []int64{4, 24, 96, 96}}, T(F32, 3, 4), ""},
		{"view int offset", OpView, "s", Attrs{"offset": int64(8), "nb": []int64{4, 24, 96, 96}}, T(F32, 3, 4), ""},
		{"view symbolic offset", OpView, "x", Attrs{"offset": Scaled("k", 4), "nb": []int64{4, 32, 0, 0}}, T(F32, 8, 1), ""},
		{"view with dependency", OpView, "s,x", Attrs{"offset": C(0), "nb": []int64{4, 24, 96, 96}}, T(F32, 6), ""},
		{"view dtype", OpView, "s", Attrs{"offset": C(0), "nb": []int64{2, 12, 48, 48}}, T(F16, 3), "dtype changes"},
		{"view missing nb", OpView, "s", Attrs{"offset": C(0)}, T(F32, 3), "needs attribute nb"},
		{"view short nb", OpView, "s", Attrs{"offset": C(0), "nb": []int64{4, 24}}, T(F32, 3), "needs attribute nb"},
		{"view negative stride", OpView, "s", Attrs{"offset": C(0), "nb": []int64{4, -24, 0, 0}}, T(F32, 3), "negative stride"},
		{"view missing offset", OpView, "s", Attrs{"nb": []int64{4, 24, 96, 96}}, T(F32, 3), "needs attribute offset"},
		{"view offset string", OpView, "s", Attrs{"offset": "0", "nb": []int64{4, 24, 96, 96}}, T(F32, 3), "needs attribute offset"},
		{"view arity", OpView, "s,x,x", Attrs{"offset": C(0), "nb": []int64{4, 24, 96, 96}}, T(F32, 3), "takes 1 to 2 operands, got 3"},

		{"cont", OpCont, "x3", nil, T(F32, 4, 2, "n"), ""},
		{"cont 2d", OpCont, "qk", nil, T(F32, 8, "n"), ""},
		{"cont wrong count", OpCont, "qk", nil, T(F32, 4, "n"), "element count changes"},
		{"cont dtype", OpCont, "x", nil, T(F16, 8, "n"), "dtype changes"},

		{"cast", OpCast, "x", nil, T(F16, 8, "n"), ""},
		{"cast to int", OpCast, "x", nil, T(I32, 8, "n"), ""},
		{"cast reshaping", OpCast, "x", nil, T(F16, 4, 2, "n"), "shape changes"},

		{"input", OpInput, "", nil, T(I32, "n"), ""},
		{"weight", OpWeight, "", nil, T(Q4_K, 256, 4), ""},
		{"state", OpState, "", nil, T(F16, 8, 16), ""},
		{"leaf with operand", OpInput, "x", nil, T(F32, 8), "takes 0 operands, got 1"},
		{"unknown dtype", OpInput, "", nil, Type{DType: 77, Shape: Sh(1)}, "unknown dtype"},
		{"unknown op", "frobnicate", "x", nil, T(F32, 8), `unknown op "frobnicate"`},
		{"nil operand", OpSilu, "", nil, T(F32, 8), ""}, // filled in below
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newLeafEnv(t)
			args := e.args(tc.args)
			if tc.name == "nil operand" {
				args, tc.err = []*Node{nil}, "operand 0 is nil"
			}
			n, err := e.g.AddTyped(tc.op, args, tc.attrs, tc.ty)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("AddTyped = %v, %v; want error %q", n, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.ID != len(e.g.Nodes)-1 || e.g.Nodes[n.ID] != n || n.Layer != -1 {
				t.Errorf("node %v not appended properly", n)
			}
		})
	}
}

func TestAddRejectsMisuse(t *testing.T) {
	g := New("misuse")
	x, _ := g.AddTyped(OpInput, nil, nil, T(F32, 4))
	for _, c := range []struct {
		op   Op
		args []*Node
		err  string
	}{
		{OpMulMat, []*Node{x}, "takes 2 operands, got 1"}, // would index past the operands
		{OpSetRows, nil, "takes 3 operands, got 0"},
		{OpAdd, []*Node{x, nil}, "operand 1 is nil"},
		{OpReshape, []*Node{x}, "needs an explicit type"},
		{OpInput, nil, "needs an explicit type"},
		{"nope", nil, `unknown op "nope"`},
	} {
		n, err := g.Add(c.op, c.args, nil)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Add(%s) = %v, %v; want %q", c.op, n, err, c.err)
		}
	}
	if len(g.Nodes) != 1 {
		t.Errorf("failed Adds appended nodes: %d", len(g.Nodes))
	}
}

func TestConstLeaf(t *testing.T) {
	g := New("c")
	n, err := g.AddTyped(OpConst, nil, nil, T(F32, 2))
	if err == nil || !strings.Contains(err.Error(), "holds 0 bytes") {
		t.Errorf("const without data: %v, %v", n, err)
	}
	c := &Node{Op: OpConst, Type: T(F16, 3), Data: make([]byte, 6)}
	if err := CheckNode(c); err != nil {
		t.Error(err)
	}
	c.Data = c.Data[:5]
	if err := CheckNode(c); err == nil {
		t.Error("wrong const size accepted")
	}
	c.Type = T(F32, "n")
	if err := CheckNode(c); err == nil || !strings.Contains(err.Error(), "not static") {
		t.Errorf("symbolic const: %v", err)
	}
}

func TestKindString(t *testing.T) {
	if KindCompute.String() != "compute" || KindView.String() != "view" || KindLeaf.String() != "leaf" {
		t.Error("Kind.String")
	}
}
