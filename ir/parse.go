package ir

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxLine bounds one line of IR text (constants are base64 on one line).
const maxLine = 64 << 20

// MaxNodes bounds the nodes of a graph read from IR text: a longer text is
// refused at the node past the limit, before it is allocated. A model's
// forward step has a few thousand nodes.
const MaxNodes = 1 << 18

// Parse reads a graph in the text format written by Print and verifies it,
// resolving ops in the default set. Errors are *ParseError, naming the
// line and column at fault.
func Parse(r io.Reader) (*Graph, error) { return defaultOps.Parse(r) }

// ParseFile parses as Parse does; name (the file's path) prefixes its
// errors as NAME:LINE:COL.
func ParseFile(name string, r io.Reader) (*Graph, error) { return defaultOps.ParseFile(name, r) }

// ParseError is an error in IR text: the line and column (1-based; the
// column counts bytes) of what is wrong, and the input's name when known.
type ParseError struct {
	Name      string // the file's name; "" when unknown
	Line, Col int
	Err       error
}

// Error is "NAME:LINE:COL: what", or "ir: parse line LINE col COL: what"
// for an input without a name.
func (e *ParseError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("ir: parse line %d col %d: %v", e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: %v", e.Name, e.Line, e.Col, e.Err)
}

// Unwrap returns the error without its position.
func (e *ParseError) Unwrap() error { return e.Err }

// posError is an error at a byte offset of the (trimmed) line being
// parsed; Parse turns it into a column.
type posError struct {
	off int
	err error
}

func (e *posError) Error() string { return e.err.Error() }
func (e *posError) Unwrap() error { return e.err }

// at places err at offset off of the line; an error already placed (by a
// nested parse of a part starting at off) keeps its place within the part.
func at(off int, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return &posError{off + pe.off, pe.err}
	}
	return &posError{off, err}
}

// atf is at with a formatted error.
func atf(off int, format string, args ...any) error { return at(off, fmt.Errorf(format, args...)) }

// Parse reads a graph as the package-level Parse does, resolving its ops
// in s; the graph keeps s as its OpSet.
func (s *OpSet) Parse(r io.Reader) (*Graph, error) { return s.ParseFile("", r) }

