package cli

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

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

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
	metaWeights = "weights"
	metaNCtx    = "n_ctx"
	metaKVType  = "kv_type"
	metaKVWrite = "kv_write"
	metaArch    = "arch"
	metaNLayer  = "n_layer"
	metaNVocab  = "n_vocab"
)

// embeddedWeights is the "weights" meta value naming the embedded model.
const embeddedWeights = "embedded:stories260K.gguf"

// modelSource is an opened MODEL argument.
type modelSource struct {
	reg  *irtool.Context // resolves the ops of the IR text and of the graphs built
	Path string          // as given; "" is the embedded model
	File *gguf.File      // the GGUF (weights, hyper-parameters, tokenizer); nil for IR text without "weights"
	// Graph is the parsed IR text, nil for a GGUF file.
	Graph *ir.Graph
	// WeightsPath is the GGUF file an IR file names, resolved.
	WeightsPath string
}

// isIRText reports whether the file at path holds IR text rather than
// GGUF: its name ends in ".ir", or it starts with "graph " after
// blank and comment lines.
func isIRText(path string) bool {
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

// openSource opens a MODEL argument: the embedded model for "", a GGUF
// file, or IR text (parsed with reg's ops) and the GGUF its "weights"
// meta names.
func openSource(reg *irtool.Context, path string) (*modelSource, error) {
	if path != "" && !isIRText(path) {
		if s, err, ok := openStream(reg, path); ok {
			return s, err
		}
	}
	if path == "" || !isIRText(path) {
		f, err := openModel(path)
		if err != nil {
			return nil, err
		}
		return &modelSource{reg: reg, Path: path, File: f}, nil
	}
	text, err := safeio.Open(path)
	if err != nil {
		return nil, err
	}
	defer text.Close()
	return openIR(reg, path, text, filepath.Dir(path))
}

// openStream opens a MODEL argument that is a stream (a pipe, a FIFO,
// /dev/stdin): GGUF or IR text, told apart by their first bytes, since a
// stream's name says nothing. ok is false for a regular file.
func openStream(reg *irtool.Context, path string) (s *modelSource, err error, ok bool) {
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
		return &modelSource{Path: path, File: f}, nil, true
	}
	// A relative weights path of IR text on a stream is relative to the
	// working directory (the stream has no directory of its own).
	s, err = openIR(reg, path, br, ".")
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
func openIR(reg *irtool.Context, path string, r io.Reader, dir string) (*modelSource, error) {
	g, err := reg.Ops.ParseFile(path, r)
	if err != nil {
		return nil, err // NAME:LINE:COL: ...
	}
	if err := checkMeta(path, g); err != nil {
		return nil, err
	}
	s := &modelSource{reg: reg, Path: path, Graph: g}
	w := g.Meta[metaWeights]
	if w == "" {
		return s, nil
	}
	if i := strings.IndexFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return nil, fmt.Errorf("%s:%d: meta %s=%q: a control character (%q at byte %d) in a file name", path, metaLine(path, metaWeights), metaWeights, w, w[i], i)
	}
	if w == embeddedWeights {
		s.WeightsPath = embeddedWeights
		s.File, err = openModel("")
	} else {
		if !filepath.IsAbs(w) {
			w = filepath.Join(dir, w)
		}
		s.WeightsPath = w
		s.File, err = gguf.Open(w)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the weights file of meta %s: %w", path, metaWeights, err)
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
	for _, key := range []string{metaNCtx, metaNLayer, metaNVocab, metaKVType, metaKVWrite} {
		v, ok := g.Meta[key]
		if !ok {
			continue
		}
		var err error
		switch key {
		case metaKVType:
			_, err = models.ParseKVCacheType(v)
		case metaKVWrite:
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
func (s *modelSource) Close() error {
	if s.File != nil {
		return s.File.Close()
	}
	return nil
}

// weightsModel returns the GGUF file holding the source's weights, as
// weightsRef takes it ("" for the embedded model), and false for IR text
// that names no weights file. An IR file's relative "weights" is resolved
// against its directory, so a graph written elsewhere names it anew.
func (s *modelSource) weightsModel() (string, bool) {
	if !s.IsIR() {
		return s.Path, true
	}
	switch s.WeightsPath {
	case "":
		return "", false
	case embeddedWeights:
		return "", true
	}
	return s.WeightsPath, true
}

// weightsHeld says how the source's weights are held, for run's memory
// line: memory-mapped from the file, embedded in the binary, or read into
// memory (a pipe or other stream, or a file the kernel would not map).
func (s *modelSource) weightsHeld() string {
	switch {
	case s.File.Mapped():
		return "memory-mapped weights"
	case s.Path == "" || s.WeightsPath == embeddedWeights:
		return "embedded weights"
	}
	return "weights read into memory"
}

// IsIR reports whether the source is IR text.
func (s *modelSource) IsIR() bool { return s.Graph != nil }

// options reconciles the model flags with what an IR file fixes: the KV
// cache size, type and write mode are part of its graph (meta n_ctx,
// kv_type, kv_write). A flag left at its default (def) takes the IR's
// value; a flag given a different value is an error. For a GGUF source
// opts is returned unchanged.
func (s *modelSource) options(opts, def models.Options) (models.Options, error) {
	if !s.IsIR() {
		return opts, nil
	}
	m := s.Graph.Meta
	if v := m[metaNCtx]; v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return opts, fmt.Errorf("%s: meta %s=%q is not a positive integer", s.Path, metaNCtx, v)
		}
		if opts.NCtx != def.NCtx && opts.NCtx != n {
			return opts, fmt.Errorf("%s: the IR's KV cache has n_ctx=%d; --ctx %d differs (the cache size is part of the graph: write the IR again with irtool ir --ctx)", s.Path, n, opts.NCtx)
		}
		opts.NCtx = n
	}
	if v := m[metaKVType]; v != "" {
		t, err := models.ParseKVCacheType(v)
		if err != nil {
			return opts, fmt.Errorf("%s: meta %s: %w", s.Path, metaKVType, err)
		}
		if opts.KVType != def.KVType && opts.KVType != t {
			return opts, fmt.Errorf("%s: the IR's KV cache is %s; --kv-type differs", s.Path, v)
		}
		opts.KVType = t
	}
	if v := m[metaKVWrite]; v != "" {
		w, err := models.ParseKVWrite(v)
		if err != nil {
			return opts, fmt.Errorf("%s: meta %s: %w", s.Path, metaKVWrite, err)
		}
		if opts.KVWrite != def.KVWrite && opts.KVWrite != w {
			return opts, fmt.Errorf("%s: the IR writes its KV cache with %s; --kv-write differs", s.Path, v)
		}
		opts.KVWrite = w
	}
	return opts, nil
}

// build returns the model: for a GGUF file the graph models.Build makes
// with opts; for IR text the parsed graph, with the hyper-parameters of
// its weights file (or, without one, the architecture and layer count of
// its meta) and the options the IR fixes (see options).
func (s *modelSource) build(opts models.Options) (*models.Model, error) {
	if !s.IsIR() {
		return s.reg.BuildModel(s.File, opts)
	}
	var hp models.HParams
	if s.File != nil {
		var err error
		if hp, err = models.ReadHParams(s.File); err != nil {
			return nil, err
		}
	} else {
		hp.Arch = s.Graph.Meta[metaArch]
		if v := s.Graph.Meta[metaNLayer]; v != "" {
			hp.NLayer, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if hp.Arch == "" {
		hp.Arch = s.Graph.Name
	}
	return &models.Model{Graph: s.Graph, HParams: hp, Options: opts}, nil
}

// errNoWeights is returned where a command needs weight data and the IR
// names no weights file.
var errNoWeights = errors.New(`the IR names no weights file (meta weights="MODEL.gguf"; irtool ir -o FILE.ir writes it)`)
