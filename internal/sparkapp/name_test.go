package sparkapp

import (
	"strings"
	"testing"

	"github.com/laxity-dev/laxity/internal/planner"
)

func TestName(t *testing.T) {
	long43 := "q" + strings.Repeat("x", 42)
	for _, tc := range []struct {
		name    string
		query   string
		step    Step
		want    string
		wantErr string
	}{
		{name: "first batch", query: "q1", step: batch(0, 0, 10), want: "q1-b0"},
		{name: "batch", query: "tpch-q1", step: batch(17, 0, 10), want: "tpch-q1-b17"},
		{name: "batch retry", query: "q1", step: retry(batch(3, 0, 10), 2), want: "q1-b3-r2"},
		{name: "partial", query: "q1", step: partial(0, "a"), want: "q1-partial-0"},
		{name: "partial retry", query: "q1", step: retry(partial(4, "a"), 1), want: "q1-partial-4-r1"},
		{name: "final", query: "q1", step: final(3, "a"), want: "q1-final"},
		{name: "final retry", query: "q1", step: retry(final(0, "a"), 11), want: "q1-final-r11"},
		{name: "43 characters fit the longest step", query: long43, step: retry(partial(999999), 999), want: long43 + "-partial-999999-r999"},
		{name: "exactly 63", query: strings.Repeat("a", 60), step: batch(9, 0, 1), want: strings.Repeat("a", 60) + "-b9"},
		{name: "64 is too long", query: strings.Repeat("a", 61), step: batch(9, 0, 1),
			wantErr: "has 64 characters, more than the 63 spark-operator accepts: shorten the query's name to at most 60 characters"},
		{name: "a retry suffix can push it over", query: strings.Repeat("a", 57), step: retry(final(0), 1),
			wantErr: "shorten the query's name to at most 54 characters"},
		{name: "leading digit", query: "1q", step: batch(0, 0, 1), wantErr: `SparkApplication name "1q-b0" is not a DNS-1035 label`},
		{name: "dot", query: "q.1", step: batch(0, 0, 1), wantErr: "is not a DNS-1035 label"},
		{name: "upper case", query: "Q1", step: batch(0, 0, 1), wantErr: "is not a DNS-1035 label"},
		{name: "empty query", query: "", step: batch(0, 0, 1), wantErr: "IntermittentQuery name is empty"},
		{name: "unknown kind", query: "q1", step: Step{Kind: "merge"}, wantErr: `unknown step kind "merge" (want batch, partial or final)`},
		{name: "empty kind", query: "q1", step: Step{}, wantErr: `unknown step kind ""`},
		{name: "negative index", query: "q1", step: batch(-1, 0, 1), wantErr: "step index -1 is negative"},
		{name: "negative attempt", query: "q1", step: retry(batch(0, 0, 1), -1), wantErr: "step attempt -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Name(tc.query, tc.step)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Name(%q, %+v) = %q, %v; want an error containing %q", tc.query, tc.step, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Name(%q, %+v) = %q, %v; want %q", tc.query, tc.step, got, err, tc.want)
			}
			if len(got) > MaxNameLength {
				t.Fatalf("Name(%q, %+v) = %q, longer than %d", tc.query, tc.step, got, MaxNameLength)
			}
		})
	}
}

func TestResultLocation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		root    string
		step    Step
		want    string
		wantErr string
	}{
		{name: "batch", root: "s3a://results/laxity/", step: batch(3, 0, 1), want: "s3a://results/laxity/analytics/q1/q1-b3"},
		{name: "root without trailing slash", root: "s3a://results/laxity", step: batch(3, 0, 1), want: "s3a://results/laxity/analytics/q1/q1-b3"},
		{name: "retries share the location", root: "s3a://results", step: retry(batch(3, 0, 1), 4), want: "s3a://results/analytics/q1/q1-b3"},
		{name: "partial", root: "gs://b/", step: partial(2), want: "gs://b/analytics/q1/q1-partial-2"},
		{name: "final", root: "file:///data/results/", step: retry(final(5), 1), want: "file:///data/results/analytics/q1/q1-final"},
		{name: "no root", root: "", step: batch(0, 0, 1), wantErr: "result root is empty"},
		{name: "bad kind", root: "s3a://r", step: Step{Kind: planner.StepKind("x")}, wantErr: "unknown step kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResultLocation(tc.root, "analytics", "q1", tc.step)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ResultLocation = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResultLocation = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
