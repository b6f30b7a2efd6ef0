package controllers

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/test/builder"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/spec"
)

// A source that reports only what has arrived by now is measured from the
// counts it gave before: from the latest one at least a window old.
func TestRateOverCountsSeenBefore(t *testing.T) {
	q := builder.Query("ns", "q").Rate("10").Slack(time.Minute).Obj()
	s := &Sources{}
	src := &recordingSlicer{}
	const window = 180 * time.Second
	for _, tc := range []struct {
		at       float64
		arrived  int64
		want     float64
		measured bool
	}{
		{at: 0, arrived: 100},
		{at: 60, arrived: 160},
		{at: 180, arrived: 400, want: 300.0 / 180, measured: true},
		{at: 200, arrived: 450, want: 350.0 / 200, measured: true},
		{at: 250, arrived: 500, want: 340.0 / 190, measured: true}, // from the count at 60
	} {
		got, ok := s.RateOver(context.Background(), q, src, origin.Add(time.Duration(tc.at*float64(time.Second))), tc.arrived, window)
		if ok != tc.measured || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("at %gs: RateOver = %v, %v; want %v, %v", tc.at, got, ok, tc.want, tc.measured)
		}
	}
	// Forgetting the query forgets its counts: a new window must pass.
	s.Forget(client.ObjectKeyFromObject(q))
	if _, ok := s.RateOver(context.Background(), q, src, origin.Add(time.Hour), 900, window); ok {
		t.Error("a rate right after Forget")
	}
}

// A source that follows the clock says what had arrived a window ago.
func TestRateOverAsksAClockedSource(t *testing.T) {
	q := builder.Query("ns", "q").Rate("10").Slack(time.Minute).Obj() // 10 tuples/s in units of 500
	src, err := spec.SyntheticSource(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	now := q.Spec.Window.Start.Add(5 * time.Minute)
	arrived, err := src.Arrived(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := (&Sources{}).RateOver(context.Background(), q, src, now, arrived, 3*time.Minute)
	if !ok || math.Abs(got-10) > 500.0/180 {
		t.Errorf("RateOver = %v, %v; want about 10 a second", got, ok)
	}
}

// One read of a query's input serves both controllers: the schedule's pass
// reads it (Read), and the query's controller reports that reading
// (Latest) without reading the input again. A query made again under the
// same name sees none of the old one's readings.
func TestReadKeepsTheLatestReading(t *testing.T) {
	ctx := context.Background()
	s := &Sources{}
	q := builder.Query("ns", "q").Rate("10").Slack(time.Minute).Obj() // 10 tuples/s in units of 500
	q.UID = "first"
	if _, ok := s.Latest(q); ok {
		t.Fatal("a reading before any read")
	}
	now := q.Spec.Window.Start.Add(5 * time.Minute)
	src, reading := s.Read(ctx, q, now)
	if src == nil || reading.Err != nil || reading.Arrived != 3000 || !reading.At.Equal(now) {
		t.Fatalf("Read = %v, %+v; want the source and 3000 tuples at %v", src, reading, now)
	}
	if latest, ok := s.Latest(q); !ok || latest != reading {
		t.Errorf("Latest = %+v, %v; want %+v", latest, ok, reading)
	}
	again := q.DeepCopy()
	again.UID = "second"
	if _, ok := s.Latest(again); ok {
		t.Error("a query made again sees the old one's reading")
	}

	// An input that cannot be read gives no source, and the reading says
	// why, for the query's conditions.
	broken := q.DeepCopy()
	broken.Spec.Input = laxityv1alpha1.Input{Kafka: &laxityv1alpha1.KafkaInput{
		Brokers: []string{"kafka:9092"}, Topic: "events",
		SecretRef: &laxityv1alpha1.SecretReference{Name: "kafka-client"},
	}}
	src, reading = s.Read(ctx, broken, now)
	if src != nil || reading.Err == nil || !strings.Contains(reading.Err.Error(), "spec.input.kafka.secretRef") {
		t.Errorf("Read of an unreadable input = %v, %+v; want no source and an error naming the field", src, reading)
	}
	if latest, ok := s.Latest(broken); !ok || latest.Err == nil {
		t.Errorf("Latest = %+v, %v; want the failed reading", latest, ok)
	}
	s.Forget(client.ObjectKeyFromObject(q))
	if _, ok := s.Latest(q); ok {
		t.Error("a reading after Forget")
	}
}
