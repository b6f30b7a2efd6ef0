package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestChartREADMEIsUpToDate fails when charts/laxity/README.md's values
// table is not the one values.yaml's comments give.
func TestChartREADMEIsUpToDate(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check", filepath.Join("..", "..", "charts", "laxity")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

func TestParseValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		want    []value
		wantErr string
	}{
		{
			name: "documented leaves, groups and mappings",
			yaml: `# A file comment, not a value's.

# -- Managers to run.
replicaCount: 1
image:
  # A note that is not documentation.
  # -- Image tag; empty means
  # the appVersion.
  tag: ""
# -- Resources | limits.
resources:
  limits:
    memory: 1Gi
`,
			want: []value{
				{Path: "replicaCount", Default: "1", Description: "Managers to run."},
				{Path: "image.tag", Default: `""`, Description: "Image tag; empty means the appVersion."},
				{Path: "resources", Default: `{"limits":{"memory":"1Gi"}}`, Description: "Resources | limits."},
			},
		},
		{
			name:    "an undocumented leaf",
			yaml:    "image:\n  # -- Documented.\n  tag: x\n  pullPolicy: Always\n",
			wantErr: `image.pullPolicy (line 4) has no "# --" comment`,
		},
		{
			name:    "an undocumented empty mapping",
			yaml:    "podLabels: {}\n",
			wantErr: `podLabels (line 1) has no "# --" comment`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseValues([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckAndWrite: -check reports a stale table without writing; without
// it the table is written between the markers and the rest kept.
func TestCheckAndWrite(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("values.yaml", "# -- Pipes | escaped.\nx: 1\n")
	stale := "# Title\n\n<!-- values:begin -->\nold\n<!-- values:end -->\n\nAfter.\n"
	write("README.md", stale)

	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check", dir}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "out of date") {
		t.Fatalf("-check on a stale README: exit %d, stderr %q; want 1 and out of date", code, stderr.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(got) != stale {
		t.Fatal("-check wrote the README")
	}
	if code := run([]string{dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("writing: exit %d: %s", code, stderr.String())
	}
	want := "# Title\n\n<!-- values:begin -->\n| value | default | meaning |\n|---|---|---|\n| `x` | `1` | Pipes \\| escaped. |\n<!-- values:end -->\n\nAfter.\n"
	if got, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(got) != want {
		t.Errorf("README:\n%s\nwant:\n%s", got, want)
	}
	stderr.Reset()
	if code := run([]string{"-check", dir}, &stdout, &stderr); code != 0 {
		t.Errorf("-check after writing: exit %d: %s", code, stderr.String())
	}

	write("README.md", "# No markers\n")
	stderr.Reset()
	if code := run([]string{dir}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "values:begin") {
		t.Errorf("README without markers: exit %d, stderr %q", code, stderr.String())
	}
}
