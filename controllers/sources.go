package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/source"
	"github.com/laxity-dev/laxity/internal/source/kafka"
)

// Sources opens the input sources of queries. A source that holds
// connections (Kafka) is kept for its query, both reconcilers sharing it,
// until the query's spec or its Secret changes or the query is deleted;
// synthetic sources are cheap and made on every call.
type Sources struct {
	// Reader reads the Secrets sources name, from the API server: the
	// manager caches no Secrets.
	Reader client.Reader

	mu   sync.Mutex
	open map[types.NamespacedName]openSource
	// seen are the arrival counts read from sources that cannot say what
	// had arrived at an earlier instant, by query, oldest first.
	seen map[types.NamespacedName][]sample
}

// sample is a count of arrived tuples and when it was read.
type sample struct {
	at      time.Time
	arrived int64
}

// openSource is a kept source and what it was opened from.
type openSource struct {
	uid           types.UID
	generation    int64
	secretVersion string
	src           *kafka.Source
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// For is the source of q's tuples. Errors name the field.
func (s *Sources) For(ctx context.Context, q *laxityv1alpha1.IntermittentQuery) (source.Source, error) {
	in := q.Spec.Input.Kafka
	if in == nil {
		return SyntheticSource(ctx, q)
	}
	var data map[string][]byte
	version := ""
	if ref := in.SecretRef; ref != nil {
		if s.Reader == nil {
			return nil, fmt.Errorf("spec.input.kafka.secretRef: Secret %s: this manager reads no Secrets", ref.Name)
		}
		var secret corev1.Secret
		if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: q.Namespace, Name: ref.Name}, &secret); err != nil {
			return nil, fmt.Errorf("spec.input.kafka.secretRef: Secret %s: %w", ref.Name, err)
		}
		data, version = secret.Data, secret.ResourceVersion
	}
	key := client.ObjectKeyFromObject(q)
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.open[key]; ok && o.uid == q.UID && o.generation == q.Generation && o.secretVersion == version {
		return o.src, nil
	}
	cfg, err := kafka.ConfigFromSecret(in.Brokers, in.Topic, data)
	if err != nil {
		return nil, fmt.Errorf("spec.input.kafka: %w", err)
	}
	src, err := kafka.New(cfg, q.Spec.Window.Start.Time, q.Spec.Window.End.Time)
	if err != nil {
		return nil, fmt.Errorf("spec.input.kafka: %w", err)
	}
	s.forget(key)
	if s.open == nil {
		s.open = map[types.NamespacedName]openSource{}
	}
	s.open[key] = openSource{uid: q.UID, generation: q.Generation, secretVersion: version, src: src}
	return src, nil
}

// RateOver is the rate q's tuples arrived at over the window up to now, when
// it can be told. A source that follows the clock (source.Forecaster) says
// what had arrived window ago; for the others, which report only what has
// arrived by now, RateOver keeps the counts it is given and measures from
// the latest one read at least window ago. After a restart such a source
// has no rate until a window has passed.
func (s *Sources) RateOver(q *laxityv1alpha1.IntermittentQuery, src source.Source, now time.Time, arrived int64, window time.Duration) (float64, bool) {
	if _, clocked := src.(source.Forecaster); clocked {
		earlier, err := src.Arrived(now.Add(-window))
		return float64(arrived-earlier) / window.Seconds(), err == nil
	}
	key := client.ObjectKeyFromObject(q)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[types.NamespacedName][]sample{}
	}
	s.seen[key] = append(s.seen[key], sample{at: now, arrived: arrived})
	samples := s.seen[key]
	// Keep the latest sample at least window old and everything after it.
	from := -1
	for i, smp := range samples {
		if !smp.at.After(now.Add(-window)) {
			from = i
		}
	}
	if from < 0 {
		return 0, false
	}
	s.seen[key] = samples[from:]
	old := samples[from]
	return float64(arrived-old.arrived) / now.Sub(old.at).Seconds(), true
}

// Forget closes the source kept for the query named key, if any.
func (s *Sources) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(key)
}

func (s *Sources) forget(key types.NamespacedName) {
	if o, ok := s.open[key]; ok {
		o.src.Close()
		delete(s.open, key)
	}
	delete(s.seen, key)
}

// SyntheticSource is the source of a query without a real input: arrivals
// follow spec.input, or spec.input.actualProfile when set, by the clock.
func SyntheticSource(_ context.Context, q *laxityv1alpha1.IntermittentQuery) (source.Source, error) {
	return source.FromSpec(q, q.Spec.Input.ActualProfile)
}
