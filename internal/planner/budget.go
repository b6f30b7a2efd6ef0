package planner

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultSearchBudget is the compute time one plan search may take unless
// the caller says otherwise, in the operator (--plan-timeout) and in
// laxity plan alike: well above the search time of every sample and of
// 10,000 queries over a day, well below what would let one tenant's plan
// stall the others.
const DefaultSearchBudget = 30 * time.Second

// ErrSearchBudget is wrapped by the error PlanContext returns when its
// context ends before the search does: the plan would take longer than the
// caller allows.
var ErrSearchBudget = errors.New("the plan search ran out of its time budget")

// checkEvery is how many simulated events pass between two looks at the
// context.
const checkEvery = 4096

// budget lets a search give up when its context ends. A nil budget never
// does, so simulations run outside a search (SimulateFixed) need none.
type budget struct {
	ctx   context.Context
	ticks int
	// events counts every simulated event of the search: what the
	// improvement phase measures its share of the work by. A run that
	// takes the rest of its schedule from an echo counts the events
	// simulating it would have, so that the echo saves time but moves no
	// plan; echoed is how many of them it did not simulate.
	events, echoed int
}

// abort unwinds a search whose context ended; PlanContext recovers it.
type abort struct{ err error }

// check looks at the context now.
func (b *budget) check() {
	if b == nil || b.ctx == nil {
		return
	}
	if err := b.ctx.Err(); err != nil {
		panic(abort{err})
	}
}

// tick counts one simulated event and looks at the context every
// checkEvery events.
func (b *budget) tick() {
	if b == nil {
		return
	}
	b.ticks++
	b.events++
	if b.ticks >= checkEvery {
		b.ticks = 0
		b.check()
	}
}

// echo counts n events a run took from an echo as simulated.
func (b *budget) echo(n int) {
	if b == nil {
		return
	}
	b.echoed += n
	b.ticks += n
	b.events += n
	if b.ticks >= checkEvery {
		b.ticks = 0
		b.check()
	}
}

// recoverBudget turns an abort into the error of PlanContext.
func recoverBudget(err *error) {
	r := recover()
	if r == nil {
		return
	}
	a, ok := r.(abort)
	if !ok {
		panic(r)
	}
	*err = fmt.Errorf("%w (%w)", ErrSearchBudget, a.err)
}
