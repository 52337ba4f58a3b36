package ir

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxLine bounds one line of IR text (constants are base64 on one line).
const maxLine = 64 << 20

// Parse reads a graph in the text format written by Print and verifies it,
// resolving ops in the default set. Errors name the line at fault.
func Parse(r io.Reader) (*Graph, error) { return defaultOps.Parse(r) }

// Parse reads a graph as the package-level Parse does, resolving its ops
// in s; the graph keeps s as its OpSet.
func (s *OpSet) Parse(r io.Reader) (*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	p := &parser{labels: map[string]*Node{}, ops: s}
	lineNo := 0
	state := 0 // 0: before header, 1: in body, 2: after closing brace
	for sc.Scan() {
		lineNo++
		p.line = lineNo
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
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
			err = p.meta(line[5:])
		case strings.HasPrefix(line, "outputs("):
			err = p.outputs(line)
		case strings.HasPrefix(line, "%"):
			err = p.node(line)
		default:
			err = fmt.Errorf("unexpected %q", clip(line))
		}
		if err != nil {
			return nil, fmt.Errorf("ir: parse line %d: %w", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ir: parse line %d: %w", lineNo+1, err)
	}
	if state != 2 {
		return nil, fmt.Errorf("ir: parse line %d: missing closing brace at the end of the input", lineNo)
	}
	// Every node passed CheckNode as it was read; what is left for Verify is
	// the layout of a static graph, which is checked here to name the line.
	if p.g.IsStatic() {
		if _, bad, err := layouts(p.g); err != nil {
			return nil, fmt.Errorf("ir: parse line %d: %w", p.lines[bad], err)
		}
	}
	if err := Verify(p.g); err != nil {
		return nil, err
	}
	return p.g, nil
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
	lines  []int // the line of each node
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
		return fmt.Errorf("graph name must be a quoted string")
	}
	p.g = p.ops.New(name)
	return nil
}

func (p *parser) meta(s string) error {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return fmt.Errorf("meta wants key=\"value\"")
	}
	v, err := strconv.Unquote(strings.TrimSpace(s[i+1:]))
	if err != nil {
		return fmt.Errorf("meta value must be a quoted string")
	}
	key := strings.TrimSpace(s[:i])
	if !validMetaKey(key) {
		return fmt.Errorf("meta wants key=\"value\" with a non-empty key on one line")
	}
	if p.g.Meta == nil {
		p.g.Meta = map[string]string{}
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
		return fmt.Errorf("outputs(...) is not closed")
	}
	for _, s := range splitTop(line[len("outputs(") : len(line)-1]) {
		n, err := p.ref(s)
		if err != nil {
			return err
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

// splitAttrs splits "a=1, b=\"x,y\", c=[1,2]" at top-level commas.
func splitAttrs(s string) []string {
	var out []string
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
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" {
		out = append(out, t)
	}
	return out
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
	rest := line[eq+3:]
	lp := strings.IndexByte(rest, '(')
	if lp <= 0 {
		return fmt.Errorf("want op(args)")
	}
	n := &Node{Op: Op(rest[:lp]), Layer: -1}
	if err := p.g.Bind(n); err != nil {
		return fmt.Errorf("unknown op %q", clip(rest[:lp]))
	}
	rest = rest[lp:]
	rp := closeAt(rest, '(', ')')
	if rp < 0 {
		return fmt.Errorf("unclosed operand list")
	}
	for _, a := range splitTop(rest[1:rp]) {
		x, err := p.ref(a)
		if err != nil {
			return err
		}
		n.Args = append(n.Args, x)
	}
	rest = strings.TrimSpace(rest[rp+1:])
	if strings.HasPrefix(rest, "{") {
		rb := closeAt(rest, '{', '}')
		if rb < 0 {
			return fmt.Errorf("unclosed attribute list")
		}
		n.Attrs = Attrs{}
		for _, kv := range splitAttrs(rest[1:rb]) {
			i := strings.IndexByte(kv, '=')
			if i <= 0 {
				return fmt.Errorf("attribute %q: want key=value", clip(kv))
			}
			key := strings.TrimSpace(kv[:i])
			if !isIdent(key) {
				return fmt.Errorf("attribute name %q", clip(key))
			}
			if _, dup := n.Attrs[key]; dup {
				return fmt.Errorf("attribute %q given twice", key)
			}
			v, err := parseAttr(kv[i+1:])
			if err != nil {
				return fmt.Errorf("attribute %q: %w", key, err)
			}
			n.Attrs[key] = v
		}
		rest = strings.TrimSpace(rest[rb+1:])
	}
	if !strings.HasPrefix(rest, ":") {
		return fmt.Errorf("want `: type` after the operands")
	}
	rest = strings.TrimSpace(rest[1:])
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 {
		sp = len(rest)
	}
	t, err := ParseType(rest[:sp])
	if err != nil {
		return err
	}
	n.Type = t
	rest = strings.TrimSpace(rest[sp:])
	if strings.HasPrefix(rest, "\"") {
		end := closeQuote(rest)
		if end < 0 {
			return fmt.Errorf("unclosed name string")
		}
		name, err := strconv.Unquote(rest[:end+1])
		if err != nil {
			return fmt.Errorf("bad name string")
		}
		n.Name = name
		rest = strings.TrimSpace(rest[end+1:])
	}
	for rest != "" {
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			sp = len(rest)
		}
		field := rest[:sp]
		rest = strings.TrimSpace(rest[sp:])
		switch {
		case strings.HasPrefix(field, "layer="):
			v, err := strconv.Atoi(field[6:])
			if err != nil || v < 0 {
				return fmt.Errorf("bad layer %q", clip(field))
			}
			n.Layer = v
		case strings.HasPrefix(field, "data="):
			b, err := base64.StdEncoding.DecodeString(field[5:])
			if err != nil {
				return fmt.Errorf("bad constant data: %v", err)
			}
			n.Data = b
		default:
			return fmt.Errorf("unexpected %q after the type", clip(field))
		}
	}
	if n.Op == OpConst && n.Data == nil {
		n.Data = []byte{}
	}
	if n.Op != OpConst && n.Data != nil {
		return fmt.Errorf("%s node with data= (only const nodes hold data)", n.Op)
	}
	if err := CheckNode(n); err != nil {
		return err
	}
	p.labels[label] = n
	p.g.append(n)
	p.lines = append(p.lines, p.line)
	return nil
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
