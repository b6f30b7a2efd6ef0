//go:build !lean

package cli

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/demo"
)

func TestParseNoise(t *testing.T) {
	for _, tc := range []struct {
		in       string
		mean, sd float64
		err      string
	}{
		{in: ""},
		{in: "15,10", mean: 0.15, sd: 0.10},
		{in: " -5 , 0 ", mean: -0.05},
		{in: "15", err: "is not MEAN,SD"},
		{in: "a,b", err: "is not MEAN,SD"},
		{in: "15,-1", err: "standard deviation"},
		{in: "-95,1", err: "mean"},
		{in: "NaN,1", err: "mean"},
	} {
		mean, sd, err := parseNoise(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--noise")):
			t.Errorf("parseNoise(%q) error %v, want one naming --noise and saying %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || mean != tc.mean || sd != tc.sd):
			t.Errorf("parseNoise(%q) = %g, %g, %v; want %g, %g", tc.in, mean, sd, err, tc.mean, tc.sd)
		}
	}
}

func TestDemoWindowsFlag(t *testing.T) {
	for _, arg := range []string{"0", "-1", "101"} {
		code, out, errOut := run(t, "demo", "--workload", "../../config/samples/recurring.yaml", "--windows", arg)
		if code != exitInvalid || !strings.Contains(errOut, "--windows: "+arg+" is not from 1 to 100") {
			t.Errorf("demo --windows %s: exit %d, stderr:\n%s", arg, code, errOut)
		}
		if strings.Contains(out, "Starting a local control plane") {
			t.Errorf("demo --windows %s started the control plane before checking the flag", arg)
		}
	}
}

func TestDemoExitRule(t *testing.T) {
	es := &laxityv1alpha1.ElasticSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	window := func(q string, met bool) demo.Window { return demo.Window{RecurringQuery: "rq", Query: q, Met: met} }
	for _, tc := range []struct {
		name   string
		report demo.Report
		want   string
	}{
		{name: "every deadline met", report: demo.Report{Schedule: es}},
		{name: "an IntermittentQuery late", report: demo.Report{Schedule: es, Missed: []string{"q"}}, want: "IntermittentQuery ns/q missed its deadline"},
		{
			name:   "the first two windows late: learning",
			report: demo.Report{Schedule: es, Missed: []string{"rq-1", "rq-2"}, Recurring: []demo.Window{window("rq-1", false), window("rq-2", false), window("rq-3", true)}},
		},
		{
			name:   "the third window late",
			report: demo.Report{Schedule: es, Missed: []string{"rq-3"}, Recurring: []demo.Window{window("rq-1", true), window("rq-2", true), window("rq-3", false)}},
			want:   "a window from the third on missed its deadline: rq-3",
		},
		{
			name:   "an IntermittentQuery late beside windows",
			report: demo.Report{Schedule: es, Missed: []string{"q"}, Recurring: []demo.Window{window("rq-1", true)}},
			want:   "IntermittentQuery ns/q",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := missed(&demo.Outcome{Reports: []demo.Report{tc.report}})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("missed = %v, want exit 0", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("missed = %v, want %q", err, tc.want)
			}
		})
	}
}
