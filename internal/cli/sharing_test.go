package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/laxity-dev/laxity/internal/planner"
)

func TestPlanPrintsGroupsAndBothBills(t *testing.T) {
	code, out, errOut := run(t, "plan", "-f", filepath.Join("testdata", "shared-stream.yaml"))
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{"Sharing:", "STREAM    SHARED BATCHES  MEMBERS", "lineitem", "a, b", "Bill with sharing", "every query alone"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "plan", "-f", filepath.Join("testdata", "shared-stream.yaml"), "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var list struct {
		Items []struct {
			Steps   []planner.Step `json:"steps"`
			Sharing *sharing       `json:"sharing"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	s := list.Items[0].Sharing
	if s == nil || !s.Shared {
		t.Fatalf("sharing %+v: want a shared plan", s)
	}
	if diff := cmp.Diff([]sharedGroup{{Stream: "lineitem", Members: []string{"a", "b"}, Batches: s.Groups[0].Batches}}, s.Groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if s.WithSharing.ExecutableCost >= s.Alone.ExecutableCost || !s.WithSharing.Feasible {
		t.Errorf("bill with sharing %+v, alone %+v: want a feasible plan that bills less", s.WithSharing, s.Alone)
	}
	for _, step := range list.Items[0].Steps {
		if step.Query == "c" && len(step.Members) > 0 {
			t.Errorf("query c opts out, but step %+v shares", step)
		}
	}
}

// TestPlanSharingNoneIsThePlanAlone holds sharing: None to the plan of the
// same queries declaring no stream, step for step.
func TestPlanSharingNoneIsThePlanAlone(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "shared-stream.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	none := strings.Replace(string(raw), "  streams:\n", "  planning: {sharing: None}\n  streams:\n", 1)
	plain := strings.ReplaceAll(string(raw), ", stream: lineitem", "")
	steps := func(manifest string) []planner.Step {
		path := filepath.Join(dir, "m.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, "plan", "-f", path, "-o", "json")
		if code != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		var list struct {
			Items []struct {
				Steps []planner.Step `json:"steps"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		return list.Items[0].Steps
	}
	if diff := cmp.Diff(steps(plain), steps(none)); diff != "" {
		t.Errorf("sharing None against no stream (-plain +none):\n%s", diff)
	}
}
