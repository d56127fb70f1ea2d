package scheduler

import (
	"hash/fnv"
	"time"
)

// firing is what the leader does with one due entry.
type firing struct {
	fires   []time.Time // slots to enqueue, oldest first; may be empty
	next    time.Time   // the entry's next slot; zero when it has none
	dropped bool        // CatchupAll left out older missed slots
}

// catchupPolicy is what planDue needs of the scheduler's configuration.
type catchupPolicy struct {
	policy Catchup
	grace  time.Duration // a slot more late than this is missed (CatchupSkip)
	limit  int           // most slots CatchupAll fires for one entry at once
}

// planDue decides what to fire for an entry whose pending slot is due at
// now (now already has the entry's jitter offset taken off), and which slot
// comes next.
//
// The most recent due slot (the last slot at or before now) counts as on
// time when it is at most grace late; every earlier due slot, and a late
// most recent one, was missed:
//
//   - once fires the most recent due slot, on time or not;
//   - skip fires it only when it is on time;
//   - all fires every due slot, oldest first, but at most limit of them
//     (the most recent ones).
//
// A relative interval has a single pending slot and no fixed sequence: it
// fires it (unless skip and late) and its next slot is now + every.
func planDue(t *timing, pending, now time.Time, p catchupPolicy) firing {
	now = now.Truncate(time.Second)
	if t.seq == nil {
		f := firing{next: now.Add(t.relative)}
		if p.policy != CatchupSkip || now.Sub(pending) <= p.grace {
			f.fires = []time.Time{pending}
		}
		return f
	}
	n := 1
	if p.policy == CatchupAll {
		n = max(p.limit, 1)
	}
	slots, dropped := recentSlots(t.seq, pending, now, n)
	latest := slots[len(slots)-1]
	f := firing{next: t.seq.next(latest), fires: slots}
	switch p.policy {
	case CatchupAll:
		f.dropped = dropped
	case CatchupSkip:
		if now.Sub(latest) > p.grace {
			f.fires = nil
		}
	}
	return f
}

// recentSlots returns the latest n slots of seq in [from, now], oldest
// first, and whether earlier slots in that range were left out. from must
// be a slot at or before now, so the result is never empty.
//
// It looks back from now over a window that doubles until it holds n slots
// or reaches from, so that the cost depends on n and not on how long the
// outage was (an every-second cron after a year down is 31 million slots).
func recentSlots(seq slotSeq, from, now time.Time, n int) ([]time.Time, bool) {
	for window := time.Minute; ; window *= 2 {
		start := now.Add(-window)
		whole := !start.After(from) || window > time.Duration(1<<61)
		var slots []time.Time
		var s time.Time
		if whole {
			s = from
		} else {
			s = seq.next(start)
		}
		for !s.IsZero() && !s.After(now) {
			slots = append(slots, s)
			s = seq.next(s)
		}
		if whole || len(slots) >= n {
			if len(slots) == 0 { // cannot happen: from is a slot ≤ now
				return []time.Time{from}, false
			}
			dropped := !whole || len(slots) > n
			if len(slots) > n {
				slots = slots[len(slots)-n:]
			}
			return slots, dropped
		}
	}
}

// planFirst returns the first slot of an entry that is to be (re)planned at
// now: a new entry, an updated or re-enabled one (score 0). It never goes
// back to slots before now, except for an at entry that has not fired (it
// fires late, subject to its catch-up policy) and a relative interval whose
// last run plus every has passed. It returns the zero time when the entry
// has no slot left.
func planFirst(t *timing, meta Meta, now time.Time) time.Time {
	now = now.Truncate(time.Second)
	if t.seq == nil {
		if meta.LastRunAt.IsZero() {
			return now
		}
		return meta.LastRunAt.Truncate(time.Second).Add(t.relative)
	}
	if o, ok := t.seq.(oneShot); ok {
		if !meta.LastFire.IsZero() && !meta.LastFire.Before(o.at) {
			return time.Time{}
		}
		return o.at
	}
	base := now.Add(-time.Second) // the first slot at or after now
	if meta.LastFire.After(base) {
		base = meta.LastFire
	}
	return t.seq.next(base)
}

// jitterOffset is the fixed delay of every fire of the entry called name:
// a hash of the name modulo jitter+1, in whole seconds. Entries that share a
// cron line spread over the jitter window; an entry always fires at the same
// offset after its slots, and the slot id is not changed.
func jitterOffset(name string, jitter time.Duration) time.Duration {
	secs := int64(jitter / time.Second)
	if secs <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return time.Duration(h.Sum64()%uint64(secs+1)) * time.Second
}
