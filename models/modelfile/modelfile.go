// Package modelfile opens what irtool's commands take as MODEL: a GGUF
// file or a file of IR text (docs/IR.md, "Model files in IR text") whose
// meta "weights" names the GGUF file holding its weights, on disk or on a
// stream (a pipe, /dev/stdin), and builds the model from either.
package modelfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// Options are what Open reads models with.
type Options struct {
	// Ops resolves the ops of IR text and of the graphs Build makes (nil:
	// ir's built-in ops).
	Ops *ir.OpSet
	// Embedded is the GGUF file of the path "" and of meta
	// weights="embedded:stories260K.gguf", reported as EmbeddedName (nil:
	// neither opens).
	Embedded     []byte
	EmbeddedName string
}

// open opens the GGUF file at path, the embedded one for "".
func (o Options) open(path string) (*gguf.File, error) {
	if path == "" {
		if o.Embedded == nil {
			return nil, errors.New("no model given and none embedded")
		}
		return gguf.Parse(o.Embedded, o.EmbeddedName)
	}
	return gguf.Open(path)
}

// A MODEL argument names a GGUF file or a file of IR text (docs/IR.md,
// "Model files in IR text"). IR text carries the graph; its weights, when
// the IR has any, come from the GGUF file its meta key "weights" names
// ("irtool ir -o FILE.ir" writes it), so every command that compiles or
// runs a model accepts either.

// Meta keys of an IR file that stands for a model.
const (
	// MetaWeights is the GGUF file holding the graph's weights: a path
	// relative to the IR file's directory, an absolute path, or
	// "embedded:stories260K.gguf".
	MetaWeights = "weights"
	MetaNCtx    = "n_ctx"
	MetaKVType  = "kv_type"
	MetaKVWrite = "kv_write"
	MetaArch    = "arch"
	MetaNLayer  = "n_layer"
	MetaNVocab  = "n_vocab"
)

// EmbeddedWeights is the "weights" meta value naming the embedded model.
const EmbeddedWeights = "embedded:stories260K.gguf"

// Source is an opened MODEL argument.
type Source struct {
	o    Options    // resolves the ops of the IR text and of the graphs built
	Path string     // as given; "" is the embedded model
	File *gguf.File // the GGUF (weights, hyper-parameters, tokenizer); nil for IR text without "weights"
	// Graph is the parsed IR text, nil for a GGUF file.
	Graph *ir.Graph
	// WeightsPath is the GGUF file an IR file names, resolved.
	WeightsPath string
}

// IsIRText reports whether the file at path holds IR text rather than
// GGUF: its name ends in ".ir", or it starts with "graph " after
// blank and comment lines.
func IsIRText(path string) bool {
	if strings.EqualFold(filepath.Ext(path), ".ir") {
		return true
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		// A stream is not opened here: opening and closing a FIFO would
		// cut off its writer (openStream reads it once).
		return false
	}
	f, err := safeio.Open(path) // never blocks on a FIFO
	if err != nil || !f.Regular() {
		if f != nil {
			f.Close()
		}
		return false // a stream is read as GGUF (gguf.Open bounds it)
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := f.Read(head)
	for _, line := range bytes.Split(head[:n], []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		return bytes.HasPrefix(line, []byte("graph "))
	}
	return false
}

// Open opens a MODEL argument: the embedded model (o.Embedded) for "", a
// GGUF file, or IR text (parsed with o.Ops) and the GGUF its "weights"
// meta names.
func Open(path string, o Options) (*Source, error) {
	if path != "" && !IsIRText(path) {
		if s, err, ok := openStream(o, path); ok {
			return s, err
		}
	}
	if path == "" || !IsIRText(path) {
		f, err := o.open(path)
		if err != nil {
			return nil, err
		}
		return &Source{o: o, Path: path, File: f}, nil
	}
	text, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer text.Close()
	return openIR(o, path, text, filepath.Dir(path))
}

// openStream opens a MODEL argument that is a stream (a pipe, a FIFO,
// /dev/stdin): GGUF or IR text, told apart by their first bytes, since a
// stream's name says nothing. ok is false for a regular file.
func openStream(o Options, path string) (s *Source, err error, ok bool) {
	in, err := safeio.Open(path)
	if err != nil || in.Regular() {
		if in != nil {
			in.Close()
		}
		return nil, nil, false
	}
	defer in.Close()
	br := bufio.NewReaderSize(safeio.NewStream(in, safeio.Limits{MaxBytes: gguf.MaxStreamBytes}), 4096)
	head, _ := br.Peek(512)
	if !looksLikeIR(head) {
		f, err := gguf.ReadStream(br, path, gguf.StreamLimits{})
		if err != nil {
			return nil, err, true
		}
		return &Source{o: o, Path: path, File: f}, nil, true
	}
	// A relative weights path of IR text on a stream is relative to the
	// working directory (the stream has no directory of its own).
	s, err = openIR(o, path, br, ".")
	return s, err, true
}

// looksLikeIR reports whether the first bytes of a file are IR text: its
// first line that is not blank or a comment starts with "graph ".
func looksLikeIR(head []byte) bool {
	for _, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		return bytes.HasPrefix(line, []byte("graph "))
	}
	return false
}

