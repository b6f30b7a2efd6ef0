package steprun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/emr"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// A record is a ConfigMap named like a step and labelled and annotated like
// the SparkApplication it stands for (the step contract), owned by the
// query, whose data says how the attempt went in the terms of EMR on EKS's
// DescribeJobRun. It is a job run's record in the cluster (see package
// jobrun), and the record that stands for an attempt whose object was
// deleted as stuck (ReplaceWithRecord): a deleted object says nothing.

// Keys of a record's data.
const (
	// RecordRequest is the StartJobRun request, emr.JobRun as JSON.
	RecordRequest = "request"
	// RecordJobRunID is the run's ID, once StartJobRun has returned it.
	RecordJobRunID = "jobRunId"
	// RecordState, RecordMessage, RecordCreatedAt and RecordFinishedAt
	// mirror DescribeJobRun (times in RFC 3339).
	RecordState      = "state"
	RecordMessage    = "message"
	RecordCreatedAt  = "createdAt"
	RecordFinishedAt = "finishedAt"
	// RecordStuck is why laxity cancelled the step as stuck: set on the
	// record of a cancelled job run, and on the record that stands for an
	// object deleted as stuck.
	RecordStuck = "stuck"
)

// listRecords lists the records in namespace that carry labels.
func listRecords(ctx context.Context, c client.Reader, namespace string, labels client.MatchingLabels) ([]Step, error) {
	var records corev1.ConfigMapList
	if err := c.List(ctx, &records, client.InNamespace(namespace), labels, client.HasLabels{LabelStep}); err != nil {
		return nil, fmt.Errorf("listing job-run records: %w", err)
	}
	out := make([]Step, 0, len(records.Items))
	for i := range records.Items {
		out = append(out, Step{Object: &records.Items[i], Obs: ObserveRecord(&records.Items[i]), Stuck: records.Items[i].Data[RecordStuck]})
	}
	return out, nil
}

// ObserveRecord reads a step's state from its record:
//
//	state                                      Phase
//	"" (StartJobRun not answered yet)          Pending
//	PENDING, SUBMITTED, RUNNING, CANCEL_PENDING Running
//	COMPLETED                                  Succeeded
//	FAILED, CANCELLED                          Failed
//
// Pending and Running both hold the pool. A run starts when EMR on EKS
// creates it: the API reports no later instant.
func ObserveRecord(record *corev1.ConfigMap) sparkapp.Observation {
	o := sparkapp.Observation{State: record.Data[RecordState], Message: record.Data[RecordMessage]}
	switch o.State {
	case "":
		o.Phase = laxityv1alpha1.StepPending
		return o
	case emr.StateCompleted:
		o.Phase = laxityv1alpha1.StepSucceeded
	case emr.StateFailed, emr.StateCancelled:
		o.Phase = laxityv1alpha1.StepFailed
	default:
		o.Phase = laxityv1alpha1.StepRunning
	}
	o.Started = recordTime(record, RecordCreatedAt)
	if o.Phase != laxityv1alpha1.StepRunning {
		o.Ended = recordTime(record, RecordFinishedAt)
	}
	return o
}

func recordTime(record *corev1.ConfigMap, key string) *time.Time {
	t, err := time.Parse(time.RFC3339, record.Data[key])
	if err != nil {
		return nil
	}
	return &t
}

// RecordFinished reports whether the attempt record stands for has ended.
func RecordFinished(record *corev1.ConfigMap) bool {
	return emr.JobState{State: record.Data[RecordState]}.Finished()
}

// UnfinishedRecords are the records among steps whose attempt has not
// ended, of query's steps only unless query is "".
func UnfinishedRecords(steps []Step, query string) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, s := range steps {
		record, ok := s.Object.(*corev1.ConfigMap)
		if !ok || RecordFinished(record) || (query != "" && record.Labels[LabelQuery] != query && !slices.Contains(Members(record), query)) {
			continue
		}
		out = append(out, record)
	}
	return out
}

// Members are the queries shared batch obj serves (its laxity.dev/members
// annotation); nil for a step of one query.
func Members(obj metav1.Object) []string {
	listed := obj.GetAnnotations()[sparkapp.AnnotationMembers]
	if listed == "" {
		return nil
	}
	return strings.Split(listed, ",")
}

// NewRecord is a record of the step obj, with data: obj's name, namespace,
// labels and annotations.
func NewRecord(obj metav1.Object, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: obj.GetName(), Namespace: obj.GetNamespace(),
			Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(),
		},
		Data: data,
	}
}

// Stamp is t as a record keeps it.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ReplaceWithRecord cancels a stuck attempt whose object runs it in the
// cluster (a SparkApplication) by deleting the object, which stops what it
// runs. A deleted object says nothing, so a record — same name, labels,
// annotations and owner, state CANCELLED, since when it held the pool — is
// written first and stands for the attempt from then on; the object is
// deleted with a UID precondition, so a newer object of the name is never
// touched. replaced is true once the record is there.
func ReplaceWithRecord(ctx context.Context, c client.Client, q *laxityv1alpha1.IntermittentQuery, obj metav1.Object, why string, since, now time.Time) (replaced bool, err error) {
	record := NewRecord(obj, map[string]string{
		RecordState: emr.StateCancelled, RecordMessage: why, RecordStuck: why,
		RecordCreatedAt: Stamp(since), RecordFinishedAt: Stamp(now),
	})
	if err := Own(q, record, obj, c.Scheme()); err != nil {
		return false, err
	}
	if err := c.Create(ctx, record); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		if squatter, err := TakenBy(ctx, c, q, &corev1.ConfigMap{}, record.Namespace, record.Name); err != nil {
			return false, err
		} else if squatter != "" {
			return false, fmt.Errorf("the record of the cancelled attempt cannot be written: the name is taken by %s, which laxity does not own", squatter)
		}
	}
	deleted, ok := obj.(client.Object)
	if !ok {
		return true, nil
	}
	if err := c.Delete(ctx, deleted, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
		return true, err
	}
	return true, nil
}
