package cli

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"
)

const usageHint = "Run 'laxity --help' for usage."

// unreachableKubeconfig is a kubeconfig whose API server refuses every
// connection, so that the manager fails while starting, not on its flags.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUsageHintOnlyForCommandLineMistakes: a mistake in the command line
// ends with the hint to read --help; an error met while running, in any
// subcommand, does not.
func TestUsageHintOnlyForCommandLineMistakes(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "missing", "dir", "out.md")
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		wantHint bool
		wantErr  string
	}{
		{name: "unknown command", args: []string{"nope"}, wantHint: true, wantErr: `unknown command "nope"`},
		{name: "unknown flag", args: []string{"plan", "--nope"}, wantHint: true, wantErr: "unknown flag: --nope"},
		{name: "bad flag value", args: []string{"manager", "--poll", "soon"}, wantHint: true, wantErr: `invalid argument "soon"`},
		{name: "argument where none is taken", args: []string{"demo", "extra"}, wantHint: true, wantErr: `unknown command "extra"`},
		{name: "manager argument", args: []string{"manager", "extra"}, wantHint: true, wantErr: `unknown command "extra"`},
		{name: "no workers", args: []string{"manager", "--schedule-workers", "0"}, wantHint: true, wantErr: "--schedule-workers and --query-workers must be at least 1"},

		{name: "plan: a missing file", args: []string{"plan", "-f", "/nonexistent/x.yaml"}, wantErr: "/nonexistent/x.yaml: reading manifests"},
		{name: "demo: a missing workload", args: []string{"demo", "--workload", "/nonexistent/x.yaml"}, wantErr: "/nonexistent/x.yaml"},
		{name: "experiments: an unwritable output", args: []string{"experiments", "-o", outside}, wantErr: "experiments: -o " + outside + ": the directory " + filepath.Dir(outside) + " does not exist"},
		{
			name: "manager: an unreachable API server", args: []string{"manager", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"},
			env: map[string]string{"KUBECONFIG": unreachableKubeconfig(t)}, wantErr: "127.0.0.1:1",
		},
		{
			name: "manager: leader election outside a cluster", args: []string{"manager", "--leader-elect"},
			env: map[string]string{"KUBECONFIG": unreachableKubeconfig(t)}, wantErr: "give one with --leader-election-namespace",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errOut := run(t, tc.args...)
			if code == exitOK {
				t.Fatalf("exit 0, want an error; stderr:\n%s", errOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, errOut)
			}
			if got := strings.Contains(errOut, usageHint); got != tc.wantHint {
				t.Errorf("usage hint shown: %v, want %v; stderr:\n%s", got, tc.wantHint, errOut)
			}
		})
	}
}

func TestPlanInputSizeCap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/dev/zero")
	}
	code, _, errOut := run(t, "plan", "-f", "/dev/zero")
	if code != exitInvalid || !strings.Contains(errOut, "/dev/zero: ") || !strings.Contains(errOut, "16 MiB") || strings.Contains(errOut, usageHint) {
		t.Errorf("plan -f /dev/zero: exit %d, stderr:\n%s", code, errOut)
	}
}

// searchTime is the wall-clock search time the table prints.
var searchTime = regexp.MustCompile(`in [0-9.]+s\.`)

func untimed(table string) string { return searchTime.ReplaceAllString(table, "in (time).") }

// TestPlanUTF16 plans the sample as a Windows editor saves it: UTF-16 with
// a byte order mark, CRLF line ends; the plan is the one of the UTF-8 file.
func TestPlanUTF16(t *testing.T) {
	sample := filepath.Join(samplesDir, "tpch.yaml")
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	code, want, errOut := run(t, "plan", "-f", sample)
	if code != exitOK {
		t.Fatalf("plan of the UTF-8 sample: exit %d, stderr:\n%s", code, errOut)
	}
	for name, order := range map[string]binary.ByteOrder{"le": binary.LittleEndian, "be": binary.BigEndian} {
		t.Run(name, func(t *testing.T) {
			text := strings.ReplaceAll(string(data), "\n", "\r\n")
			units := append([]uint16{0xfeff}, utf16.Encode([]rune(text))...)
			encoded := make([]byte, 2*len(units))
			for i, u := range units {
				order.PutUint16(encoded[2*i:], u)
			}
			p := filepath.Join(t.TempDir(), "tpch.yaml")
			if err := os.WriteFile(p, encoded, 0o644); err != nil {
				t.Fatal(err)
			}
			code, got, errOut := run(t, "plan", "-f", p)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			if untimed(got) != untimed(want) {
				t.Errorf("the plan of the UTF-16 file differs from the UTF-8 one")
			}
		})
	}
}
