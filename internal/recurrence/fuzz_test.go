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
