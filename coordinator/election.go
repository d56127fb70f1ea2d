package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Election is one leader election (/election/<name>), run with the recipe of
// the ZooKeeper documentation: every candidate creates a protected ephemeral
// sequential node and watches only its predecessor; the lowest node leads.
type Election struct {
	s    *Session
	name string
	dir  string
}

// Candidate is the data of a candidate node.
type Candidate struct {
	Name string `json:"name"` // the member name of the candidate
}

// LeaderInfo describes the current leader of an election.
type LeaderInfo struct {
	Candidate
	Node    string // full path of the leader's candidate node
	Session int64  // the leader's session id
}

// Election returns the election called name (ElectionRebalance,
// ElectionScheduler, or another valid node name).
func (g Group) Election(name string) (*Election, error) {
	s := g.s
	if err := validateNodeName(name); err != nil {
		return nil, fmt.Errorf("election: %w", err)
	}
	return &Election{s: s, name: name, dir: s.path(electionDir, name)}, nil
}

// Campaign enters the election as candidate and blocks until this session
// leads, then returns the Leadership. A session holds one candidacy of an
// election at a time: its nodes that a Resign or a withdrawal could not
// delete (the session suspended) are deleted first, and an older node of
// its own found ahead of the new one is removed, not waited for. Cancelling ctx withdraws the candidacy
// and returns ctx's error; a lost session returns an error wrapping
// drover.ErrSessionLost.
func (e *Election) Campaign(ctx context.Context, candidate string) (*Leadership, error) {
	if err := validateNodeName(candidate); err != nil {
		return nil, fmt.Errorf("election %s: candidate: %w", e.name, err)
	}
	data, err := json.Marshal(Candidate{Name: candidate})
	if err != nil {
		return nil, fmt.Errorf("election %s: encode candidate: %w", e.name, err)
	}
	// An older candidacy of this session first: a term whose resign could
	// not delete its node (the session suspended) left it, alive as long
	// as the session, and every candidate behind it would wait for it.
	if err := e.removeLeftovers(ctx); err != nil {
		return nil, err
	}
	// The create waits for its real outcome even when ctx ends meanwhile: a
	// create abandoned mid-flight could still land and leave a candidate
	// node nobody watches, which would block the election for as long as
	// this session lives.
	node, err := bounded(context.WithoutCancel(ctx), e.s, func(c zkConn) (string, error) {
		return c.CreateProtectedEphemeralSequential(e.dir+"/"+candidatePrefix, data, e.s.acl)
	})
	if err != nil {
		return nil, fmt.Errorf("election %s: create candidate node: %w", e.name, err)
	}
	e.s.candidacies.add(node)
	if err := ctx.Err(); err != nil {
		e.withdraw(node)
		return nil, err
	}
	l, err := e.await(ctx, node)
	if err != nil {
		e.withdraw(node)
		return nil, err
	}
	return l, nil
}

// await waits until node is the lowest candidate.
func (e *Election) await(ctx context.Context, node string) (*Leadership, error) {
	mine := path.Base(node)
	for {
		names, err := children(ctx, e.s, e.dir)
		if err != nil {
			return nil, fmt.Errorf("election %s: list candidates: %w", e.name, err)
		}
		sortCandidates(names)
		idx := -1
		for i, n := range names {
			if n == mine {
				idx = i
			}
		}
		if idx < 0 {
			if err := e.s.usable(); err != nil {
				return nil, fmt.Errorf("election %s: %w", e.name, err)
			}
			return nil, fmt.Errorf("election %s: candidate node %s vanished", e.name, node)
		}
		if idx == 0 {
			return e.lead(ctx, node)
		}
		pred := e.dir + "/" + names[idx-1]
		type watch struct {
			exists bool
			owner  int64
			ch     <-chan zk.Event
		}
		w, err := bounded(ctx, e.s, func(c zkConn) (watch, error) {
			exists, st, ch, err := c.ExistsW(pred)
			if err != nil || !exists {
				return watch{exists: exists, ch: ch}, err
			}
			return watch{exists, st.EphemeralOwner, ch}, nil
		})
		if err != nil {
			return nil, fmt.Errorf("election %s: watch predecessor %s: %w", e.name, pred, err)
		}
		if !w.exists {
			continue
		}
		if w.owner == e.s.id {
			// A candidacy of this very session that an earlier term left
			// behind: a resign whose delete failed while the session was
			// suspended (the node lives as long as the session does). A
			// session campaigns once at a time, so it is stale: waiting for
			// it would wait for ourselves, and every candidate behind us
			// with us, for as long as the session lives.
			e.s.log.Warn("removing a stale candidacy of this session", "election", e.name, "node", pred)
			if err := deleteNode(ctx, e.s, pred, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return nil, fmt.Errorf("election %s: remove stale candidacy %s: %w", e.name, pred, err)
			}
			continue
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.s.done:
			return nil, fmt.Errorf("election %s: %w", e.name, e.s.Err())
		}
	}
}

