package queue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/drover-dev/drover"
)

var _ = addContractCases(contractCase{"WakeupCarriesALoneMessage", testWakeupCarriesALoneMessage})

// The wake-up of a lone message carries it (docs/redis-schema.md,
// "Wake-ups") when the queue is routed to a member's entry channel and the
// envelope is at most 4 KB: after the queue's last position (the wake-up's
// Prev), or after 0 for the queue's first message (enqueue-one v6: a new
// key's first message needs no read); otherwise it is the queue's name, as
// before — and a queue an older member routed to its plain channel gets
// the plain wake-up, which today's member still receives.
func testWakeupCarriesALoneMessage(t *testing.T, rdb redis.UniversalClient) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newTestStore(t, rdb, nil)
	wake, err := s.Listener().Wakeups(ctx, "m1")
	if err != nil {
		t.Fatalf("Wakeups: %v", err)
	}
	if err := s.Log().RouteWakeups(ctx, "m1", "carried"); err != nil {
		t.Fatalf("RouteWakeups: %v", err)
	}
	next := func(what string) Wakeup {
		t.Helper()
		select {
		case w := <-wake:
			if w.Queue != "carried" || w.Missed || !w.Due.IsZero() {
				t.Fatalf("%s: want a wake-up of carried, have %+v", what, w)
			}
			return w
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no wake-up within 30 s", what)
		}
		panic("unreachable")
	}
	a := mustEnqueue(t, s, msg("carried", ""))
	w := next("the queue's first message")
	env, err := rdb.HGet(ctx, s.keys.queue("carried").msg, a.ID).Result()
	if err != nil {
		t.Fatal(err)
	}
	if w.Entry == nil || w.Entry.ID != a.ID || w.Entry.Position != a.Position || w.Prev != 0 || string(w.Entry.Raw) != env {
		t.Fatalf("want the first message's wake-up to carry %s at %d after 0 with its envelope, have prev %d, entry %+v", a.ID, a.Position, w.Prev, w.Entry)
	}
	b := mustEnqueue(t, s, msg("carried", ""))
	w = next("the second message")
	env, err = rdb.HGet(ctx, s.keys.queue("carried").msg, b.ID).Result()
	if err != nil {
		t.Fatal(err)
	}
	if w.Entry == nil || w.Entry.ID != b.ID || w.Entry.Position != b.Position || w.Prev != a.Position ||
		string(w.Entry.Raw) != env || w.Entry.Queue != "carried" {
		t.Fatalf("want the wake-up to carry %s at %d after %d with its envelope, have prev %d, entry %+v", b.ID, b.Position, a.Position, w.Prev, w.Entry)
	}
	if m, err := w.Entry.Decode(); err != nil || m.ID != b.ID {
		t.Fatalf("the carried envelope decodes to %+v, %v", m, err)
	}

	big := msg("carried", "")
	big.Args = []byte(`{"pad":"` + strings.Repeat("x", 5000) + `"}`)
	mustEnqueue(t, s, big)
	if w := next("a message over 4 KB"); w.Entry != nil {
		t.Fatalf("an envelope over 4 KB is not carried: have %d bytes", len(w.Entry.Raw))
	}

	// An older member routed the queue to its plain channel.
	if err := rdb.Set(ctx, s.keys.queue("carried").owner, s.keys.memberChannel("m1"), 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A producer that has not read the route yet (this one keeps m1's entry
	// channel for routeTTL: routeCache).
	fresh := newTestStore(t, rdb, func(cfg *Config) { cfg.Prefix = s.keys.prefix })
	mustEnqueue(t, fresh, msg("carried", ""))
	if w := next("a queue routed to the plain channel"); w.Entry != nil {
		t.Fatalf("a plain channel gets the plain wake-up: have %+v", w.Entry)
	}
	cancel()
	for range wake {
	}
}

// parseWakeup reads every form of the payload, and refuses a malformed
// carried message rather than guessing.
func TestParseWakeupReadsEveryForm(t *testing.T) {
	w, err := parseWakeup("q\n100 250\nid 1\n{\"a\":\n1}")
	if err != nil || w.Queue != "q" || w.Prev != 100 || w.Entry == nil || w.Entry.Position != 250 ||
		w.Entry.ID != "id 1" || string(w.Entry.Raw) != "{\"a\":\n1}" || w.Entry.Queue != "q" {
		t.Fatalf("a carried message: have %+v (entry %+v), %v", w, w.Entry, err)
	}
	if w, err := parseWakeup("q 1700000000000"); err != nil || w.Entry != nil || w.Due.UnixMilli() != 1700000000000 {
		t.Fatalf("a due time: have %+v, %v", w, err)
	}
	if w, err := parseWakeup("q"); err != nil || w.Queue != "q" || w.Entry != nil {
		t.Fatalf("a name: have %+v, %v", w, err)
	}
	for _, bad := range []string{
		"q\n100 250\nid",     // no envelope line
		"q\n100\nid\n{}",     // no position
		"q\n250 100\nid\n{}", // prev after pos
		"q\n0 100\nid\n{}",   // no prev
		"q\nx 100\nid\n{}",   // not a number
		"\n100 250\nid\n{}",  // no queue
		"q\n100 250\n\n{}",   // no id
	} {
		if w, err := parseWakeup(bad); err == nil {
			t.Errorf("%q: want an error, have %+v", bad, w)
		}
	}
	_ = drover.Position(0)
}
