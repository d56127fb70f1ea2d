package ops

import (
	"context"
	"path"
	"sort"
	"strings"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// Search for fleets of many queues (issue 34): a queue is found by prefix
// or pattern from the names alone (two listings: the registry's buckets in
// ZooKeeper, the Redis set of queues enqueued to), and only the page of
// matches shown is read in detail.

// QueueNames lists every queue: configured (the registry) or enqueued to
// (the Redis set), sorted. It reads no queue's details. See
// ListQueueNames.
func (o *Ops) QueueNames(ctx context.Context) (names []string, configured map[string]bool, err error) {
	return ListQueueNames(ctx, o.zk, o.store)
}

// ListQueueNames is the one answer to "which queues exist" that every
// listing gives (`drover ctl status`, the console's counts, queues page,
// find and bulk actions, the autoscaler): the queues configured in
// ZooKeeper (a family's key once registered) and those in the Redis set of
// queues enqueued to (drover:queues; a key enqueued to before its family
// registers it), sorted, with the configured ones marked. A family key
// that retired is in neither: its registry entry and its set entry go
// with it (docs/decisions.md, "Issue 40: retired keys leave no ghosts").
// The cost is two listings, whatever the queues hold.
func ListQueueNames(ctx context.Context, zk *coordinator.Session, store *queue.Store) (names []string, configured map[string]bool, err error) {
	conf, err := zk.Queues().Names(ctx)
	if err != nil {
		return nil, nil, err
	}
	seen, err := store.Inspector().Queues(ctx)
	if err != nil {
		return nil, nil, err
	}
	configured = make(map[string]bool, len(conf))
	for _, q := range conf {
		configured[q] = true
	}
	names = append([]string(nil), conf...)
	for _, q := range seen {
		if !configured[q] && drover.ValidateQueueName(q) == nil {
			names = append(names, q)
		}
	}
	sort.Strings(names)
	return names, configured, nil
}

// Match selects queue names: a pattern with *, ? or [ is a shell pattern
// (path.Match: "tenant-*-emails"); anything else is a prefix ("tenant-42").
// The empty match selects nothing; "*" selects everything.
type Match string

// Validate checks a pattern's syntax.
func (m Match) Validate() error {
	if m.glob() {
		if _, err := path.Match(string(m), ""); err != nil {
			return badInput("pattern %q: %v", string(m), err)
		}
	}
	return nil
}

func (m Match) glob() bool { return strings.ContainsAny(string(m), "*?[") }

// Matches reports whether q is selected.
func (m Match) Matches(q string) bool {
	if m == "" {
		return false
	}
	if m.glob() {
		ok, _ := path.Match(string(m), q)
		return ok
	}
	return strings.HasPrefix(q, string(m))
}

// filter returns the names m selects; sorted names in, sorted out. A
// prefix is found by binary search.
func (m Match) filter(names []string) []string {
	if m == "" {
		return nil
	}
	if !m.glob() {
		i := sort.SearchStrings(names, string(m))
		j := i
		for j < len(names) && strings.HasPrefix(names[j], string(m)) {
			j++
		}
		return names[i:j:j]
	}
	var out []string
	for _, q := range names {
		if m.Matches(q) {
			out = append(out, q)
		}
	}
	return out
}

// FindQueues returns the page of queues m selects, each read in full (its
// offset and owner from ZooKeeper, its backlog from Redis): the cost is
// two name listings plus the page's queues, whatever the fleet's size.
func (o *Ops) FindQueues(ctx context.Context, m Match, page, perPage int) (QueuePage, error) {
	if err := m.Validate(); err != nil {
		return QueuePage{}, err
	}
	q := QueueQuery{Page: page, PerPage: perPage}
	if err := q.Validate(); err != nil {
		return QueuePage{}, err
	}
	names, configured, err := o.QueueNames(ctx)
	if err != nil {
		return QueuePage{}, err
	}
	matched := m.filter(names)
	p := QueuePage{Total: len(matched), Page: q.Page, PerPage: q.PerPage, Pages: (len(matched) + q.PerPage - 1) / q.PerPage, Queues: []QueueRow{}}
	start := min((q.Page-1)*q.PerPage, len(matched))
	end := min(start+q.PerPage, len(matched))
	p.Queues, err = o.QueueRows(ctx, matched[start:end], configured)
	return p, err
}

// QueueRows reads the rows of the named queues (at most a page: the cost
// grows with len(queues), not with the fleet): each queue's offset and
// owner node, its pause flag, its backlog. configured marks which are
// configured (nil: all). Assigned is left empty: the assignment of a
// large fleet is a large node, and the owner is what the row shows.
func (o *Ops) QueueRows(ctx context.Context, queues []string, configured map[string]bool) ([]QueueRow, error) {
	rows := make([]QueueRow, 0, len(queues))
	if len(queues) == 0 {
		return rows, nil
	}
	pauses, err := o.zk.Pauses().Of(ctx, queues)
	if err != nil {
		return nil, err
	}
	views, stats, err := o.viewsAndStats(ctx, queues, true)
	if err != nil {
		return nil, err
	}
	for i, q := range queues {
		views[i].Name = q
		r := queueRow(views[i], stats[i], "", pauses)
		r.Configured = configured == nil || configured[q]
		rows = append(rows, r)
	}
	return rows, nil
}
