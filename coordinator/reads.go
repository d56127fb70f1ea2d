package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// The one-shot calls the roles share, each one bounded request: read a
// node, read it when it may be missing, read a role's named node, list a
// directory, delete a node. The cached and watched reads are in
// dircache.go.

// getNode reads one node's data and stat.
func getNode(ctx context.Context, s *Session, p string) (nodeData, error) {
	return bounded(ctx, s, func(c zkConn) (nodeData, error) {
		data, st, err := c.Get(p)
		if err != nil {
			return nodeData{}, err
		}
		return nodeData{data, *st}, nil
	})
}

// getIfAny reads one node; a missing node is returned as nil.
func getIfAny(ctx context.Context, s *Session, p string) (*nodeData, error) {
	return bounded(ctx, s, func(c zkConn) (*nodeData, error) {
		data, stat, err := c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &nodeData{data, *stat}, nil
	})
}

// getNamed reads p, the node of one named thing a role's getter reads
// (what names it: "family f", "offset of q"). A missing node fails
// wrapping missing; every error starts "read <what>: ".
func getNamed(ctx context.Context, s *Session, p, what string, missing error) (nodeData, error) {
	nd, err := getNode(ctx, s, p)
	if errors.Is(err, zk.ErrNoNode) {
		err = missing
	}
	if err != nil {
		return nodeData{}, fmt.Errorf("read %s: %w", what, err)
	}
	return nd, nil
}

// children lists dir's children, without a watch.
func children(ctx context.Context, s *Session, dir string) ([]string, error) {
	return bounded(ctx, s, func(c zkConn) ([]string, error) {
		names, _, err := c.Children(dir)
		return names, err
	})
}

// deleteNode deletes node p at version (-1: any).
func deleteNode(ctx context.Context, s *Session, p string, version int32) error {
	_, err := bounded(ctx, s, func(c zkConn) (struct{}, error) { return struct{}{}, c.Delete(p, version) })
	return err
}
