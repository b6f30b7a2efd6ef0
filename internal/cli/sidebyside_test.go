package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The TPC-H sample at 4x its rate with steps side by side: `laxity plan`
// prints the lanes and the bill both ways, and the plan in lanes bills
// less than the plan one step at a time, as its JSON says too.
func TestPlanSideBySide(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, "tpch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := strings.ReplaceAll(string(raw), `ratePerSecond: "9500"`, `ratePerSecond: "38000"`)
	manifest = strings.Replace(manifest, "  planning:\n", "  planning:\n    concurrency: Concurrent\n", 1)
	path := filepath.Join(t.TempDir(), "tpch-4x.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "plan", "-f", path)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"Steps side by side in ", " lanes: bill ", "one step at a time "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "plan", "-f", path, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var list struct {
		Items []struct {
			SideBySide *sideBySide `json:"sideBySide"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	s := list.Items[0].SideBySide
	if s == nil || s.Lanes < 2 || !s.WithLanes.Feasible || s.WithLanes.ExecutableCost >= 0.85*s.OneAtATime.ExecutableCost {
		t.Errorf("side by side %+v: want lanes that bill at least 15%% less than one step at a time, every deadline met", s)
	}
	// Sequential, the default, has nothing to compare.
	code, out, _ = run(t, "plan", "-f", filepath.Join(samplesDir, "tpch.yaml"), "-o", "json")
	if code != exitOK || strings.Contains(out, `"sideBySide"`) {
		t.Errorf("the sample one step at a time prints a comparison side by side (exit %d)", code)
	}
}
