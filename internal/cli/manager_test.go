package cli

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/laxity-dev/laxity/controllers"
)

// TestWatchNamespacesRejectsWhatIsNoNamespace: a --watch-namespaces entry
// that cannot be a namespace name stops the manager before it connects,
// with the flag and the entry named.
func TestWatchNamespacesRejectsWhatIsNoNamespace(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"team-a,Team_B", `--watch-namespaces: "Team_B" is not a namespace name`},
		{"team-a,,team-b", `--watch-namespaces: "" is not a namespace name`},
		{"team-a,team-a", `--watch-namespaces: "team-a" is given twice`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv("KUBECONFIG", unreachableKubeconfig(t))
			code, _, errOut := run(t, "manager", "--watch-namespaces", tc.value, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
			if code == exitOK {
				t.Fatalf("exit 0, want an error; stderr:\n%s", errOut)
			}
			if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, usageHint) {
				t.Errorf("stderr lacks %q and the usage hint:\n%s", tc.want, errOut)
			}
		})
	}
}

// TestWatchOnly: namespaces given restrict the cache to them and keep the
// controllers' per-kind selectors; none given leaves every namespace
// watched.
func TestWatchOnly(t *testing.T) {
	base := controllers.CacheOptions()
	if got := watchOnly(base, nil); got.DefaultNamespaces != nil {
		t.Errorf("no namespaces: DefaultNamespaces = %v, want nil (all namespaces)", got.DefaultNamespaces)
	}
	got := watchOnly(base, []string{"team-a", "team-b"})
	if names := slices.Sorted(maps.Keys(got.DefaultNamespaces)); !slices.Equal(names, []string{"team-a", "team-b"}) {
		t.Errorf("DefaultNamespaces = %v, want team-a and team-b", names)
	}
	if _, all := got.DefaultNamespaces[cache.AllNamespaces]; all {
		t.Error("DefaultNamespaces holds AllNamespaces: every namespace would still be watched")
	}
	if len(got.ByObject) != len(base.ByObject) || len(base.ByObject) == 0 {
		t.Errorf("ByObject has %d entries, want the controllers' %d", len(got.ByObject), len(base.ByObject))
	}
}

// TestMetricsCertDirMustHoldTheCertificate: a --metrics-cert-dir without
// tls.crt and tls.key, or given where metrics are served in the clear,
// stops the manager before it connects, rather than serve a self-signed
// certificate no scraper can verify.
func TestMetricsCertDirMustHoldTheCertificate(t *testing.T) {
	empty := t.TempDir()
	withCert := t.TempDir()
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(withCert, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no certificate", []string{"--metrics-cert-dir", empty}, "--metrics-cert-dir: reading the metrics server's certificate: stat " + filepath.Join(empty, "tls.crt")},
		{"plain HTTP", []string{"--metrics-cert-dir", withCert, "--metrics-secure=false"}, "--metrics-cert-dir: given with --metrics-secure=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", unreachableKubeconfig(t))
			code, _, errOut := run(t, append([]string{"manager", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, tc.args...)...)
			if code == exitOK {
				t.Fatalf("exit 0, want an error; stderr:\n%s", errOut)
			}
			if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, usageHint) {
				t.Errorf("stderr lacks %q and the usage hint:\n%s", tc.want, errOut)
			}
		})
	}
	if err := checkMetricsCertDir(withCert, true); err != nil {
		t.Errorf("a directory with tls.crt and tls.key: %v", err)
	}
}
