package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/drover-dev/drover"
)

// Committer returns the session, which commits this claim together with
// the session's other claims (CommitMany).
func (c *Claim) Committer() drover.ClaimCommitter { return Claims{c.s} }

var _ drover.BatchClaim = (*Claim)(nil)

// resolveReads bounds the re-reads CommitMany sends at once to settle a
// lost reply (maxClaimsInFlight's reasoning: the server stops reading a
// connection with too many requests outstanding).
const resolveReads = 32

// commitItem is one claim's commit in a CommitMany call.
type commitItem struct {
	i    int // index in the caller's requests
	c    *Claim
	off  drover.Offset
	data []byte
	sent bool // sent once: a pending write of the claim is this one
}

// CommitMany commits the offsets of many claims of this session (a worker's
// committer flush: every queue that progressed) in one call, as one fenced
// multi per batchBytes of operations: each claim's operations are those of
// Claim.Commit (check its owner node's version + set its offset at its
// offset version), so each still checks its own fencing. A fenced-out claim
// fails alone (multiBatcher.flush drops it and sends the rest again) and
// ends, as Claim.Commit would end it.
//
// A multi whose reply is lost (outcome unknown) is settled as Claim.Commit
// settles one: each of its claims re-reads its offset node once connected
// (applied, not applied: sent again, or fenced), and when ctx has ended it
// reports ErrOutcomeUnknown and the claim's next write settles it first.
//
// It returns one error per request, in order, meaning what Claim.Commit's
// would: an error wrapping drover.ErrFenced means that queue is lost. A
// claim that appears twice gets an error and nothing is written for it.
//
// A request whose claim is not a *Claim of this session — a wrapper, or a
// claim of another session — is committed alone through its own Commit,
// after the batch. Refusing it would never commit it: a wrapper that embeds
// *Claim inherits Committer and is batched with the session's claims, and
// its Commit (which may count or watch commits) must still run; the bench's
// counting wrapper never saw its last offset committed when it was refused.
func (c Claims) CommitMany(ctx context.Context, reqs []drover.CommitRequest) []error {
	s := c.s
	errs := make([]error, len(reqs))
	var alone []int
	defer func() {
		// Outside the batch's locks: a wrapper's Commit takes its
		// claim's lock, which may be one of the batch's.
		for _, i := range alone {
			errs[i] = reqs[i].Claim.Commit(ctx, reqs[i].Offset)
		}
	}()
	s.batch.commitMu.Lock()
	defer s.batch.commitMu.Unlock()
	items := make([]*commitItem, 0, len(reqs))
	seen := make(map[*Claim]bool, len(reqs))
	for i, r := range reqs {
		c, ok := r.Claim.(*Claim)
		switch {
		case r.Claim == nil || ok && c == nil:
			errs[i] = fmt.Errorf("commit offset at %d: %w: no claim", r.Offset.Position, drover.ErrInvalidConfig)
			continue
		case !ok || c.s != s:
			alone = append(alone, i)
			continue
		case seen[c]:
			errs[i] = fmt.Errorf("commit offset of %s at %d: %w: the claim is twice in one batch", c.queue, r.Offset.Position, drover.ErrInvalidConfig)
			continue
		}
		data, err := json.Marshal(r.Offset)
		if err != nil {
			errs[i] = fmt.Errorf("commit offset of %s at %d: encode offset: %w", c.queue, r.Offset.Position, err)
			continue
		}
		seen[c] = true
		items = append(items, &commitItem{i: i, c: c, off: r.Offset, data: data})
	}
	// Every claim's lock is held until its outcome is known, as
	// Claim.Commit holds its own: its writes stay serialised.
	for _, it := range items {
		it.c.mu.Lock()
	}
	defer func() {
		for _, it := range items {
			it.c.mu.Unlock()
		}
	}()
	for todo := items; len(todo) > 0; {
		todo = s.commitRound(ctx, todo, errs)
	}
	for _, it := range items {
		if errs[it.i] != nil {
			errs[it.i] = fmt.Errorf("commit offset of %s at %d: %w", it.c.queue, it.off.Position, errs[it.i])
		}
	}
	return errs
}

// commitRound settles what is pending, sends the rest, and returns the
// items to send again (a lost reply found not applied). The claims' locks
// are held.
func (s *Session) commitRound(ctx context.Context, todo []*commitItem, errs []error) []*commitItem {
	// Writes whose reply was lost are settled by a re-read each: after a
	// lost multi that is every claim of it, so the reads go out together
	// (the claims' locks are held; each goroutine touches its own claim).
	applied := make([]bool, len(todo))
	errs1 := make([]error, len(todo))
	var g errgroup.Group
	g.SetLimit(resolveReads)
	for k, it := range todo {
		if it.c.pending == nil {
			continue
		}
		g.Go(func() error {
			applied[k], errs1[k] = it.c.resolvePending(ctx)
			return nil
		})
	}
	g.Wait()
	send := make([]*commitItem, 0, len(todo))
	for k, it := range todo {
		c := it.c
		applied, err := applied[k], errs1[k]
		switch {
		case err != nil:
			errs[it.i] = err
		case applied && it.sent:
			// Our write was applied after all.
		case c.ended != nil:
			errs[it.i] = c.ended
		default:
			if err := s.usable(); err != nil {
				errs[it.i] = c.fence(err)
				continue
			}
			send = append(send, it)
		}
	}
	var again []*commitItem
	limit := s.batch.commitBytes
	if limit <= 0 {
		limit = batchBytes
	}
	for len(send) > 0 {
		// One multi's worth: at least one claim, then as many as fit.
		var batch []*multiReq
		size := 0
		for len(batch) < len(send) {
			it := send[len(batch)]
			r := &multiReq{ops: it.c.ops(it.data, false)}
			for _, op := range r.ops {
				r.size += opSize(op)
			}
			if len(batch) > 0 && size+r.size > limit {
				break
			}
			size += r.size
			batch = append(batch, r)
		}
		part := send[:len(batch)]
		send = send[len(batch):]
		if err := ctx.Err(); err != nil {
			for _, it := range part {
				errs[it.i] = err // not sent
			}
			continue
		}
		s.batch.flush(ctx, batch)
		for k, it := range part {
			c, r := it.c, batch[k]
			it.sent = true
			switch err := r.err; {
			case err == nil:
				c.applied(it.off, r.res[1].Stat.Version, false)
			case isVersionConflict(err):
				errs[it.i] = c.fence(fencedError(c.offsetVersion))
			case errors.Is(err, drover.ErrSessionLost):
				errs[it.i] = c.fence(err)
			case !isUnknownOutcome(err):
				errs[it.i] = err
			default:
				c.pending = &pendingWrite{data: it.data, offset: it.off}
				if ctx.Err() != nil {
					errs[it.i] = fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
					continue
				}
				again = append(again, it) // settled by a re-read next round
			}
		}
	}
	return again
}
