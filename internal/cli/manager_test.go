package cli

import (
	"maps"
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
