package demo

import (
	"fmt"
	"math"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/spec"
)

// What a compressed workload must leave the local cluster, in wall-clock
// time.
const (
	// MinClusterLeadTime is the shortest compressed provisioning lead time:
	// Karpenter takes a moment to turn a request into a node before KWOK's
	// delay starts (KarpenterLatency), laxity samples the pool every second
	// or so, and KWOK counts in whole seconds.
	MinClusterLeadTime = 5 * time.Second
	// KarpenterLatency is what Karpenter takes, on the local cluster, from
	// a NodePool's new replicas to the Node KWOK times from (measured: under
	// a second); KWOK's delay is the compressed lead time less this.
	KarpenterLatency = time.Second
	// MinClusterDeadlineSlack is the shortest compressed time from a
	// window's end to its deadline: the steps after the window run as pods
	// that take about a second each to start, which no cost model sees.
	MinClusterDeadlineSlack = 10 * time.Second
)

// Compression plays a workload Factor times faster on the wall clock, for
// a cluster whose autoscaler and kubelets run in real time: the workload
// instant From becomes the wall-clock instant To, every instant after it
// comes Factor times sooner, every duration and every cost-model
// coefficient in seconds is divided by Factor, and every arrival rate is
// multiplied by it, so that each window holds the same tuples and each
// step the same work. Instants are whole seconds, as the API stores them.
type Compression struct {
	Factor   float64
	From, To time.Time
}

// Instant is workload instant t on the wall clock, to the second.
func (c Compression) Instant(t time.Time) time.Time {
	return c.To.Add(c.Duration(t.Sub(c.From))).Round(time.Second)
}

// Duration is workload duration d on the wall clock, to the millisecond.
func (c Compression) Duration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Factor).Round(time.Millisecond)
}

// Summary says how long the workload, from From to its last deadline
// lastDeadline (a workload instant, before compression), runs on the wall
// clock, and from when to when: both spans and both pairs of instants, so
// that neither is read for the other.
func (c Compression) Summary(lastDeadline time.Time) string {
	span := lastDeadline.Sub(c.From)
	return fmt.Sprintf("The workload runs %g times faster on the wall clock: its %s, from %s to its last deadline at %s, take %s, from %s to %s.",
		c.Factor, span.Round(time.Second), c.From.UTC().Format(time.RFC3339), lastDeadline.UTC().Format(time.RFC3339),
		c.Duration(span).Round(time.Second), c.To.Format(time.TimeOnly), c.Instant(lastDeadline).Format(time.TimeOnly))
}

// input compresses one input of a query, declared at field: its arrival
// rates and rate-profile offsets, its lateness and settle time.
func (c Compression) input(name, field string, in *laxityv1alpha1.Input) error {
	var err error
	if in.RatePerSecond != "" {
		if in.RatePerSecond, err = c.scale(name, field+".ratePerSecond", in.RatePerSecond, c.Factor); err != nil {
			return err
		}
	}
	for profileField, profile := range map[string][]laxityv1alpha1.RateSegment{field + ".profile": in.Profile, field + ".actualProfile": in.ActualProfile} {
		for i := range profile {
			seg := &profile[i]
			seg.After = *c.metaDuration(seg.After.Duration)
			if seg.RatePerSecond, err = c.scale(name, fmt.Sprintf("%s[%d].ratePerSecond", profileField, i), seg.RatePerSecond, c.Factor); err != nil {
				return err
			}
		}
	}
	in.AllowedLateness = *c.metaDuration(in.AllowedLateness.Duration)
	if in.ObjectStore != nil {
		in.ObjectStore.Settle = *c.metaDuration(orDefault(in.ObjectStore.Settle.Duration, spec.DefaultObjectStoreSettle))
	}
	return nil
}

// WorkloadSeconds is a wall-clock span in seconds as workload time.
func (c Compression) WorkloadSeconds(wall float64) float64 { return wall * c.Factor }

// WorkloadInstant is wall-clock instant t as a workload instant.
func (c Compression) WorkloadInstant(t time.Time) time.Time {
	return c.From.Add(time.Duration(float64(t.Sub(c.To)) * c.Factor))
}

