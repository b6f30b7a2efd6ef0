package cli

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/config/thirdparty"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// sparkApplications validates SparkApplications against the real
// SparkApplication CRD's schema, read once.
var sparkApplications = sync.OnceValues(func() (*manifest.Validator, error) {
	crd, err := thirdparty.Read(thirdparty.SparkApplications)
	if err != nil {
		return nil, err
	}
	return manifest.NewEmbeddedValidator(crd)
})

// checkTemplate renders q's first batch as a SparkApplication, as the
// operator will, and validates it against the SparkApplication CRD: a
// template that laxity's rendering or the CRD rejects is an error of the
// query's spec.sparkApplication before anything runs, not a launch failure
// hours later. Schedules whose steps are EMR on EKS job runs are not
// checked here.
func checkTemplate(q *laxityv1alpha1.IntermittentQuery, es *laxityv1alpha1.ElasticSchedule) error {
	if q.Spec.SparkApplication == nil || es.Spec.NodePool.Backend.EMRContainers != nil || len(es.Spec.NodePool.Sizes) == 0 {
		return nil
	}
	nodes := es.Spec.NodePool.Sizes[0]
	step := sparkapp.Step{Kind: planner.StepBatch, FromTuple: 0, ToTuple: 1, Nodes: nodes, ReadyNodes: nodes}
	app, err := sparkapp.Render(q, es, step, sparkapp.Locations{ResultRoot: "s3a://laxity-plan-check/"})
	if err != nil {
		return fmt.Errorf("spec.sparkApplication: %w", err)
	}
	v, err := sparkApplications()
	if err != nil {
		return fmt.Errorf("reading the SparkApplication CRD: %w", err)
	}
	if _, errs := v.Validate(app.Object); len(errs) > 0 {
		var all []error
		for _, e := range errs {
			e.Field = strings.Replace(e.Field, "spec.", "spec.sparkApplication.", 1)
			all = append(all, fmt.Errorf("the SparkApplication it becomes is invalid: %s", e.Error()))
		}
		return errors.Join(all...)
	}
	return nil
}