// ParseFile reads a graph as the package-level ParseFile does, resolving
// its ops in s.
func (s *OpSet) ParseFile(name string, r io.Reader) (*Graph, error) {
	if line, err := countNodes(r); err != nil {
		return nil, &ParseError{Name: name, Line: line, Col: 1, Err: err}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if err := checkText(br); err != nil {
		return nil, &ParseError{Name: name, Line: 1, Col: 1, Err: err}
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	p := &parser{labels: map[string]*Node{}, ops: s}
	fail := func(line, col int, err error) (*Graph, error) {
		return nil, &ParseError{Name: name, Line: line, Col: col, Err: err}
	}
	lineNo := 0
	state := 0 // 0: before header, 1: in body, 2: after closing brace
	for sc.Scan() {
		lineNo++
		p.line = lineNo
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		indent := strings.Index(raw, line)
		p.indent = indent
		var err error
		switch {
		case state == 0:
			err = p.header(line)
			state = 1
		case state == 2:
			err = fmt.Errorf("text after the closing brace")
		case line == "}":
			state = 2
		case strings.HasPrefix(line, "meta "):
			err = p.meta(line)
		case strings.HasPrefix(line, "outputs("):
			err = p.outputs(line)
		case strings.HasPrefix(line, "%"):
			if len(p.g.Nodes) >= MaxNodes {
				err = fmt.Errorf("more than %d nodes (the limit of IR text)", MaxNodes)
				break
			}
			err = p.node(line)
		default:
			err = fmt.Errorf("unexpected %q", clip(line))
		}
		if err != nil {
			col := indent + 1
			var pe *posError
			if errors.As(err, &pe) {
				col, err = col+pe.off, pe.err
			}
			return fail(lineNo, col, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes (64 MiB, the limit of one line of IR text)", maxLine)
		}
		return fail(lineNo+1, 1, err)
	}
	if state != 2 {
		return fail(max(lineNo, 1), 1, fmt.Errorf("missing closing brace at the end of the input"))
	}
	// Every node passed CheckNode as it was read; what is left for Verify is
	// the layout of a static graph, which is checked here to name the line.
	if p.g.IsStatic() {
		if _, bad, err := layouts(p.g); err != nil {
			return fail(p.lines[bad], p.cols[bad], err)
		}
	}
	if err := Verify(p.g); err != nil {
		if name != "" {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	return p.g, nil
}

// countNodes refuses, before anything is parsed or allocated, a seekable
// input (a file) with more than MaxNodes node lines (lines starting with
// "%"), returning the line of the first node past the limit; it reads the
// input once and seeks back. Other readers are left to the parser's own
// count.
func countNodes(r io.Reader) (int, error) {
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		return 0, nil
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, nil // a pipe
	}
	defer rs.Seek(start, io.SeekStart)
	buf := make([]byte, 64<<10)
	line, nodes := 1, 0
	bol := true // at the start of a line, before its first non-blank byte
	for {
		n, err := rs.Read(buf)
		for _, c := range buf[:n] {
			switch {
			case c == '\n':
				line++
				bol = true
			case !bol || c == ' ' || c == '\t' || c == '\r':
			case c == '%':
				if nodes++; nodes > MaxNodes {
					return line, fmt.Errorf("more than %d nodes (the limit of IR text)", MaxNodes)
				}
				bol = false
			default:
				bol = false
			}
		}
		if err != nil {
			return 0, nil // the parser reports read errors
		}
	}
}

// checkText refuses input that is not text before it is read line by line:
// a NUL byte or invalid UTF-8 in its first bytes (a GGUF file, named as
// such by its magic, or another binary file).
func checkText(br *bufio.Reader) error {
	head, _ := br.Peek(512)
	if bytes.HasPrefix(head, []byte("GGUF")) {
		return fmt.Errorf("this is a GGUF file (magic \"GGUF\"), not IR text: pass it as MODEL.gguf, or write its IR with irtool ir")
	}
	// The last bytes may cut a UTF-8 sequence in two.
	body := head
	if len(body) > utf8.UTFMax {
		body = body[:len(body)-utf8.UTFMax]
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return fmt.Errorf("binary data (a NUL byte at offset %d), not IR text", i)
	}
	if !utf8.Valid(body) {
		return fmt.Errorf("binary data (not UTF-8), not IR text")
	}
	return nil
}

// ParseString parses a graph from a string.
func ParseString(s string) (*Graph, error) { return Parse(strings.NewReader(s)) }

// ParseString parses a graph held in a string, resolving its ops in s.
func (s *OpSet) ParseString(src string) (*Graph, error) { return s.Parse(strings.NewReader(src)) }

type parser struct {
	ops    *OpSet
	g      *Graph
	labels map[string]*Node
	line   int   // the line being parsed
	indent int   // its indentation in bytes
	lines  []int // the line of each node
	cols   []int // the column of each node's label
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func (p *parser) header(line string) error {
	if !strings.HasPrefix(line, "graph ") || !strings.HasSuffix(line, "{") {
		return fmt.Errorf("want `graph \"name\" {`, got %q", clip(line))
	}
	name, err := strconv.Unquote(strings.TrimSpace(line[6 : len(line)-1]))
	if err != nil {
		return atf(6, "graph name must be a quoted string")
	}
	p.g = p.ops.New(name)
	return nil
}

// meta parses `meta key="value"` (the whole line).
func (p *parser) meta(line string) error {
	s := line[5:]
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return atf(5, "meta wants key=\"value\"")
	}
	key := strings.TrimSpace(s[:i])
	if !validMetaKey(key) {
		return atf(5, "meta wants key=\"value\" with a non-empty key on one line")
	}
	val := s[i+1:]
	voff := 5 + i + 1 + len(val) - len(strings.TrimLeft(val, " \t"))
	v, err := strconv.Unquote(strings.TrimSpace(val))
	if err != nil {
		return atf(voff, "meta %s: the value must be a quoted string, got %s", key, clip(strings.TrimSpace(val)))
	}
	if p.g.Meta == nil {
		p.g.Meta = map[string]string{}
	}
	if _, dup := p.g.Meta[key]; dup {
		return atf(5, "meta %s given twice", key)
	}
	p.g.Meta[key] = v
	return nil
}

func (p *parser) ref(s string) (*Node, error) {
	s = strings.TrimSpace(s)
	n, ok := p.labels[s]
	if !ok {
		return nil, fmt.Errorf("%q is not defined", clip(s))
	}
	return n, nil
}

func (p *parser) outputs(line string) error {
	if !strings.HasSuffix(line, ")") {
		return atf(len(line)-1, "outputs(...) is not closed")
	}
	base := len("outputs(")
	for _, sp := range spans(line[base : len(line)-1]) {
		n, err := p.ref(sp.text)
		if err != nil {
			return at(base+sp.start, err)
		}
		p.g.Outputs = append(p.g.Outputs, n)
	}
	return nil
}

// closeAt returns the index of the bracket closing the one at s[0],
// skipping quoted strings.
func closeAt(s string, open, close byte) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			i = j
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// span is one comma-separated part of a list, without its surrounding
// space, and where it starts.
type span struct {
	text  string
	start int
}

// spans splits "a=1, b=\"x,y\", c=[1,2]" at top-level commas (outside
// quotes, parentheses and brackets); an empty list has no parts.
func spans(s string) []span {
	var out []span
	part := func(from, to int) span {
		raw := s[from:to]
		t := strings.TrimLeft(raw, " \t")
		return span{strings.TrimRight(t, " \t"), from + len(raw) - len(t)}
	}
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, part(start, i))
				start = i + 1
			}
		}
	}
	if sp := part(start, len(s)); sp.text != "" || len(out) > 0 {
		out = append(out, sp)
	}
	return out
}

