package controllers

import (
	"sync"
	"time"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

// spendMeter bills a pool from its observed ready nodes: every node is
// billed for the time it was seen ready, and a node gone before it was
// billed spec.nodePool.billingMinimum is billed the rest then. Nodes go in
// the order they came, the last first, as the plans' cost model has it.
type spendMeter struct {
	last time.Time
	// lots are the ready nodes by when they were first seen ready, oldest
	// first. Nodes already ready when the meter started are billed no
	// minimum: when they came is not known.
	lots []spendLot
}

type spendLot struct {
	since time.Time
	nodes int32
	known bool
}

// observe bills the time since the last observation at the node count then,
// adjusts the lots to ready, and returns the node-seconds billed.
func (m *spendMeter) observe(ready int32, now time.Time, billingMinimum time.Duration) float64 {
	if m.last.IsZero() {
		m.last = now
		if ready > 0 {
			m.lots = []spendLot{{since: now, nodes: ready}}
		}
		return 0
	}
	if now.Before(m.last) {
		return 0
	}
	held := int32(0)
	for _, l := range m.lots {
		held += l.nodes
	}
	billed := float64(held) * now.Sub(m.last).Seconds()
	m.last = now
	switch {
	case ready > held:
		m.lots = append(m.lots, spendLot{since: now, nodes: ready - held, known: true})
	case ready < held:
		for gone := held - ready; gone > 0; {
			top := &m.lots[len(m.lots)-1]
			k := min(gone, top.nodes)
			if kept := now.Sub(top.since); top.known && kept < billingMinimum {
				billed += float64(k) * (billingMinimum - kept).Seconds()
			}
			top.nodes -= k
			gone -= k
			if top.nodes == 0 {
				m.lots = m.lots[:len(m.lots)-1]
			}
		}
	}
	return billed
}

// spendMeters are the process's meters, by schedule namespace/name.
var spendMeters = struct {
	sync.Mutex
	bySchedule map[string]*spendMeter
}{bySchedule: map[string]*spendMeter{}}

// recordSpend bills the schedule's pool for the time since its last pass,
// from the ready nodes this pass observed, in pricePerNodeHour's currency. A
// price that does not parse bills nothing (the schedule reports it).
func recordSpend(es *laxityv1alpha1.ElasticSchedule, ready int32, now time.Time) {
	price, err := laxityv1alpha1.ParseDecimal("spec.nodePool.pricePerNodeHour", es.Spec.NodePool.PricePerNodeHour, laxityv1alpha1.MaxPricePerNodeHour)
	if err != nil {
		return
	}
	// The CRD defaults billingMinimum to 60s.
	minimum := time.Minute
	if m := es.Spec.NodePool.BillingMinimum; m != nil {
		minimum = m.Duration
	}
	spendMeters.Lock()
	key := es.Namespace + "/" + es.Name
	m := spendMeters.bySchedule[key]
	if m == nil {
		m = &spendMeter{}
		spendMeters.bySchedule[key] = m
	}
	nodeSeconds := m.observe(ready, now, minimum)
	spendMeters.Unlock()
	counter := poolSpendMetric.WithLabelValues(es.Namespace, es.Name)
	if nodeSeconds > 0 {
		counter.Add(nodeSeconds * price / 3600)
	}
}

// forgetSpend drops the meter of a schedule that has gone.
func forgetSpend(namespace, name string) {
	spendMeters.Lock()
	delete(spendMeters.bySchedule, namespace+"/"+name)
	spendMeters.Unlock()
}
