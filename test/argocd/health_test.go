package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

// customizations is where the health checks are, relative to this package.
const customizations = "../../config/argocd"

// healthStatus is what a health check returns, and what a test expects.
type healthStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// healthTests is a health_test.yaml: stored objects and the health each
// must get.
type healthTests struct {
	Tests []struct {
		HealthStatus healthStatus `json:"healthStatus"`
		InputPath    string       `json:"inputPath"`
	} `json:"tests"`
}

// The statuses Argo CD knows; a check returning another is a bug.
var knownStatuses = map[string]bool{"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true}

func TestHealthChecks(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(customizations, "*", "*", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, script := range scripts {
		dir := filepath.Dir(script)
		kinds[filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir)] = true
		t.Run(filepath.Base(dir), func(t *testing.T) {
			source, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "health_test.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var tests healthTests
			if err := yaml.UnmarshalStrict(raw, &tests); err != nil {
				t.Fatalf("health_test.yaml: %v", err)
			}
			listed := map[string]bool{}
			for _, tc := range tests.Tests {
				listed[filepath.Clean(tc.InputPath)] = true
				t.Run(filepath.Base(tc.InputPath), func(t *testing.T) {
					input, err := os.ReadFile(filepath.Join(dir, tc.InputPath))
					if err != nil {
						t.Fatal(err)
					}
					var obj map[string]any
					if err := yaml.Unmarshal(input, &obj); err != nil {
						t.Fatalf("%s: %v", tc.InputPath, err)
					}
					got, err := runHealth(string(source), obj)
					if err != nil {
						t.Fatal(err)
					}
					if !knownStatuses[got.Status] {
						t.Errorf("health status %q is not one Argo CD knows", got.Status)
					}
					if got != tc.HealthStatus {
						t.Errorf("health %+v, want %+v", got, tc.HealthStatus)
					}
				})
			}
			// Every stored object is tested.
			stored, err := filepath.Glob(filepath.Join(dir, "testdata", "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stored {
				rel, _ := filepath.Rel(dir, s)
				if !listed[rel] {
					t.Errorf("%s is not in health_test.yaml", rel)
				}
			}
		})
	}
	var got []string
	for k := range kinds {
		got = append(got, k)
	}
	sort.Strings(got)
	want := []string{"laxity.dev/ElasticSchedule", "laxity.dev/IntermittentQuery", "laxity.dev/RecurringQuery"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("health checks for %v, want one for each kind: %v", got, want)
	}
}

// runHealth runs a health check as Argo CD does: the object as the global
// obj, in a Lua state with only the base, table, string and math libraries
// open, and the table it returns read as the health.
func runHealth(source string, obj map[string]any) (healthStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(source); err != nil {
		return healthStatus{}, fmt.Errorf("running the health check: %w", err)
	}
	returned, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return healthStatus{}, fmt.Errorf("the health check returned %s, not a table", l.Get(-1).Type())
	}
	field := func(name string) (string, error) {
		switch v := returned.RawGetString(name).(type) {
		case lua.LString:
			return string(v), nil
		case *lua.LNilType:
			return "", nil
		default:
			return "", fmt.Errorf("the health check's %s is a %s, not a string", name, v.Type())
		}
	}
	var hs healthStatus
	var err error
	if hs.Status, err = field("status"); err != nil {
		return hs, err
	}
	hs.Message, err = field("message")
	return hs, err
}

// toLua converts a decoded object as Argo CD does: maps to tables, lists to
// sequences from 1, numbers, strings and booleans to their Lua values.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	}
	// nil, and nothing else: YAML decoded as JSON holds no other type.
	return lua.LNil
}