// Schedule compresses an ElasticSchedule's pool and planning durations. It
// refuses a provisioning lead time too short for the cluster to honour,
// naming the field.
func (c Compression) Schedule(es *laxityv1alpha1.ElasticSchedule) error {
	p := &es.Spec.NodePool
	lead := durationOr(p.ProvisioningLeadTime, spec.DefaultProvisioningLeadTime)
	release := 2 * lead
	if p.ReleaseAfterIdle != nil {
		release = p.ReleaseAfterIdle.Duration
	}
	compressed := c.Duration(lead)
	if compressed < MinClusterLeadTime {
		return fmt.Errorf("ElasticSchedule %s/%s: spec.nodePool.provisioningLeadTime: %v compressed %g times is %v, shorter than the %v the local cluster needs to provision a node; use a speed of at most %d",
			es.Namespace, es.Name, lead, c.Factor, compressed, MinClusterLeadTime, int(lead/MinClusterLeadTime))
	}
	p.ProvisioningLeadTime = c.metaDuration(lead)
	p.ReleaseAfterIdle = c.metaDuration(release)
	// A field left unset would get its full-length default on the cluster.
	p.BillingMinimum = c.metaDuration(durationOr(p.BillingMinimum, spec.DefaultBillingMinimum))
	pl := &es.Spec.Planning
	pl.MaxBatchDuration = *c.metaDuration(orDefault(pl.MaxBatchDuration.Duration, spec.DefaultMaxBatchDuration))
	pl.RateWindow = *c.metaDuration(orDefault(pl.RateWindow.Duration, spec.DefaultRateWindow))
	return nil
}

// Query compresses an IntermittentQuery: its window and deadline, its
// arrival rates and rate-profile offsets, its lateness and settle times,
// and its cost model. It refuses a deadline too close to the window's end
// for the cluster's pods to make, naming the field.
func (c Compression) Query(q *laxityv1alpha1.IntermittentQuery) error {
	s := &q.Spec
	name := fmt.Sprintf("IntermittentQuery %s/%s", q.Namespace, q.Name)
	end := c.Instant(s.Window.End.Time)
	deadline := c.Instant(s.Deadline.Time)
	if slack := deadline.Sub(end); slack < MinClusterDeadlineSlack {
		return fmt.Errorf("%s: spec.deadline: %v after spec.window.end compressed %g times is %v, shorter than the %v the local cluster needs to run the steps after the window; use a speed of at most %d",
			name, s.Deadline.Sub(s.Window.End.Time), c.Factor, slack, MinClusterDeadlineSlack, int(s.Deadline.Sub(s.Window.End.Time)/MinClusterDeadlineSlack))
	}
	s.Window.Start = metav1.NewTime(c.Instant(s.Window.Start.Time))
	s.Window.End = metav1.NewTime(end)
	s.Deadline = metav1.NewTime(deadline)

	if err := c.input(name, "spec.input", &s.Input); err != nil {
		return err
	}
	for i := range s.Inputs {
		if err := c.input(name, fmt.Sprintf("spec.inputs[%d]", i), &s.Inputs[i].Input); err != nil {
			return err
		}
	}

	var err error
	b := &s.CostModel.Batch
	shorter := 1 / c.Factor
	for field, v := range map[string]*string{
		"spec.costModel.batch.overheadSeconds": &b.OverheadSeconds, "spec.costModel.batch.serialSecondsPerTuple": &b.SerialSecondsPerTuple,
		"spec.costModel.batch.parallelSecondsPerTuple": &b.ParallelSecondsPerTuple,
		"spec.costModel.merge.overheadSeconds":         &s.CostModel.Merge.OverheadSeconds, "spec.costModel.merge.serialSecondsPerInput": &s.CostModel.Merge.SerialSecondsPerInput,
		"spec.costModel.merge.parallelSecondsPerInput": &s.CostModel.Merge.ParallelSecondsPerInput,
	} {
		if *v == "" {
			continue // fitted from samples
		}
		if *v, err = c.scale(name, field, *v, shorter); err != nil {
			return err
		}
	}
	for i := range b.Samples {
		if b.Samples[i].Seconds, err = c.scale(name, fmt.Sprintf("spec.costModel.batch.samples[%d].seconds", i), b.Samples[i].Seconds, shorter); err != nil {
			return err
		}
	}
	for i := range s.CostModel.Merge.Samples {
		m := &s.CostModel.Merge.Samples[i]
		if m.Seconds, err = c.scale(name, fmt.Sprintf("spec.costModel.merge.samples[%d].seconds", i), m.Seconds, shorter); err != nil {
			return err
		}
	}
	return nil
}

// maxRate is the API's largest arrival rate.
const maxRate = 1e12

// scale multiplies the decimal v of field by by, to 12 significant digits
// (enough for any coefficient, and no float noise in the manifests).
func (c Compression) scale(object, field, v string, by float64) (string, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return "", fmt.Errorf("%s: %s: %q is not a decimal number", object, field, v)
	}
	y := x * by
	if y > maxRate {
		return "", fmt.Errorf("%s: %s: %s compressed %g times is %g, more than the API's %g; use a lower speed", object, field, v, c.Factor, y, maxRate)
	}
	return strconv.FormatFloat(y, 'g', 12, 64), nil
}

func (c Compression) metaDuration(d time.Duration) *metav1.Duration {
	return &metav1.Duration{Duration: c.Duration(d)}
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
