package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/spec"
	"github.com/laxity-dev/laxity/test/testenv"
)

// TestPlanFromCluster: plan --kubeconfig plans the objects of a live
// cluster exactly as -f plans their manifests.
func TestPlanFromCluster(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig, err := env.WriteKubeconfig(t.TempDir(), "laxity-plan")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tpch := filepath.Join(samplesDir, "tpch.yaml")
	recurring := filepath.Join(samplesDir, "recurring.yaml")
	set, err := manifest.Load(tpch, recurring)
	if err != nil {
		t.Fatal(err)
	}
	create := func(obj client.Object) {
		t.Helper()
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "analytics"}})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "empty"}})
	for _, s := range set.Schedules {
		create(s.Object)
	}
	for _, q := range set.Queries {
		create(q.Object)
	}
	for _, rq := range set.Recurring {
		create(rq.Object)
	}
	// The first window of the RecurringQuery exists already, as the
	// operator creates it ahead of its start.
	const origin = "2026-12-01T08:03:00Z"
	from, _ := time.Parse(time.RFC3339, origin)
	windows, err := spec.RecurringWindows(set.Recurring[0].Object, from)
	if err != nil || len(windows) < 2 {
		t.Fatalf("the sample's windows: %d, %v", len(windows), err)
	}
	create(&windows[0])

	for _, tc := range []struct {
		name        string
		live, files []string
		wantQueries int
	}{
		{
			name: "a namespace", wantQueries: 13,
			live:  []string{"--kubeconfig", kubeconfig, "-n", "analytics", "--schedule", "tpch"},
			files: []string{"-f", tpch, "--schedule", "analytics/tpch"},
		},
		{
			name: "every namespace", wantQueries: 13,
			live:  []string{"--kubeconfig", kubeconfig, "-A", "--schedule", "analytics/tpch"},
			files: []string{"-f", tpch, "--schedule", "analytics/tpch"},
		},
		{
			// The window that exists is planned once, as that query.
			name: "a RecurringQuery with a window created", wantQueries: len(windows),
			live:  []string{"--kubeconfig", kubeconfig, "-n", "analytics", "--schedule", "sales", "--origin", origin},
			files: []string{"-f", recurring, "--schedule", "analytics/sales", "--origin", origin},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, live, errOut := run(t, append([]string{"plan", "-o", "json"}, tc.live...)...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			doc := onePlanIn(t, live)
			if len(doc.Queries) != tc.wantQueries {
				t.Errorf("planned %d queries, want %d", len(doc.Queries), tc.wantQueries)
			}
			code, offline, errOut := run(t, append([]string{"plan", "-o", "json"}, tc.files...)...)
			if code != exitOK {
				t.Fatalf("-f: exit %d, stderr %s", code, errOut)
			}
			if stripSearchSeconds(t, live) != stripSearchSeconds(t, offline) {
				t.Errorf("the cluster's objects planned differently from their manifests:\n%.600s\n%.600s", live, offline)
			}
		})
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an empty namespace", []string{"--kubeconfig", kubeconfig, "-n", "empty"}, "no ElasticSchedule (laxity.dev/v1alpha1) in context "},
		{"an unknown context", []string{"--kubeconfig", kubeconfig, "--context", "nope"}, `context "nope"`},
		{"a missing kubeconfig", []string{"--kubeconfig", filepath.Join(t.TempDir(), "none")}, "plan: reading the kubeconfig"},
		{"a schedule not there", []string{"--kubeconfig", kubeconfig, "-n", "analytics", "--schedule", "nope"}, "no ElasticSchedule analytics/nope in context "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"plan"}, tc.args...)...)
			if code != exitInvalid || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %.200q, stderr %q; want exit %d and %q", code, out, errOut, exitInvalid, tc.want)
			}
		})
	}
}
