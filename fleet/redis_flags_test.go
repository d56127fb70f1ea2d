package fleet

import (
	"maps"
	"testing"
	"time"
)

// The leader acts on redis_unreachable flags only once none has changed for
// a grace: one outage noticed by the members in turn moves nothing, and
// neither does their recovery in turn. Fails on the per-member grace, which
// cut a, then a and b, off while c had not yet flagged (and gave c every
// queue), then, on the way back, cut b off alone.
func TestRedisFlagsAreActedOnOnceSettled(t *testing.T) {
	const grace = 3 * time.Second
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		at       int      // ms after t0
		flagged  []string // the members' flags read then; nil: no read
		decideAt int      // decide at this time (ms after t0)
		silent   bool     // the leader's own Redis answered no ping since the last step
		want     []string // members treated as cut off
		wantWait bool     // the flags have not settled
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"one member cut off, then back", []step{
			{at: 0, flagged: []string{"b"}, decideAt: 2000, want: nil, wantWait: true},
			{decideAt: 3000, want: []string{"b"}},
			{at: 10000, flagged: []string{}, decideAt: 12000, want: []string{"b"}, wantWait: true},
			{decideAt: 13000, want: nil},
		}},
		{"every member notices one outage in turn", []step{
			{at: 0, flagged: []string{"a"}, decideAt: 2900, want: nil, wantWait: true},
			{at: 2900, flagged: []string{"a", "b"}, decideAt: 5000, want: nil, wantWait: true},
			{at: 5000, flagged: []string{"a", "b", "c"}, decideAt: 7900, want: nil, wantWait: true},
			{decideAt: 8000, want: []string{"a", "b", "c"}},
			// Redis back: c, then b, then a recover; nobody is cut off
			// alone on the way. Clearing flags needs no answer of the
			// leader's.
			{at: 60000, flagged: []string{"a", "b"}, decideAt: 62000, want: []string{"a", "b", "c"}, wantWait: true, silent: true},
			{at: 62000, flagged: []string{"a"}, decideAt: 64000, want: []string{"a", "b", "c"}, wantWait: true, silent: true},
			{at: 64000, flagged: []string{}, decideAt: 67000, want: nil, silent: true},
		}},
		// The CI chaos run's redis-cut-all: a noticed first and b more
		// than a grace later, on a loaded machine. The leader shares the
		// outage (no answer since the flags changed), so it cuts nobody
		// off until the flags have stood four graces; by then every
		// member that is going to notice has. Fails on the grace alone,
		// which cut a off at 3000 ms and gave its queues to b and c.
		{"an outage the leader shares is not acted on at the grace", []step{
			{at: 0, flagged: []string{"a"}, decideAt: 3000, want: nil, wantWait: true, silent: true},
			{at: 4500, flagged: []string{"a", "b"}, decideAt: 7500, want: nil, wantWait: true, silent: true},
			{decideAt: 16499, want: nil, wantWait: true, silent: true},
			// Only c never noticed: it reaches Redis, and takes the queues.
			{decideAt: 16500, want: []string{"a", "b"}, silent: true},
		}},
		{"an answer of the leader's Redis after the flag is the evidence", []step{
			{at: 0, flagged: []string{"b"}, decideAt: 3000, want: nil, wantWait: true, silent: true},
			{decideAt: 3800, want: []string{"b"}},
		}},
		{"a flapping flag defers the decision at most four graces", []step{
			{at: 0, flagged: []string{"b"}},
			{at: 2000, flagged: []string{"b", "c"}},
			{at: 4000, flagged: []string{"b"}},
			{at: 6000, flagged: []string{"b", "c"}},
			{at: 8000, flagged: []string{"b"}},
			{at: 10000, flagged: []string{"b", "c"}, decideAt: 11999, want: nil, wantWait: true},
			{decideAt: 12000, want: []string{"b", "c"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var answers uint64 // the leader's own pings answered
			f := newRedisFlags(grace, func() uint64 { return answers })
			for i, st := range tc.steps {
				if st.flagged != nil {
					f.note(cutOff(members("a", "b", "c"), st.flagged...), at(st.at))
				}
				if st.decideAt == 0 {
					continue
				}
				if !st.silent {
					answers++
				}
				got, wait := f.decide(at(st.decideAt))
				if !maps.Equal(got, names(st.want...)) || (wait > 0) != st.wantWait {
					t.Fatalf("step %d (decide at %dms): want %v (unsettled %v), have %v (wait %s)", i, st.decideAt, st.want, st.wantWait, keys(got), wait)
				}
			}
		})
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
