package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// What the backends that hold nodes with objects of their own (placeholder,
// capacityBuffer) share.

// scheduleOwner is the owner reference of the objects a backend makes for
// the schedule: the schedule, as their controller.
func scheduleOwner(schedule *laxityv1alpha1.ElasticSchedule) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(laxityv1alpha1.GroupVersion.String()).
		WithKind("ElasticSchedule").
		WithName(schedule.Name).
		WithUID(schedule.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// hashOf identifies v by its JSON encoding, so that an object already
// holding what is asked for is not written again.
func hashOf(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// hasAnnotations says whether have holds every annotation of want.
func hasAnnotations(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// nodesInUse is the AnnotationNodesInUse of a holder's annotations: the
// requested nodes laxity's steps use in its place, 0 when absent or not a
// count (a holder changed by hand holds what its replicas say).
func nodesInUse(annotations map[string]string) int32 {
	n, err := strconv.ParseInt(annotations[AnnotationNodesInUse], 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int32(n)
}
