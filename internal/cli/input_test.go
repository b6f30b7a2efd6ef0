package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/internal/manifest"
)

func TestReadManifests(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(file, []byte("kind: A\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		paths   []string
		stdin   string
		want    []string // file names read
		wantErr string
	}{
		{name: "standard input", paths: []string{"-"}, stdin: "kind: B\n", want: []string{stdinName}},
		{name: "standard input named twice is read once", paths: []string{"-", "-"}, stdin: "kind: B\n", want: []string{stdinName}},
		{name: "a file and standard input", paths: []string{file, "-"}, stdin: "kind: B\n", want: []string{file, stdinName}},
		{name: "empty standard input", paths: []string{"-"}, want: []string{stdinName}},
		{name: "a file only leaves standard input unread", paths: []string{file}, stdin: "kind: B\n", want: []string{file}},
		{name: "a missing file", paths: []string{"-", filepath.Join(dir, "missing.yaml")}, wantErr: "missing.yaml: reading manifests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := readManifests(tc.paths, strings.NewReader(tc.stdin))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				if f.Name == stdinName && string(f.Data) != tc.stdin {
					t.Errorf("standard input read as %q, want %q", f.Data, tc.stdin)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("read %v, want %v", names, tc.want)
			}
		})
	}

	huge := strings.NewReader(strings.Repeat("#", manifest.MaxFileSize+1))
	if _, err := readManifests([]string{"-"}, huge); !errors.Is(err, manifest.ErrTooLarge) || !strings.Contains(err.Error(), stdinName) {
		t.Errorf("more than manifest.MaxFileSize on standard input: error %v, want ErrTooLarge naming %s", err, stdinName)
	}
}

func TestPlanStandardInput(t *testing.T) {
	sample := filepath.Join(samplesDir, "tpch.yaml")
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), "pricePerNodeHour:", "pricePerNodeHour: \"-1\"\n    unused:", 1)
	for _, tc := range []struct {
		name      string
		args      []string
		stdin     string
		wantCode  int
		wantOut   string
		wantError string
	}{
		{name: "a sample", args: []string{"plan", "-f", "-"}, stdin: string(data), wantCode: exitOK, wantOut: "ElasticSchedule analytics/tpch"},
		{name: "errors name standard input", args: []string{"plan", "-f", "-"}, stdin: bad, wantCode: exitInvalid, wantError: "laxity: " + stdinName + ": document 1: ElasticSchedule analytics/tpch: spec.nodePool"},
		{name: "nothing on standard input", args: []string{"plan", "-f", "-"}, wantCode: exitInvalid, wantError: "no ElasticSchedule (laxity.dev/v1alpha1) in " + stdinName},
		{name: "a schedule named on standard input", args: []string{"plan", "-f", "-", "--schedule", "analytics/nope"}, stdin: string(data), wantCode: exitInvalid, wantError: "no ElasticSchedule analytics/nope in " + stdinName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runWith(t, "laxity", tc.stdin, tc.args...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) || !strings.Contains(errOut, tc.wantError) {
				t.Errorf("exit %d, stdout %.300q, stderr %q; want exit %d, %q in stdout, %q in stderr", code, out, errOut, tc.wantCode, tc.wantOut, tc.wantError)
			}
		})
	}

	// What standard input plans is what the file plans.
	_, fromFile, _ := run(t, "plan", "-f", sample, "-o", "json")
	_, fromStdin, _ := runWith(t, "laxity", string(data), "plan", "-f", "-", "-o", "json")
	if stripSearchSeconds(t, fromFile) != stripSearchSeconds(t, fromStdin) {
		t.Error("-f - planned differently from -f with the same manifests")
	}
}

