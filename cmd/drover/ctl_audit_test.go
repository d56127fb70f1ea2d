package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
)

// A refused ctl mutation is audited with the status the console answers
// for the same outcome (ops.StatusOf): an unknown queue 404, a queue that
// is not parked 409. (ctl parked recorded 409 for every failure.)
func TestCtlAuditRecordsTheConsolesStatus(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "calm")
	c.fails(3, []string{"nosuch"}, "ctl", "parked", "skip", "nosuch", "01HX")
	c.fails(5, []string{"not parked"}, "ctl", "parked", "retry", "calm", "01HX")

	o, err := ops.New(ops.Config{ZK: c.session(), Store: c.store()})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := o.Audit().Records(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		if r.Via == "ctl" {
			have[fmt.Sprintf("%s %s %d", r.Action, r.Target, r.Status)] = true
		}
	}
	for _, want := range []string{"parked.skip /queues/nosuch/parked/skip 404", "parked.retry /queues/calm/parked/retry 409"} {
		if !have[want] {
			t.Errorf("audit: want a record %q, have %v", want, have)
		}
	}
}

// TestEveryCtlMutationIsAudited runs every mutating ctl command against
// real servers, in an order that gives each the state it needs, and
// checks that each wrote the record the console writes for the same
// operation: its action, its target (the console API's path, which names
// the queue), and the operator who ran it. (pause, resume, offsets,
// dead-letter, queue, schedule, enqueue, revoke and run-now wrote none.)
func TestEveryCtlMutationIsAudited(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "aud", "--task", "*=@go")
	st := c.store()
	ctx := context.Background()
	dead := func() string { // a dead letter of aud
		res, err := st.Producer().Enqueue(ctx, &drover.Message{Queue: "aud", Task: "t"})
		if err != nil {
			t.Fatal(err)
		}
		entries, err := st.Log().ReadAfter(ctx, "aud", res.Position-1, 1)
		if err != nil || len(entries) != 1 {
			t.Fatalf("read back %s: %v", res.ID, err)
		}
		if err := st.Dead().Kill(ctx, "aud", res.ID, entries[0].Raw, drover.Failure{Reason: "boom"}); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	o, err := ops.New(ops.Config{ZK: c.session(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	dl1 := dead()
	dead()
	who := operator()
	for _, tc := range []struct {
		args           []string
		exit           int // 0: succeeds
		action, target string
	}{
		{[]string{"queue", "create", "aud2", "--task", "*=@go"}, 0, "queue.config", "/queues/aud2/config"},
		{[]string{"queue", "update", "aud", "--concurrency", "2"}, 0, "queue.config", "/queues/aud/config"},
		{[]string{"pause", "--queue", "aud", "--reason", "replay"}, 0, "queue.pause", "/queues/aud/pause"},
		{[]string{"offsets", "reset", "aud", "--to-latest"}, 0, "offset.reset", "/queues/aud/offset"},
		{[]string{"resume", "--queue", "aud"}, 0, "queue.resume", "/queues/aud/resume"},
		{[]string{"pause", "--member", "m1"}, 0, "member.pause", "/members/m1/pause"},
		{[]string{"resume", "--member", "m1"}, 0, "member.resume", "/members/m1/resume"},
		{[]string{"pause", "--all", "--reason", "maintenance"}, 0, "all.pause", "/pause"},
		{[]string{"resume", "--all"}, 0, "all.resume", "/resume"},
		{[]string{"enqueue", "aud", "t", "--in", "1h", "--id", "d1"}, 0, "job.enqueue", "/queues/aud/jobs"},
		{[]string{"enqueue", "aud", "t", "--in", "1h", "--id", "d2"}, 0, "job.enqueue", "/queues/aud/jobs"},
		{[]string{"run-now", "aud", "d1"}, 0, "delayed.run_now", "/queues/aud/delayed/d1/run"},
		{[]string{"revoke", "aud", "d2"}, 0, "delayed.revoke", "/queues/aud/delayed/d2/revoke"},
		{[]string{"dead", "retry", "aud", dl1}, 0, "dead.retry", "/queues/aud/dead/" + dl1 + "/retry"},
		{[]string{"dead", "purge", "aud", "--all"}, 0, "dead.purge_all", "/queues/aud/dead/purge"},
		{[]string{"schedule", "add", "s1", "--queue", "aud", "--task", "t", "--every", "1h"}, 0, "schedule.put", "/schedules/s1"},
		{[]string{"schedule", "disable", "s1"}, 0, "schedule.disable", "/schedules/s1/disable"},
		{[]string{"schedule", "enable", "s1"}, 0, "schedule.enable", "/schedules/s1/enable"},
		{[]string{"schedule", "trigger", "s1"}, 0, "schedule.trigger", "/schedules/s1/trigger"},
		{[]string{"schedule", "rm", "s1"}, 0, "schedule.remove", "/schedules/s1"},
		{[]string{"family", "create", "fam", "--prefix", "fam-", "--task", "*=@go"}, 0, "family.set", "/families/fam"},
		{[]string{"family", "rm", "fam"}, 0, "family.delete", "/families/fam"},
		{[]string{"parked", "retry", "aud", "01HX"}, exitRefused, "parked.retry", "/queues/aud/parked/retry"},
		{[]string{"parked", "skip", "aud", "01HX"}, exitRefused, "parked.skip", "/queues/aud/parked/skip"},
		{[]string{"cancel", "aud", "01HX", "--no-wait"}, exitRefused, "job.cancel", "/queues/aud/running/01HX/cancel"},
		{[]string{"queue", "rm", "aud2"}, 0, "queue.delete", "/queues/aud2/config"},
		// An unknown queue is the mutation's outcome: recorded, as the
		// console records its 404.
		{[]string{"pause", "--queue", "nosuch"}, exitNotFound, "queue.pause", "/queues/nosuch/pause"},
		{[]string{"dead", "purge", "nosuch", "--all"}, exitNotFound, "dead.purge_all", "/queues/nosuch/dead/purge"},
		{[]string{"enqueue", "nosuch", "t"}, exitNotFound, "job.enqueue", "/queues/nosuch/jobs"},
		{[]string{"offsets", "reset", "nosuch", "--to-latest"}, exitNotFound, "offset.reset", "/queues/nosuch/offset"},
		{[]string{"revoke", "nosuch", "d1"}, exitNotFound, "delayed.revoke", "/queues/nosuch/delayed/d1/revoke"},
	} {
		args := append([]string{"ctl"}, tc.args...)
		if r := c.run(args...); r.code != tc.exit {
			t.Fatalf("%s: want exit %d, have:\n%s", strings.Join(tc.args, " "), tc.exit, r)
		}
		recs, err := o.Audit().Records(ctx, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 {
			t.Fatalf("%s: want an audit record, have none", strings.Join(tc.args, " "))
		}
		r := recs[0]
		if r.Action != tc.action || r.Target != tc.target || r.Who != who || r.Via != "ctl" || (tc.exit == 0) != (r.Result == "ok") {
			t.Errorf("%s: want the newest record %s %s by %s via ctl (ok: %t), have %+v",
				strings.Join(tc.args, " "), tc.action, tc.target, who, tc.exit == 0, r)
		}
	}
}
