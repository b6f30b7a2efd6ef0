package controllers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
	"github.com/laxity-dev/laxity/internal/tenancy"
	"github.com/laxity-dev/laxity/test/builder"
)

func TestRefusals(t *testing.T) {
	q := builder.Query("team-a", "q1").Obj()
	q.UID, q.Generation = types.UID("u1"), 1
	denied := errors.New("spec.sparkApplication.driver.serviceAccount: running as service account admin is not permitted")
	invalid := errors.New("spec.sparkApplication.type: required")
	var r Refusals

	if _, ok, _ := r.Refusal(q); ok {
		t.Fatal("a query nothing was said of is refused")
	}
	if !r.permit(q, denied) {
		t.Error("a new refusal is not a change")
	}
	if r.permit(q, denied) {
		t.Error("the same refusal again is a change")
	}
	if reason, ok, err := r.Refusal(q); !ok || reason != laxityv1alpha1.NotPermittedReason || !errors.Is(err, denied) {
		t.Errorf("Refusal = %s, %v, %v", reason, err, ok)
	}
	r.permit(q, nil)
	if _, ok, _ := r.Refusal(q); ok {
		t.Error("a grant made does not lift the refusal")
	}

	r.reject(q, invalid)
	r.permit(q, nil)
	if reason, ok, err := r.Refusal(q); !ok || reason != laxityv1alpha1.InvalidTemplateReason || !errors.Is(err, invalid) {
		t.Errorf("a template rejected at launch is lifted by a pass's permission: %s, %v, %v", reason, err, ok)
	}
	q.Generation = 2
	if _, ok, _ := r.Refusal(q); ok {
		t.Error("a changed spec is still rejected")
	}
	r.permit(q, nil)
	q.Generation = 1
	if _, ok, _ := r.Refusal(q); ok {
		t.Error("the rejection of the old spec came back")
	}

	var none *Refusals
	if _, ok, _ := none.Refusal(q); ok || !none.permit(q, denied) {
		t.Error("a nil Refusals holds something, or does not say a refusal is new")
	}
}

func TestJudgeFit(t *testing.T) {
	q := builder.Query("team-a", "q1").Obj()
	q.UID, q.Generation = types.UID("u1"), 1
	tooWide := &sparkapp.FitError{Namespace: "team-a", Name: "q1", Field: "spec.sparkApplication.executor.cores", Problem: "an executor asks for 8 CPU"}
	denied := errors.New("spec.sparkApplication.driver.serviceAccount: not permitted")
	wake := make(chan event.TypedGenericEvent[*laxityv1alpha1.IntermittentQuery], 10)
	r := Refusals{Wake: wake}
	woken := func() int {
		n := 0
		for len(wake) > 0 {
			<-wake
			n++
		}
		return n
	}

	if held, changed := r.judgeFit(q, sparkapp.ErrFitUnknown); held || changed || woken() != 0 {
		t.Errorf("nothing known of a new query: held %v, changed %v", held, changed)
	}
	if held, changed := r.judgeFit(q, tooWide); !held || !changed || woken() != 1 {
		t.Errorf("a first verdict: held %v, changed %v", held, changed)
	}
	if held, changed := r.judgeFit(q, tooWide); !held || changed || woken() != 0 {
		t.Errorf("the same verdict again: held %v, changed %v", held, changed)
	}
	if reason, ok, err := r.Refusal(q); !ok || reason != laxityv1alpha1.ExecutorDoesNotFitReason || !errors.Is(err, tooWide) {
		t.Errorf("Refusal = %s, %v, %v", reason, ok, err)
	}
	if r.excluded(q) {
		t.Error("a query whose executors do not fit is left out of the plan")
	}
	if held, changed := r.judgeFit(q, sparkapp.ErrFitUnknown); !held || changed {
		t.Errorf("the pool scaled to nothing frees the query: held %v, changed %v", held, changed)
	}
	// A refusal of the namespace's grants comes first.
	r.permit(q, denied)
	if reason, _, _ := r.Refusal(q); reason != laxityv1alpha1.NotPermittedReason {
		t.Errorf("Refusal = %s, want the grants' refusal first", reason)
	}
	r.permit(q, nil)
	woken()
	if held, changed := r.judgeFit(q, nil); held || !changed || woken() != 1 {
		t.Errorf("larger nodes: held %v, changed %v", held, changed)
	}
	if _, ok, _ := r.Refusal(q); ok {
		t.Error("a query that fits is still refused")
	}
	r.judgeFit(q, tooWide)
	q.Generation = 2
	if _, ok, _ := r.Refusal(q); ok {
		t.Error("a verdict on the old spec holds the new one")
	}
	if held, changed := r.judgeFit(q, nil); held || changed {
		t.Errorf("a fixed spec that fits: held %v, changed %v, want no reversal of a verdict on another spec", held, changed)
	}
	r.judgeFit(q, tooWide)
	r.Forget(client.ObjectKeyFromObject(q))
	if _, ok, _ := r.Refusal(q); ok {
		t.Error("Forget keeps the verdict")
	}

	var none *Refusals
	if held, changed := none.judgeFit(q, tooWide); !held || changed {
		t.Errorf("a nil Refusals: held %v, changed %v", held, changed)
	}
}

