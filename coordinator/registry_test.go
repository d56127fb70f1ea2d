package coordinator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// next receives from ch or fails after a minute.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed", what)
		}
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s: nothing delivered within a minute", what)
	}
	panic("unreachable")
}

// until receives from ch until ok(v) or fails after a minute.
func until[T any](t *testing.T, ch <-chan T, what string, ok func(T) bool) T {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case v, open := <-ch:
			if !open {
				t.Fatalf("%s: watch channel closed", what)
			}
			if ok(v) {
				return v
			}
		case <-deadline:
			t.Fatalf("%s: not delivered within a minute", what)
		}
	}
}

func TestQueueRegistry(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	watch := s.Queues().WatchRegistry(ctx)
	if got := next(t, watch, "initial queues"); got.Len() != 0 {
		t.Fatalf("initial queues: want none, have %v", registered(got))
	}

	if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: "emails", Weight: 2}); err != nil {
		t.Fatalf("create: %v", err)
	}
	mustIs(t, admin.Queues().Create(ctx, drover.QueueConfig{Name: "emails"}), ErrQueueExists, "create twice")
	got := until(t, watch, "queue added", func(r Registry) bool { return r.Len() == 1 })
	if q := registered(got)["emails"]; q.Name != "emails" || q.Weight != 2 || len(got.Errs) != 0 {
		t.Fatalf("watched queue: want emails weight 2, have %+v", registered(got))
	}
	e, err := admin.Queues().Get(ctx, "emails")
	if err != nil {
		t.Fatal(err)
	}
	v, err := admin.Queues().Update(ctx, drover.QueueConfig{Name: "emails", Weight: 5}, e.Version)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	_, err = admin.Queues().Update(ctx, drover.QueueConfig{Name: "emails", Weight: 6}, v-1)
	mustIs(t, err, ErrConflict, "update at a stale version")
	_, err = admin.Queues().Update(ctx, drover.QueueConfig{Name: "nope"}, -1)
	mustIs(t, err, drover.ErrQueueNotFound, "update a missing queue")
	until(t, watch, "queue reconfigured", func(r Registry) bool { return r.Len() == 1 && registered(r)["emails"].Weight == 5 })

	if err := admin.Queues().Create(ctx, drover.QueueConfig{Name: "sms"}); err != nil {
		t.Fatalf("create sms: %v", err)
	}
	if err := admin.Queues().Delete(ctx, "emails"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	mustIs(t, admin.Queues().Delete(ctx, "emails"), drover.ErrQueueNotFound, "delete twice")
	until(t, watch, "queue removed", func(r Registry) bool { return r.Len() == 1 && registered(r)["sms"].Name == "sms" })

	list, err := s.Queues().List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "sms" {
		t.Fatalf("list: want [sms], have %+v (%v)", list, err)
	}
	one, err := s.Queues().Get(ctx, "sms")
	if err != nil || one.Config.Name != "sms" {
		t.Fatalf("read sms: %+v (%v)", one, err)
	}
	_, err = s.Queues().Get(ctx, "emails")
	mustIs(t, err, drover.ErrQueueNotFound, "read a deleted queue")
}

