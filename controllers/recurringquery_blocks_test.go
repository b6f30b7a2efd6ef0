package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
)

func TestTemplateMetadataErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		metadata laxityv1alpha1.TemplateMetadata
		want     string
	}{
		{name: "none"},
		{name: "good", metadata: laxityv1alpha1.TemplateMetadata{Labels: map[string]laxityv1alpha1.LabelValue{"team": "sales", "example.com/tier": "gold"}, Annotations: map[string]string{"example.com/note": "any text at all!"}}},
		{name: "label key", metadata: laxityv1alpha1.TemplateMetadata{Labels: map[string]laxityv1alpha1.LabelValue{"bad key!": "x"}}, want: `spec.template.metadata.labels: Invalid value: "bad key!"`},
		{name: "label value", metadata: laxityv1alpha1.TemplateMetadata{Labels: map[string]laxityv1alpha1.LabelValue{"team": "not a value!"}}, want: `spec.template.metadata.labels: Invalid value: "not a value!"`},
		{name: "annotation key", metadata: laxityv1alpha1.TemplateMetadata{Annotations: map[string]string{"-bad/": "x"}}, want: `spec.template.metadata.annotations: Invalid value: "-bad/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := builder.Recurring("ns", "rq").Obj()
			rq.Spec.Template.Metadata = tc.metadata
			err := templateMetadataErrors(rq)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("templateMetadataErrors: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("templateMetadataErrors: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestScheduleBlocking(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stalled *metav1.Condition
		blocks  bool
	}{
		{name: "not stalled"},
		{name: "not permitted", stalled: &metav1.Condition{Status: metav1.ConditionTrue, Reason: laxityv1alpha1.NotPermittedReason, Message: "no grant"}, blocks: true},
		{name: "invalid", stalled: &metav1.Condition{Status: metav1.ConditionTrue, Reason: laxityv1alpha1.InvalidSpecReason, Message: "bad"}, blocks: true},
		{name: "no feasible plan still runs", stalled: &metav1.Condition{Status: metav1.ConditionTrue, Reason: laxityv1alpha1.NoFeasiblePlanReason}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := builder.Schedule("ns", "pool").Obj()
			if tc.stalled != nil {
				c := *tc.stalled
				c.Type = laxityv1alpha1.ElasticScheduleStalledCondition
				meta.SetStatusCondition(&es.Status.Conditions, c)
			}
			got := scheduleBlocking(es)
			if (got != "") != tc.blocks {
				t.Fatalf("scheduleBlocking = %q, want blocking %v", got, tc.blocks)
			}
			if tc.blocks && (!strings.Contains(got, tc.stalled.Reason) || !strings.Contains(got, tc.stalled.Message) || !strings.Contains(got, "spec.template.scheduleName")) {
				t.Fatalf("scheduleBlocking = %q: does not name the field, the reason and the message", got)
			}
		})
	}
}

func TestRefusedWindow(t *testing.T) {
	rq := builder.Recurring("ns", "rq").Obj()
	rq.UID = "rq-uid"
	window := func(name string, stalled string, owned bool) laxityv1alpha1.IntermittentQuery {
		q := builder.Query("ns", name).Obj()
		if owned {
			q.OwnerReferences = []metav1.OwnerReference{{APIVersion: "laxity.dev/v1alpha1", Kind: "RecurringQuery", Name: "rq", UID: "rq-uid", Controller: ptrTrue()}}
		}
		if stalled != "" {
			meta.SetStatusCondition(&q.Status.Conditions, metav1.Condition{Type: laxityv1alpha1.IntermittentQueryStalledCondition, Status: metav1.ConditionTrue, Reason: stalled, Message: "spec.sparkApplication.driver.serviceAccount: not permitted"})
		}
		return *q
	}
	if got := refusedWindow(rq, []laxityv1alpha1.IntermittentQuery{window("rq-1", "", true), window("foreign", laxityv1alpha1.NotPermittedReason, false)}); got != "" {
		t.Fatalf("refusedWindow = %q for a foreign query's refusal", got)
	}
	got := refusedWindow(rq, []laxityv1alpha1.IntermittentQuery{window("rq-1", "", true), window("rq-2", laxityv1alpha1.NotPermittedReason, true)})
	if !strings.Contains(got, "rq-2") || !strings.Contains(got, "NotPermitted") || !strings.Contains(got, "serviceAccount") {
		t.Fatalf("refusedWindow = %q", got)
	}
}

func ptrTrue() *bool { b := true; return &b }
