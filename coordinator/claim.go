package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// Claim is this session's ownership of one queue: the ephemeral owner node
// /owners/<queue> and the version of /offsets/<queue> it last wrote. Commits
// and the release are fenced by both. A Claim is safe for concurrent use;
// its writes are serialised.
//
// A worker holds one Claim per owned queue for as long as it owns it, so a
// Claim keeps only what fencing needs: no goroutine, context or watch, its
// node paths built when a write needs them, and its Done channel made when
// someone asks for it (docs/decisions.md, "Issue 14: one compact record per
// owned queue").
type Claim struct {
	s     *Session
	queue string
	owner Owner

	mu            sync.Mutex
	ownerVersion  int32
	offsetVersion int32
	offset        drover.Offset // last committed
	pending       *pendingWrite // a write whose outcome is unknown
	ended         error         // non-nil once released or fenced
	done          chan struct{} // made by Done; closed when ended is set

	// The end callback (OnEnd) has a lock of its own: c.mu is held
	// through a write's round trip.
	endMu   sync.Mutex
	onEnd   func()
	endSeen bool // end has run: OnEnd calls at once
}

// ownerPath is /owners/<queue>; the name was validated by the claim.
func (c *Claim) ownerPath() string { return c.s.path(ownersDir, c.queue) }

// offsetPath is /offsets/<queue>.
func (c *Claim) offsetPath() string { return c.s.path(offsetsDir, c.queue) }

// pendingWrite is a write of data whose reply was lost.
type pendingWrite struct {
	data    []byte
	offset  drover.Offset
	release bool
}

// maxClaimsInFlight bounds the Claim calls of one session that send
// requests at the same time; the others wait their turn. A claim's reads
// and its multi are coalesced with the session's others (read_batch.go,
// multi_batch.go: one multiRead and one multi in flight a session), so
// the bound says how many claims share a request, not how many requests
// a session has outstanding. ZooKeeper stops reading a connection while
// the server holds more than globalOutstandingLimit requests (1,000 by
// default), pings included: before the reads were coalesced, 256 claims a
// session, each with requests of its own, lost 25 of 100 sessions at a
// million queues and the bound was 64. With both coalescers 256 take a
// joiner's 9,900 claims in half the requests and no session was lost in
// seven starts of 100 × 1,000,000 (docs/decisions.md, "Issue 43: 256 claims
// a session, now that reads are coalesced").
const maxClaimsInFlight = 256

// ownerCheck is the answer to whether a queue's owner node exists: the
// session holding it (0: none).
type ownerCheck struct {
	holder int64
	err    error
}

// claimRead is what a claim reads of its queue in one request: the offset
// node (err wraps drover.ErrNotFound when missing) and the owner check.
type claimRead struct {
	cur   OffsetNode
	err   error
	owner ownerCheck
}

// errPlacedNew stands for the offset read a claim of a queue placed as new
// skips: built once, not per claim (formatting it took 3% of a member's CPU
// while claiming a fleet's first assignment).
var errPlacedNew = fmt.Errorf("placed as new: %w", drover.ErrNotFound)