func TestPauseFlags(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	watch := s.Pauses().Watch(ctx)
	if ps := next(t, watch, "initial pauses"); ps.All != nil || len(ps.Queues)+len(ps.Members) != 0 {
		t.Fatalf("initial pauses: want none, have %+v", ps)
	}
	flag := drover.Pause{By: "ops", At: time.Now().UTC().Truncate(time.Second), Reason: "deploy"}
	for _, f := range []struct {
		scope drover.PauseScope
		name  string
	}{{drover.PauseQueue, "emails"}, {drover.PauseMember, "w1"}, {drover.PauseAll, ""}} {
		if err := admin.Pauses().Set(ctx, f.scope, f.name, flag); err != nil {
			t.Fatalf("set pause %s %s: %v", f.scope, f.name, err)
		}
	}
	ps := until(t, watch, "all three flags", func(ps PauseSet) bool {
		return ps.All != nil && len(ps.Queues) == 1 && len(ps.Members) == 1
	})
	if ps.Queues["emails"] != flag || *ps.All != flag {
		t.Fatalf("flags: want %+v, have %+v", flag, ps)
	}
	if err := admin.Pauses().Clear(ctx, drover.PauseAll, ""); err != nil {
		t.Fatalf("clear all: %v", err)
	}
	if err := admin.Pauses().Clear(ctx, drover.PauseAll, ""); err != nil {
		t.Fatalf("clear all twice: %v", err)
	}
	ps = until(t, watch, "all cleared", func(ps PauseSet) bool { return ps.All == nil })
	if _, paused := ps.Paused("emails", "w9"); !paused {
		t.Fatalf("emails: want paused by its queue flag")
	}
	if _, paused := ps.Paused("sms", "w1"); !paused {
		t.Fatalf("sms on w1: want paused by the member flag")
	}
	if _, paused := ps.Paused("sms", "w2"); paused {
		t.Fatalf("sms on w2: want not paused")
	}
	read, err := s.Pauses().Read(ctx)
	if err != nil || len(read.Queues) != 1 || len(read.Members) != 1 || read.All != nil {
		t.Fatalf("Pauses: have %+v (%v)", read, err)
	}
	err = admin.Pauses().Set(ctx, drover.PauseAll, "x", flag)
	mustIs(t, err, drover.ErrInvalidConfig, "pause all with a name")
	err = admin.Pauses().Set(ctx, drover.PauseScope("bogus"), "x", flag)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown scope: want an error naming it, have %v", err)
	}
}

func TestMembersJoinLeaveWatch(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	watcher := connect(t, server.Addrs, root)
	ctx := ctxT(t)
	watch := watcher.Group().WatchMembers(ctx)
	next(t, watch, "initial members")
	a, b := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ma, err := a.Group().Join(ctx, drover.Member{Name: "a", Capacity: 4})
	if err != nil {
		t.Fatalf("join a: %v", err)
	}
	if _, err := b.Group().Join(ctx, drover.Member{Name: "b", Capacity: 2}); err != nil {
		t.Fatalf("join b: %v", err)
	}
	got := until(t, watch, "two members", func(ms []MemberNode) bool { return len(ms) == 2 })
	if got[0].Member.Name != "a" || got[1].Member.Name != "b" || got[0].Session != a.SessionID() || got[0].Path != ma.Path() {
		t.Fatalf("members in join order: want a then b, have %+v", got)
	}
	b.Close() // a crash-free exit: the ephemeral node goes with the session
	until(t, watch, "b gone", func(ms []MemberNode) bool { return len(ms) == 1 && ms[0].Member.Name == "a" })
	if err := ma.Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	until(t, watch, "a gone", func(ms []MemberNode) bool { return len(ms) == 0 })
	list, err := watcher.Group().Members(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("Members: want none, have %+v (%v)", list, err)
	}
	_, err = a.Group().Join(ctx, drover.Member{Name: "bad/name"})
	mustIs(t, err, drover.ErrInvalidConfig, "join with a '/' in the name")
}

