package irtool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// documentedPackages are the library packages whose whole exported API must
// carry doc comments and which must show an Example.
var documentedPackages = []string{
	".", "gguf", "gguf/wqconv", "ir", "ir/irgonum", "models", "kernels", "tokenizer", "passes", "planner",
	"target", "partition", "lower/cann", "eval", "runtime/device", "runtime/session",
	"runtime/program", "viz",
}

// TestExportedIdentifiersDocumented parses each library package and lists
// every exported declaration without a doc comment: functions, methods on
// exported types, types, and top-level consts and vars (a doc comment on a
// const/var group covers its members). It also requires a package comment
// and at least one Example function per package.
func TestExportedIdentifiersDocumented(t *testing.T) {
	for _, dir := range documentedPackages {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return true }, parser.ParseComments)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var missing []string
		hasDoc, hasExample := false, false
		for name, pkg := range pkgs {
			for path, f := range pkg.Files {
				test := strings.HasSuffix(path, "_test.go")
				if test {
					for _, d := range f.Decls {
						if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Example") {
							hasExample = true
						}
					}
					continue
				}
				if strings.HasSuffix(name, "_test") {
					continue
				}
				if f.Doc != nil {
					hasDoc = true
				}
				missing = append(missing, undocumented(fset, f)...)
			}
		}
		if !hasDoc {
			t.Errorf("%s: no package doc comment", dir)
		}
		if !hasExample {
			t.Errorf("%s: no Example function", dir)
		}
		sort.Strings(missing)
		for _, m := range missing {
			t.Errorf("%s: exported %s has no doc comment", dir, m)
		}
	}
}

func undocumented(fset *token.FileSet, f *ast.File) []string {
	var out []string
	where := func(p token.Pos) string {
		pos := fset.Position(p)
		return filepath.Base(pos.Filename) + ":" + strconv.Itoa(pos.Line)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil && !exportedRecv(d.Recv) {
				continue
			}
			out = append(out, "func "+d.Name.Name+" ("+where(d.Pos())+")")
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
						out = append(out, "type "+s.Name.Name+" ("+where(s.Pos())+")")
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
							out = append(out, n.Name+" ("+where(n.Pos())+")")
						}
					}
				}
			}
		}
	}
	return out
}

func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	t := r.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}
