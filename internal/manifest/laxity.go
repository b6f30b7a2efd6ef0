package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/config/crd"
	"github.com/laxity-dev/laxity/internal/recurrence"
)

// ElasticSchedule is an ElasticSchedule read from a manifest.
type ElasticSchedule struct {
	// Source is where the object was read from.
	Source Source
	// Object is the validated object with the API server's defaults
	// applied.
	Object *v1alpha1.ElasticSchedule
}

// IntermittentQuery is an IntermittentQuery read from a manifest.
type IntermittentQuery struct {
	// Source is where the object was read from.
	Source Source
	// Object is the validated object with the API server's defaults
	// applied.
	Object *v1alpha1.IntermittentQuery
}

// RecurringQuery is a RecurringQuery read from a manifest.
type RecurringQuery struct {
	// Source is where the object was read from.
	Source Source
	// Object is the validated object with the API server's defaults
	// applied.
	Object *v1alpha1.RecurringQuery
}

// Set is the laxity objects read from manifests, each kind in source order
// (file path, then document, then List item).
type Set struct {
	// Schedules are the ElasticSchedules.
	Schedules []ElasticSchedule
	// Queries are the IntermittentQueries. A query whose scheduleName names
	// no schedule of the Set is not an error here; callers decide.
	Queries []IntermittentQuery
	// Recurring are the RecurringQueries, each checked beyond what CEL can
	// express: its schedule parses in its time zone and no window overlaps
	// the next (as the operator checks before it creates any window).
	Recurring []RecurringQuery
}

// Schedule returns the ElasticSchedule with the given namespace and name,
// or nil.
func (s *Set) Schedule(namespace, name string) *ElasticSchedule {
	for i := range s.Schedules {
		if o := s.Schedules[i].Object; o.Namespace == namespace && o.Name == name {
			return &s.Schedules[i]
		}
	}
	return nil
}

// QueriesFor returns the IntermittentQueries in namespace whose scheduleName
// is name, in source order.
func (s *Set) QueriesFor(namespace, name string) []IntermittentQuery {
	var out []IntermittentQuery
	for _, q := range s.Queries {
		if q.Object.Namespace == namespace && q.Object.Spec.ScheduleName == name {
			out = append(out, q)
		}
	}
	return out
}

// RecurringFor returns the RecurringQueries in namespace whose template
// names the schedule name, in source order.
func (s *Set) RecurringFor(namespace, name string) []RecurringQuery {
	var out []RecurringQuery
	for _, q := range s.Recurring {
		if q.Object.Namespace == namespace && q.Object.Spec.Template.ScheduleName == name {
			out = append(out, q)
		}
	}
	return out
}

// Load reads laxity manifests from files and directories (see ReadFiles)
// and validates every ElasticSchedule and IntermittentQuery with the rules
// of laxity's CRDs, as the API server would on create. Documents of other
// groups are skipped; unset namespaces default to "default". It reports
// every problem found, one per line, as an ErrorList; on error the Set is
// nil.
func Load(paths ...string) (*Set, error) {
	files, err := ReadFiles(paths...)
	if err != nil {
		return nil, err
	}
	return Read(files...)
}

// Read is Load for files already in memory.
func Read(files ...File) (*Set, error) {
	l, err := laxityLoader()
	if err != nil {
		return nil, err
	}
	objs, err := l.Read(files...)
	if err != nil {
		return nil, err
	}
	return newSet(objs)
}

// NewLaxityLoader returns a Loader for laxity's own CRDs, as embedded in
// the binary. Load and Read use one built once per process.
func NewLaxityLoader() (*Loader, error) {
	var validators []*Validator
	for _, data := range crd.AllJSON() {
		v, err := NewEmbeddedValidator(data)
		if err != nil {
			return nil, fmt.Errorf("building laxity validators: %w", err)
		}
		validators = append(validators, v)
	}
	return NewLoader(validators...), nil
}

var laxityLoader = sync.OnceValues(NewLaxityLoader)

var (
	elasticScheduleGVK   = v1alpha1.GroupVersion.WithKind("ElasticSchedule")
	intermittentQueryGVK = v1alpha1.GroupVersion.WithKind("IntermittentQuery")
	recurringQueryGVK    = v1alpha1.GroupVersion.WithKind("RecurringQuery")
)

