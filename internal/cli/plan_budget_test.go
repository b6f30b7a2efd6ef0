package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// monthSchedule is the three-queries sample moved to namespace planted with
// every window stretched to 30 days at the sample's rates (the profile's
// busy part and the deadlines stretched in proportion): a search that runs
// for most of a minute (46 s on two cores without the race detector), as a
// tenant could plant it.
func monthSchedule(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(samplesDir, "three-queries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(
		"namespace: observability", "namespace: planted",
		`end: "2026-12-01T06:30:00Z"`, `end: "2026-12-31T06:00:00Z"`,
		`deadline: "2026-12-01T06:33:00Z"`, `deadline: "2027-01-03T06:00:00Z"`,
		`deadline: "2026-12-01T06:35:00Z"`, `deadline: "2027-01-05T06:00:00Z"`,
		`deadline: "2026-12-01T06:37:00Z"`, `deadline: "2027-01-07T06:00:00Z"`,
		"after: 20m", "after: 480h",
	).Replace(string(raw))
	if !strings.Contains(s, "after: 480h") || !strings.Contains(s, "2027-01-07T06:00:00Z") {
		t.Fatal("the three-queries sample changed: its stretched copy is not the 30-day workload")
	}
	return s
}

// A schedule whose search needs longer than --plan-timeout is reported by
// name, with the budget, and the other schedules are still planned and
// printed: exit status 4. The budget leaves the sample's search, which
// takes milliseconds, room on a machine busy with every other test under
// the race detector, where it once took more than 2 s.
func TestPlanOverBudgetScheduleIsNamedAndTheOthersPlanned(t *testing.T) {
	dir := t.TempDir()
	sample, err := os.ReadFile(filepath.Join(samplesDir, "three-queries.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a-events.yaml": string(sample), "b-month.yaml": monthSchedule(t)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "plan", "-f", dir, "--plan-timeout", "10s")
	if code != exitBudget {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitBudget, errOut)
	}
	for _, want := range []string{
		"ElasticSchedule planted/events: not planned: the plan search of 3 queries ran longer than the 10s --plan-timeout",
		"1 of 2 schedules ran out of --plan-timeout 10s",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "observability/events") || strings.Contains(out, "planted/events") {
		t.Errorf("stdout should hold observability/events' plan only:\n%s", out)
	}

	// With no schedule planned, -o json prints an empty list.
	code, out, errOut = run(t, "plan", "-f", filepath.Join(dir, "b-month.yaml"), "--plan-timeout", "1s", "-o", "json")
	if code != exitBudget || len(plansIn(t, out)) != 0 {
		t.Errorf("the over-budget schedule alone: exit %d, stdout %q, want %d and a list of no plans; stderr:\n%s", code, out, exitBudget, errOut)
	}
}

// A RecurringQuery in a time zone that skipped a local day (Pacific/Apia
// went from 29 to 31 December 2011) whose schedule asks for that day: the
// cron library's own search never returned on it; laxity's bounded search
// skips the day that did not exist, and the plan starts with the next 30
// December (00:00 in Apia, 10:00 UTC the day before).
func TestPlanRecurringSkippedDayReturns(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, "recurring.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(
		`schedule: "*/10 * * * *"`, `schedule: "0 0 30 12 *"`,
		"timeZone: UTC", "timeZone: Pacific/Apia",
	).Replace(string(raw))
	file := filepath.Join(t.TempDir(), "apia.yaml")
	if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "plan", "-f", file, "--origin", "2011-12-29T12:00:00Z", "--plan-timeout", "30s")
	if code != 0 || !strings.Contains(out, "orders-by-region-201212291000") || strings.Contains(out, "orders-by-region-201112291000") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and the first window on 30 December 2012", code, out, errOut)
	}
}

func TestPlanTimeoutMustBePositive(t *testing.T) {
	code, _, errOut := run(t, "plan", "-f", filepath.Join(samplesDir, "three-queries.yaml"), "--plan-timeout", "0s")
	if code != exitInvalid || !strings.Contains(errOut, "--plan-timeout must be a positive duration") {
		t.Errorf("exit %d, stderr %q; want exit %d naming --plan-timeout", code, errOut, exitInvalid)
	}
}
