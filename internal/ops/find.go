package ops

import (
	"context"
	"errors"
	"fmt"
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

// Names lists every queue: configured (the registry) or enqueued to
// (the Redis set), sorted. It reads no queue's details. See
// ListQueueNames.
func (o Queues) Names(ctx context.Context) (names []string, configured map[string]bool, err error) {
	return o.queueNames(ctx)
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
//
// Its cost is bounded (issue 41): at most MaxMatchBytes, at most
// MaxMatchWildcards of *, ? and [classes], and matched against the
// caller's deadline (the console's request bound), which ends it with
// ErrMatchDeadline.
type Match string

// Bounds of a Match (docs/web.md, "Limits").
const (
	MaxMatchBytes     = 256
	MaxMatchWildcards = 8
)

// ErrMatchDeadline: the deadline came before every name was matched (the
// console answers 503).
var ErrMatchDeadline = errors.New("the match did not finish within the request's bound")

// Validate checks a pattern's length, its number of wildcards and its
// syntax; the error wraps ErrBadInput and names the limit.
func (m Match) Validate() error {
	if len(m) > MaxMatchBytes {
		return badInput("match: %d bytes, at most %d", len(m), MaxMatchBytes)
	}
	if n := m.wildcards(); n > MaxMatchWildcards {
		return badInput("match: %d wildcards (*, ?, [), at most %d", n, MaxMatchWildcards)
	}
	if m.glob() {
		if err := validGlob(string(m)); err != nil {
			return badInput("pattern %q: %v", string(m), err)
		}
	}
	return nil
}

// wildcards counts the unescaped *, ? and [ of m.
func (m Match) wildcards() int {
	n := 0
	for i := 0; i < len(m); i++ {
		switch m[i] {
		case '\\':
			i++
		case '*', '?', '[':
			n++
		}
	}
	return n
}

func (m Match) glob() bool { return strings.ContainsAny(string(m), "*?[") }

// Matches reports whether q is selected.
func (m Match) Matches(q string) bool {
	if m == "" {
		return false
	}
	if m.glob() {
		return m.Validate() == nil && compileGlob(string(m)).match(q)
	}
	return strings.HasPrefix(q, string(m))
}

// matchCheckEvery is how many names filter matches between two looks at
// its deadline.
const matchCheckEvery = 1024

// filter returns the names m (valid) selects; sorted names in, sorted
// out. A prefix is found by binary search; a pattern is compiled once and
// matched against ctx's deadline (ErrMatchDeadline when it comes first).
func (o *core) filter(ctx context.Context, m Match, names []string) ([]string, error) {
	if m == "" {
		return nil, nil
	}
	if !m.glob() {
		i := sort.SearchStrings(names, string(m))
		j := i
		for j < len(names) && strings.HasPrefix(names[j], string(m)) {
			j++
		}
		return names[i:j:j], nil
	}
	g := compileGlob(string(m))
	var out []string
	for i, q := range names {
		if i%matchCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%w (%d of %d names matched; narrow the pattern): %w", ErrMatchDeadline, i, len(names), err)
			}
		}
		if g.match(q) {
			out = append(out, q)
		}
	}
	o.matched.Add(int64(len(names)))
	return out, nil
}

// NamesMatched is how many names patterns were matched against since o
// was made (a measure of what finds and bulk selections cost).
func (o Find) NamesMatched() int64 { return o.matched.Load() }

// Queues returns the page of queues m selects, each read in full (its
// offset and owner from ZooKeeper, its backlog from Redis): the cost is
// two name listings plus the page's queues, whatever the fleet's size.
func (o Find) Queues(ctx context.Context, m Match, page, perPage int) (QueuePage, error) {
	if err := m.Validate(); err != nil {
		return QueuePage{}, err
	}
	q := QueueQuery{Page: page, PerPage: perPage}
	if err := q.Validate(); err != nil {
		return QueuePage{}, err
	}
	names, configured, err := o.queueNames(ctx)
	if err != nil {
		return QueuePage{}, err
	}
	matched, err := o.filter(ctx, m, names)
	if err != nil {
		return QueuePage{}, err
	}
	p := QueuePage{Total: len(matched), Page: q.Page, PerPage: q.PerPage, Pages: (len(matched) + q.PerPage - 1) / q.PerPage, Queues: []QueueRow{}}
	start := min((q.Page-1)*q.PerPage, len(matched))
	end := min(start+q.PerPage, len(matched))
	p.Queues, err = Queues{o.core}.Rows(ctx, matched[start:end], configured)
	return p, err
}

// Rows reads the rows of the named queues (at most a page: the cost
// grows with len(queues), not with the fleet): each queue's offset and
// owner node, its pause flag, its backlog. configured marks which are
// configured (nil: all). Assigned is left empty: the assignment of a
// large fleet is a large node, and the owner is what the row shows.
func (o Queues) Rows(ctx context.Context, queues []string, configured map[string]bool) ([]QueueRow, error) {
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