// TestPlanYAML: -o yaml prints the same documents as -o json.
func TestPlanYAML(t *testing.T) {
	sample := filepath.Join(samplesDir, "tpch.yaml")
	for _, extra := range [][]string{nil, {"--compare"}} {
		args := append([]string{"plan", "-f", sample}, extra...)
		code, asJSON, errOut := run(t, append(args, "-o", "json")...)
		if code != exitOK {
			t.Fatalf("%v -o json: exit %d, stderr %s", extra, code, errOut)
		}
		code, asYAML, errOut := run(t, append(args, "-o", "yaml")...)
		if code != exitOK {
			t.Fatalf("%v -o yaml: exit %d, stderr %s", extra, code, errOut)
		}
		if strings.HasPrefix(strings.TrimSpace(asYAML), "{") {
			t.Errorf("%v -o yaml printed JSON:\n%.200s", extra, asYAML)
		}
		converted, err := yaml.YAMLToJSON([]byte(asYAML))
		if err != nil {
			t.Fatalf("%v -o yaml is not YAML: %v", extra, err)
		}
		strip := stripSearchSeconds
		if len(extra) > 0 {
			strip = compactJSON
		}
		if strip(t, string(converted)) != strip(t, asJSON) {
			t.Errorf("%v: -o yaml and -o json differ", extra)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     []string // in stdout, or in stderr when the command fails
	}{
		{[]string{"version"}, exitOK, []string{"laxity dev\n", "revision: ", "go: go1."}},
		{[]string{"version", "-o", "json"}, exitOK, []string{`"version": "dev"`, `"revision": `, `"goVersion": "go1.`}},
		{[]string{"version", "-o", "yaml"}, exitOK, []string{"version: dev\n", "revision: ", "goVersion: go1."}},
		{[]string{"version", "-o", "xml"}, exitInvalid, []string{`version: -o must be text, json or yaml, got "xml"`, usageHint}},
		{[]string{"version", "extra"}, exitInvalid, []string{`unknown command "extra"`}},
		{[]string{"--version"}, exitOK, []string{"laxity dev\n", "revision: ", "go: go1."}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, tc.args...)
			got := out
			if tc.wantCode != exitOK {
				got = errOut
			}
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.wantCode, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output %q lacks %q", got, w)
				}
			}
		})
	}
}

// --version (and -v) print exactly what the version command prints, as
// laxity and as the kubectl plugin.
func TestVersionFlagPrintsTheVersionCommandsText(t *testing.T) {
	_, want, _ := run(t, "version")
	if !strings.HasPrefix(want, "laxity ") {
		t.Fatalf("version printed %q", want)
	}
	for _, program := range []string{"laxity", PluginName} {
		for _, flag := range []string{"--version", "-v"} {
			code, out, errOut := runWith(t, program, "", flag)
			if code != exitOK || out != want || errOut != "" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", program, flag, code, out, errOut, want)
			}
		}
	}
}

// TestKubectlPlugin: installed as kubectl-laxity, the help names the
// command as typed, and plan without -f reads the current context's
// cluster, as kubectl would.
func TestKubectlPlugin(t *testing.T) {
	t.Setenv("KUBECONFIG", unreachableKubeconfig(t))
	code, out, _ := runWith(t, PluginName, "", "plan", "--help")
	if code != exitOK || !strings.Contains(out, "kubectl laxity plan") {
		t.Errorf("plan --help: exit %d, output lacks \"kubectl laxity plan\":\n%s", code, out)
	}
	code, _, errOut := runWith(t, PluginName, "", "nope")
	if code != exitInvalid || !strings.Contains(errOut, "Run 'kubectl laxity --help' for usage.") {
		t.Errorf("an unknown command: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runWith(t, PluginName, "", "plan")
	if code != exitInvalid || !strings.Contains(errOut, "context c, namespace default") || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("plan without -f: exit %d, stderr %q; want an error reading the current context's cluster", code, errOut)
	}
	// As laxity, plan without -f is a mistake, not a cluster read.
	code, _, errOut = run(t, "plan")
	if code != exitInvalid || !strings.Contains(errOut, "-f FILE|DIR|- or --kubeconfig FILE is required") {
		t.Errorf("laxity plan: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "-n", "analytics")
	if code != exitInvalid || !strings.Contains(errOut, "give one or the other") {
		t.Errorf("-f with -n: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, "plan", "-n", "analytics", "-A")
	if code != exitInvalid || !strings.Contains(errOut, "-n and -A") {
		t.Errorf("-n with -A: exit %d, stderr %q", code, errOut)
	}
}
