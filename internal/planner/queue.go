package planner

// queue is a binary min-heap of queries by key, then query index: the
// ready and pending sets of a simulation, so that choosing the next batch
// takes logarithmic rather than linear time in the number of queries.
type queue struct{ items []queued }

type queued struct {
	key   float64
	query int
}

func (a queued) less(b queued) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.query < b.query
}

func (h *queue) len() int { return len(h.items) }

func (h *queue) reset() { h.items = h.items[:0] }

// top is the least item; the queue must not be empty.
func (h *queue) top() queued { return h.items[0] }

func (h *queue) push(key float64, query int) {
	h.items = append(h.items, queued{key, query})
	h.up(len(h.items) - 1)
}

func (h *queue) pop() queued {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

// init orders items that were appended or rekeyed in place.
func (h *queue) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *queue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.items[i].less(h.items[parent]) {
			return
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *queue) down(i int) {
	n := len(h.items)
	for {
		least := i
		if l := 2*i + 1; l < n && h.items[l].less(h.items[least]) {
			least = l
		}
		if r := 2*i + 2; r < n && h.items[r].less(h.items[least]) {
			least = r
		}
		if least == i {
			return
		}
		h.items[i], h.items[least] = h.items[least], h.items[i]
		i = least
	}
}
