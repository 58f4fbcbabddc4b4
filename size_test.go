package rein_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoopStaysSmall keeps the loop's packages readable one piece at a
// time: no source file in agent/ or hook/ (their subpackages included)
// over 500 lines, no function over 80.
func TestLoopStaysSmall(t *testing.T) {
	const maxFile, maxFunc = 500, 80
	for _, root := range []string{"agent", "hook"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.Contains(path, "testdata") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			if n := fset.File(f.Pos()).LineCount(); n > maxFile {
				t.Errorf("%s has %d lines; split it (at most %d)", path, n, maxFile)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				fn, ok := n.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					return true
				}
				if l := fset.Position(fn.Body.End()).Line - fset.Position(fn.Body.Pos()).Line + 1; l > maxFunc {
					t.Errorf("%s: %s is %d lines; split it (at most %d)", fset.Position(fn.Pos()), fn.Name.Name, l, maxFunc)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
