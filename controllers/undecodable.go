/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// An object whose stored form does not fit laxity's Go types (see
// laxityv1alpha1.DecodeFailure) has an empty spec: the reconcilers do
// nothing with it but say so, on the object itself.

// undecodableMessage is the condition message and event note of an
// undecodable object.
func undecodableMessage(kind string, err error) string {
	return fmt.Sprintf("The stored %s cannot be read by laxity, which does nothing else with it until it is corrected: %v. "+
		"Correct the field (kubectl edit, or apply a valid manifest) or delete the object.", kind, err)
}

// reportUndecodable sets Ready=False and Stalled=True, with reason
// Undecodable and a message quoting err, on an object that did not decode,
// and records a Warning event, when they are not already so. The status is
// written with a merge patch of status.conditions alone, so nothing of the
// (empty) decoded spec is ever sent. conditions are the object's current
// conditions, as far as its status decoded.
func reportUndecodable(ctx context.Context, c client.Client, recorder events.EventRecorder, obj client.Object, kind string, conditions []metav1.Condition, err error) error {
	message := undecodableMessage(kind, err)
	logf.FromContext(ctx).Info("Skipping an object that cannot be decoded", "kind", kind, "error", err.Error())
	want := slices.Clone(conditions)
	// Both kinds name these conditions Ready and Stalled.
	meta.SetStatusCondition(&want, metav1.Condition{
		Type: laxityv1alpha1.ElasticScheduleReadyCondition, Status: metav1.ConditionFalse,
		Reason: laxityv1alpha1.UndecodableReason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
	meta.SetStatusCondition(&want, metav1.Condition{
		Type: laxityv1alpha1.ElasticScheduleStalledCondition, Status: metav1.ConditionTrue,
		Reason: laxityv1alpha1.UndecodableReason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
	if equality.Semantic.DeepEqual(conditions, want) {
		return nil
	}
	patch, mErr := json.Marshal(map[string]any{"status": map[string]any{"conditions": want}})
	if mErr != nil {
		return fmt.Errorf("encoding the status of an undecodable %s: %w", kind, mErr)
	}
	if pErr := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(pErr) != nil {
		return fmt.Errorf("writing the status of an undecodable %s: %w", kind, pErr)
	}
	if recorder != nil {
		recorder.Eventf(obj, nil, corev1.EventTypeWarning, laxityv1alpha1.UndecodableReason, "Decode", "%s", message)
	}
	return nil
}

// decodableQueries returns the queries of items that reference schedule
// and decoded, and logs those that reference it (as far as their
// scheduleName decoded) but did not: a schedule plans around them, and each
// reports itself (reportUndecodable).
func decodableQueries(ctx context.Context, schedule string, items []laxityv1alpha1.IntermittentQuery) []laxityv1alpha1.IntermittentQuery {
	var out []laxityv1alpha1.IntermittentQuery
	for _, q := range items {
		if q.Spec.ScheduleName != schedule {
			continue
		}
		if err := q.DecodeError(); err != nil {
			logf.FromContext(ctx).Info("Planning without an IntermittentQuery that cannot be decoded", "query", q.Name, "error", err.Error())
			continue
		}
		out = append(out, q)
	}
	return out
}
