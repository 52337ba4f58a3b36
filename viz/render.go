package viz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// ErrNoGraphviz is returned (wrapped) by RenderSVG when Graphviz's dot
// program is not on the PATH.
var ErrNoGraphviz = errors.New("Graphviz's dot program is not installed (on Debian or Ubuntu: apt-get install graphviz); write .dot instead, or install it to get .svg")

// DotCommand is the Graphviz program RenderSVG runs; tests may point it
// elsewhere.
var DotCommand = "dot"

// HaveGraphviz reports whether RenderSVG can run.
func HaveGraphviz() bool {
	_, err := exec.LookPath(DotCommand)
	return err == nil
}

// RenderSVG turns DOT source into SVG by running Graphviz (dot -Tsvg). It
// fails with an error wrapping ErrNoGraphviz when Graphviz is missing, and
// with dot's own message when the source does not parse.
func RenderSVG(ctx context.Context, src []byte) ([]byte, error) {
	path, err := exec.LookPath(DotCommand)
	if err != nil {
		return nil, fmt.Errorf("viz: %w", ErrNoGraphviz)
	}
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(src)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		// dot may print thousands of lines of ranking diagnostics.
		if lines := strings.Split(msg, "\n"); len(lines) > 6 {
			msg = strings.Join(lines[:6], "\n") + fmt.Sprintf("\n(%d more lines)", len(lines)-6)
		}
		return nil, fmt.Errorf("viz: %s -Tsvg: %s", DotCommand, msg)
	}
	return out.Bytes(), nil
}

// WriteSVGPage writes an SVG image (such as RenderSVG's output) as a
// minimal self-contained HTML page with a title, dropping the XML prolog
// and DOCTYPE that may not appear inside HTML.
func WriteSVGPage(w io.Writer, title string, svg []byte) error {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	} else {
		return fmt.Errorf("viz: page %q: the image is not SVG", title)
	}
	_, err := fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n"+
		"<style>body{margin:16px;font:13px system-ui,Helvetica,Arial,sans-serif}svg{max-width:100%%;height:auto}</style>\n"+
		"</head>\n<body>\n<h1 style=\"font-size:17px\">%s</h1>\n%s</body>\n</html>\n", esc(title), esc(title), s)
	return err
}
