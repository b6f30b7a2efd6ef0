package recurrence

import (
	"errors"
	"testing"
	"time"
)

// FuzzValidate: any schedule, time zone and window length either validates
// into a schedule whose starts ascend, or fails with an error naming the
// field, and never panics.
func FuzzValidate(f *testing.F) {
	for _, seed := range []struct {
		schedule, zone string
		minutes        int64
	}{
		{"*/10 * * * *", "UTC", 5}, {"0 8 * * MON-FRI", "Europe/Berlin", 60}, {"@hourly", "", 60},
		{"@every 15m", "UTC", 15}, {"61 * * * *", "UTC", 1}, {"* * * * *", "Mars/Olympus", 1},
		{"0 0 30 2 *", "UTC", 1}, {"@every 0s", "UTC", 0}, {"", "", -1}, {"0 2 * * *", "America/New_York", 1440},
	} {
		f.Add(seed.schedule, seed.zone, seed.minutes)
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, schedule, zone string, minutes int64) {
		length := time.Duration(minutes) * time.Minute
		s, err := Validate(Spec{Schedule: schedule, TimeZone: zone, WindowLength: length})
		if err != nil {
			var spec *SpecError
			if !errors.As(err, &spec) || spec.Field == "" {
				t.Fatalf("Validate(%q, %q, %s): %v does not name a field", schedule, zone, length, err)
			}
			return
		}
		starts := s.Starts(from, 5)
		for i := 1; i < len(starts); i++ {
			if !starts[i].After(starts[i-1]) {
				t.Fatalf("Validate(%q, %q): starts %v do not ascend", schedule, zone, starts)
			}
		}
	})
}

// fuzzZones are zones with the transitions that break a naive search: a
// skipped day (Pacific/Apia 2011-12-30, Pacific/Kiritimati 1994-12-31),
// half-hour steps (Australia/Lord_Howe), midnight transitions
// (America/Sao_Paulo, America/Havana), and local mean time of seconds.
var fuzzZones = []string{"UTC", "Pacific/Apia", "Pacific/Kiritimati", "Pacific/Kwajalein", "Australia/Lord_Howe",
	"America/Sao_Paulo", "America/Havana", "Europe/Berlin", "America/New_York", "Asia/Kathmandu", "Africa/Casablanca"}

// FuzzNext: for any schedule, zone and instant, NextStart returns (the
// fuzzer's own deadline catches a hang), and its start is after the instant
// and matches the schedule, or its error names spec.schedule.
func FuzzNext(f *testing.F) {
	for _, seed := range []struct {
		expr string
		zone uint8
		unix int64
	}{
		{"0 0 30 12 *", 1, time.Date(2011, 12, 29, 12, 0, 0, 0, time.UTC).Unix()},
		{"0 0 * * FRI", 1, time.Date(2011, 12, 20, 0, 0, 0, 0, time.UTC).Unix()},
		{"@monthly", 2, time.Date(1994, 12, 30, 0, 0, 0, 0, time.UTC).Unix()},
		{"* 3 * 10-12 0", 4, time.Date(2027, 10, 2, 0, 0, 0, 0, time.UTC).Unix()},
		{"0 0 30 2 *", 0, 0},
		{"*/5 * * * *", 6, -2e9},
		{"@every 61m", 0, 1e12},
	} {
		f.Add(seed.expr, seed.zone, seed.unix)
	}
	f.Fuzz(func(t *testing.T, expr string, zone uint8, unix int64) {
		name := fuzzZones[int(zone)%len(fuzzZones)]
		s, err := Parse(expr, name)
		if err != nil {
			return
		}
		// Years 1800 to 2200: time.Time is exact there.
		from := time.Unix(unix%(200*366*86400)+time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), 0)
		next, err := s.NextStart(from)
		if err != nil {
			if se, ok := IsSpecError(err); !ok || se.Field != FieldSchedule {
				t.Fatalf("NextStart(%q in %s, %s): %v does not name spec.schedule", expr, name, from, err)
			}
			return
		}
		if !next.After(from) {
			t.Fatalf("NextStart(%q in %s, %s) = %s, not after", expr, name, from, next)
		}
		if s.spec == nil {
			return
		}
		w := next.In(s.spec.Location)
		if w.Second() != 0 || s.spec.Minute&(1<<uint(w.Minute())) == 0 || s.spec.Hour&(1<<uint(w.Hour())) == 0 ||
			s.spec.Month&(1<<uint(w.Month())) == 0 || !dayMatches(s.spec, w) {
			t.Fatalf("NextStart(%q in %s, %s) = %s, which the schedule does not name", expr, name, from, w)
		}
	})
}

// FuzzDecide: for any schedule, zone, gap and bound, Decide returns, runs
// at most one window late, never more windows than the bound allows, and
// reports each run of skipped starts once.
func FuzzDecide(f *testing.F) {
	f.Add("* * * * *", uint8(0), int64(99*60), int64(-1), uint8(0), uint8(1))
	f.Add("0 0 * * FRI", uint8(1), int64(15*366*86400), int64(60), uint8(2), uint8(2))
	f.Add("@every 1m", uint8(0), int64(400*86400), int64(0), uint8(1), uint8(24))
	f.Add("*/10 * * * *", uint8(7), int64(3600), int64(120), uint8(3), uint8(2))
	f.Fuzz(func(t *testing.T, expr string, zone uint8, gapSeconds, deadlineSeconds int64, maxActive, ahead uint8) {
		s, err := Parse(expr, fuzzZones[int(zone)%len(fuzzZones)])
		if err != nil {
			return
		}
		now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
		gap := time.Duration(gapSeconds%(20*366*86400)) * time.Second
		if gap < 0 {
			gap = -gap
		}
		in := Input{Name: "rq", Schedule: s, WindowLength: time.Minute, WindowsAhead: 1 + int(ahead)%24,
			MaxActive: int(maxActive) % 51, Since: now.Add(-gap), Now: now}
		if deadlineSeconds >= 0 {
			d := time.Duration(deadlineSeconds%(366*86400)) * time.Second
			in.StartingDeadline = &d
		}
		d, err := Decide(in)
		if err != nil {
			if _, ok := IsSpecError(err); !ok {
				t.Fatalf("Decide: %v is not a SpecError", err)
			}
			return
		}
		late := 0
		for _, w := range d.Create {
			if w.Late > 0 {
				late++
			}
		}
		bound := in.MaxActive
		if bound <= 0 {
			bound = DefaultMaxActive(in.WindowsAhead)
		}
		if late > 1 || len(d.Create) > bound || len(d.Skipped) > 2 {
			t.Fatalf("Decide(%q, gap %s): %d late, %d created (bound %d), %d skipped runs", expr, gap, late, len(d.Create), bound, len(d.Skipped))
		}
	})
}