// skipSpace returns s without leading blanks and how many it dropped.
func skipSpace(s string) (string, int) {
	t := strings.TrimLeft(s, " \t")
	return t, len(s) - len(t)
}

func (p *parser) node(line string) error {
	eq := strings.Index(line, " = ")
	if eq < 0 {
		return fmt.Errorf("want `%%N = op(...) : type`")
	}
	label := strings.TrimSpace(line[:eq])
	if _, dup := p.labels[label]; dup {
		return fmt.Errorf("%s is defined twice", clip(label))
	}
	opOff := eq + 3
	rest := line[opOff:]
	lp := strings.IndexByte(rest, '(')
	if lp <= 0 {
		return atf(opOff, "want op(args)")
	}
	n := &Node{Op: Op(rest[:lp]), Layer: -1}
	if err := p.g.Bind(n); err != nil {
		return atf(opOff, "unknown op %q%s", clip(rest[:lp]), suggest(rest[:lp], p.g.opNames()))
	}
	info, _ := n.Info()
	pos := opOff + lp
	rest = rest[lp:]
	rp := closeAt(rest, '(', ')')
	if rp < 0 {
		return atf(pos, "unclosed operand list")
	}
	for _, sp := range spans(rest[1:rp]) {
		x, err := p.ref(sp.text)
		if err != nil {
			return at(pos+1+sp.start, err)
		}
		n.Args = append(n.Args, x)
	}
	rest, skip := skipSpace(rest[rp+1:])
	pos += rp + 1 + skip
	attrAt := map[string]int{} // where each attribute's value starts
	if strings.HasPrefix(rest, "{") {
		var err error
		if rest, pos, err = parseNodeAttrs(n, info, rest, pos, attrAt); err != nil {
			return err
		}
	}
	rest, pos, err := parseNodeType(n, rest, pos)
	if err != nil {
		return err
	}
	if err := parseNodeTail(n, rest, pos); err != nil {
		return err
	}
	if n.Op == OpConst && n.Data == nil {
		n.Data = []byte{}
	}
	if n.Op != OpConst && n.Data != nil {
		return atf(opOff, "%s node with data= (only const nodes hold data)", n.Op)
	}
	if err := CheckNode(n); err != nil {
		// Point at the attribute the error names, else at the op.
		off := opOff
		if m := attrNamed.FindStringSubmatch(err.Error()); m != nil {
			if o, ok := attrAt[m[1]]; ok {
				off = o
			}
		}
		return at(off, err)
	}
	p.labels[label] = n
	p.g.append(n)
	p.lines = append(p.lines, p.line)
	p.cols = append(p.cols, p.indent+1)
	return nil
}

// parseNodeAttrs parses the attribute list `{k=v, ...}` at the start of
// rest (at column pos) into n.Attrs, recording where each value starts in
// attrAt, and returns what follows it.
func parseNodeAttrs(n *Node, info *OpInfo, rest string, pos int, attrAt map[string]int) (string, int, error) {
	rb := closeAt(rest, '{', '}')
	if rb < 0 {
		return "", 0, atf(pos, "unclosed attribute list")
	}
	n.Attrs = Attrs{}
	for _, sp := range spans(rest[1:rb]) {
		kv, kOff := sp.text, pos+1+sp.start
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return "", 0, atf(kOff, "attribute %q: want key=value", clip(kv))
		}
		key := strings.TrimSpace(kv[:i])
		if !isIdent(key) {
			return "", 0, atf(kOff, "attribute name %q", clip(key))
		}
		if info.Attrs != nil && !slices.Contains(info.Attrs, key) {
			return "", 0, atf(kOff, "unknown attribute %q of %s (%s)%s", key, n.Op, attrList(info.Attrs), suggest(key, info.Attrs))
		}
		if _, dup := n.Attrs[key]; dup {
			return "", 0, atf(kOff, "attribute %q given twice", key)
		}
		val, vskip := skipSpace(kv[i+1:])
		vOff := kOff + i + 1 + vskip
		v, err := parseAttr(val)
		if err != nil {
			return "", 0, atf(vOff, "attribute %q: %w", key, err)
		}
		n.Attrs[key] = v
		attrAt[key] = vOff
	}
	rest, skip := skipSpace(rest[rb+1:])
	pos += rb + 1 + skip
	return rest, pos, nil
}

