package rebalance

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-dev/drover"
)

func queues(names ...string) []Queue {
	qs := make([]Queue, len(names))
	for i, n := range names {
		qs[i] = Queue{Name: n}
	}
	return qs
}

func members(names ...string) []Member {
	ms := make([]Member, len(names))
	for i, n := range names {
		ms[i] = Member{Name: n}
	}
	return ms
}

// TestSmallCases pins the result of every strategy on small inputs.
func TestSmallCases(t *testing.T) {
	type want struct {
		queues       map[string]string // exact owners; nil: see loads
		loads        map[string]int64  // member → load, when owners are not pinned
		unassignable []string
	}
	for _, tc := range []struct {
		name string
		in   Input
		want map[string]want // by strategy name
	}{
		{
			name: "no queues",
			in:   Input{Members: members("a", "b")},
			want: map[string]want{
				StickyName: {queues: map[string]string{}}, RangeName: {queues: map[string]string{}}, RoundRobinName: {queues: map[string]string{}},
			},
		},
		{
			name: "no members",
			in:   Input{Queues: queues("q2", "q1"), Previous: map[string]string{"q1": "gone"}},
			want: map[string]want{
				StickyName:     {queues: map[string]string{}, unassignable: []string{"q1", "q2"}},
				RangeName:      {queues: map[string]string{}, unassignable: []string{"q1", "q2"}},
				RoundRobinName: {queues: map[string]string{}, unassignable: []string{"q1", "q2"}},
			},
		},
		{
			name: "one member takes everything",
			in:   Input{Members: members("solo"), Queues: queues("q1", "q2", "q3")},
			want: map[string]want{
				StickyName:     {queues: map[string]string{"q1": "solo", "q2": "solo", "q3": "solo"}},
				RangeName:      {queues: map[string]string{"q1": "solo", "q2": "solo", "q3": "solo"}},
				RoundRobinName: {queues: map[string]string{"q1": "solo", "q2": "solo", "q3": "solo"}},
			},
		},
		{
			name: "a tag nobody has",
			in: Input{
				Members: []Member{{Name: "a", Tags: []string{"ssd"}}, {Name: "b"}},
				Queues:  []Queue{{Name: "q1", Tags: []string{"gpu"}}, {Name: "q2", Tags: []string{"gpu", "ssd"}}},
			},
			want: map[string]want{
				StickyName:     {queues: map[string]string{}, unassignable: []string{"q1", "q2"}},
				RangeName:      {queues: map[string]string{}, unassignable: []string{"q1", "q2"}},
				RoundRobinName: {queues: map[string]string{}, unassignable: []string{"q1", "q2"}},
			},
		},
		{
			name: "tagged queues go to the members offering every tag",
			in: Input{
				Members: []Member{{Name: "a", Tags: []string{"gpu"}}, {Name: "b", Tags: []string{"ssd", "gpu"}}, {Name: "c"}},
				Queues: []Queue{
					{Name: "g1", Tags: []string{"gpu"}}, {Name: "g2", Tags: []string{"gpu"}},
					{Name: "gs", Tags: []string{"ssd", "gpu"}}, {Name: "x", Tags: []string{"tpu"}},
				},
			},
			want: map[string]want{
				StickyName:     {queues: map[string]string{"gs": "b", "g1": "a", "g2": "a"}, unassignable: []string{"x"}},
				RangeName:      {queues: map[string]string{"g1": "a", "g2": "b", "gs": "b"}, unassignable: []string{"x"}},
				RoundRobinName: {queues: map[string]string{"g1": "a", "g2": "b", "gs": "b"}, unassignable: []string{"x"}},
			},
		},
		{
			name: "uneven capacities",
			in: Input{
				Members: []Member{{Name: "a", Capacity: 1}, {Name: "b", Capacity: 3}},
				Queues:  queues("q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8"),
			},
			want: map[string]want{
				StickyName: {loads: map[string]int64{"a": 2, "b": 6}},
				// Range and round-robin ignore capacity.
				RangeName: {queues: map[string]string{
					"q1": "a", "q2": "a", "q3": "a", "q4": "a", "q5": "b", "q6": "b", "q7": "b", "q8": "b",
				}},
				RoundRobinName: {queues: map[string]string{
					"q1": "a", "q2": "b", "q3": "a", "q4": "b", "q5": "a", "q6": "b", "q7": "a", "q8": "b",
				}},
			},
		},
		{
			name: "weights",
			in: Input{
				Members: members("a", "b"),
				Queues:  []Queue{{Name: "big", Weight: 6}, {Name: "s1", Weight: 2}, {Name: "s2", Weight: 2}, {Name: "s3", Weight: 2}},
			},
			want: map[string]want{
				StickyName:     {queues: map[string]string{"big": "a", "s1": "b", "s2": "b", "s3": "b"}},
				RangeName:      {queues: map[string]string{"big": "a", "s1": "a", "s2": "b", "s3": "b"}},
				RoundRobinName: {queues: map[string]string{"big": "a", "s1": "b", "s2": "a", "s3": "b"}},
			},
		},
		{
			name: "sticky keeps a balanced previous assignment",
			in: Input{
				Members:  members("a", "b"),
				Queues:   queues("q1", "q2", "q3", "q4"),
				Previous: map[string]string{"q1": "b", "q2": "b", "q3": "a", "q4": "a", "gone-queue": "a"},
			},
			want: map[string]want{
				StickyName:     {queues: map[string]string{"q1": "b", "q2": "b", "q3": "a", "q4": "a"}},
				RangeName:      {queues: map[string]string{"q1": "a", "q2": "a", "q3": "b", "q4": "b"}},
				RoundRobinName: {queues: map[string]string{"q1": "a", "q2": "b", "q3": "a", "q4": "b"}},
			},
		},
		{
			name: "sticky hands a joiner one queue from each overloaded member",
			in: Input{
				Members:  members("a", "b", "c"),
				Queues:   queues("q1", "q2", "q3", "q4", "q5", "q6"),
				Previous: map[string]string{"q1": "a", "q2": "a", "q3": "a", "q4": "b", "q5": "b", "q6": "b"},
			},
			want: map[string]want{
				StickyName: {queues: map[string]string{"q1": "a", "q2": "c", "q3": "a", "q4": "c", "q5": "b", "q6": "b"}},
				RangeName:  {queues: map[string]string{"q1": "a", "q2": "a", "q3": "b", "q4": "b", "q5": "c", "q6": "c"}},
				RoundRobinName: {queues: map[string]string{
					"q1": "a", "q2": "b", "q3": "c", "q4": "a", "q5": "b", "q6": "c",
				}},
			},
		},
		{
			name: "sticky gives a leaver's queues to the others and moves nothing else",
			in: Input{
				Members:  members("a", "b"),
				Queues:   queues("q1", "q2", "q3", "q4", "q5", "q6"),
				Previous: map[string]string{"q1": "a", "q2": "a", "q3": "b", "q4": "b", "q5": "c", "q6": "c"},
			},
			want: map[string]want{
				StickyName:     {queues: map[string]string{"q1": "a", "q2": "a", "q3": "b", "q4": "b", "q5": "a", "q6": "b"}},
				RangeName:      {queues: map[string]string{"q1": "a", "q2": "a", "q3": "a", "q4": "b", "q5": "b", "q6": "b"}},
				RoundRobinName: {queues: map[string]string{"q1": "a", "q2": "b", "q3": "a", "q4": "b", "q5": "a", "q6": "b"}},
			},
		},
		{
			name: "sticky moves a queue whose owner lost the tag",
			in: Input{
				Members:  []Member{{Name: "a"}, {Name: "b", Tags: []string{"gpu"}}},
				Queues:   []Queue{{Name: "g", Tags: []string{"gpu"}}, {Name: "q"}},
				Previous: map[string]string{"g": "a", "q": "b"},
			},
			want: map[string]want{
				StickyName:     {queues: map[string]string{"g": "b", "q": "a"}},
				RangeName:      {queues: map[string]string{"g": "b", "q": "a"}},
				RoundRobinName: {queues: map[string]string{"g": "b", "q": "a"}},
			},
		},
	} {
		for _, s := range strategies {
			t.Run(tc.name+"/"+s.Name(), func(t *testing.T) {
				w, ok := tc.want[s.Name()]
				if !ok {
					t.Fatalf("test case has no expectation for %s", s.Name())
				}
				res := mustAssign(t, s, tc.in)
				checkValid(t, s.Name(), tc.in, res)
				if res.Queues == nil {
					t.Fatalf("want a non-nil Queues map, have nil")
				}
				if w.queues != nil && !maps.Equal(res.Queues, w.queues) {
					t.Fatalf("want %v, have %v", w.queues, res.Queues)
				}
				if w.loads != nil {
					if have := loads(tc.in, res); !maps.Equal(have, w.loads) {
						t.Fatalf("want loads %v, have %v (%v)", w.loads, have, res.Queues)
					}
				}
				if !reflect.DeepEqual(res.Unassignable, w.unassignable) {
					t.Fatalf("want unassignable %v, have %v", w.unassignable, res.Unassignable)
				}
			})
		}
	}
}

func TestInvalidInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"duplicate member", Input{Members: members("a", "b", "a"), Queues: queues("q")}, `member "a" appears twice`},
		{"duplicate queue", Input{Members: members("a"), Queues: queues("q", "q")}, `queue "q" appears twice`},
		{"empty member name", Input{Members: members("a", "")}, "a member has an empty name"},
		{"empty queue name", Input{Members: members("a"), Queues: queues("")}, "a queue has an empty name"},
		{"duplicate queue in a source", Input{Members: members("a"), Source: sliceSource(queues("q", "r", "q"))}, `queue "q" appears twice`},
		{"queues and a source", Input{Members: members("a"), Queues: queues("q"), Source: sliceSource(queues("r"))}, "both Queues and Source are set"},
	} {
		for _, s := range strategies {
			t.Run(tc.name+"/"+s.Name(), func(t *testing.T) {
				res, err := s.Assign(tc.in)
				if !errors.Is(err, ErrInvalidInput) {
					t.Fatalf("want an error wrapping ErrInvalidInput, have %v", err)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), s.Name()) {
					t.Fatalf("want the error to name the strategy and say %q, have %q", tc.want, err)
				}
				if res.Queues != nil {
					t.Fatalf("want no result with the error, have %v", res.Queues)
				}
			})
		}
	}
}

