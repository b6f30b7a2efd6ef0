package recurrence

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func mustParse(t testing.TB, expr, zone string) *Schedule {
	t.Helper()
	s, err := Parse(expr, zone)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", expr, zone, err)
	}
	return s
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr, zone string
		after      time.Time
		want       []time.Time
		field      string
	}{
		{expr: "*/10 * * * *", after: t0, want: []time.Time{t0.Add(10 * time.Minute), t0.Add(20 * time.Minute)}},
		{expr: "@hourly", after: t0.Add(time.Second), want: []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)}},
		{expr: "@daily", zone: "Europe/Berlin", after: t0, want: []time.Time{t0.Add(23 * time.Hour), t0.Add(47 * time.Hour)}},
		{expr: "0 9 * * mon-fri", after: t0, want: []time.Time{t0.Add(9 * time.Hour), t0.Add(33 * time.Hour)}}, // 2026-12-01 is a Tuesday
		{expr: "30 1 1 JAN *", after: t0, want: []time.Time{time.Date(2027, 1, 1, 1, 30, 0, 0, time.UTC)}},
		{expr: "@every 90m", after: t0, want: []time.Time{t0.Add(90 * time.Minute), t0.Add(180 * time.Minute)}},
		{expr: "@every 7m", after: time.Unix(0, 0).Add(-time.Second), want: []time.Time{time.Unix(0, 0).UTC(), time.Unix(420, 0).UTC()}},
		{expr: "61 * * * *", field: FieldSchedule},
		{expr: "* * * *", field: FieldSchedule},
		{expr: "TZ=UTC * * * * *", field: FieldSchedule},
		{expr: "@every 30s", field: FieldSchedule},
		{expr: "@every soon", field: FieldSchedule},
		{expr: "@often", field: FieldSchedule},
		{expr: "* * * * *", zone: "Mars/Olympus", field: FieldTimeZone},
		{expr: "* * * * *", zone: "Local", field: FieldTimeZone},
	} {
		t.Run(tc.expr+" "+tc.zone, func(t *testing.T) {
			s, err := Parse(tc.expr, tc.zone)
			if tc.field != "" {
				se, ok := IsSpecError(err)
				if !ok || se.Field != tc.field {
					t.Fatalf("Parse: %v, want an error on %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Starts(tc.after, len(tc.want))); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		spec  Spec
		field string
	}{
		{spec: Spec{Schedule: "*/10 * * * *", WindowLength: 10 * time.Minute}},
		{spec: Spec{Schedule: "*/10 * * * *", WindowLength: 11 * time.Minute}, field: FieldWindowLength},
		{spec: Spec{Schedule: "0 9,17 * * *", WindowLength: 8 * time.Hour}},
		{spec: Spec{Schedule: "0 9,17 * * *", WindowLength: 9 * time.Hour}, field: FieldWindowLength},
		// In Berlin a day is 23 hours long once a year.
		{spec: Spec{Schedule: "@daily", TimeZone: "Europe/Berlin", WindowLength: 24 * time.Hour}, field: FieldWindowLength},
		{spec: Spec{Schedule: "@daily", TimeZone: "Europe/Berlin", WindowLength: 23 * time.Hour}},
		{spec: Spec{Schedule: "0 0 30 2 *", WindowLength: time.Minute}, field: FieldSchedule},
		{spec: Spec{Schedule: "@every 15m", WindowLength: 16 * time.Minute}, field: FieldWindowLength},
	} {
		t.Run(tc.spec.Schedule, func(t *testing.T) {
			_, err := Validate(tc.spec)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if se, ok := IsSpecError(err); !ok || se.Field != tc.field {
				t.Fatalf("Validate: %v, want an error on %s", err, tc.field)
			}
		})
	}
}

func TestName(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if got := Name("orders", time.Date(2026, 12, 1, 1, 30, 0, 0, berlin)); got != "orders-202612010030" {
		t.Errorf("Name: %s, want the start in UTC", got)
	}
}

func every10(t testing.TB) *Schedule { return mustParse(t, "*/10 * * * *", "") }

func names(ws []Window) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	minutes := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	two := 2 * time.Minute
	for _, tc := range []struct {
		name      string
		in        Input
		create    []string
		skipped   int
		waiting   int
		taken     []string
		delete    []string
		since     time.Time
		next      time.Time
		wantField string
	}{
		{
			name:   "a new recurring query creates the windows ahead",
			in:     Input{Since: minutes(1), Now: minutes(1)},
			create: []string{"rq-202612010010", "rq-202612010020"},
			since:  minutes(20), next: minutes(30),
		},
		{
			name:   "created windows are not created again",
			in:     Input{Since: minutes(20), Now: minutes(5)},
			create: nil, since: minutes(20), next: minutes(30),
		},
		{
			name:   "the horizon moves when a window starts",
			in:     Input{Since: minutes(20), Now: minutes(10)},
			create: []string{"rq-202612010030"}, since: minutes(30), next: minutes(40),
		},
		{
			name:    "only the most recent missed start runs late; the older ones are skipped",
			in:      Input{Since: minutes(0), Now: minutes(35)},
			create:  []string{"rq-202612010030", "rq-202612010040", "rq-202612010050"},
			skipped: 2, since: minutes(50), next: minutes(60),
		},
		{
			name:    "starts missed by more than the starting deadline are skipped",
			in:      Input{Since: minutes(0), Now: minutes(31), StartingDeadline: &two},
			create:  []string{"rq-202612010030", "rq-202612010040", "rq-202612010050"},
			skipped: 2, since: minutes(50), next: minutes(60),
		},
		{
			name:    "the most recent missed start too, when missed by more than the starting deadline",
			in:      Input{Since: minutes(0), Now: minutes(35), StartingDeadline: &two},
			create:  []string{"rq-202612010040", "rq-202612010050"},
			skipped: 3, since: minutes(50), next: minutes(60),
		},
		{
			name:    "a long outage: one window late, one count of the skipped ones",
			in:      Input{Since: minutes(0), Now: minutes(10*2000 + 5)},
			create:  []string{Name("rq", minutes(10*2000)), Name("rq", minutes(10*2001)), Name("rq", minutes(10*2002))},
			skipped: 1999, since: minutes(10 * 2002), next: minutes(10 * 2003),
		},
		{
			name: "windows ahead wait while maxActiveWindows are unfinished",
			in: Input{Since: minutes(20), Now: minutes(10), MaxActive: 3, Instances: []Instance{
				{Name: "rq-202612010000", Start: minutes(0), Owned: true},
				{Name: "rq-202612010010", Start: minutes(10), Owned: true},
				{Name: "rq-202612010020", Start: minutes(20), Owned: true},
			}},
			create: nil, waiting: 1, since: minutes(20), next: minutes(30),
		},
		{
			name: "finished windows free their slots",
			in: Input{Since: minutes(20), Now: minutes(10), MaxActive: 3, Instances: []Instance{
				{Name: "rq-202612010000", Start: minutes(0), Owned: true, Finished: true},
				{Name: "rq-202612010010", Start: minutes(10), Owned: true},
				{Name: "rq-202612010020", Start: minutes(20), Owned: true},
			}},
			create: []string{"rq-202612010030"}, delete: []string{"rq-202612010000"}, since: minutes(30), next: minutes(40),
		},
		{
			name: "the most recent missed start is skipped when no slot is free",
			in: Input{Since: minutes(0), Now: minutes(35), MaxActive: 1, Instances: []Instance{
				{Name: "rq-202612010000", Start: minutes(0), Owned: true},
			}},
			create: nil, skipped: 3, waiting: 2, since: minutes(30), next: minutes(40),
		},
		{
			name:   "blocked: nothing is created and nothing moves on",
			in:     Input{Since: minutes(0), Now: minutes(35), Blocked: true},
			create: nil, since: minutes(0), next: minutes(40),
		},
		{
			name:   "suspended: nothing is created",
			in:     Input{Since: minutes(0), Now: minutes(35), Suspend: true},
			create: nil, since: minutes(0), next: minutes(40),
		},
		{
			name: "a foreign object holding a window's name is reported, not replaced",
			in: Input{Since: minutes(1), Now: minutes(1), Instances: []Instance{
				{Name: "rq-202612010010", Start: minutes(10)},
			}},
			create: []string{"rq-202612010020"}, taken: []string{"rq-202612010010"},
			since: minutes(20), next: minutes(30),
		},
		{
			name: "history limits delete the oldest finished owned windows only",
			in: Input{Since: minutes(60), Now: minutes(55), SuccessfulLimit: 1, FailedLimit: 1, Instances: []Instance{
				{Name: "rq-202612010000", Start: minutes(0), Owned: true, Finished: true, Succeeded: true},
				{Name: "rq-202612010010", Start: minutes(10), Owned: true, Finished: true},
				{Name: "rq-202612010020", Start: minutes(20), Owned: true, Finished: true, Succeeded: true},
				{Name: "rq-202612010030", Start: minutes(30), Owned: true, Finished: true},
				{Name: "rq-202612010040", Start: minutes(40), Owned: true, Finished: true, Succeeded: true},
				{Name: "rq-other", Start: minutes(5), Finished: true, Succeeded: true},
				{Name: "rq-202612010050", Start: minutes(50), Owned: true},
				{Name: "rq-202612010060", Start: minutes(60), Owned: true},
			}},
			create: []string{"rq-202612010110"},
			delete: []string{"rq-202612010000", "rq-202612010010", "rq-202612010020"},
			since:  minutes(70), next: minutes(80),
		},
		{
			name:  "a window longer than the interval overlaps the next",
			in:    Input{Since: minutes(1), Now: minutes(1), WindowLength: 11 * time.Minute},
			since: minutes(1), next: minutes(10),
			wantField: FieldWindowLength,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Name, in.Schedule, in.WindowsAhead = "rq", every10(t), 2
			if in.WindowLength == 0 {
				in.WindowLength = 5 * time.Minute
			}
			d, err := Decide(in)
			if tc.wantField != "" {
				if se, ok := IsSpecError(err); !ok || se.Field != tc.wantField {
					t.Fatalf("Decide: %v, want an error on %s", err, tc.wantField)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.create, names(d.Create)); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			if d.SkippedCount() != tc.skipped || d.Waiting != tc.waiting {
				t.Errorf("skipped %d (%v) and %d waiting, want %d and %d", d.SkippedCount(), d.Skipped, d.Waiting, tc.skipped, tc.waiting)
			}
			if len(d.Skipped) > 2 {
				t.Errorf("skipped runs %v: at most one per reason", d.Skipped)
			}
			if diff := cmp.Diff(tc.taken, names(d.Taken)); diff != "" {
				t.Errorf("taken (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.delete, d.Delete); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
			if !d.Since.Equal(tc.since) || !d.Next.Equal(tc.next) {
				t.Errorf("since %s next %s, want %s and %s", d.Since, d.Next, tc.since, tc.next)
			}
		})
	}
}

func TestExecutedCost(t *testing.T) {
	// 2 nodes for 30 minutes and 4 for 15: 2 node-hours.
	got := ExecutedCost([]Step{{Nodes: 2, Seconds: 1800}, {Nodes: 4, Seconds: 900}, {Nodes: 3, Seconds: -5}}, 0.25)
	if got != 0.5 {
		t.Errorf("ExecutedCost: %v, want 0.5", got)
	}
}

// genSchedule draws a schedule: a cron of a few shapes or an @every.
func genSchedule(t *rapid.T) (string, *Schedule) {
	exprs := []string{"*/%d * * * *", "%d * * * *", "0 */%d * * *", "@every %dm", "0,%d 3,9 * * *"}
	pattern := rapid.SampledFrom(exprs).Draw(t, "pattern")
	n := rapid.IntRange(1, 23).Draw(t, "n")
	expr := strings.Replace(pattern, "%d", itoa(n), 1)
	zone := rapid.SampledFrom([]string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"}).Draw(t, "zone")
	s, err := Parse(expr, zone)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return expr, s
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestDecideProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		_, s := genSchedule(t)
		now := t0.Add(time.Duration(rapid.Int64Range(0, int64(400*24*time.Hour)).Draw(t, "now"))).Truncate(time.Second)
		since := now.Add(-time.Duration(rapid.Int64Range(0, int64(30*time.Hour)).Draw(t, "back")))
		var sd *time.Duration
		if rapid.Bool().Draw(t, "hasDeadline") {
			d := time.Duration(rapid.Int64Range(0, int64(3*time.Hour)).Draw(t, "deadline"))
			sd = &d
		}
		// Existing instances: some owned, some foreign, finished or not.
		var instances []Instance
		for i, start := range s.Starts(since.Add(-10*time.Hour), rapid.IntRange(0, 12).Draw(t, "existing")) {
			if start.After(since) {
				break
			}
			owned := rapid.Bool().Draw(t, "owned")
			name := Name("rq", start)
			if !owned && rapid.Bool().Draw(t, "foreignName") {
				name = "someone-else-" + itoa(i+1)
			}
			instances = append(instances, Instance{Name: name, Start: start, Owned: owned,
				Finished: rapid.Bool().Draw(t, "finished"), Succeeded: rapid.Bool().Draw(t, "succeeded")})
		}
		in := Input{
			Name: "rq", Schedule: s, WindowsAhead: rapid.IntRange(1, 24).Draw(t, "ahead"),
			WindowLength:     time.Duration(rapid.Int64Range(int64(time.Minute), int64(3*time.Hour)).Draw(t, "length")),
			StartingDeadline: sd, Suspend: rapid.Bool().Draw(t, "suspend"),
			MaxActive:       rapid.IntRange(0, 30).Draw(t, "maxActive"),
			SuccessfulLimit: rapid.IntRange(0, 3).Draw(t, "ok"), FailedLimit: rapid.IntRange(0, 3).Draw(t, "failed"),
			Since: since, Instances: instances, Now: now,
		}
		d, err := Decide(in)
		if err != nil {
			if _, ok := IsSpecError(err); !ok {
				t.Fatalf("Decide: %v is not a SpecError", err)
			}
			if len(d.Create) > 0 {
				t.Fatalf("created %v despite %v", names(d.Create), err)
			}
		}
		// Names are unique and sort as the starts do.
		created := names(d.Create)
		if !sort.StringsAreSorted(created) || len(slices.Compact(slices.Clone(created))) != len(created) {
			t.Fatalf("names not unique and sorted: %v", created)
		}
		for i := 1; i < len(d.Create); i++ {
			if !d.Create[i-1].Start.Before(d.Create[i].Start) {
				t.Fatalf("starts not increasing: %v", d.Create)
			}
		}
		// Windows never overlap their successor's start, and never come
		// back to a start at or before the last one created.
		for _, w := range d.Create {
			if next := s.Next(w.Start); !next.IsZero() && w.End.After(next) {
				t.Fatalf("window %s ends at %s, after the next start %s", w.Name, w.End, next)
			}
			if !w.Start.After(in.Since) {
				t.Fatalf("window %s at or before since %s", w.Name, in.Since)
			}
			if sd != nil && w.Late > *sd {
				t.Fatalf("window %s created %s late, past the starting deadline %s", w.Name, w.Late, *sd)
			}
		}
		// After any gap at most one window runs late, and the unfinished
		// windows stay within the bound (or where they were).
		late := 0
		for _, w := range d.Create {
			if w.Late > 0 {
				late++
			}
		}
		if late > 1 {
			t.Fatalf("%d windows created late: %v", late, d.Create)
		}
		active := 0
		for _, inst := range instances {
			if inst.Owned && !inst.Finished {
				active++
			}
		}
		if len(d.Create) > 0 && active+len(d.Create) > max(in.MaxActive, DefaultMaxActive(in.WindowsAhead)*boolInt(in.MaxActive <= 0)) {
			t.Fatalf("%d unfinished and %d created, over the bound %d", active, len(d.Create), in.MaxActive)
		}
		if in.Suspend && len(d.Create) > 0 {
			t.Fatalf("suspended, but created %v", created)
		}
		// Never deletes what is unfinished or foreign.
		byName := map[string]Instance{}
		for _, inst := range instances {
			byName[inst.Name] = inst
		}
		for _, name := range d.Delete {
			inst := byName[name]
			if !inst.Owned || !inst.Finished {
				t.Fatalf("deletes %s: %+v", name, inst)
			}
		}
		// And never creates over an existing name.
		for _, w := range d.Create {
			if _, ok := byName[w.Name]; ok {
				t.Fatalf("creates %s, which exists", w.Name)
			}
		}
		if d.Since.Before(in.Since) {
			t.Fatalf("since went back from %s to %s", in.Since, d.Since)
		}
	})
}

// Names sort as starts do across any two starts at least a minute apart.
func TestNamesSortByStart(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := t0.Add(time.Duration(rapid.Int64Range(0, int64(50*365*24*time.Hour)).Draw(t, "a")))
		b := a.Add(time.Duration(rapid.Int64Range(int64(time.Minute), int64(50*365*24*time.Hour)).Draw(t, "gap")))
		if Name("rq", a) >= Name("rq", b) {
			t.Fatalf("%s >= %s for %s before %s", Name("rq", a), Name("rq", b), a, b)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
