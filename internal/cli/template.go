package cli

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/manifest"
	"github.com/laxity-dev/laxity/internal/planner"
	"github.com/laxity-dev/laxity/internal/sparkapp"
)

// sparkApplicationsCRD is the SparkApplication CRD of config/thirdparty as
// JSON (TestSparkApplicationsCRDIsThirdParty holds the two equal; go test
// -update writes it): its 836 KB of YAML took a tenth of a laxity plan
// process to decode, the JSON a third of that.
//
//go:embed sparkapplications.crd.json
var sparkApplicationsCRD []byte

// sparkApplications validates SparkApplications against the real
// SparkApplication CRD's schema, read once.
var sparkApplications = sync.OnceValues(func() (*manifest.Validator, error) {
	return manifest.NewEmbeddedValidator(sparkApplicationsCRD)
})

// prepareSparkApplications builds the SparkApplication validator, so that
// the first template checked does not wait for it.
func prepareSparkApplications() {
	if v, err := sparkApplications(); err == nil {
		v.Prepare()
	}
}

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