// Claim takes ownership of queue for owner, as one multi:
// create(/owners/<queue>, ephemeral) + setData(/offsets/<queue>, same data,
// read version). The claim bumps the offset's version, which fences every
// earlier owner. /offsets/<queue> is created (at position 0) when missing.
//
// With owner.New (the queue was placed as new to the fleet) the first
// attempt skips the read and sends the create multi at once, coalesced
// with the session's other claims; an offset that exists after all fails
// it, and the claim goes on as usual.
//
// It fails with an error wrapping drover.ErrNotOwner when another session
// owns the queue (the previous owner has not released yet: WaitReleased, then
// try again if the queue is still assigned to this member).
func (c Claims) Claim(ctx context.Context, queue string, owner Owner) (*Claim, error) {
	s := c.s
	ownerPath, err := s.queuePath(ownersDir, queue)
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	if owner.Member == "" {
		return nil, fmt.Errorf("claim %s: %w: owner member name is empty", queue, drover.ErrInvalidConfig)
	}
	ownerData, err := s.ownerJSON.encode(owner)
	if err != nil {
		return nil, fmt.Errorf("claim %s: encode owner: %w", queue, err)
	}
	offsetPath := s.path(offsetsDir, queue)
	// A member gaining 10,000 queues claims them all at once: without a
	// bound its requests pile up past the server's outstanding-request
	// limit, which then stops reading the connection, pings included, and
	// the session is lost.
	// A claim of a queue placed as new sends no read at first, only its
	// share of a coalesced multi, but it takes a place all the same: a
	// fleet's first assignment marks every queue new, and 100 members
	// claiming 3,000 queues each without a bound lost 10 sessions at
	// 300,000 queues (docs/decisions.md, "Issue 43: a million keys").
	held := false
	acquire := func() error {
		if held {
			return nil
		}
		select {
		case s.claims <- struct{}{}:
			held = true
			return nil
		case <-ctx.Done():
			return fmt.Errorf("claim %s: %w", queue, ctx.Err())
		case <-s.done:
			return fmt.Errorf("claim %s: %w", queue, s.Err())
		}
	}
	defer func() {
		if held {
			<-s.claims
		}
	}()
	// A queue still owned (its previous owner has not released it, or its
	// session has not expired) is answered by a read: in a coalesced multi
	// its failing create would make every other claim of the batch be sent
	// again. The owner check goes out with the offset read, in one request
	// coalesced with the session's other reads (read_batch.go: a joining
	// member claims its share 64 at a time, and a request per read was most
	// of ZooKeeper's work; docs/decisions.md, "Issue 43: reads in one
	// request"). It reads the owner node: its stat names the session that
	// holds it, a missing node says nobody does. The session applies
	// requests in the order sent, as before; the multi checks what they
	// read either way.
	readNodes := func() claimRead {
		res, err := s.reads.get(ctx, offsetPath, ownerPath)
		if err != nil {
			return claimRead{err: fmt.Errorf("read offset of %s: %w", queue, err), owner: ownerCheck{err: err}}
		}
		var rd claimRead
		switch off := res[0]; {
		case errors.Is(off.err, zk.ErrNoNode):
			rd.err = fmt.Errorf("read offset of %s: %w", queue, errNotFound(offsetPath))
		case off.err != nil:
			rd.err = fmt.Errorf("read offset of %s: %w", queue, off.err)
		default:
			rd.cur, rd.err = decodeOffset(queue, offsetPath, off.nd)
		}
		switch own := res[1]; {
		case errors.Is(own.err, zk.ErrNoNode):
		case own.err != nil:
			rd.owner.err = own.err
		default:
			rd.owner.holder = own.nd.stat.EphemeralOwner
		}
		return rd
	}
	const attempts = 5
	// refusedAt is the offset version the last refused claim had read (-1:
	// none refused yet). A refusal comes back through the session's server
	// after that server applied every transaction before it, so a read that
	// follows sees the version the leader checked against: a second refusal
	// at the same version means the server's tree disagrees with the
	// leader's (serverDisagrees), and every further attempt on it would be
	// refused too.
	refusedAt := int32(-1)
	for attempt := 1; ; attempt++ {
		var (
			cur     OffsetNode
			owned   ownerCheck
			checked bool // owned holds this attempt's owner check
		)
		err := errPlacedNew // only tested with errors.Is: never returned
		if err := acquire(); err != nil {
			return nil, err
		}
		if !owner.New || attempt > 1 {
			rd := readNodes()
			cur, err, owned, checked = rd.cur, rd.err, rd.owner, true
		}
		if errors.Is(err, drover.ErrNotFound) {
			// Never claimed (a read first, because a create of an existing
			// node is still a write the server logs): create the offset at
			// position 0 and the owner node in one multi. Nobody to fence:
			// every earlier claim would have created the offset. Another
			// session creating either first fails it; then claim as usual.
			_, cerr := s.batch.multi(context.WithoutCancel(ctx), []any{
				&zk.CreateRequest{Path: offsetPath, Data: zeroOffset(), Acl: s.acl, Flags: zk.FlagPersistent},
				&zk.CreateRequest{Path: ownerPath, Data: ownerData, Acl: s.acl, Flags: zk.FlagEphemeral},
			})
			switch {
			case cerr == nil:
				c := &Claim{s: s, queue: queue, owner: owner, ownerVersion: 0, offsetVersion: 0}
				if err := ctx.Err(); err != nil {
					c.Abandon(context.WithoutCancel(ctx))
					return nil, fmt.Errorf("claim %s: %w", queue, err)
				}
				return c, nil
			case errors.Is(cerr, zk.ErrNodeExists) || isUnknownOutcome(cerr):
				// An unknown outcome may have left our owner node: the
				// usual path finds it (owned by this session) and the
				// caller drops it as an orphan.
				rd := readNodes()
				cur, err, owned, checked = rd.cur, rd.err, rd.owner, true
			default:
				return nil, fmt.Errorf("claim %s: create %s: %w", queue, offsetPath, cerr)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("claim %s: %w", queue, err)
		}
		curData, _ := json.Marshal(cur.Offset)
		if !checked { // every path here read the offset and the owner together; kept for safety
			owned = readNodes().owner
		}
		if owned.err != nil {
			return nil, fmt.Errorf("claim %s: %w", queue, owned.err)
		}
		if owned.holder != 0 {
			return nil, ownedBy(queue, owned.holder, s.id)
		}
		// The multi waits for its real outcome even when ctx ends meanwhile
		// (bounded by the request timeout): an abandoned claim that still
		// landed would leave an owner node without a Claim, and the queue's
		// next owner would wait on it for as long as this session lives. A
		// claim that landed after ctx ended is given back below.
		// Concurrent claims of this session go out in one multi (each
		// failing alone: multi_batch.go).
		res, err := s.batch.multi(context.WithoutCancel(ctx), []any{
			&zk.CreateRequest{Path: ownerPath, Data: ownerData, Acl: s.acl, Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: offsetPath, Data: curData, Version: cur.Version},
		})
		applied := err == nil
		offsetVersion := int32(-1)
		if applied {
			offsetVersion = res[1].Stat.Version
		}
		switch {
		case applied:
		case errors.Is(err, zk.ErrNodeExists):
			return nil, ownedBy(queue, 0, s.id)
		case errors.Is(err, zk.ErrBadVersion) && checked && cur.Version == refusedAt:
			s.serverDisagrees(offsetPath, cur.Version)
			return nil, fmt.Errorf("claim %s: %w: the session's ZooKeeper server read version %d twice and the leader refused it twice (%w)",
				queue, ErrServerDisagrees, cur.Version, err)
		case errors.Is(err, zk.ErrBadVersion) && attempt < attempts:
			if checked {
				refusedAt = cur.Version
			}
			continue // the offset moved between our read and the claim
		case isUnknownOutcome(err) && ctx.Err() == nil && s.Err() == nil:
			// Did the claim apply? Our owner node answers it.
			if err := s.awaitConnected(ctx); err != nil {
				return nil, fmt.Errorf("claim %s: %w", queue, err)
			}
			on, rerr := s.Claims().Owner(ctx, queue)
			switch {
			case errors.Is(rerr, drover.ErrNotFound) && attempt < attempts:
				continue // not applied
			case rerr == nil && on.Session == s.id && bytes.Equal(mustJSON(on.Owner), ownerData):
				applied, offsetVersion = true, cur.Version+1
			case rerr == nil:
				return nil, ownedBy(queue, on.Session, s.id)
			default:
				return nil, fmt.Errorf("claim %s: %w: %w (re-read: %w)", queue, ErrOutcomeUnknown, err, rerr)
			}
		default:
			return nil, fmt.Errorf("claim %s: %w", queue, err)
		}
		if applied {
			c := &Claim{s: s, queue: queue, owner: owner, ownerVersion: 0, offsetVersion: offsetVersion, offset: cur.Offset}
			if err := ctx.Err(); err != nil {
				c.Abandon(context.WithoutCancel(ctx))
				return nil, fmt.Errorf("claim %s: %w", queue, err)
			}
			return c, nil
		}
	}
}

// ErrOwnedElsewhere marks a claim refused because the owner node of the
// queue belongs to another session, as the claim's own owner check saw:
// there is no orphan of this session to drop (Claims.DropOwnOrphan), only
// a release to wait for. A claim that cannot tell whose node it met wraps
// drover.ErrNotOwner alone.
var ErrOwnedElsewhere = errors.New("coordinator: owned by another session")

// ownedBy builds the error for a queue whose owner node session holds (0:
// not known), self being this session. It names the session only: reading
// the owner node for the member's name would cost a read per contended
// claim, thousands when a member joins a large fleet.
func ownedBy(queue string, session, self int64) error {
	switch {
	case session == 0:
		return fmt.Errorf("claim %s: %w: owned by another session", queue, drover.ErrNotOwner)
	case session == self:
		return fmt.Errorf("claim %s: %w: owned by this session %#x", queue, drover.ErrNotOwner, session)
	default:
		return fmt.Errorf("claim %s: %w: %w: session %#x", queue, drover.ErrNotOwner, ErrOwnedElsewhere, session)
	}
}

// Queue returns the claimed queue's name.
func (c *Claim) Queue() string { return c.queue }

// Owner returns the owner data the claim was made with.
func (c *Claim) Owner() Owner { return c.owner }

// Offset returns the offset as claimed or last committed.
func (c *Claim) Offset() drover.Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}

