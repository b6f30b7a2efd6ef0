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

// TestPlanRefusesBadStreams holds the API's checks of streams, by the
// CRDs' own rules or by the translation, to errors that name the object
// and the field.
func TestPlanRefusesBadStreams(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "shared-stream.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, from, to string
		want           []string
	}{
		{"a scan out of bounds", `overheadSeconds: "20"`, `overheadSeconds: "2e7"`,
			[]string{"ElasticSchedule analytics/tpch", "spec.streams[0].scan.overheadSeconds"}},
		{"a scan that is no number", `serialSecondsPerTuple: "1e-8"`, `serialSecondsPerTuple: "fast"`,
			[]string{"spec.streams[0].scan.serialSecondsPerTuple"}},
		{"a stream name that is no DNS label", "- name: lineitem", "- name: Line_Item",
			[]string{"spec.streams[0].name"}},
		{"a query of a stream not declared", "stream: lineitem}\n  costModel", "stream: orders}\n  costModel",
			[]string{"IntermittentQuery analytics/a", "spec.input.stream", `"orders"`}},
		{"a sharing that is neither Auto nor None", "  sharing: None", "  sharing: Sometimes",
			[]string{"IntermittentQuery analytics/c", "spec.sharing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			manifest := strings.Replace(string(raw), tc.from, tc.to, 1)
			if manifest == string(raw) {
				t.Fatalf("%q is not in the manifest", tc.from)
			}
			path := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := run(t, "plan", "-f", path)
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInvalid, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not name %s:\n%s", w, errOut)
				}
			}
		})
	}
}
