package controllers

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/tenancy"
	"github.com/laxity-dev/laxity/test/builder"
)

func TestGrantOfTemplateGrants(t *testing.T) {
	p := builder.TenantPolicy("batch").AllNamespaces().PriorityClasses("high").Obj()
	p.Spec.Schedulers, p.Spec.SchedulerQueues, p.Spec.PodSecurityLevel = []string{"volcano"}, []string{"q"}, tenancy.LevelBaseline
	ns := tenancy.Namespace{Name: "team-a", Grants: []tenancy.Grant{grantOf(p)}}
	for i, r := range []*tenancy.Refusal{ns.SparkPriorityClass("f", "high"), ns.Scheduler("f", "volcano"), ns.SchedulerQueue("f", "q")} {
		if r != nil {
			t.Errorf("check %d: the policy's grant was refused: %v", i, r)
		}
	}
	if got := ns.PodSecurityLevel(); got != tenancy.LevelBaseline {
		t.Errorf("level %q, want baseline", got)
	}
}

func TestAdmitNote(t *testing.T) {
	short := refused(&tenancy.Refusal{Field: "spec.a", What: "x", Missing: "y"})
	if got := admitNote("q", short); got != "IntermittentQuery q is not run: "+short.Error() {
		t.Errorf("a short refusal's note %q", got)
	}
	var many []*tenancy.Refusal
	for range 40 {
		many = append(many, &tenancy.Refusal{Field: "spec.sparkApplication.sparkConf[\"ü\"]", What: strings.Repeat("w", 50), Missing: strings.Repeat("m", 100)})
	}
	got := admitNote("q", refused(many...))
	if len(got) > maxEventNote || !utf8.ValidString(got) || !strings.Contains(got, "40 fields are not permitted") || !strings.HasSuffix(got, "…") {
		t.Errorf("a long refusal's note (%d bytes): %q", len(got), got)
	}
}

// TestSamplesNeedNoTemplateGrant: every sample's template asks for nothing
// a namespace must be granted (beyond the manager's usual "spark" service
// account) and, as laxity renders it, keeps to the restricted Pod Security
// level.
func TestSamplesNeedNoTemplateGrant(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "config", "samples", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	ns := tenancy.Namespace{Name: "team-a", DefaultServiceAccounts: []string{"spark"}}
	queries := 0
	for _, path := range paths {
		set, err := manifest.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var templates []*laxityv1alpha1.IntermittentQuery
		for _, q := range set.Queries {
			templates = append(templates, q.Object)
		}
		for _, r := range set.Recurring {
			window := builder.Query(r.Object.Namespace, r.Object.Name).Obj()
			window.Spec.SparkApplication = r.Object.Spec.Template.SparkApplication
			templates = append(templates, window)
		}
		for _, q := range templates {
			queries++
			if q.Spec.Input.ObjectStore != nil {
				q = q.DeepCopy()
				q.Spec.Input.ObjectStore = nil // buckets are another grant
			}
			if err := (&Tenancy{}).Query(ns, q); err != nil {
				t.Errorf("%s: %s: %v", path, q.Name, err)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the samples have no queries")
	}
}

// BenchmarkQueryAdmission is what every schedule pass spends judging one
// query's template (TPC-H sample's): decoding it, the template rules and
// the Pod Security checks of its driver and executor pods.
func BenchmarkQueryAdmission(b *testing.B) {
	set, err := manifest.Load(filepath.Join("..", "config", "samples", "tpch.yaml"))
	if err != nil || len(set.Queries) == 0 {
		b.Fatalf("no sample queries: %v", err)
	}
	q := set.Queries[0].Object
	ns := tenancy.Namespace{Name: q.Namespace, DefaultServiceAccounts: []string{"spark"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := (&Tenancy{}).Query(ns, q); err != nil {
			b.Fatal(err)
		}
	}
}
