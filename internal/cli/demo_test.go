//go:build !lean

package cli

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/demo"
	"github.com/laxity-dev/laxity/internal/localcluster"
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

func TestDemoSpeedFlag(t *testing.T) {
	for _, tc := range []struct {
		cluster, speed string
		want           float64
		err            string
	}{
		{cluster: "embedded", speed: "normal", want: 100},
		{cluster: "embedded", speed: "high", want: 400},
		{cluster: "embedded", speed: "2500", want: 2500},
		{cluster: "karpenter", speed: "normal", want: 10},
		{cluster: "karpenter", speed: "high", err: `--speed: "high" is neither normal nor a number from 1 to 60 (--cluster karpenter)`},
		{cluster: "karpenter", speed: "7.5", want: 7.5},
		{cluster: "karpenter", speed: "100", err: `--speed: "100" is neither normal nor a number from 1 to 60 (--cluster karpenter)`},
		{cluster: "embedded", speed: "0.5", err: `--speed: "0.5" is neither normal, high nor a number from 1 to 10000 (--cluster embedded)`},
		{cluster: "karpenter", speed: "fast", err: `--speed: "fast"`},
		{cluster: "kind", speed: "normal", err: `--cluster: "kind" is neither embedded nor karpenter`},
	} {
		o := &demoOptions{cluster: tc.cluster, speed: tc.speed}
		got, err := o.parseSpeed()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--cluster %s --speed %s: error %v, want one saying %q", tc.cluster, tc.speed, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("--cluster %s --speed %s = %g, %v; want %g", tc.cluster, tc.speed, got, err, tc.want)
		}
	}
}

// Every bad flag or workload of the local-cluster demo is refused in one
// line before anything starts.
func TestDemoClusterRefusals(t *testing.T) {
	t.Setenv(localcluster.BinariesEnv, "")
	t.Setenv(localcluster.CacheEnv, t.TempDir())
	samples, err := filepath.Abs("../../config/samples")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "an unknown cluster", args: []string{"--cluster", "kind"}, want: `demo: --cluster: "kind" is neither embedded nor karpenter`},
		{name: "a speed beyond the cluster's", args: []string{"--cluster", "karpenter", "--speed", "100"}, want: "--speed: \"100\""},
		{name: "binaries for the embedded cluster", args: []string{"--cluster-binaries", t.TempDir()}, want: "--cluster-binaries: only --cluster karpenter"},
		{
			name: "a lead time compressed below what Karpenter needs", args: []string{"--cluster", "karpenter", "--speed", "40"},
			want: "ElasticSchedule observability/events: spec.nodePool.provisioningLeadTime: 3m0s compressed 40 times is 4.5s",
		},
		{
			name: "a deadline compressed below what the pods need", args: []string{"--cluster", "karpenter", "--speed", "20"},
			want: "IntermittentQuery observability/errors-by-service: spec.deadline: 3m0s after spec.window.end compressed 20 times is 9s",
		},
		{
			name: "RecurringQueries", args: []string{"--cluster", "karpenter", "--workload", filepath.Join(samples, "recurring.yaml")},
			want: "spec.schedule: a cron schedule cannot be compressed in time; run RecurringQueries with --cluster embedded",
		},
		{
			name: "no cluster binaries", args: []string{"--cluster", "karpenter", "--cluster-binaries", t.TempDir()},
			want: "kube-scheduler is not an executable in",
		},
		{
			name: "the binaries nowhere", args: []string{"--cluster", "karpenter"},
			want: "run `make cluster-binaries` once",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir()) // no bin/cluster here
			code, out, errOut := run(t, append([]string{"demo"}, tc.args...)...)
			if code != exitInvalid || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and one line saying %q", code, errOut, exitInvalid, tc.want)
			}
			if strings.Contains(out, "Starting a local") {
				t.Errorf("the cluster started before the refusal:\n%s", out)
			}
		})
	}
}