func TestAssignmentWriterIsFencedByANewLeader(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	a, b, reader := connect(t, server.Addrs, root), connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	watch := reader.Assignments().Watch(ctx)
	if an := next(t, watch, "initial assignment"); an.Assignment.Generation != 0 || an.Err != nil {
		t.Fatalf("initial assignment: want generation 0, have %+v", an)
	}
	ea, _ := a.Group().Election(ElectionRebalance)
	la, err := ea.Campaign(ctx, "a")
	if err != nil {
		t.Fatalf("campaign: %v", err)
	}
	wa, err := a.Assignments().NewWriter(ctx, la)
	if err != nil {
		t.Fatalf("writer a: %v", err)
	}
	written, err := wa.Write(ctx, drover.Assignment{Strategy: "sticky", Leader: "a", Queues: map[string]string{"q1": "a"}})
	if err != nil || written.Generation != 1 {
		t.Fatalf("write generation 1: have %+v (%v)", written, err)
	}
	an := until(t, watch, "generation 1", func(an AssignmentNode) bool { return an.Assignment.Generation == 1 })
	if an.Assignment.Queues["q1"] != "a" {
		t.Fatalf("watched assignment: have %+v", an)
	}
	if _, err := wa.Write(ctx, drover.Assignment{Leader: "a", Queues: map[string]string{"q1": "a", "q2": "a"}}); err != nil {
		t.Fatalf("write generation 2: %v", err)
	}

	// a is deposed (say, it was paused while its session expired); b leads.
	if err := la.Resign(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	eb, _ := b.Group().Election(ElectionRebalance)
	lb, err := eb.Campaign(ctx, "b")
	if err != nil {
		t.Fatalf("campaign b: %v", err)
	}
	wb, err := b.Assignments().NewWriter(ctx, lb)
	if err != nil {
		t.Fatalf("writer b: %v", err)
	}
	if wb.Epoch() <= wa.Epoch() || wb.Current().Generation != 2 {
		t.Fatalf("writer b: want an epoch above %d and generation 2, have %d and %d", wa.Epoch(), wb.Epoch(), wb.Current().Generation)
	}
	// A deposed writer that ignores its leadership: the epoch check refuses it.
	wa.lead = lb // bypass the local leadership check to reach the server
	_, err = wa.Write(ctx, drover.Assignment{Leader: "a"})
	mustIs(t, err, drover.ErrFenced, "deposed writer")
	mustIs(t, err, drover.ErrNotLeader, "deposed writer")
	if _, err := wb.Write(ctx, drover.Assignment{Leader: "b", Queues: map[string]string{"q1": "b"}}); err != nil {
		t.Fatalf("write by b: %v", err)
	}
	got, err := reader.Assignments().Read(ctx)
	if err != nil || got.Assignment.Generation != 3 || got.Assignment.Leader != "b" {
		t.Fatalf("assignment: want generation 3 by b, have %+v (%v)", got, err)
	}
	// A resigned leadership cannot take over.
	_, err = a.Assignments().NewWriter(ctx, la)
	mustIs(t, err, drover.ErrNotLeader, "writer from a resigned leadership")
}

func TestResetOffsetRefusedWhileOwned(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	owner, admin := connect(t, server.Addrs, root), connect(t, server.Addrs, root)
	ctx := ctxT(t)
	claim, err := owner.Claims().Claim(ctx, "q", Owner{Member: "w1"})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if err := claim.Commit(ctx, offsetAt(50, "w1")); err != nil {
		t.Fatalf("commit: %v", err)
	}
	_, err = admin.Claims().ResetOffset(ctx, "q", offsetAt(5, "ops"), ResetOptions{})
	mustIs(t, err, ErrQueueOwned, "reset while owned")
	if on, _ := admin.Claims().Offset(ctx, "q"); on.Offset.Position != 50 {
		t.Fatalf("offset after a refused reset: want 50, have %d", on.Offset.Position)
	}
	if _, err := admin.Claims().ResetOffset(ctx, "q", offsetAt(5, "ops"), ResetOptions{AllowOwned: true}); err != nil {
		t.Fatalf("reset with AllowOwned: %v", err)
	}
	mustIs(t, claim.Commit(ctx, offsetAt(60, "w1")), drover.ErrFenced, "owner's commit after a reset")
	if err := claim.Abandon(ctx); err != nil {
		t.Fatalf("abandon: %v", err)
	}
	again, err := owner.Claims().Claim(ctx, "q", Owner{Member: "w1"})
	if err != nil || again.Offset().Position != 5 {
		t.Fatalf("claim after reset: want position 5, have %+v (%v)", again, err)
	}
	if err := again.Release(ctx, again.Offset()); err != nil {
		t.Fatalf("release: %v", err)
	}
	if _, err := admin.Claims().ResetOffset(ctx, "q", offsetAt(1, "ops"), ResetOptions{}); err != nil {
		t.Fatalf("reset of an unowned queue: %v", err)
	}
	if on, _ := admin.Claims().Offset(ctx, "q"); on.Offset.Position != 1 {
		t.Fatalf("offset after reset: want 1, have %d", on.Offset.Position)
	}
}

// The registry spreads queues over bucket nodes so that no listing passes
// the size limit, and a full bucket is a clear error, never a request the
// server refuses.
func TestRegistryBucketsAndTheirLimit(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	root := testenv.Chroot(t)
	s := connect(t, server.Addrs, root, patient)
	ctx := ctxLong(t)

	createQueues(t, s, 1000)
	buckets, _, err := s.conn.Children(s.path(queuesDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(buckets) > registryBuckets || len(buckets) < registryBuckets/2 {
		t.Fatalf("buckets for 1,000 queues: want between %d and %d, have %d", registryBuckets/2, registryBuckets, len(buckets))
	}
	st, err := s.Group().Stats(ctx)
	if err != nil || st.Queues != 1000 {
		t.Fatalf("cluster stats: want 1000 queues, have %d (%v)", st.Queues, err)
	}
	if n, err := s.Queues().CreateMany(ctx, []drover.QueueConfig{{Name: "q0000001"}, {Name: "fresh"}}); err != nil || n != 1 {
		t.Fatalf("create one existing and one new queue: want 1 created, have %d (%v)", n, err)
	}

	// Fill one bucket to its limit with names that hash into it.
	var full []drover.QueueConfig
	want := registryBucket("fill-0")
	_, bst, err := s.conn.Exists(s.path(queuesDir, want))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(full) < maxBucketQueues-int(bst.NumChildren); i++ {
		if name := fmt.Sprintf("fill-%d", i); registryBucket(name) == want {
			full = append(full, drover.QueueConfig{Name: name})
		}
	}
	if _, err := s.Queues().CreateMany(ctx, full[:len(full)-1]); err != nil {
		t.Fatalf("fill bucket %s: %v", want, err)
	}
	_, err = s.Queues().CreateMany(ctx, full[len(full)-1:len(full)])
	if err != nil {
		t.Fatalf("the last queue that fits: %v", err)
	}
	var extra string
	for i := 0; extra == ""; i++ {
		if name := fmt.Sprintf("extra-%d", i); registryBucket(name) == want {
			extra = name
		}
	}
	mustIs(t, s.Queues().Create(ctx, drover.QueueConfig{Name: extra}), ErrTooLarge, "create in a full bucket")
	_, err = s.Queues().CreateMany(ctx, []drover.QueueConfig{{Name: extra}})
	mustIs(t, err, ErrTooLarge, "batch create in a full bucket")
	listing, _, err := s.conn.Children(s.path(queuesDir, want))
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, n := range listing {
		size += 4 + len(n)
	}
	if size > maxRequestBytes {
		t.Fatalf("listing of a full bucket: want at most %d bytes, have %d", maxRequestBytes, size)
	}
}

// QueueNames lists the queues, not the registry's buckets: a view that read
// /queues' children directly listed bucket names as queues.
func TestQueueNamesListsQueuesAcrossBuckets(t *testing.T) {
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := t.Context()
	var want []string
	for i := range 20 {
		q := fmt.Sprintf("names-%02d", i)
		want = append(want, q)
		if err := s.Queues().Create(ctx, drover.QueueConfig{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	have, err := s.Queues().Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(have, ",") != strings.Join(want, ",") {
		t.Fatalf("want %v, have %v", want, have)
	}
}
