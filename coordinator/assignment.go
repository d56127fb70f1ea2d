package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// AssignmentNode is /assignment as read.
type AssignmentNode struct {
	Assignment drover.Assignment
	Version    int32 // znode version; the writer's next write is conditional on it
	Err        error // set when the data could not be decoded
}

// Assignment reads /assignment. An empty node (no assignment written yet)
// reads as generation 0 with no queues.
func (s *Session) Assignment(ctx context.Context) (AssignmentNode, error) {
	nd, err := bounded(ctx, s, func(c zkConn) (nodeData, error) {
		data, st, err := c.Get(s.path(assignmentNode))
		if err != nil {
			return nodeData{}, err
		}
		return nodeData{data, *st}, nil
	})
	if errors.Is(err, zk.ErrNoNode) {
		return AssignmentNode{Version: -1}, nil
	}
	if err != nil {
		return AssignmentNode{}, fmt.Errorf("read assignment: %w", err)
	}
	an := decodeAssignment(s.path(assignmentNode), &nd)
	return an, an.Err
}

// WatchAssignment delivers /assignment now and after every change until ctx
// ends or the session is lost, then closes the channel. Only the latest value
// is kept for a slow reader. A corrupt node is delivered with Err set.
func (s *Session) WatchAssignment(ctx context.Context) <-chan AssignmentNode {
	p := s.path(assignmentNode)
	return watchLoop(ctx, s, "assignment", func(ctx context.Context, ws *watchSet) (AssignmentNode, error) {
		nd, err := readNode(ctx, s, ws, p)
		if err != nil {
			return AssignmentNode{}, fmt.Errorf("read assignment: %w", err)
		}
		return decodeAssignment(p, nd), nil
	})
}

func decodeAssignment(p string, nd *nodeData) AssignmentNode {
	if nd == nil {
		return AssignmentNode{Version: -1}
	}
	an := AssignmentNode{Version: nd.stat.Version}
	if len(bytes.TrimSpace(nd.data)) == 0 {
		return an
	}
	if err := json.Unmarshal(nd.data, &an.Assignment); err != nil {
		an.Assignment = drover.Assignment{}
		an.Err = fmt.Errorf("decode assignment %s: %w", p, err)
	}
	return an
}

// AssignmentWriter writes /assignment on behalf of the rebalance leader,
// fenced by /coord/epoch: creating it bumps the epoch, and every write is
// conditional on the epoch still being the one this writer set, so a deposed
// leader's writes fail. It is not safe for concurrent use.
type AssignmentWriter struct {
	s            *Session
	lead         *Leadership
	epochVersion int32
	last         AssignmentNode
}

// NewAssignmentWriter takes over /assignment for lead (a leadership of this
// session): one multi that checks lead's candidate node still exists and
// bumps /coord/epoch, then a read of the current assignment. A lost
// leadership returns an error wrapping drover.ErrNotLeader.
func (s *Session) NewAssignmentWriter(ctx context.Context, lead *Leadership) (*AssignmentWriter, error) {
	if lead.e.s != s {
		return nil, fmt.Errorf("take over assignment: %w: the leadership belongs to another session", drover.ErrNotLeader)
	}
	if err := lead.Check(ctx); err != nil {
		return nil, fmt.Errorf("take over assignment: %w", err)
	}
	epochData, _ := json.Marshal(map[string]string{"leader_node": lead.node})
	res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) {
		return c.Multi(
			&zk.CheckVersionRequest{Path: lead.node, Version: 0},
			&zk.SetDataRequest{Path: s.path(epochNode), Data: epochData, Version: -1},
		)
	})
	if isVersionConflict(err) {
		return nil, fmt.Errorf("take over assignment: bump epoch: %w: candidate node %s is gone", drover.ErrNotLeader, lead.node)
	}
	if err != nil {
		// Unknown outcome of a bump is harmless: a new writer bumps again.
		return nil, fmt.Errorf("take over assignment: bump epoch: %w", err)
	}
	w := &AssignmentWriter{s: s, lead: lead, epochVersion: res[1].Stat.Version}
	if w.last, err = s.Assignment(ctx); err != nil && w.last.Err == nil {
		return nil, fmt.Errorf("take over assignment: %w", err)
	}
	if w.last.Err != nil {
		s.log.Warn("overwriting a corrupt assignment", "error", w.last.Err)
	}
	return w, nil
}

// Epoch returns the /coord/epoch version this writer holds.
func (w *AssignmentWriter) Epoch() int32 { return w.epochVersion }

// Current returns the assignment as last read or written by this writer.
func (w *AssignmentWriter) Current() drover.Assignment { return w.last.Assignment }

// Write stores next as the new assignment with generation Current()+1, as one
// multi: check(/coord/epoch, my epoch) + setData(/assignment, next, last
// version). It returns the assignment written. When a newer leader has bumped
// the epoch (or /assignment changed behind this writer) it fails with an
// error wrapping drover.ErrFenced and drover.ErrNotLeader; the writer is then
// useless. When the outcome is unknown and a re-read cannot settle it, the
// error wraps ErrOutcomeUnknown.
func (w *AssignmentWriter) Write(ctx context.Context, next drover.Assignment) (drover.Assignment, error) {
	if err := w.lead.Err(); err != nil {
		return drover.Assignment{}, fmt.Errorf("write assignment: %w", err)
	}
	next.Generation = w.last.Assignment.Generation + 1
	data, err := json.Marshal(next)
	if err != nil {
		return drover.Assignment{}, fmt.Errorf("write assignment: encode: %w", err)
	}
	s := w.s
	p := s.path(assignmentNode)
	res, err := bounded(ctx, s, func(c zkConn) ([]zk.MultiResponse, error) {
		return c.Multi(
			&zk.CheckVersionRequest{Path: s.path(epochNode), Version: w.epochVersion},
			&zk.SetDataRequest{Path: p, Data: data, Version: w.last.Version},
		)
	})
	switch {
	case err == nil:
		w.last = AssignmentNode{Assignment: next, Version: res[1].Stat.Version}
		return next, nil
	case isVersionConflict(err):
		return drover.Assignment{}, fmt.Errorf("write assignment generation %d: %w: %w (epoch %d is no longer current)",
			next.Generation, drover.ErrFenced, drover.ErrNotLeader, w.epochVersion)
	case !isUnknownOutcome(err):
		return drover.Assignment{}, fmt.Errorf("write assignment generation %d: %w", next.Generation, err)
	}
	// The reply was lost: a read sent after the multi on the same session
	// sees its effect if it was applied.
	nd, rerr := bounded(context.WithoutCancel(ctx), s, func(c zkConn) (nodeData, error) {
		data, st, err := c.Get(p)
		if err != nil {
			return nodeData{}, err
		}
		return nodeData{data, *st}, nil
	})
	switch {
	case rerr != nil:
		return drover.Assignment{}, fmt.Errorf("write assignment generation %d: %w: %w (re-read: %w)", next.Generation, ErrOutcomeUnknown, err, rerr)
	case nd.stat.Version == w.last.Version+1 && bytes.Equal(nd.data, data):
		w.last = AssignmentNode{Assignment: next, Version: nd.stat.Version}
		return next, nil
	case nd.stat.Version == w.last.Version:
		return drover.Assignment{}, fmt.Errorf("write assignment generation %d: not applied: %w", next.Generation, err)
	default:
		return drover.Assignment{}, fmt.Errorf("write assignment generation %d: %w: %w (assignment changed behind this writer)",
			next.Generation, drover.ErrFenced, drover.ErrNotLeader)
	}
}
