package coordinator

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"
)

// Config notices: /notices/<bucket> is a node without data whose version
// moves, in the same multi, with every write of a queue's config that the
// queue's owner must hear of — an update, a delete, a retire, a create by
// an operator — and not with the registration of a family's new queues
// (Queues.CreateMany). Members watch the notices of the buckets that hold
// their queues (ConfigWatch) instead of the buckets themselves, which
// every registration rewrites: at 1,000 new queues a second most buckets
// changed every second, and each member read each of them again, about 4
// reads of ZooKeeper for every new queue across the fleet
// (docs/decisions.md, "Members watch config notices, not registry
// buckets"). The rebalance leader still watches the buckets.

// noticePath is the notice node of the registry bucket at bucket path bp
// (/queues/<bucket>).
func (s *Session) noticePath(bp string) string { return s.path(noticesDir, path.Base(bp)) }

// noticeOp returns the operation that moves the notice of the bucket at bp,
// for the multi that writes the config: a set of its data, at any version.
// A notice that does not exist yet fails the multi; the writer creates it
// (createNotice) and sends the multi again, once in the life of a bucket.
func (s *Session) noticeOp(bp string) any {
	return &zk.SetDataRequest{Path: s.noticePath(bp), Data: nil, Version: -1}
}

// createNotice creates the notice of the bucket at bp, unless it exists.
func (s *Session) createNotice(ctx context.Context, bp string) error {
	_, err := bounded(ctx, s, func(c zkConn) (string, error) {
		return c.Create(s.noticePath(bp), nil, zk.FlagPersistent, s.acl)
	})
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}