func TestByName(t *testing.T) {
	for name, want := range map[string]Strategy{
		"sticky": Sticky{}, "range": Range{}, "round-robin": RoundRobin{}, "": Sticky{},
	} {
		s, err := ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): want %T, have error %v", name, want, err)
		}
		if s != want {
			t.Fatalf("ByName(%q): want %T, have %T", name, want, s)
		}
		if name != "" && s.Name() != name {
			t.Fatalf("ByName(%q).Name(): want %q, have %q", name, name, s.Name())
		}
	}
	for _, name := range Names() {
		if _, err := ByName(name); err != nil {
			t.Fatalf("ByName(%q) of a listed name: %v", name, err)
		}
	}
	s, err := ByName("roundrobin")
	if !errors.Is(err, ErrUnknownStrategy) || s != nil {
		t.Fatalf("ByName(roundrobin): want nil and ErrUnknownStrategy, have %v and %v", s, err)
	}
	if !strings.Contains(err.Error(), `"roundrobin"`) || !strings.Contains(err.Error(), "sticky, range, round-robin") {
		t.Fatalf("want the error to quote the name and list the valid ones, have %q", err)
	}
}

func TestClampsCapacityAndWeight(t *testing.T) {
	in := Input{
		Members: []Member{{Name: "a", Capacity: -5}, {Name: "b", Capacity: 0}},
		Queues:  []Queue{{Name: "q1", Weight: -1}, {Name: "q2", Weight: 0}, {Name: "q3", Weight: 1 << 40}},
	}
	res := mustAssign(t, Sticky{}, in)
	checkValid(t, "sticky", in, res)
	// Capacities count as 1 each; q3 weighs MaxWeight, so it sits alone.
	l := loads(in, res)
	if l[res.Queues["q3"]] != MaxWeight || l[res.Queues["q1"]] != 2 || res.Queues["q1"] != res.Queues["q2"] {
		t.Fatalf("want q3 (weight %d) alone and q1, q2 together, have %v (loads %v)", MaxWeight, res.Queues, l)
	}
}

func TestFromDroverTypes(t *testing.T) {
	m := FromMember(drover.Member{Name: "w1", Host: "h", Capacity: 8, Tags: []string{"gpu"}})
	if m.Name != "w1" || m.Capacity != 8 || !reflect.DeepEqual(m.Tags, []string{"gpu"}) {
		t.Fatalf("FromMember: want {w1 8 [gpu]}, have %+v", m)
	}
	q := FromQueueConfig(drover.QueueConfig{Name: "emails", Weight: 3, Concurrency: 9, Tags: []string{"eu"}})
	if q.Name != "emails" || q.Weight != 3 || !reflect.DeepEqual(q.Tags, []string{"eu"}) {
		t.Fatalf("FromQueueConfig: want {emails 3 [eu]}, have %+v", q)
	}
}

func TestMoves(t *testing.T) {
	prev := map[string]string{"a": "x", "b": "y", "c": "z", "e": ""}
	next := map[string]string{"a": "x", "b": "z", "d": "y", "e": "x"}
	want := []Move{{Queue: "b", From: "y", To: "z"}, {Queue: "c", From: "z"}, {Queue: "d", To: "y"}, {Queue: "e", To: "x"}}
	have := Moves(prev, next)
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("want %+v, have %+v", want, have)
	}
	var handovers int
	for _, m := range have {
		if m.Handover() {
			handovers++
		}
	}
	if handovers != 1 {
		t.Fatalf("want 1 handover, have %d", handovers)
	}
	if m := Moves(nil, nil); len(m) != 0 {
		t.Fatalf("Moves(nil, nil): want none, have %v", m)
	}
}
