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
