package sparkapp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/laxity-dev/laxity/internal/planner"
)

// MaxNameLength is the longest SparkApplication name laxity creates: a
// DNS-1035 label, which spark-operator's admission webhook requires (it
// derives Service names from it) and which fits the
// sparkoperator.k8s.io/app-name label it puts on the driver and executor
// pods.
const MaxNameLength = validation.DNS1035LabelMaxLength

// Step is one step of a query that runs as a SparkApplication: a batch, a
// partial merge or the final merge.
type Step struct {
	// Kind is planner.StepBatch, planner.StepPartial or planner.StepFinal.
	Kind planner.StepKind
	// Index is the batch index for a batch, and the merge ordinal for a
	// merge: partial merges count from 0 and the final merge's ordinal is
	// the number of partial merges before it. It is at least 0.
	Index int
	// Attempt is 0 for the first try of the step and n for its n-th retry,
	// which runs as a new SparkApplication named with a -r<n> suffix.
	Attempt int
	// FromTuple and ToTuple are a batch's tuple range [FromTuple, ToTuple).
	// Merges ignore them.
	FromTuple, ToTuple int64
	// Inputs is the number of intermediate results a merge combines (at
	// least 1); 0 for a batch.
	Inputs int
	// InputLocations are the result locations a merge combines, Inputs of
	// them, in order; nil for a batch.
	InputLocations []string
	// Nodes is the pool size, one of the schedule's sizes, the step was
	// planned for.
	Nodes int32
	// ReadyNodes is the number of ready pool nodes when the step is
	// created, at least Nodes. The step gets ReadyNodes × executorsPerNode
	// executors.
	ReadyNodes int32
	// Slice is a batch's exact input from its source (source.Slicer), such
	// as Kafka offset ranges: each key becomes the annotation
	// laxity.dev/<key>, the argument --laxity-<key>=<value> and the Spark
	// setting spark.laxity.<key>. Nil for merges and synthetic inputs.
	Slice map[string]string
	// NamesTaken counts the attempt numbers below Attempt that were passed
	// over, not tried, because an object laxity does not own already had
	// that attempt's name: Attempt − NamesTaken attempts really ran and
	// failed before this one. It is the laxity.dev/names-taken annotation.
	NamesTaken int
	// SideBySide marks a step launched beside others, in lane Lane: its
	// executors fill its Nodes only (ReadyNodes equals Nodes). It is the
	// laxity.dev/lane annotation.
	SideBySide bool
	Lane       int
	// LaunchedAt is when laxity created the step, on its clock; zero when
	// unknown (a step created before laxity recorded it). It is the
	// laxity.dev/launched-at annotation.
	LaunchedAt time.Time
	// Members are the queries a shared batch serves, two or more, the
	// query the step is named by first; nil for a step of one query. The
	// step reads its tuple range once and writes each member's result to
	// MemberResults[member]. It is the laxity.dev/members annotation.
	Members []string
	// MemberResults is where a shared batch writes each member's result:
	// the member's own result location for the batch, as if it had run
	// alone (ResultLocation), so that each member's merges find it as
	// they find their own batches. Render sets it; nil for a step of one
	// query. It is the laxity.dev/member-results annotation.
	MemberResults map[string]string
}

// Name is the deterministic name of the SparkApplication that runs step s
// of the IntermittentQuery named query: <query>-b<index> for a batch,
// <query>-partial-<index> for a partial merge and <query>-final for the
// final merge, with a -r<attempt> suffix for a retry.
//
// The name must be a DNS-1035 label of at most MaxNameLength (63)
// characters (see MaxNameLength): it is an error, not a truncation, when it
// is not, for example when the query's name starts with a digit, contains a
// dot, or is too long. A query name of at most 43 characters fits every
// step below a million batches and a thousand retries.
func Name(query string, s Step) (string, error) {
	name, err := baseName(query, s)
	if err != nil {
		return "", err
	}
	if s.Attempt < 0 {
		return "", fmt.Errorf("IntermittentQuery %s: step attempt %d is negative", query, s.Attempt)
	}
	if s.Attempt > 0 {
		name += "-r" + strconv.Itoa(s.Attempt)
	}
	if len(name) > MaxNameLength {
		return "", fmt.Errorf("IntermittentQuery %s: SparkApplication name %q has %d characters, more than the %d spark-operator accepts: shorten the query's name to at most %d characters",
			query, name, len(name), MaxNameLength, MaxNameLength-(len(name)-len(query)))
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return "", fmt.Errorf("IntermittentQuery %s: SparkApplication name %q is not a DNS-1035 label, which spark-operator requires: %s",
			query, name, strings.Join(errs, "; "))
	}
	return name, nil
}

// baseName is the step's name without the retry suffix: the name of the
// step's result, shared by all its attempts.
func baseName(query string, s Step) (string, error) {
	if query == "" {
		return "", errors.New("IntermittentQuery name is empty")
	}
	if s.Index < 0 {
		return "", fmt.Errorf("IntermittentQuery %s: step index %d is negative", query, s.Index)
	}
	switch s.Kind {
	case planner.StepBatch:
		return query + "-b" + strconv.Itoa(s.Index), nil
	case planner.StepPartial:
		return query + "-partial-" + strconv.Itoa(s.Index), nil
	case planner.StepFinal:
		return query + "-final", nil
	default:
		return "", fmt.Errorf("IntermittentQuery %s: unknown step kind %q (want %s, %s or %s)",
			query, s.Kind, planner.StepBatch, planner.StepPartial, planner.StepFinal)
	}
}

// ResultLocation is where step s of the query namespace/query writes its
// result: <resultRoot>/<namespace>/<query>/<step name without the -r
// suffix>, for example s3a://bucket/laxity/analytics/q1/q1-b3. Every attempt
// of a step writes to the same location, so a merge finds its inputs by the
// names of the steps it merges. A trailing slash of resultRoot is not
// doubled.
func ResultLocation(resultRoot, namespace, query string, s Step) (string, error) {
	if resultRoot == "" {
		return "", errors.New("result root is empty")
	}
	base, err := baseName(query, s)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(resultRoot, "/") {
		resultRoot += "/"
	}
	return resultRoot + namespace + "/" + query + "/" + base, nil
}