// Done is closed when the claim ends: released, or fenced (by a newer owner,
// an offset reset, or the end of the session, as learnt by a write or by
// Verify).
func (c *Claim) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.ended != nil {
			close(c.done)
		}
	}
	return c.done
}

// end records why the claim ended, once; c.mu is held.
func (c *Claim) end(err error) {
	if c.ended == nil {
		c.ended = err
		if c.done != nil {
			close(c.done)
		}
		c.endMu.Lock()
		c.endSeen = true
		f := c.onEnd
		c.onEnd = nil
		c.endMu.Unlock()
		if f != nil {
			go f()
		}
	}
}

// OnEnd arranges for f to be called once, in its own goroutine, when the
// claim ends (released or fenced; at once when it has ended already), as
// context.AfterFunc does for a context: whoever holds many claims learns of
// their ends without a goroutine per claim waiting on Done. A later call
// replaces an f not called yet. It never waits for a write in progress.
func (c *Claim) OnEnd(f func()) {
	c.endMu.Lock()
	if !c.endSeen {
		c.onEnd = f
		c.endMu.Unlock()
		return
	}
	c.endMu.Unlock()
	go f()
}

// Err returns nil while the claim is held, then why it is not: released, or
// fenced (wrapping drover.ErrFenced).
func (c *Claim) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}

