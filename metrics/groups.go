package metrics

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
)

// Defaults of the queue groups (SetupConfig.Groups, MaxGroups).
const (
	// DefaultMaxGroups is how many distinct groups a process exports
	// before it puts further queues in OtherGroup.
	DefaultMaxGroups = 50
	// OtherGroup is the group of queues past MaxGroups.
	OtherGroup = "_other"
	// groupSeparator ends the part of a queue name that is its default
	// group: "emails:customer-42" is in group "emails".
	groupSeparator = ":"
	// maxGroupCache is how many queue → group answers are kept before the
	// cache starts again (the answers are recomputed, not changed). Only
	// groups with patterns or a hook cache answers: an answer took about
	// 260 bytes, and a worker that ran the tasks of 100,000 keys of a
	// family during a churn kept 26 MB of them (docs/decisions.md,
	// "Issue 40: an idle worker's memory after a churn").
	maxGroupCache = 16_384
)

// groups maps a queue to the bounded group its counters, timers and
// aggregate backlog gauges are exported under (the "group" label): the
// first of the configured patterns the name matches (the pattern is the
// group), else the hook's answer, else the name up to its first ':'. At
// most max distinct groups are handed out; later ones become OtherGroup.
// Safe for concurrent use; an answer costs a map lookup once known.
type groups struct {
	patterns []string
	of       func(queue string) string // the hook; nil: the name's prefix

	cache sync.Map // queue → group; only with patterns or a hook
	size  atomic.Int64

	mu sync.Mutex // held to hand a group out
	// known is the set of groups handed out, read without the lock:
	// replaced under mu, never changed. full: no group is handed out
	// any more (further ones are OtherGroup).
	known atomic.Pointer[map[string]bool]
	full  atomic.Bool
	max   int
}

func newGroups(patterns []string, hook func(string) string, max int) (*groups, error) {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("metrics setup: group pattern %q: %w", p, err)
		}
		if p == "" {
			return nil, fmt.Errorf("metrics setup: empty group pattern")
		}
	}
	if max < 0 {
		return nil, fmt.Errorf("metrics setup: max groups %d is negative", max)
	}
	if max == 0 {
		max = DefaultMaxGroups
	}
	if max < len(patterns)+1 {
		return nil, fmt.Errorf("metrics setup: max groups %d is less than the %d group patterns plus %s", max, len(patterns), OtherGroup)
	}
	g := &groups{patterns: patterns, of: hook, max: max}
	known := map[string]bool{}
	for _, p := range patterns {
		known[p] = true // a configured group always has its place
	}
	g.known.Store(&known)
	g.full.Store(len(known) >= max-1)
	return g, nil
}

// group returns the group of queue. Without patterns or a hook it keeps
// nothing per queue: the answer is a cut of the name and a lookup.
func (g *groups) group(queue string) string {
	if len(g.patterns) == 0 && g.of == nil {
		grp, _, _ := strings.Cut(queue, groupSeparator)
		return g.admit(grp)
	}
	if v, ok := g.cache.Load(queue); ok {
		return v.(string)
	}
	grp := g.compute(queue)
	if g.size.Add(1) > maxGroupCache {
		g.cache.Clear()
		g.size.Store(1)
	}
	g.cache.Store(queue, grp)
	return grp
}

func (g *groups) compute(queue string) string {
	grp := ""
	for _, p := range g.patterns {
		if ok, _ := path.Match(p, queue); ok {
			grp = p
			break
		}
	}
	if grp == "" && g.of != nil {
		grp = g.of(queue)
	}
	if grp == "" {
		grp, _, _ = strings.Cut(queue, groupSeparator)
	}
	return g.admit(grp)
}

// admit returns grp if it was handed out or there is room for it, else
// OtherGroup. Without a new group it takes no lock.
func (g *groups) admit(grp string) string {
	if (*g.known.Load())[grp] {
		return grp
	}
	if g.full.Load() {
		return OtherGroup
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	known := *g.known.Load()
	if known[grp] {
		return grp
	}
	if len(known) >= g.max-1 { // one place is OtherGroup's
		g.full.Store(true)
		return OtherGroup
	}
	next := make(map[string]bool, len(known)+1)
	for k := range known {
		next[k] = true
	}
	next[grp] = true
	g.known.Store(&next)
	return grp
}

// rewrite returns labels with a "queue" label replaced by the "group" of
// its queue, in buf (no allocation). Calls with more than maxLabels labels
// are returned as they are (they take the sinks' slow path anyway).
func (g *groups) rewrite(labels []Label, buf *[maxLabels]Label) []Label {
	if len(labels) > maxLabels {
		return labels
	}
	n := copy(buf[:], labels)
	for i := 0; i < n; i++ {
		if buf[i].Name == "queue" {
			buf[i] = Label{Name: "group", Value: g.group(buf[i].Value)}
		}
	}
	return buf[:n]
}
