package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// snapshot is what the progress shows at one instant.
type snapshot struct {
	elapsed   time.Duration
	schedules []scheduleView
}

type scheduleView struct {
	name               string
	requested, ready   int
	spent, plannedCost float64
	queries            []queryView
}

type queryView struct {
	name                 string
	arrived, processed   int64
	batchesDone, planned int
	slack, state         string
}

func (r *run) snapshot(ctx context.Context, now time.Time) (snapshot, error) {
	out := snapshot{elapsed: now.Sub(r.start)}
	for _, s := range r.schedules {
		v := scheduleView{name: s.key(), spent: spent(s.requested, s.pool, now)}
		if n := len(s.requested); n > 0 {
			v.requested, v.ready = s.requested[n-1].nodes, s.ready[len(s.ready)-1].nodes
		}
		if s.firstPlan != nil {
			v.plannedCost = s.firstPlan.Chosen.ExecutableCost
		}
		var list laxityv1alpha1.IntermittentQueryList
		if err := r.reader.List(ctx, &list, client.InNamespace(s.object.Namespace)); err != nil {
			return out, err
		}
		for _, q := range list.Items {
			if q.Spec.ScheduleName != s.object.Name {
				continue
			}
			qv := queryView{
				name: q.Name, arrived: ptr.Deref(q.Status.ArrivedTuples, 0), processed: ptr.Deref(q.Status.ProcessedTuples, 0),
				slack: string(q.Status.SlackSeconds), state: "Waiting",
			}
			for _, b := range q.Status.Batches {
				if b.Outcome == laxityv1alpha1.StepSucceeded {
					qv.batchesDone++
				}
			}
			// The latest plan: the first knows nothing of the windows a
			// RecurringQuery created since.
			if s.latestPlan != nil {
				for _, p := range s.latestPlan.Queries {
					if p.Name == q.Name {
						qv.planned = p.Batches
					}
				}
			}
			if c := meta.FindStatusCondition(q.Status.Conditions, laxityv1alpha1.IntermittentQueryReadyCondition); c != nil {
				qv.state = c.Reason
			}
			v.queries = append(v.queries, qv)
		}
		sort.Slice(v.queries, func(a, b int) bool { return v.queries[a].name < v.queries[b].name })
		out.schedules = append(out.schedules, v)
	}
	return out, nil
}

// spent bills the requested timeline up to now.
func spent(requested []level, p planner.Pool, now time.Time) float64 {
	if len(requested) == 0 {
		return 0
	}
	start := requested[0].at
	levels := make([]planner.NodeLevel, 0, len(requested)+1)
	for _, l := range requested {
		levels = append(levels, planner.NodeLevel{At: l.at.Sub(start).Seconds(), Nodes: l.nodes})
	}
	levels = append(levels, planner.NodeLevel{At: now.Sub(start).Seconds(), Nodes: requested[len(requested)-1].nodes})
	return planner.Cost(levels, p)
}

// progress shows snapshots: redrawn in place on a terminal, otherwise a
// block every plainEvery of simulated time and at the end.
type progress struct {
	out   io.Writer
	live  bool
	speed float64
	// compression, on the local cluster, turns what is read into workload
	// time.
	compression *Compression
	lines       int
	drawn       time.Time
	nextMark    time.Duration
}

// plainEvery is how much simulated time passes between blocks of plain
// output; redrawEvery how often (real time) a terminal is redrawn.
const (
	plainEvery  = 10 * time.Minute
	redrawEvery = 200 * time.Millisecond
)

func newProgress(out io.Writer, live bool, speed float64, compression *Compression) *progress {
	return &progress{out: out, live: live, speed: speed, compression: compression}
}

// due says whether the progress is shown at elapsed (simulated time since
// the start): the snapshot is read from the cluster only then, not on every
// tick of the loop.
func (p *progress) due(elapsed time.Duration, final bool) bool {
	if p.compression != nil {
		elapsed = time.Duration(p.compression.WorkloadSeconds(float64(elapsed)))
	}
	if final {
		return true
	}
	if p.live {
		return time.Since(p.drawn) >= redrawEvery
	}
	return elapsed >= p.nextMark
}

// show writes a snapshot that was due.
func (p *progress) show(s snapshot) {
	if p.live {
		p.drawn = time.Now()
		if p.lines > 0 {
			fmt.Fprintf(p.out, "\x1b[%dA\x1b[J", p.lines)
		}
		text := p.render(s)
		p.lines = strings.Count(text, "\n")
		fmt.Fprint(p.out, text)
		return
	}
	elapsed := s.elapsed
	if p.compression != nil {
		elapsed = time.Duration(p.compression.WorkloadSeconds(float64(elapsed)))
	}
	for p.nextMark <= elapsed {
		p.nextMark += plainEvery
	}
	fmt.Fprint(p.out, p.render(s))
}

func (p *progress) render(s snapshot) string {
	var b strings.Builder
	// On the local cluster what is read is compressed: times, slack and
	// costs are shown in workload time.
	scale, label := 1.0, fmt.Sprintf("simulated, x%g", p.speed)
	if p.compression != nil {
		scale, label = p.compression.Factor, fmt.Sprintf("workload time; local cluster, compressed x%g", p.compression.Factor)
	}
	fmt.Fprintf(&b, "t+%s (%s)\n", clockTime(time.Duration(float64(s.elapsed)*scale)), label)
	for _, v := range s.schedules {
		fmt.Fprintf(&b, "ElasticSchedule %s: nodes requested %d, ready %d; spent %.2f of %.2f planned\n",
			v.name, v.requested, v.ready, v.spent*scale, v.plannedCost*scale)
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  QUERY\tARRIVED\tPROCESSED\tBATCHES\tSLACK\tSTATE\t")
		for _, q := range v.queries {
			slack := "-"
			if q.slack != "" {
				slack = q.slack + "s"
				if v, err := strconv.ParseFloat(q.slack, 64); err == nil && scale != 1 {
					slack = strconv.FormatFloat(math.Round(v*scale), 'f', -1, 64) + "s"
				}
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d/%d\t%s\t%s\t\n", q.name, q.arrived, q.processed, q.batchesDone, q.planned, slack, q.state)
		}
		_ = tw.Flush()
	}
	return b.String()
}

// clockTime is a duration as h:mm:ss.
func clockTime(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