// Commit stores off as the queue's offset, as one multi:
// check(/owners/<queue>, owner version) + setData(/offsets/<queue>, off, my
// offset version). Through a suspension it waits (bounded by ctx) and, when
// a reply was lost, re-reads the offset before deciding or retrying.
//
// It fails with an error wrapping drover.ErrFenced when a newer owner (or an
// offset reset) has fenced this claim, or when the session that made the
// claim is lost (then it wraps drover.ErrSessionLost too). A fenced claim is
// over: stop the queue, never retry. Other errors (ctx ended, outcome still
// unknown) leave the claim as it is.
func (c *Claim) Commit(ctx context.Context, off drover.Offset) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.write(ctx, off, false); err != nil {
		return fmt.Errorf("commit offset of %s at %d: %w", c.queue, off.Position, err)
	}
	return nil
}

// Release stores final as the queue's offset and gives up the claim, as one
// multi: check(/owners/<queue>) + setData(/offsets/<queue>, final) +
// delete(/owners/<queue>). It fails like Commit; releasing a released claim
// fails with drover.ErrNotOwner.
func (c *Claim) Release(ctx context.Context, final drover.Offset) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.write(ctx, final, true); err != nil {
		return fmt.Errorf("release %s at %d: %w", c.queue, final.Position, err)
	}
	return nil
}

