package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/go-zookeeper/zk"

	"github.com/drover-dev/drover"
)

// MemberNode is one registered member as read from /members.
type MemberNode struct {
	ID      string // node name, e.g. "_c_<guid>-m-0000000003"
	Path    string // full path of the node
	Session int64  // the ZooKeeper session that holds it
	Member  drover.Member
	Err     error // set when the node's data could not be decoded; Member is then zero
}

// Membership is this session's member node.
type Membership struct {
	s    *Session
	path string
}

// Join registers m as a member: a protected ephemeral sequential node
// /members/m-<seq> holding m as JSON, which lives as long as the session.
// m.Name must be a valid node name (the queue-name rules).
func (g Group) Join(ctx context.Context, m drover.Member) (*Membership, error) {
	s := g.s
	if err := validateNodeName(m.Name); err != nil {
		return nil, fmt.Errorf("join as member: name: %w", err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("join as member %s: encode: %w", m.Name, err)
	}
	p, err := bounded(ctx, s, func(c zkConn) (string, error) {
		return c.CreateProtectedEphemeralSequential(s.path(membersDir, memberPrefix), data, s.acl)
	})
	if err != nil {
		return nil, fmt.Errorf("join as member %s: %w", m.Name, err)
	}
	return &Membership{s: s, path: p}, nil
}

// Path returns the member node's full path.
func (m *Membership) Path() string { return m.path }

// Update replaces the member node's data with m (the same rules as Join):
// a member publishes a change of its health this way.
func (m *Membership) Update(ctx context.Context, info drover.Member) error {
	if info.Name == "" {
		return fmt.Errorf("update member %s: %w: empty name", m.path, drover.ErrInvalidConfig)
	}
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("update member %s: encode: %w", m.path, err)
	}
	_, err = bounded(ctx, m.s, func(c zkConn) (struct{}, error) {
		_, err := c.Set(m.path, data, -1)
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("update member %s: %w", m.path, err)
	}
	return nil
}

// Leave deletes the member node. A node already gone is not an error.
func (m *Membership) Leave(ctx context.Context) error {
	err := deleteNode(ctx, m.s, m.path, -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("leave membership %s: %w", m.path, err)
	}
	return nil
}

// Members lists the registered members in join order. Members whose data is
// corrupt are listed with Err set.
func (g Group) Members(ctx context.Context) ([]MemberNode, error) {
	s := g.s
	d := newDirCache(s.path(membersDir))
	if err := d.read(ctx, s); err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	return membersOf(d), nil
}

// WatchMembers delivers the member list now and after every change until ctx
// ends or the session is lost, then closes the channel. Only the latest list
// is kept for a slow reader.
func (g Group) WatchMembers(ctx context.Context) <-chan []MemberNode {
	s := g.s
	d := newDirCache(s.path(membersDir))
	return watchLoop(ctx, s, "members", func(ctx context.Context, ws *watchSet) ([]MemberNode, error) {
		if err := d.refresh(ctx, s, ws); err != nil {
			return nil, fmt.Errorf("list members: %w", err)
		}
		return membersOf(d), nil
	})
}

// membersOf returns the cached members in join order.
func membersOf(d *dirCache) []MemberNode {
	out := decodeDir(d, decodeMember)
	sort.SliceStable(out, func(i, j int) bool { return sequenceOf(out[i].ID) < sequenceOf(out[j].ID) })
	return out
}

// decodeMember decodes member node p; corrupt data leaves Member zero and
// sets Err.
func decodeMember(p, name string, nd nodeData) MemberNode {
	mn := MemberNode{ID: name, Path: p, Session: nd.stat.EphemeralOwner}
	if err := json.Unmarshal(nd.data, &mn.Member); err != nil {
		mn.Member = drover.Member{}
		mn.Err = fmt.Errorf("decode member %s: %w", mn.Path, err)
	}
	return mn
}
