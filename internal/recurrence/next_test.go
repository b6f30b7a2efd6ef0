package recurrence

import (
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"pgregory.net/rapid"
)

// TestNextSkippedDay: in Pacific/Apia the local day 2011-12-30 never
// happened (the clock went from 2011-12-29T23:59:59-10:00 to
// 2011-12-31T00:00:00+14:00). The cron library's Next never returns for
// these schedules; the bounded search returns the next start that did
// happen.
func TestNextSkippedDay(t *testing.T) {
	apia, err := time.LoadLocation("Pacific/Apia")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2011, 12, 29, 12, 0, 0, 0, apia)
	for _, tc := range []struct {
		expr string
		want time.Time
	}{
		{"0 0 30 12 *", time.Date(2012, 12, 30, 0, 0, 0, 0, apia)},
		{"0 12 30 * *", time.Date(2012, 1, 30, 12, 0, 0, 0, apia)},
		{"30 * 30 * *", time.Date(2012, 1, 30, 0, 30, 0, 0, apia)},
		{"0 0 31 12 *", time.Date(2011, 12, 31, 0, 0, 0, 0, apia)},
		{"@monthly", time.Date(2012, 1, 1, 0, 0, 0, 0, apia)},
		{"0 0 * * FRI", time.Date(2012, 1, 6, 0, 0, 0, 0, apia)}, // Friday 30 December never happened
		{"@daily", time.Date(2011, 12, 31, 0, 0, 0, 0, apia)},
		{"* * * * *", time.Date(2011, 12, 29, 12, 1, 0, 0, apia)},
		{"59 23 29 12 *", time.Date(2011, 12, 29, 23, 59, 0, 0, apia)},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			s := mustParse(t, tc.expr, "Pacific/Apia")
			got, err := s.NextStart(from)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("NextStart(%s) = %s, want %s", from, got.In(apia), tc.want)
			}
		})
	}
}

// TestNextNoStart: a schedule with no start in SearchYears years is an
// error naming spec.schedule, not a hang or a silent zero.
func TestNextNoStart(t *testing.T) {
	for _, expr := range []string{"0 0 30 2 *", "0 0 31 4 *", "0 0 31 11 *"} {
		s := mustParse(t, expr, "UTC")
		got, err := s.NextStart(t0)
		se, ok := IsSpecError(err)
		if !ok || se.Field != FieldSchedule || !got.IsZero() {
			t.Fatalf("NextStart(%q) = %s, %v; want an error on %s", expr, got, err, FieldSchedule)
		}
		if _, err := Validate(Spec{Schedule: expr, WindowLength: time.Minute}); err == nil {
			t.Fatalf("Validate(%q) accepted a schedule that never starts", expr)
		}
	}
}

// TestNextTransitions: times a transition skips do not start a window;
// times it repeats start one at each of their instants, as in the cron
// library.
func TestNextTransitions(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	lordHowe, _ := time.LoadLocation("Australia/Lord_Howe")
	for _, tc := range []struct {
		expr string
		from time.Time
		want []time.Time
	}{
		// 2026-03-08 02:00 EST became 03:00 EDT.
		{"30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2026, 3, 9, 2, 30, 0, 0, ny), time.Date(2026, 3, 10, 2, 30, 0, 0, ny)}},
		// 2026-11-01 02:00 EDT became 01:00 EST: 01:30 happens twice.
		{"30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)}},
		// 2027-10-03 02:00 +10:30 became 02:30 +11: 03:00 happens.
		{"* 3 * 10-12 0", time.Date(2027, 10, 2, 12, 0, 0, 0, lordHowe), []time.Time{
			time.Date(2027, 10, 3, 3, 0, 0, 0, lordHowe), time.Date(2027, 10, 3, 3, 1, 0, 0, lordHowe)}},
	} {
		s := mustParse(t, tc.expr, tc.from.Location().String())
		got := s.Starts(tc.from, len(tc.want))
		if fmt.Sprint(got) != fmt.Sprint(utc(tc.want)) {
			t.Fatalf("Starts(%q) = %v, want %v", tc.expr, got, utc(tc.want))
		}
	}
}

func utc(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}

// TestNextAgreesWithCronLibrary: in zones whose every day happened and
// whose transitions move the clock by whole hours, the bounded search
// finds the start the cron library's Next finds. (Where a transition moves
// it by half an hour, as on Lord Howe Island, the library steps hour by
// hour from the transition and misses the first half of the next hour;
// TestNextTransitions pins the start there.)
func TestNextAgreesWithCronLibrary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		minute := rapid.SampledFrom([]string{"*", "0", "30", "*/7", "5,50", "15-20"}).Draw(t, "minute")
		hour := rapid.SampledFrom([]string{"*", "0", "1", "2", "3", "*/5", "22-23", "1,13"}).Draw(t, "hour")
		dom := rapid.SampledFrom([]string{"*", "1", "15", "29", "31", "?", "1-7"}).Draw(t, "dom")
		month := rapid.SampledFrom([]string{"*", "2", "3,11", "*/4", "10-12"}).Draw(t, "month")
		dow := rapid.SampledFrom([]string{"*", "0", "MON-FRI", "6", "?"}).Draw(t, "dow")
		expr := fmt.Sprintf("%s %s %s %s %s", minute, hour, dom, month, dow)
		zone := rapid.SampledFrom([]string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "America/Sao_Paulo", "America/Santiago"}).Draw(t, "zone")
		s, err := Parse(expr, zone)
		if err != nil {
			t.Skip()
		}
		from := t0.Add(time.Duration(rapid.Int64Range(-int64(3*365*24*time.Hour), int64(365*24*time.Hour)).Draw(t, "from"))).Truncate(time.Second)
		loc, _ := time.LoadLocation(zone)
		lib, _ := cron.ParseStandard(expr)
		lib.(*cron.SpecSchedule).Location = loc
		for range 3 {
			want := lib.Next(from)
			got := s.Next(from)
			if !got.Equal(want) {
				t.Fatalf("%q in %s after %s: got %s, the cron library %s", expr, zone, from.In(loc), got.In(loc), want.In(loc))
			}
			if got.IsZero() {
				return
			}
			from = got
		}
	})
}