// openIR parses IR text read from r and opens the weights file its meta
// names, a relative path taken from dir.
func openIR(o Options, path string, r io.Reader, dir string) (*Source, error) {
	g, err := o.ops().ParseFile(path, r)
	if err != nil {
		return nil, err // NAME:LINE:COL: ...
	}
	if err := checkMeta(path, g); err != nil {
		return nil, err
	}
	s := &Source{o: o, Path: path, Graph: g}
	w := g.Meta[MetaWeights]
	if w == "" {
		return s, nil
	}
	if i := strings.IndexFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return nil, fmt.Errorf("%s:%d: meta %s=%q: a control character (%q at byte %d) in a file name", path, metaLine(path, MetaWeights), MetaWeights, w, w[i], i)
	}
	if w == EmbeddedWeights {
		s.WeightsPath = EmbeddedWeights
		s.File, err = o.open("")
	} else {
		if !filepath.IsAbs(w) {
			w = filepath.Join(dir, w)
		}
		s.WeightsPath = w
		s.File, err = gguf.Open(w)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the weights file of meta %s: %w", path, MetaWeights, err)
	}
	if err := checkWeights(g, s.File); err != nil {
		s.File.Close()
		return nil, fmt.Errorf("%s: weights %s: %w", path, s.WeightsPath, err)
	}
	return s, nil
}

// checkMeta checks the values of the meta keys a model file's IR gives
// meaning to (the ir package leaves meta values free-form): an ill-typed
// value is an error naming its line, never ignored.
func checkMeta(path string, g *ir.Graph) error {
	for _, key := range []string{MetaNCtx, MetaNLayer, MetaNVocab, MetaKVType, MetaKVWrite} {
		v, ok := g.Meta[key]
		if !ok {
			continue
		}
		var err error
		switch key {
		case MetaKVType:
			_, err = models.ParseKVCacheType(v)
		case MetaKVWrite:
			_, err = models.ParseKVWrite(v)
		default:
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || n <= 0 {
				err = fmt.Errorf("want a positive integer")
			}
		}
		if err != nil {
			return fmt.Errorf("%s:%d: meta %s=%q: %w", path, metaLine(path, key), key, v, err)
		}
	}
	return nil
}

// metaLine finds the line of the meta key in the IR file at path (0 when
// it cannot be read again).
func metaLine(path, key string) int {
	b, err := safeio.ReadFile(path, 1<<30)
	if err != nil {
		return 0
	}
	for i, line := range strings.Split(string(b), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(strings.TrimPrefix(k, "meta ")) == key && strings.HasPrefix(strings.TrimSpace(line), "meta ") {
			return i + 1
		}
	}
	return 0
}