// write runs a commit or a release; c.mu is held.
func (c *Claim) write(ctx context.Context, off drover.Offset, release bool) error {
	if _, err := c.resolvePending(ctx); err != nil {
		return err
	}
	if c.ended != nil {
		return c.ended
	}
	data, err := json.Marshal(off)
	if err != nil {
		return fmt.Errorf("encode offset: %w", err)
	}
	for {
		if err := c.s.usable(); err != nil {
			return c.fence(err)
		}
		res, err := c.s.batch.multi(ctx, c.ops(data, release))
		switch {
		case err == nil:
			c.applied(off, res[1].Stat.Version, release)
			return nil
		case isVersionConflict(err):
			return c.fence(fencedError(c.offsetVersion))
		case errors.Is(err, drover.ErrSessionLost):
			return c.fence(err)
		case !isUnknownOutcome(err):
			return err
		}
		c.pending = &pendingWrite{data: data, offset: off, release: release}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
		}
		applied, err := c.resolvePending(ctx)
		if err != nil || applied {
			return err
		}
		// Not applied: send it again.
	}
}

// ops returns the multi of a commit (check owner + set offset) or a release
// (the same + delete owner).
func (c *Claim) ops(data []byte, release bool) []any {
	ops := []any{
		&zk.CheckVersionRequest{Path: c.ownerPath(), Version: c.ownerVersion},
		&zk.SetDataRequest{Path: c.offsetPath(), Data: data, Version: c.offsetVersion},
	}
	if release {
		ops = append(ops, &zk.DeleteRequest{Path: c.ownerPath(), Version: c.ownerVersion})
	}
	return ops
}

// fencedError is the error of a commit or release refused by the server.
func fencedError(offsetVersion int32) error {
	return fmt.Errorf("%w: the owner node or the offset version (%d) moved on", drover.ErrFenced, offsetVersion)
}

