package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeanBuild: the manager image's build (the lean tag) compiles, and
// links neither plan's validation (the CRD schema validation of the API
// server's packages), the demo, the experiments, the plotting library nor the local
// control plane; the full build keeps them for developers.
func TestLeanBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	const module = "github.com/laxity-dev/laxity"
	if out, err := exec.Command(gocmd, "build", "-tags", "lean", "-o", "/dev/null", module+"/internal/cli").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags lean: %v\n%s", err, out)
	}
	deps := func(tags string) []string {
		out, err := exec.Command(gocmd, "list", "-tags", tags, "-deps", module).Output()
		if err != nil {
			t.Fatalf("go list -tags %q -deps: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	left := []string{"gonum.org/v1/plot", module + "/internal/demo", module + "/internal/experiments", module + "/internal/gantt", "sigs.k8s.io/controller-runtime/pkg/envtest"}
	lean, full := deps("lean"), deps("")
	for _, pkg := range left {
		if !hasPrefix(full, pkg) {
			t.Errorf("the full build no longer links %s; update this test", pkg)
		}
		if hasPrefix(lean, pkg) {
			t.Errorf("the lean build links %s", pkg)
		}
	}
	for _, pkg := range []string{module + "/controllers", module + "/internal/manifest", module + "/internal/version"} {
		if !hasPrefix(lean, pkg) {
			t.Errorf("the lean build lacks %s, which the manager, plan or version need", pkg)
		}
	}
}

func hasPrefix(pkgs []string, prefix string) bool {
	for _, p := range pkgs {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return true
		}
	}
	return false
}