// lead confirms on the server that node belongs to this session and returns
// the Leadership.
func (e *Election) lead(ctx context.Context, node string) (*Leadership, error) {
	if err := checkOwnNode(ctx, e.s, node); err != nil {
		return nil, fmt.Errorf("election %s: %w", e.name, err)
	}
	lctx, cancel := context.WithCancelCause(context.Background())
	l := &Leadership{e: e, node: node, ctx: lctx, cancel: cancel}
	l.wg.Add(1)
	go l.watchNode()
	e.s.log.Info("elected leader", "election", e.name, "node", node)
	return l, nil
}

// checkOwnNode returns nil when node exists and is held by s's session,
// else an error wrapping drover.ErrNotLeader or drover.ErrSessionLost.
func checkOwnNode(ctx context.Context, s *Session, node string) error {
	st, err := bounded(ctx, s, func(c zkConn) (*zk.Stat, error) {
		exists, st, err := c.Exists(node)
		if err == nil && !exists {
			return nil, zk.ErrNoNode
		}
		return st, err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: candidate node %s is gone", drover.ErrNotLeader, node)
	case err != nil:
		return fmt.Errorf("check candidate node %s: %w", node, err)
	case st.EphemeralOwner != s.id:
		return fmt.Errorf("%w: candidate node %s belongs to session %#x, not %#x", drover.ErrNotLeader, node, st.EphemeralOwner, s.id)
	}
	return s.usable()
}

// withdraw deletes a candidate node, best effort, bounded by the request
// timeout. A node it cannot delete stays in the session's candidacies, for
// the next campaign to remove.
func (e *Election) withdraw(node string) {
	err := e.s.deleteCandidacy(context.Background(), node)
	if err != nil && e.s.Err() == nil {
		e.s.log.Warn("withdraw candidacy failed", "election", e.name, "node", node, "error", err)
	}
}

// removeLeftovers deletes this election's candidate nodes that this
// session created and could not delete (a withdraw or a resign while it
// was suspended). A session campaigns once at a time per election, so
// each is stale; left, it would hold every candidate behind it, this
// session's next one included, for as long as the session lives.
func (e *Election) removeLeftovers(ctx context.Context) error {
	for _, node := range e.s.candidacies.under(e.dir + "/") {
		e.s.log.Warn("removing a stale candidacy of this session", "election", e.name, "node", node)
		if err := e.s.deleteCandidacy(ctx, node); err != nil {
			return fmt.Errorf("election %s: remove stale candidacy %s: %w", e.name, node, err)
		}
	}
	return nil
}

// deleteCandidacy deletes a candidate node of this session; once it is
// gone (deleted now, or before), it leaves the session's candidacies.
func (s *Session) deleteCandidacy(ctx context.Context, node string) error {
	err := deleteNode(ctx, s, node, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		s.candidacies.remove(node)
		return nil
	}
	return err
}

// candidacySet is a session's candidate nodes not known deleted.
type candidacySet struct {
	mu    sync.Mutex
	nodes map[string]struct{}
}

func (c *candidacySet) add(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes == nil {
		c.nodes = map[string]struct{}{}
	}
	c.nodes[node] = struct{}{}
}

func (c *candidacySet) remove(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, node)
}

// under returns the nodes whose path starts with prefix (an election's
// directory and a slash).
func (c *candidacySet) under(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n := range c.nodes {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// Leader returns the current leader, or an error wrapping drover.ErrNotFound
// when there is no candidate.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	for {
		names, err := children(ctx, e.s, e.dir)
		if err != nil {
			return LeaderInfo{}, fmt.Errorf("election %s: list candidates: %w", e.name, err)
		}
		if len(names) == 0 {
			return LeaderInfo{}, fmt.Errorf("election %s: no leader: %w", e.name, drover.ErrNotFound)
		}
		sortCandidates(names)
		node := e.dir + "/" + names[0]
		nd, err := getNode(ctx, e.s, node)
		if errors.Is(err, zk.ErrNoNode) {
			continue // the leader just left; look again
		}
		if err != nil {
			return LeaderInfo{}, fmt.Errorf("election %s: read leader %s: %w", e.name, node, err)
		}
		info := LeaderInfo{Node: node, Session: nd.stat.EphemeralOwner}
		if err := json.Unmarshal(nd.data, &info.Candidate); err != nil {
			return info, fmt.Errorf("election %s: decode leader %s: %w", e.name, node, err)
		}
		return info, nil
	}
}

// sortCandidates orders candidate node names by their sequence numbers
// (protected names start with a random GUID, so plain order is wrong).
func sortCandidates(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return sequenceOf(names[i]) < sequenceOf(names[j]) })
}

