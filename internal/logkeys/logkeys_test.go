package logkeys

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fieldMethods are zerolog's Event and Context methods whose first
// argument is a field key.
var fieldMethods = map[string]bool{
	"Str": true, "Strs": true, "Stringer": true, "Bytes": true, "Hex": true,
	"Int": true, "Int8": true, "Int16": true, "Int32": true, "Int64": true, "Ints32": true, "Ints64": true,
	"Uint": true, "Uint8": true, "Uint16": true, "Uint32": true, "Uint64": true,
	"Float32": true, "Float64": true, "Bool": true, "Dur": true, "Time": true,
	"Interface": true, "Any": true, "AnErr": true, "Errs": true, "Object": true, "Array": true,
	"Dict": true, "IPAddr": true, "RawJSON": true,
}

var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

func TestLogFieldKeysAreSnakeCase(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !fieldMethods[sel.Sel.Name] {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "flag" {
				return true // a command-line flag's name, not a log key
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if key, err := strconv.Unquote(lit.Value); err == nil && !snake.MatchString(key) {
				t.Errorf("%s: log key %q is not snake_case", fset.Position(lit.Pos()), key)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