// checkWeights checks that every weight node of g names a tensor of f with
// the node's dtype and shape, so a graph never runs on weights it was not
// written for.
func checkWeights(g *ir.Graph, f *gguf.File) error {
	for _, n := range g.Nodes {
		if n.Op != "weight" {
			continue
		}
		ti, ok := f.Tensor(n.Name)
		if !ok {
			return fmt.Errorf("node %%%d: weight %q is not a tensor of the file", n.ID, n.Name)
		}
		if ir.DType(ti.Type) != n.Type.DType {
			return fmt.Errorf("node %%%d: weight %q is %s in the file, %s in the IR", n.ID, n.Name, ir.DType(ti.Type), n.Type.DType)
		}
		for i, d := range n.Type.Shape {
			if !d.IsConst() || d.Val != ti.Ne[i] {
				return fmt.Errorf("node %%%d: weight %q has shape %v in the file, %s in the IR", n.ID, n.Name, ti.Ne, n.Type)
			}
		}
	}
	return nil
}

// Close closes the GGUF file, if any.
func (s *Source) Close() error {
	if s.File != nil {
		return s.File.Close()
	}
	return nil
}

// WeightsModel returns the GGUF file holding the source's weights, as
// weightsRef takes it ("" for the embedded model), and false for IR text
// that names no weights file. An IR file's relative "weights" is resolved
// against its directory, so a graph written elsewhere names it anew.
func (s *Source) WeightsModel() (string, bool) {
	if !s.IsIR() {
		return s.Path, true
	}
	switch s.WeightsPath {
	case "":
		return "", false
	case EmbeddedWeights:
		return "", true
	}
	return s.WeightsPath, true
}

// WeightsHeld says how the source's weights are held, for run's memory
// line: memory-mapped from the file, embedded in the binary, or read into
// memory (a pipe or other stream, or a file the kernel would not map).
func (s *Source) WeightsHeld() string {
	switch {
	case s.File.Mapped():
		return "memory-mapped weights"
	case s.Path == "" || s.WeightsPath == EmbeddedWeights:
		return "embedded weights"
	}
	return "weights read into memory"
}

// IsIR reports whether the source is IR text.
func (s *Source) IsIR() bool { return s.Graph != nil }

// Options reconciles the model flags with what an IR file fixes: the KV
// cache size, type and write mode are part of its graph (meta n_ctx,
// kv_type, kv_write). A flag left at its default (def) takes the IR's
// value; a flag given a different value is an error. For a GGUF source
// opts is returned unchanged.
func (s *Source) Options(opts, def models.Options) (models.Options, error) {
	if !s.IsIR() {
		return opts, nil
	}
	m := s.Graph.Meta
	if v := m[MetaNCtx]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return opts, fmt.Errorf("%s: meta %s=%q is not a positive integer", s.Path, MetaNCtx, v)
		}
		if opts.NCtx != def.NCtx && opts.NCtx != n {
			return opts, fmt.Errorf("%s: the IR's KV cache has n_ctx=%d; --ctx %d differs (the cache size is part of the graph: write the IR again with irtool ir --ctx)", s.Path, n, opts.NCtx)
		}
		opts.NCtx = n
	}
	if v := m[MetaKVType]; v != "" {
		t, err := models.ParseKVCacheType(v)
		if err != nil {
			return opts, fmt.Errorf("%s: meta %s: %w", s.Path, MetaKVType, err)
		}
		if opts.KVType != def.KVType && opts.KVType != t {
			return opts, fmt.Errorf("%s: the IR's KV cache is %s; --kv-type differs", s.Path, v)
		}
		opts.KVType = t
	}
	if v := m[MetaKVWrite]; v != "" {
		w, err := models.ParseKVWrite(v)
		if err != nil {
			return opts, fmt.Errorf("%s: meta %s: %w", s.Path, MetaKVWrite, err)
		}
		if opts.KVWrite != def.KVWrite && opts.KVWrite != w {
			return opts, fmt.Errorf("%s: the IR writes its KV cache with %s; --kv-write differs", s.Path, v)
		}
		opts.KVWrite = w
	}
	return opts, nil
}

