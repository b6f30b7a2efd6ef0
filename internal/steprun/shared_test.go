package steprun

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

func sharedStep(members string, owners ...*laxityv1alpha1.IntermittentQuery) *metav1.ObjectMeta {
	obj := &metav1.ObjectMeta{
		Name: "a-b0", Namespace: "team",
		Labels:      map[string]string{LabelQuery: "a"},
		Annotations: map[string]string{sparkapp.AnnotationMembers: members},
	}
	OwnMembers(obj, owners)
	return obj
}

func member(name, uid string) *laxityv1alpha1.IntermittentQuery {
	q := &laxityv1alpha1.IntermittentQuery{}
	q.Name, q.UID = name, types.UID(uid)
	return q
}

// TestSharedOwners holds the rule that a shared batch is laxity's step
// when a member it lists owns it by name and UID: deleting its first
// member leaves it to the others, and listing a query, or naming it
// without its UID, does not make it the query's.
func TestSharedOwners(t *testing.T) {
	a, b := member("a", "uid-a"), member("b", "uid-b")
	uids := map[string]types.UID{"a": "uid-a", "b": "uid-b"}
	tests := []struct {
		name  string
		obj   metav1.Object
		uids  map[string]types.UID
		want  []string
		owned bool
	}{
		{"both members own it", sharedStep("a,b", a, b), uids, []string{"a", "b"}, true},
		{"its first member deleted", sharedStep("a,b", a, b), map[string]types.UID{"b": "uid-b"}, []string{"b"}, true},
		{"every member deleted", sharedStep("a,b", a, b), map[string]types.UID{}, nil, false},
		{"a member listed but not an owner", sharedStep("a,b", a), uids, []string{"a"}, true},
		{"owners of another UID", sharedStep("a,b", member("a", "old"), member("b", "old")), uids, nil, false},
		{"an owner it does not list", sharedStep("a", a, b), uids, []string{"a"}, true},
		{"no members: a step of one query", sharedStep("", a, b), uids, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SharedOwners(tc.obj, tc.uids)); diff != "" {
				t.Errorf("SharedOwners (-want +got):\n%s", diff)
			}
			if got := Owned(tc.obj, tc.uids); got != tc.owned {
				t.Errorf("Owned = %v, want %v", got, tc.owned)
			}
		})
	}
	controlled := sharedStep("a,b", a, b)
	refs := controlled.GetOwnerReferences()
	refs[0].Controller = ptrTrue()
	controlled.SetOwnerReferences(refs)
	if got := SharedOwners(controlled, uids); got != nil {
		t.Errorf("a shared batch with a controller has shared owners %v: a step is owned one way only", got)
	}
}

func ptrTrue() *bool { t := true; return &t }