func TestTemplateRejected(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "sparkoperator.k8s.io", Kind: "SparkApplication"}, "q1-b0",
		field.ErrorList{field.Required(field.NewPath("spec", "driver"), "")})
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&sparkapp.TemplateError{Field: "spec.sparkApplication.type", Problem: "required"}, true},
		{fmt.Errorf("rendering: %w", &sparkapp.TemplateError{}), true},
		{fmt.Errorf("launching q1-b0: %w", invalid), true},
		{apierrors.NewServiceUnavailable("busy"), false},
		{errors.New("names too long"), false},
		{nil, false},
	} {
		if got := templateRejected(tc.err); got != tc.want {
			t.Errorf("templateRejected(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRefusedQueryIsStalled(t *testing.T) {
	now := builder.Origin.Add(time.Hour)
	refusal := refused(&tenancy.Refusal{Field: "spec.sparkApplication.driver.serviceAccount", What: "running as service account admin", Missing: "not granted"})
	for _, reason := range []string{laxityv1alpha1.NotPermittedReason, laxityv1alpha1.InvalidTemplateReason} {
		q := builder.Query("team-a", "q1").Obj()
		setQueryConditions(q, queryState{now: now, refused: refusal, refusedReason: reason})
		stalled := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition)
		ready := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition)
		if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != reason || !strings.HasPrefix(stalled.Message, "spec.sparkApplication.driver.serviceAccount: ") {
			t.Errorf("Stalled = %+v, want True, %s, naming the field", stalled, reason)
		}
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reason {
			t.Errorf("Ready = %+v, want False, %s", ready, reason)
		}
	}
	// A query that finished before its grant was taken back stays finished.
	q := builder.Query("team-a", "q1").Obj()
	q.Status.Final = &laxityv1alpha1.FinalStatus{Outcome: laxityv1alpha1.StepSucceeded}
	setQueryConditions(q, queryState{now: now, planned: true, refused: refusal, refusedReason: laxityv1alpha1.NotPermittedReason})
	if meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryStalledCondition) != nil {
		t.Error("a finished query is Stalled")
	}
}

func TestGrantOf(t *testing.T) {
	p := builder.TenantPolicy("analytics").AllNamespaces().Pool("karpenter.sh", "NodePool", "shared").ServiceAccounts("spark").
		AllowHostPath().Buckets("events").PriorityClasses("batch-low").
		EMR(&laxityv1alpha1.EMRGrant{VirtualClusterIDs: []string{"vc"}, ExecutionRoleARNs: []string{"arn"},
			Nodegroups: []laxityv1alpha1.NodegroupGrant{{ClusterName: "eks", NodegroupName: "*"}}, Endpoints: []string{"http://e"}}).Obj()
	g := grantOf(p)
	ns := tenancy.Namespace{Name: "team-a", Grants: []tenancy.Grant{g}}
	checks := []*tenancy.Refusal{
		ns.Pool("f", tenancy.Pool{Group: "karpenter.sh", Kind: "NodePool", Name: "shared"}, tenancy.PoolAnnotation{}),
		ns.ServiceAccount("f", "spark"), ns.HostPath("f"), ns.Bucket("f", "events"), ns.PriorityClass("f", "batch-low"),
		ns.EMR("f", tenancy.EMR{VirtualClusterID: "vc", ExecutionRoleARN: "arn", Nodegroup: tenancy.Nodegroup{Cluster: "eks", Name: "ng"}, Endpoint: "http://e"}),
	}
	for i, r := range checks {
		if r != nil {
			t.Errorf("check %d: the policy's grant was refused: %v", i, r)
		}
	}
	if ns.Privileged("f", "x") == nil || g.Policy != "analytics" {
		t.Errorf("grant %+v: privileged was not asked for, or the policy is not named", g)
	}
}