// Build returns the model: for a GGUF file the graph models.Build makes
// with opts; for IR text the parsed graph, with the hyper-parameters of
// its weights file (or, without one, the architecture and layer count of
// its meta) and the options the IR fixes (see Options).
func (s *Source) Build(opts models.Options) (*models.Model, error) {
	if !s.IsIR() {
		opts.Ops = s.o.Ops
		return models.Build(s.File, opts)
	}
	var hp models.HParams
	if s.File != nil {
		var err error
		if hp, err = models.ReadHParams(s.File); err != nil {
			return nil, err
		}
	} else {
		hp.Arch = s.Graph.Meta[MetaArch]
		if v := s.Graph.Meta[MetaNLayer]; v != "" {
			hp.NLayer, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if hp.Arch == "" {
		hp.Arch = s.Graph.Name
	}
	return &models.Model{Graph: s.Graph, HParams: hp, Options: opts}, nil
}

// ErrNoWeights is returned where a command needs weight data and the IR
// names no weights file.
var ErrNoWeights = errors.New(`the IR names no weights file (meta weights="MODEL.gguf"; irtool ir -o FILE.ir writes it)`)

// ops is the op set IR text is parsed with.
func (o Options) ops() *ir.OpSet {
	if o.Ops == nil {
		return ir.DefaultOps()
	}
	return o.Ops
}

// CheckAsBuilt checks that IR text holds the graph its weights file
// builds with opts (the IR's cache options). models.ShardTP rebuilds
// every rank's graph from the hyper-parameters with the rank's share of
// the heads and the FFN (so that every reshape, view and KV-cache shape
// follows), so it can stand for IR text only when the text is that
// graph; any other IR is an error saying so and naming its first
// differing line.
func (src *Source) CheckAsBuilt(opts models.Options) error {
	if src.File == nil {
		return fmt.Errorf("%w: the tensor-parallel split is keyed on the weights' roles and shapes", ErrNoWeights)
	}
	opts.Ops = src.o.Ops
	m, err := models.Build(src.File, opts)
	if err != nil {
		return err
	}
	want, got := m.Graph.Clone(), src.Graph.Clone()
	want.Meta, got.Meta = nil, nil
	ws, gs := want.String(), got.String()
	if ws == gs {
		return nil
	}
	wl, gl := strings.Split(ws, "\n"), strings.Split(gs, "\n")
	line := 0
	for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
		line++
	}
	first := "(end of graph)"
	if line < len(gl) {
		first = strings.TrimSpace(gl[line])
		if len(first) > 120 {
			first = first[:120] + "..."
		}
	}
	return fmt.Errorf("the tensor-parallel split rebuilds each rank's graph from the weights' hyper-parameters, so IR text must be the graph as built (irtool ir MODEL.gguf -o FILE.ir); %s is not: its node %q differs from the graph its weights build",
		src.Path, first)
}

// WeightsRef is the "weights" meta value for a graph built from the GGUF
// file at model ("" = embedded) and written to out ("" or "-" = stdout):
// the model's path relative to out's directory, so the IR file and its
// model can move together; for stdout, where the text's final place is not
// known, the model's absolute path, so the text reads back from anywhere.
func WeightsRef(model, out string) (string, error) {
	if model == "" {
		return EmbeddedWeights, nil
	}
	absModel, err := filepath.Abs(model)
	if err != nil {
		return "", err
	}
	if out == "" || out == "-" {
		return filepath.ToSlash(absModel), nil
	}
	absDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, absModel)
	if err != nil {
		return filepath.ToSlash(absModel), nil
	}
	return filepath.ToSlash(rel), nil
}
