package ops

import (
	"errors"
	"testing"
	"time"
)

func TestParseResetTarget(t *testing.T) {
	cases := []struct {
		in   string
		want func(ResetTarget) bool
	}{
		{"earliest", func(r ResetTarget) bool { return r.Earliest }},
		{"latest", func(r ResetTarget) bool { return r.Latest }},
		{"1714557600000000", func(r ResetTarget) bool { return r.Position != nil && *r.Position == 1714557600000000 }},
		{"2024-05-01T10:00:00Z", func(r ResetTarget) bool { return r.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) }},
		{"2024-05-01 10:00", func(r ResetTarget) bool { return r.Time.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) }},
	}
	for _, c := range cases {
		r, err := ParseResetTarget(c.in)
		if err != nil || !c.want(r) {
			t.Errorf("ParseResetTarget(%q): have %+v, %v", c.in, r, err)
		}
	}
	for _, bad := range []string{"", "soon", "-5", "2024-13-01T00:00:00Z", "yesterday"} {
		if _, err := ParseResetTarget(bad); !errors.Is(err, ErrBadInput) {
			t.Errorf("ParseResetTarget(%q): want ErrBadInput, have %v", bad, err)
		}
	}
}

func TestSnapshotSelect(t *testing.T) {
	s := &Snapshot{Queues: []QueueRow{
		{Queue: "a", Lag: 5, Owned: true, Owner: "w1"},
		{Queue: "b", Lag: 0, Paused: true},
		{Queue: "c", Lag: 9, Dead: 2, Owned: true, Owner: "w2"},
	}}
	p, err := s.Select(QueueQuery{Sort: "lag", Desc: true, PerPage: 2})
	if err != nil || p.Total != 3 || p.Pages != 2 || p.Queues[0].Queue != "c" || p.Queues[1].Queue != "a" {
		t.Fatalf("lag desc: have %+v %v", p, err)
	}
	for only, want := range map[string]string{"paused": "b", "unowned": "b", "dead": "c"} {
		p, err := s.Select(QueueQuery{Only: only})
		if err != nil || p.Total != 1 || p.Queues[0].Queue != want {
			t.Errorf("only %s: want %s, have %+v %v", only, want, p.Queues, err)
		}
	}
	if p, _ := s.Select(QueueQuery{Filter: "W2"}); p.Total != 1 || p.Queues[0].Queue != "c" {
		t.Errorf("filter by member: want c, have %+v", p.Queues)
	}
	if p, _ := s.Select(QueueQuery{Page: 9}); len(p.Queues) != 0 || p.Total != 3 {
		t.Errorf("a page past the end: want no rows and the total, have %+v", p)
	}
	for _, q := range []QueueQuery{{Sort: "colour"}, {Only: "odd"}, {Page: -1}, {PerPage: 5000}} {
		if _, err := s.Select(q); !errors.Is(err, ErrBadInput) {
			t.Errorf("Select(%+v): want ErrBadInput, have %v", q, err)
		}
	}
	if _, err := s.Queue("zz"); !IsNotFound(err) {
		t.Errorf("Queue(zz): want not found, have %v", err)
	}
}