// parseNodeType parses `: type` and the optional quoted name into n and
// returns what follows them.
func parseNodeType(n *Node, rest string, pos int) (string, int, error) {
	if !strings.HasPrefix(rest, ":") {
		return "", 0, atf(pos, "want `: type` after the operands")
	}
	rest, skip := skipSpace(rest[1:])
	pos += 1 + skip
	sp := strings.IndexByte(rest, ' ')
	if lb := strings.IndexByte(rest, '['); lb >= 0 && (sp < 0 || lb < sp) {
		if rb := closeAt(rest[lb:], '[', ']'); rb >= 0 {
			sp = lb + rb + 1 // the type ends with its dims, which may hold spaces
		}
	}
	if sp < 0 {
		sp = len(rest)
	}
	t, err := parseTypeAt(rest[:sp])
	if err != nil {
		return "", 0, at(pos, err)
	}
	n.Type = t
	rest, skip = skipSpace(rest[sp:])
	pos += sp + skip
	if strings.HasPrefix(rest, "\"") {
		end := closeQuote(rest)
		if end < 0 {
			return "", 0, atf(pos, "unclosed name string")
		}
		name, err := strconv.Unquote(rest[:end+1])
		if err != nil {
			return "", 0, atf(pos, "bad name string")
		}
		n.Name = name
		rest, skip = skipSpace(rest[end+1:])
		pos += end + 1 + skip
	}
	return rest, pos, nil
}

// parseNodeTail parses the trailing `layer=N` and `data=base64` fields.
func parseNodeTail(n *Node, rest string, pos int) error {
	for rest != "" {
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			sp = len(rest)
		}
		field := rest[:sp]
		switch {
		case strings.HasPrefix(field, "layer="):
			v, err := strconv.Atoi(field[6:])
			if err != nil || v < 0 {
				return atf(pos, "bad layer %q", clip(field))
			}
			n.Layer = v
		case strings.HasPrefix(field, "data="):
			b, err := base64.StdEncoding.DecodeString(field[5:])
			if err != nil {
				return atf(pos, "bad constant data: %v", err)
			}
			n.Data = b
		default:
			return atf(pos, "unexpected %q after the type", clip(field))
		}
		var skip int
		rest, skip = skipSpace(rest[sp:])
		pos += sp + skip
	}
	return nil
}

// attrNamed finds the attribute an error names.
var attrNamed = regexp.MustCompile(`attribute "?([A-Za-z_][A-Za-z0-9_]*)`)

// parseTypeAt is ParseType, with the error placed at the dim (or dtype)
// at fault.
func parseTypeAt(s string) (Type, error) {
	t, err := ParseType(s)
	if err == nil {
		// A static size that cannot be stored is refused here, on its
		// line, not where a later node first computes with it.
		n := int64(8) // bytes: at most 8 per element of any dtype
		for _, d := range t.Shape {
			if d.IsConst() && d.Val > 0 {
				if n > (1<<62)/d.Val {
					return Type{}, fmt.Errorf("type %s: the size overflows int64", s)
				}
				n *= d.Val
			}
		}
		return t, nil
	}
	if i := strings.IndexByte(s, '['); i >= 0 && strings.HasSuffix(s, "]") {
		if _, ok := ParseDType(s[:i]); ok {
			for _, sp := range spans(s[i+1 : len(s)-1]) {
				if _, derr := ParseDim(sp.text); derr != nil {
					return Type{}, atf(i+1+sp.start, "type %s: dim %d: %w", s, spanIndex(s[i+1:len(s)-1], sp), derr)
				}
			}
		}
	}
	return Type{}, err
}

// spanIndex is the position of sp in the list s.
func spanIndex(s string, sp span) int {
	for i, x := range spans(s) {
		if x.start == sp.start {
			return i
		}
	}
	return -1
}

// attrList lists an op's attribute names for an error.
func attrList(names []string) string {
	if len(names) == 0 {
		return "it takes none"
	}
	return "it takes " + strings.Join(names, ", ")
}

// suggest returns `; did you mean "x"?` for the name in names closest to
// s, when it is a likely misspelling (at most 2 edits, fewer than half of
// s's letters), or "".
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD && 2*d < max(len(s), len(n)) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment: insertions, deletions, substitutions and transpositions of
// adjacent bytes).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func closeQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// opNames lists the names of the ops the graph resolves.
func (g *Graph) opNames() []string {
	set := g.OpSet
	if set == nil {
		set = defaultOps
	}
	var out []string
	for _, info := range set.Ops() {
		out = append(out, string(info.Name))
	}
	return out
}
