package learn

import (
	"time"

	"github.com/laxity-dev/laxity/internal/costmodel"
)

// MaxLeadTimes is how many measured lead times a pool's record keeps, the
// newest: as many as an ElasticSchedule's status.leadTime holds.
const MaxLeadTimes = 32

// NodeRequest is a request for more nodes than were ready, being timed: the
// nodes asked for, and since when.
type NodeRequest struct {
	Nodes int
	Since time.Time
}

// LeadTimes is a pool's provisioning lead time as it is measured pass by
// pass: the request being timed (nil when none), and the lead times
// measured, oldest first, to the second, at most MaxLeadTimes of them. The
// operator keeps it in a schedule's status; the offline run keeps it as the
// operator does, and both measure through Observe.
type LeadTimes struct {
	Pending  *NodeRequest
	Measured []time.Duration
}

// Observe brings m up to date after a pass asked the pool for requested
// nodes and saw ready ones, at now: a request above the ready count starts a
// measurement, the ready count reaching it ends one, and a request withdrawn
// before it was met is dropped. A request raised while one is timed is
// timed from the first: the pool was asked for the first nodes since then.
// It returns the lead time measured in this pass, to the second as it is
// kept, with true, or false when no measurement ended; a pass that ends one
// starts none, the next does.
func (m *LeadTimes) Observe(requested, ready int, now time.Time) (time.Duration, bool) {
	var lead time.Duration
	measured := false
	switch p := m.Pending; {
	case p != nil && ready >= p.Nodes:
		lead, measured = max(now.Sub(p.Since), 0).Round(time.Second), true
		m.Measured = newestLeads(append(m.Measured, lead))
		m.Pending = nil
	case p != nil && requested <= ready:
		m.Pending = nil
	}
	if m.Pending == nil && !measured && requested > ready {
		m.Pending = &NodeRequest{Nodes: requested, Since: now}
	}
	return lead, measured
}

// newestLeads is the newest MaxLeadTimes of leads.
func newestLeads(leads []time.Duration) []time.Duration {
	if n := len(leads); n > MaxLeadTimes {
		return leads[n-MaxLeadTimes:]
	}
	return leads
}

// Learned is the lead time learned from the measured ones (LeadTime), to
// the second, as a schedule's status keeps it; the declared one when none
// was measured.
func (m LeadTimes) Learned(declared time.Duration, s Settings) time.Duration {
	if len(m.Measured) == 0 {
		return declared
	}
	seconds := make([]float64, len(m.Measured))
	for i, d := range m.Measured {
		seconds[i] = d.Seconds()
	}
	return costmodel.Duration(LeadTime(declared.Seconds(), seconds, s)).Round(time.Second)
}

// Planned is the lead time plans assume (PlannedLeadTime): the declared
// one, or the learned one when it is materially longer.
func (m LeadTimes) Planned(declared time.Duration, s Settings) time.Duration {
	if len(m.Measured) == 0 {
		return declared
	}
	return costmodel.Duration(PlannedLeadTime(declared.Seconds(), m.Learned(declared, s).Seconds()))
}
