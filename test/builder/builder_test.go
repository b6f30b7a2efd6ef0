package builder_test

import (
	"testing"
	"time"

	"github.com/laxity-dev/laxity/test/builder"
)

func TestReleaseAfterIdleFollowsTheLeadTime(t *testing.T) {
	es := builder.Schedule("ns", "pool").LeadTime(3 * time.Minute).Obj()
	if got := es.Spec.NodePool.ReleaseAfterIdle.Duration; got != 6*time.Minute {
		t.Errorf("releaseAfterIdle %s, want twice the lead time", got)
	}
	es = builder.Schedule("ns", "pool").ReleaseAfterIdle(time.Minute).LeadTime(3 * time.Minute).Obj()
	if got := es.Spec.NodePool.ReleaseAfterIdle.Duration; got != time.Minute {
		t.Errorf("releaseAfterIdle %s, want the one set", got)
	}
	if es := builder.Schedule("ns", "pool").Bare().LeadTime(time.Minute).Obj(); es.Spec.NodePool.ReleaseAfterIdle != nil {
		t.Errorf("a bare schedule got releaseAfterIdle %s", es.Spec.NodePool.ReleaseAfterIdle.Duration)
	}
}

func TestDeadlineFollowsTheWindow(t *testing.T) {
	start := builder.Origin.Add(time.Hour)
	q := builder.Query("ns", "q").Slack(time.Minute).Window(start, 10*time.Minute).Obj()
	if got, want := q.Spec.Deadline.Time, start.Add(11*time.Minute); !got.Equal(want) {
		t.Errorf("deadline %s, want %s", got, want)
	}
}

func TestObjReturnsCopies(t *testing.T) {
	b := builder.Schedule("ns", "pool")
	first := b.Obj()
	first.Spec.NodePool.Sizes[0] = 99
	first.Spec.NodePool.NodeSelector["x"] = "y"
	if second := b.Obj(); second.Spec.NodePool.Sizes[0] != 2 || len(second.Spec.NodePool.NodeSelector) != 1 {
		t.Errorf("changing one object changed the next: %+v", second.Spec.NodePool)
	}
}
