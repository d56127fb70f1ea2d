package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/drover-dev/drover"
)

// ErrQueueOwned: an admin operation was refused because a member owns the
// queue.
var ErrQueueOwned = errors.New("coordinator: queue is owned")

// Owner is the data of /owners/<queue>.
type Owner struct {
	Member     string `json:"member"`      // member name
	MemberPath string `json:"member_path"` // the member's node
	Generation int64  `json:"generation"`  // assignment generation the claim was made for
	// New, a hint not stored: the assignment placed the queue as new to
	// the fleet (a ShareChunk marked New), so the claim creates its offset
	// without reading it first, and claims as usual when it exists.
	New bool `json:"-"`
}

// OwnerNode is /owners/<queue> as read.
type OwnerNode struct {
	Owner   Owner
	Session int64 // the owner's session id
	Version int32
	Err     error // set when the data could not be decoded
}

// OffsetNode is /offsets/<queue> as read. Version is the queue's fencing
// token: every claim bumps it.
type OffsetNode struct {
	Offset  drover.Offset
	Version int32
}

// ResetOptions tune ResetOffset.
type ResetOptions struct {
	// AllowOwned resets even while a member owns the queue (say, while the
	// queue is paused). The reset bumps the offset's version, so the owner's
	// next commit fails with drover.ErrFenced: it must stop the queue and
	// claim it again, reading the reset offset.
	AllowOwned bool
}

// Owner reads /owners/<queue>. It fails with drover.ErrNotFound when the
// queue is not owned.
func (c Claims) Owner(ctx context.Context, queue string) (OwnerNode, error) {
	p, nd, err := readQueueNode(ctx, c.s, ownersDir, "owner", queue)
	if err != nil {
		return OwnerNode{}, err
	}
	on := OwnerNode{Session: nd.stat.EphemeralOwner, Version: nd.stat.Version}
	if err := json.Unmarshal(nd.data, &on.Owner); err != nil {
		on.Err = fmt.Errorf("decode owner %s: %w", p, err)
		return on, on.Err
	}
	return on, nil
}

