package manifest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// writeTree writes files (relative path → content) under a new temporary
// directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func nodePool(name string, extra ...string) string {
	return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: " + name + "}\n" +
		"spec:\n  template:\n    spec:\n" +
		"      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n" +
		"      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]\n" +
		strings.Join(extra, "")
}

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"

func TestReadFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"b.yaml":              "b",
		"a.yml":               "a",
		"sub/c.json":          "c",
		"sub/deeper/d.YAML":   "d",
		"sub/notes.txt":       "ignored",
		"sub/kustomization":   "ignored",
		"sub/.hidden/e.yaml":  "e",
		"z/explicit.manifest": "read when named",
	})
	if err := os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "link-to-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "b.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	files, err := ReadFiles(filepath.Join(dir, "z", "explicit.manifest"), dir, filepath.Join(dir, "b.yaml"))
	if err != nil {
		t.Fatalf("ReadFiles: %v", err)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f.Name)
		got = append(got, filepath.ToSlash(rel)+"="+string(f.Data))
	}
	want := []string{
		"a.yml=a", "b.yaml=b", "link.yaml=b",
		"sub/.hidden/e.yaml=e", "sub/c.json=c", "sub/deeper/d.YAML=d",
		"z/explicit.manifest=read when named",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadFiles mismatch (-want +got):\n%s", diff)
	}
}

func TestReadFilesMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadFiles(filepath.Join(dir, "nope.yaml"), filepath.Join(dir, "nodir"))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("ReadFiles: got %v, want 2 errors", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFiles: error %v does not wrap fs.ErrNotExist", err)
	}
	if !strings.HasPrefix(list[0].Error(), filepath.Join(dir, "nodir")+": reading manifests: ") {
		t.Errorf("ReadFiles: error %q does not start with the path", list[0])
	}
}

func TestLoaderRead(t *testing.T) {
	l := NewLoader(mustNodePoolValidator(t))
	tests := []struct {
		name    string
		files   []File
		want    []string // "file: document N: Kind name"
		wantErr []string
	}{
		{name: "nothing"},
		{
			name:  "other kinds and non-objects are ignored",
			files: []File{{"a.yaml", []byte(configMap + "---\n- 1\n---\njust a string\n---\nkind: NodePool\n---\napiVersion: 3\n")}},
		},
		{
			name: "sorted by file then document",
			files: []File{
				{"b.yaml", []byte(nodePool("b1") + "---\n" + configMap + "---\n" + nodePool("b2"))},
				{"a.yaml", []byte(nodePool("a1"))},
			},
			want: []string{"a.yaml: document 1: NodePool a1", "b.yaml: document 1: NodePool b1", "b.yaml: document 3: NodePool b2"},
		},
		{
			name:  "list items",
			files: []File{{"l.yaml", []byte("apiVersion: v1\nkind: List\nitems:\n- " + indent(nodePool("x")) + "- " + indent(configMap) + "- " + indent(nodePool("x2")))}},
			want:  []string{"l.yaml: document 1, item 1: NodePool x", "l.yaml: document 1, item 3: NodePool x2"},
		},
		{
			name: "all errors, sorted, one per line",
			files: []File{
				{"b.yaml", []byte(nodePool("b1", "  weight: 500\n  bogus: 1\n") + "---\nx: [\n---\n" + nodePool("Bad"))},
				{"a.yaml", []byte(nodePool("a1") + "---\napiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: c}\n")},
			},
			wantErr: []string{
				`a.yaml: document 2: kind: Unsupported value: "NodeClaim": supported values: "NodePool"`,
				`b.yaml: document 1: NodePool b1: spec.bogus: Forbidden: unknown field`,
				`b.yaml: document 1: NodePool b1: spec.weight: Invalid value: 500: spec.weight in body should be less than or equal to 100`,
				`b.yaml: document 2: line 12: invalid yaml: did not find expected node content`,
				`b.yaml: document 3: NodePool Bad: metadata.name: Invalid value: "Bad": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			},
		},
		{
			name: "malformed apiVersion of a validated group",
			files: []File{
				{"v.yaml", []byte(strings.Replace(nodePool("x"), "karpenter.sh/v1", "karpenter.sh", 1))},
				{"w.yaml", []byte(strings.Replace(nodePool("x"), "karpenter.sh/v1", "karpenter.sh/v1/x", 1))},
			},
			wantErr: []string{
				`v.yaml: document 1: apiVersion: Invalid value: "karpenter.sh": must be group/version`,
				`w.yaml: document 1: apiVersion: Invalid value: "karpenter.sh/v1/x": must be group/version`,
			},
		},
		{
			name: "duplicates name both sources",
			files: []File{
				{"b.yaml", []byte(nodePool("x") + "---\n" + nodePool("x"))},
				{"a.yaml", []byte(nodePool("x"))},
			},
			wantErr: []string{
				"b.yaml: document 1: NodePool x: duplicate object: already defined in a.yaml: document 1",
				"b.yaml: document 2: NodePool x: duplicate object: already defined in a.yaml: document 1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := l.Read(tt.files...)
			var gotErr []string
			if err != nil {
				var list ErrorList
				if !errors.As(err, &list) {
					t.Fatalf("Read: error %v is not an ErrorList", err)
				}
				gotErr = strings.Split(err.Error(), "\n")
				if len(gotErr) != len(list) {
					t.Errorf("Read: %d lines for %d errors", len(gotErr), len(list))
				}
				if objs != nil {
					t.Errorf("Read: got objects with an error")
				}
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("Read: errors mismatch (-want +got):\n%s", diff)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Source.String()+": "+o.GroupVersionKind.Kind+" "+o.Name)
				if o.Namespace != "" {
					t.Errorf("Read: cluster-scoped %s has namespace %q", o.Name, o.Namespace)
				}
				if o.Content["spec"].(map[string]any)["disruption"] == nil {
					t.Errorf("Read: %s not defaulted", o.Name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read: objects mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoaderErrorsUnwrap(t *testing.T) {
	l := NewLoader(mustNodePoolValidator(t))
	_, err := l.Read(
		File{"a.yaml", []byte(nodePool("x", "  weight: 500\n"))},
		File{"b.yaml", []byte(nodePool("x"))},
	)
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.weight" {
		t.Errorf("errors.As(*field.Error) = %v, want spec.weight", fe)
	}
	if !errors.Is(err, ErrDuplicate) {
		t.Errorf("errors.Is(ErrDuplicate) = false for %v", err)
	}
	var me *Error
	if !errors.As(err, &me) || me.Kind != "NodePool" || me.Name != "x" || me.Source.File != "a.yaml" || me.Source.Document != 1 || me.Source.Line != 1 {
		t.Errorf("errors.As(*Error) = %+v", me)
	}
}

func TestLoaderLoad(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pools/a.yaml":    nodePool("a"),
		"pools/b.json":    `{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "b"}, "spec": {"template": {"spec": {"nodeClassRef": {"group": "g", "kind": "k", "name": "n"}, "requirements": []}}}}`,
		"pools/notes.txt": nodePool("ignored"),
	})
	objs, err := NewLoader(mustNodePoolValidator(t)).Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	for _, o := range objs {
		rel, _ := filepath.Rel(dir, o.Source.File)
		got = append(got, filepath.ToSlash(rel)+" "+o.Name)
	}
	if diff := cmp.Diff([]string{"pools/a.yaml a", "pools/b.json b"}, got); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
	if _, err := NewLoader().Load(filepath.Join(dir, "missing")); err == nil {
		t.Error("Load(missing): got no error")
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(lines, "\n  ") + "\n"
}
