package builder_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedLiterals are test files that may still write ElasticSchedules or
// IntermittentQueries with a spec as struct literals, and why.
var allowedLiterals = map[string]string{
	// Status fixtures of the condition and metric unit tests: each sets a
	// deadline next to the status it is about, inline in its test.
	"controllers/conditions_test.go":   "inline status fixtures",
	"controllers/metrics_test.go":      "inline status fixtures",
	"controllers/query_events_test.go": "inline status fixtures",
}

// TestNoRepeatedTestSupport keeps the test support in one place: every
// envtest control plane is started by package testenv, and every test
// ElasticSchedule and IntermittentQuery with a spec is made by package
// builder rather than by a struct literal of its own.
func TestNoRepeatedTestSupport(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "vendor" || rel == "test/testenv" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		apiAlias, envtestAlias := importNames(file)
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			pkg, kind := selector(lit.Type)
			switch {
			case pkg != "" && pkg == envtestAlias && kind == "Environment":
				t.Errorf("%s: starts its own envtest.Environment; use testenv.Start", fset.Position(lit.Pos()))
			case pkg != "" && pkg == apiAlias && (kind == "ElasticSchedule" || kind == "IntermittentQuery") && hasKey(lit, "Spec"):
				if _, allowed := allowedLiterals[rel]; !allowed {
					t.Errorf("%s: writes a %s literal with a spec; use builder.Schedule or builder.Query", fset.Position(lit.Pos()), kind)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importNames are the names file gives laxity's API package and envtest
// ("" when it does not import them).
func importNames(file *ast.File) (api, envtest string) {
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch path {
		case "github.com/laxity-dev/laxity/api/v1alpha1":
			api = name
		case "sigs.k8s.io/controller-runtime/pkg/envtest":
			envtest = name
		}
	}
	return api, envtest
}

func selector(expr ast.Expr) (pkg, name string) {
	sel, ok := expr.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}

func hasKey(lit *ast.CompositeLit, key string) bool {
	for _, elt := range lit.Elts {
		if kv, ok := elt.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return true
			}
		}
	}
	return false
}