// resolvePending settles a write whose reply was lost by re-reading the
// offset node: version+1 with our data means applied; an unchanged version
// means not applied; anything else means fenced. It reports whether the
// pending write was applied. c.mu is held.
func (c *Claim) resolvePending(ctx context.Context) (bool, error) {
	if c.pending == nil {
		return false, nil
	}
	if err := c.s.awaitConnected(ctx); err != nil {
		if errors.Is(err, drover.ErrSessionLost) {
			return false, c.fence(err)
		}
		return false, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	// Read at once, not coalesced with the session's other reads: a
	// release's next owner writes soon after it, and a re-read that waited
	// behind a multiRead found the version two past ours and took an
	// applied release for a fence (docs/decisions.md, "Issue 43: claims
	// verified in shared requests").
	nd, err := getNode(ctx, c.s, c.offsetPath())
	switch {
	case errors.Is(err, drover.ErrSessionLost):
		return false, c.fence(err)
	case err != nil:
		return false, fmt.Errorf("%w: re-read %s: %w", ErrOutcomeUnknown, c.offsetPath(), err)
	case nd.stat.Version == c.offsetVersion+1 && bytes.Equal(nd.data, c.pending.data):
		p := c.pending
		c.pending = nil
		c.applied(p.offset, nd.stat.Version, p.release)
		return true, nil
	case nd.stat.Version == c.offsetVersion:
		c.pending = nil
		return false, nil
	default:
		c.pending = nil
		return false, c.fence(fmt.Errorf("%w: the offset version moved from %d to %d", drover.ErrFenced, c.offsetVersion, nd.stat.Version))
	}
}

// applied records a successful write.
func (c *Claim) applied(off drover.Offset, offsetVersion int32, release bool) {
	c.offset, c.offsetVersion = off, offsetVersion
	if release {
		c.end(fmt.Errorf("%w: the claim on %s was released", drover.ErrNotOwner, c.queue))
	}
}

// fence ends the claim with err, which is made to wrap drover.ErrFenced.
func (c *Claim) fence(err error) error {
	if !errors.Is(err, drover.ErrFenced) {
		err = fmt.Errorf("%w: %w", drover.ErrFenced, err)
	}
	if c.ended == nil {
		c.end(err)
		c.s.log.Warn("claim fenced", "queue", c.queue, "error", err)
	}
	return err
}

// Abandon gives up a fenced claim's owner node, if this session still holds
// it, without touching the offset, so that the queue can be claimed again.
// For a claim still held it is a release that keeps the committed offset.
func (c *Claim) Abandon(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		if err := c.write(ctx, c.offset, true); err == nil || !errors.Is(err, drover.ErrFenced) {
			return err
		}
	}
	s, ownerPath := c.s, c.ownerPath()
	_, err := bounded(ctx, s, func(conn zkConn) (struct{}, error) {
		exists, st, err := conn.Exists(ownerPath)
		if err != nil || !exists || st.EphemeralOwner != s.id || conn.SessionID() != s.id {
			return struct{}{}, err
		}
		return struct{}{}, conn.Delete(ownerPath, st.Version)
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("abandon %s: %w", c.queue, err)
	}
	return nil
}

// WaitReleased blocks until /owners/<queue> does not exist (returning at once
// when it does not), ctx ends, or the session is lost.
func (c Claims) WaitReleased(ctx context.Context, queue string) error {
	s := c.s
	p, err := s.queuePath(ownersDir, queue)
	if err != nil {
		return fmt.Errorf("wait for release: %w", err)
	}
	for {
		type watch struct {
			exists bool
			ch     <-chan zk.Event
		}
		w, err := bounded(ctx, s, func(c zkConn) (watch, error) {
			exists, _, ch, err := c.ExistsW(p)
			return watch{exists, ch}, err
		})
		if err != nil {
			return fmt.Errorf("wait for release of %s: %w", queue, err)
		}
		if !w.exists {
			return nil
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for release of %s: %w", queue, ctx.Err())
		case <-s.done:
			return fmt.Errorf("wait for release of %s: %w", queue, s.Err())
		}
	}
}

// awaitConnected waits until the session is Connected, ctx ends or the
// session is lost (an error wrapping drover.ErrSessionLost).
func (s *Session) awaitConnected(ctx context.Context) error {
	for {
		st, changed := s.status()
		switch st {
		case Connected:
			return s.usable()
		case Lost:
			return s.Err()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ownerCache keeps the JSON of the last Owner a session claimed as: a
// member claims every queue of a generation as the same Owner, and at a
// million queues encoding it again for each was 5% of the members' CPU in
// a fleet's start (docs/decisions.md, "Issue 43: a claim encodes its owner
// once a generation"). The bytes it returns are shared: read only.
type ownerCache struct {
	mu    sync.Mutex
	owner Owner
	data  []byte
}

// encode returns o's JSON (New is not stored, so it is not compared).
func (c *ownerCache) encode(o Owner) ([]byte, error) {
	o.New = false
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data != nil && c.owner == o {
		return c.data, nil
	}
	data, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	c.owner, c.data = o, data
	return data, nil
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}
