package dispatch

import "time"

// Exhausted names the queries whose failed step has used up its attempts,
// as Decide reports them (Decision.Exhausted), without choosing a step:
// none while a step of the schedule runs, and none of a held query.
func Exhausted(now time.Time, settings Settings, queries []Query) []string {
	var out []string
	for _, q := range queries {
		if _, busy := q.busy(); busy {
			return nil
		}
	}
	for i := range queries {
		q := &queries[i]
		if q.Held {
			continue
		}
		if _, _, exhausted := q.next(now, settings); exhausted {
			out = append(out, q.Name)
		}
	}
	return out
}