// newSet decodes validated objects into the typed API, strictly: a field
// the Go types do not know is an error (the CRD and the types disagree).
func newSet(objs []Object) (*Set, error) {
	typed := make([]any, len(objs))
	errs := make(ErrorList, len(objs))
	parallel(len(objs), func(i int) {
		o := objs[i]
		var err error
		switch o.GroupVersionKind {
		case elasticScheduleGVK:
			es := &v1alpha1.ElasticSchedule{}
			err = decodeStrict(o.Content, es, &strictObject[v1alpha1.ElasticScheduleSpec, v1alpha1.ElasticScheduleStatus]{})
			typed[i] = ElasticSchedule{Source: o.Source, Object: es}
		case intermittentQueryGVK:
			iq := &v1alpha1.IntermittentQuery{}
			err = decodeStrict(o.Content, iq, &strictObject[v1alpha1.IntermittentQuerySpec, v1alpha1.IntermittentQueryStatus]{})
			typed[i] = IntermittentQuery{Source: o.Source, Object: iq}
		case recurringQueryGVK:
			rq := &v1alpha1.RecurringQuery{}
			err = decodeStrict(o.Content, rq, &strictObject[v1alpha1.RecurringQuerySpec, v1alpha1.RecurringQueryStatus]{})
			if err == nil {
				err = checkRecurring(rq)
			}
			typed[i] = RecurringQuery{Source: o.Source, Object: rq}
		default:
			err = fmt.Errorf("%w: %s", errUnsupportedVersion, o.GroupVersionKind.GroupVersion())
		}
		if err != nil {
			errs[i] = &Error{Source: o.Source, Kind: o.GroupVersionKind.Kind, Namespace: o.Namespace, Name: o.Name, Err: err}
		}
	})
	errs = slices.DeleteFunc(errs, func(e *Error) bool { return e == nil })
	set := &Set{}
	for _, t := range typed {
		switch t := t.(type) {
		case ElasticSchedule:
			set.Schedules = append(set.Schedules, t)
		case IntermittentQuery:
			set.Queries = append(set.Queries, t)
		case RecurringQuery:
			set.Recurring = append(set.Recurring, t)
		}
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return set, nil
}

var errUnsupportedVersion = errors.New("unsupported apiVersion")

// decodable is a laxity object: it decodes tolerantly and says whether it
// did (see v1alpha1.DecodeFailure).
type decodable interface {
	DecodeError() error
}

// strictObject has the layout of ElasticSchedule and IntermittentQuery
// without their tolerant UnmarshalJSON, so that a strict decoder sees every
// field.
type strictObject[Spec, Status any] struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status,omitzero"`
}

// checkRecurring checks what the CRD's rules cannot: that the schedule
// parses in its time zone and starts windows, and that no window reaches
// past the next start (CEL cannot compute the intervals of a cron
// schedule). The error is a *field.Error on the field.
func checkRecurring(rq *v1alpha1.RecurringQuery) error {
	_, err := recurrence.Validate(recurrence.Spec{
		Schedule: rq.Spec.Schedule, TimeZone: rq.Spec.TimeZone, WindowLength: rq.Spec.WindowLength.Duration,
	})
	if se, ok := recurrence.IsSpecError(err); ok {
		path := field.NewPath("spec", strings.TrimPrefix(se.Field, "spec."))
		return field.Invalid(path, se.Value, se.Reason)
	}
	return err
}

// decodeStrict decodes content into obj as the operator's client does
// (JSON, case-sensitive), failing when a field does not fit the Go types
// (naming the field), and, through strict (a strictObject of obj's spec and
// status), on unknown and duplicate fields.
func decodeStrict(content map[string]any, obj any, strict any) error {
	data, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", obj, err)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return fmt.Errorf("decoding %T: %w", obj, err)
	}
	if d, ok := obj.(decodable); ok {
		if err := d.DecodeError(); err != nil {
			return err
		}
	}
	strictErrs, err := kjson.UnmarshalStrict(data, strict, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("decoding %T: %w", obj, err)
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("decoding %T: %w", obj, errors.Join(strictErrs...))
	}
	return nil
}