// Leadership is held while this session's candidate node is the lowest one
// and the session is not Lost. Suspension does not end it, but a leader must
// not act while suspended: use Act.
type Leadership struct {
	e      *Election
	node   string
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Node returns the full path of the leader's candidate node.
func (l *Leadership) Node() string { return l.node }

// Session returns the session the leadership belongs to.
func (l *Leadership) Session() *Session { return l.e.s }

// Done is closed when the leadership ends: the session is lost, the
// candidate node is gone, or Resign was called. It never restarts.
func (l *Leadership) Done() <-chan struct{} { return l.ctx.Done() }

// Context returns a context cancelled when the leadership ends.
func (l *Leadership) Context() context.Context { return l.ctx }

// Err returns nil while leading, then an error wrapping drover.ErrNotLeader
// that says why the leadership ended.
func (l *Leadership) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Suspended reports whether the session is suspended (the leader must not
// act now, but may resume without a new election).
func (l *Leadership) Suspended() bool { return l.e.s.State() == Suspended }

// Act blocks until the leader may act — leadership held and the session
// Connected — and returns a context cancelled as soon as it may not: on
// suspension, on the end of the leadership, or when ctx ends. Call cancel
// when done. It returns an error wrapping drover.ErrNotLeader once the
// leadership has ended, or ctx's error.
//
// A scheduler loops: ctx, cancel, err := l.Act(parent); fire under ctx; on
// cancellation call Act again, which waits out a suspension.
func (l *Leadership) Act(ctx context.Context) (context.Context, context.CancelFunc, error) {
	for {
		if err := l.Err(); err != nil {
			return nil, nil, err
		}
		st, changed := l.e.s.status()
		if st == Connected {
			actx, cancel := context.WithCancel(ctx)
			go func() {
				select {
				case <-changed: // any change from Connected is a suspension or a loss
				case <-l.ctx.Done():
				case <-actx.Done():
				}
				cancel()
			}()
			return actx, cancel, nil
		}
		select {
		case <-changed:
		case <-l.ctx.Done():
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// Check confirms on the server that this session still holds the leader's
// candidate node; it returns an error wrapping drover.ErrNotLeader (or
// drover.ErrSessionLost) otherwise.
func (l *Leadership) Check(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	if err := checkOwnNode(ctx, l.e.s, l.node); err != nil {
		if errors.Is(err, drover.ErrSessionLost) {
			return fmt.Errorf("%w: %w", drover.ErrNotLeader, err)
		}
		return err
	}
	return nil
}

// Resign ends the leadership and deletes the candidate node. Idempotent.
func (l *Leadership) Resign(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		l.cancel(fmt.Errorf("%w: election %s: resigned", drover.ErrNotLeader, l.e.name))
		l.wg.Wait()
		err = l.e.s.deleteCandidacy(ctx, l.node) // one it cannot delete: the next campaign does
		if errors.Is(err, drover.ErrSessionLost) {
			err = nil // gone with the session
		}
		if err != nil {
			err = fmt.Errorf("election %s: resign: delete %s: %w", l.e.name, l.node, err)
		}
	})
	return err
}

// watchNode ends the leadership when the candidate node goes or the session
// is lost.
func (l *Leadership) watchNode() {
	defer l.wg.Done()
	s := l.e.s
	end := func(format string, a ...any) {
		l.cancel(fmt.Errorf("%w: election %s: %s", drover.ErrNotLeader, l.e.name, fmt.Sprintf(format, a...)))
		s.log.Warn("leadership ended", "election", l.e.name, "reason", context.Cause(l.ctx))
	}
	backoff := 50 * time.Millisecond
	for {
		type watch struct {
			exists bool
			owner  int64
			ch     <-chan zk.Event
		}
		w, err := bounded(l.ctx, s, func(c zkConn) (watch, error) {
			exists, st, ch, err := c.ExistsW(l.node)
			if err != nil {
				return watch{}, err
			}
			return watch{exists, st.EphemeralOwner, ch}, nil
		})
		switch {
		case l.ctx.Err() != nil:
			return
		case s.Err() != nil || errors.Is(err, drover.ErrSessionLost):
			end("%v", errors.Join(s.Err(), err))
			return
		case err != nil:
			select {
			case <-time.After(backoff):
			case <-s.done:
			case <-l.ctx.Done():
			}
			backoff = min(backoff*2, s.cfg.SessionTimeout/4)
			continue
		case !w.exists:
			end("candidate node %s is gone", l.node)
			return
		case w.owner != s.id:
			end("candidate node %s belongs to session %#x", l.node, w.owner)
			return
		}
		backoff = 50 * time.Millisecond
		select {
		case <-w.ch:
		case <-s.done:
			end("%v", s.Err())
			return
		case <-l.ctx.Done():
			return
		}
	}
}