// Owned lists the queues that have an owner node (the children of
// /owners): one request.
func (c Claims) Owned(ctx context.Context) (map[string]bool, error) {
	s := c.s
	names, err := children(ctx, s, s.path(ownersDir))
	if err != nil {
		return nil, fmt.Errorf("list owners: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// Offset reads /offsets/<queue>. It fails with drover.ErrNotFound when the
// queue has never been claimed or reset, and with an error naming the node
// when the data is corrupt.
func (c Claims) Offset(ctx context.Context, queue string) (OffsetNode, error) {
	p, nd, err := readQueueNode(ctx, c.s, offsetsDir, "offset", queue)
	if err != nil {
		return OffsetNode{}, err
	}
	return decodeOffset(queue, p, nd)
}

// decodeOffset decodes queue's offset node p as read.
func decodeOffset(queue, p string, nd nodeData) (OffsetNode, error) {
	on := OffsetNode{Version: nd.stat.Version}
	if err := json.Unmarshal(nd.data, &on.Offset); err != nil {
		return on, fmt.Errorf("read offset of %s: decode %s: %w", queue, p, err)
	}
	return on, nil
}

// readQueueNode reads queue's node under dir (its owner, its offset: what
// says which). A missing node fails wrapping drover.ErrNotFound.
func readQueueNode(ctx context.Context, s *Session, dir, what, queue string) (string, nodeData, error) {
	p, err := s.queuePath(dir, queue)
	if err != nil {
		return "", nodeData{}, fmt.Errorf("read %s: %w", what, err)
	}
	nd, err := getNamed(ctx, s, p, what+" of "+queue, errNotFound(p))
	return p, nd, err
}

// ResetOffset sets a queue's offset (to replay or skip messages) and returns
// the node's new version. Unless opts.AllowOwned, it is refused with an error
// wrapping ErrQueueOwned while a member owns the queue; the check and the
// write are one atomic multi.
func (c Claims) ResetOffset(ctx context.Context, queue string, off drover.Offset, opts ResetOptions) (int32, error) {
	s := c.s
	offPath, err := s.queuePath(offsetsDir, queue)
	if err != nil {
		return 0, fmt.Errorf("reset offset: %w", err)
	}
	ownerPath := s.path(ownersDir, queue)
	data, err := json.Marshal(off)
	if err != nil {
		return 0, fmt.Errorf("reset offset of %s: encode: %w", queue, err)
	}
	if err := s.createIfMissing(ctx, offPath, zeroOffset()); err != nil {
		return 0, fmt.Errorf("reset offset of %s: %w", queue, err)
	}
	ops, setIdx := []any{&zk.SetDataRequest{Path: offPath, Data: data, Version: -1}}, 0
	if !opts.AllowOwned {
		setIdx = 1
		// Creating and deleting the owner node in the same transaction
		// fails with NodeExists exactly when someone owns the queue.
		ops = []any{
			&zk.CreateRequest{Path: ownerPath, Data: []byte(`{"member":"reset"}`), Acl: s.acl, Flags: zk.FlagEphemeral},
			ops[0],
			&zk.DeleteRequest{Path: ownerPath, Version: 0},
		}
	}
	res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) { return c.Multi(ops...) })
	if errors.Is(err, zk.ErrNodeExists) {
		who := "another member"
		if on, err := s.Claims().Owner(ctx, queue); err == nil {
			who = fmt.Sprintf("member %s (session %#x)", on.Owner.Member, on.Session)
		}
		return 0, fmt.Errorf("reset offset of %s: %w by %s", queue, ErrQueueOwned, who)
	}
	if err != nil {
		return 0, fmt.Errorf("reset offset of %s: %w", queue, err)
	}
	return res[setIdx].Stat.Version, nil
}

// DropOffset deletes queue's offset node when the queue is neither
// configured nor owned, and reports whether the node is gone (deleted, or
// never there) or the queue is configured again: false means a member still
// owns it, so try later. A claim that comes between the reads and the
// delete bumps the node's version and the delete fails harmlessly.
func (c Claims) DropOffset(ctx context.Context, queue string) (bool, error) {
	s := c.s
	offPath, err := s.queuePath(offsetsDir, queue)
	if err != nil {
		return false, fmt.Errorf("drop offset: %w", err)
	}
	off, err := getNode(ctx, s, offPath)
	if errors.Is(err, zk.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err)
	}
	// The two checks go out together, after the offset read: a claim
	// after that read bumps the version the delete names, whichever
	// order the checks come back in.
	exists := parallelMap(ctx, []string{s.path(ownersDir, queue), s.queueNodePath(queue)}, func(p string) existsReply {
		ok, err := bounded(ctx, s, func(c zkConn) (bool, error) {
			ok, _, err := c.Exists(p)
			return ok, err
		})
		return existsReply{ok, err}
	})
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err) // a check may not have run
	}
	for _, e := range exists {
		if e.err != nil {
			return false, fmt.Errorf("drop offset of %s: %w", queue, e.err)
		}
	}
	if exists[0].ok {
		return false, nil // owned
	}
	if exists[1].ok {
		return true, nil // registered again: its offset is its own
	}
	err = deleteNode(ctx, s, offPath, off.stat.Version)
	if err != nil && !isVersionConflict(err) {
		return false, fmt.Errorf("drop offset of %s: %w", queue, err)
	}
	return true, nil
}

// existsReply is the reply of one Exists.
type existsReply struct {
	ok  bool
	err error
}

// zeroOffset is the data of a new offset node: nothing processed.
func zeroOffset() []byte { return zeroOffsetData }

// zeroOffsetData is the zero offset's JSON, encoded once: a fleet's first
// claims create a million of them (read only: a request's Data is never
// written to).
var zeroOffsetData = mustJSON(drover.Offset{})

// Offsets reads the offset node of every queue in queues, in the order
// given, with at most ViewParallelism requests in flight (pipelined on the
// session's one connection: the scaler measures a selection of 100,000
// queues every poll). A queue never claimed or reset reads as the zero
// OffsetNode. It fails on the first read that fails otherwise, or on corrupt
// data.
func (c Claims) Offsets(ctx context.Context, queues []string) ([]OffsetNode, error) {
	s := c.s
	out := make([]OffsetNode, len(queues))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ViewParallelism)
	for i, q := range queues {
		g.Go(func() error {
			on, err := s.Claims().Offset(gctx, q)
			if err != nil && !errors.Is(err, drover.ErrNotFound) {
				return err
			}
			out[i] = on
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
