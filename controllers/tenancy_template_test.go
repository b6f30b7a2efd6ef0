package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

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
