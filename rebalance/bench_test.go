package rebalance

import (
	"fmt"
	"math/rand"
	"testing"
)

// benchFleet returns n members and q queues; with mixed set, capacities run
// 1–8 and weights 1–10 (seeded, so every run sees the same fleet).
func benchFleet(n, q int, mixed bool) ([]Member, []Queue) {
	r := rand.New(rand.NewSource(1))
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{Name: fmt.Sprintf("worker-%03d", i), Capacity: 1}
		if mixed {
			ms[i].Capacity = 1 + r.Intn(8)
		}
	}
	qs := make([]Queue, q)
	for i := range qs {
		qs[i] = Queue{Name: fmt.Sprintf("queue-%05d", i), Weight: 1}
		if mixed {
			qs[i].Weight = 1 + r.Intn(10)
		}
	}
	return ms, qs
}

// benchStrategy measures s on 100 members × 10,000 queues: computed fresh,
// after one member joins and after one leaves a fleet that s itself
// assigned. It reports "moved", the queues handed from one member to
// another.
func benchStrategy(b *testing.B, s Strategy, mixed bool) {
	ms, qs := benchFleet(100, 10000, mixed)
	base, err := s.Assign(Input{Members: ms, Queues: qs})
	if err != nil {
		b.Fatal(err)
	}
	joined := append(append([]Member(nil), ms...), Member{Name: "worker-new", Capacity: 4})
	for _, c := range []struct {
		name string
		in   Input
	}{
		{"fresh", Input{Members: ms, Queues: qs}},
		{"join", Input{Previous: base.Queues, Members: joined, Queues: qs}},
		{"leave", Input{Previous: base.Queues, Members: ms[1:], Queues: qs}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var res Result
			b.ReportAllocs()
			for b.Loop() {
				res, err = s.Assign(c.in)
				if err != nil {
					b.Fatal(err)
				}
			}
			moved := 0
			for _, m := range Moves(c.in.Previous, res.Queues) {
				if m.Handover() {
					moved++
				}
			}
			b.ReportMetric(float64(moved), "moved")
		})
	}
}

func BenchmarkSticky100x10000(b *testing.B) { benchStrategy(b, Sticky{}, false) }

// BenchmarkSticky100x1000000 is the strategy at the cost model's horizon
// (DESIGN.md §10): the leader computes this at every join, leave and crash
// of a fleet of a million queues (docs/decisions.md, "Issue 43: a million
// keys"). Run with -benchtime 3x.
func BenchmarkSticky100x1000000(b *testing.B) {
	ms, qs := benchFleet(100, 1000000, false)
	base, err := Sticky{}.Assign(Input{Members: ms, Queues: qs})
	if err != nil {
		b.Fatal(err)
	}
	joined := append(append([]Member(nil), ms...), Member{Name: "worker-new", Capacity: 1})
	for _, c := range []struct {
		name string
		in   Input
	}{
		{"fresh", Input{Members: ms, Queues: qs}},
		{"join", Input{Previous: base.Queues, Members: joined, Queues: qs}},
		{"leave", Input{Previous: base.Queues, Members: ms[1:], Queues: qs}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := (Sticky{}).Assign(c.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
func BenchmarkRange100x10000(b *testing.B)      { benchStrategy(b, Range{}, false) }
func BenchmarkRoundRobin100x10000(b *testing.B) { benchStrategy(b, RoundRobin{}, false) }

// BenchmarkSticky100x10000Weighted is the same with capacities 1–8 and
// weights 1–10.
func BenchmarkSticky100x10000Weighted(b *testing.B) { benchStrategy(b, Sticky{}, true) }

// BenchmarkSticky100x10000Tagged has a third of the queues require one of
// three tags, each offered by a third of the members, exercising the
// constrained path.
func BenchmarkSticky100x10000Tagged(b *testing.B) {
	ms, qs := benchFleet(100, 10000, true)
	tags := []string{"gpu", "ssd", "eu"}
	for i := range ms {
		ms[i].Tags = []string{tags[i%3]}
	}
	for i := range qs {
		if i%3 == 0 {
			qs[i].Tags = []string{tags[(i/3)%3]}
		}
	}
	base, err := Sticky{}.Assign(Input{Members: ms, Queues: qs})
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Previous: base.Queues, Members: ms[1:], Queues: qs}
	var res Result
	for b.Loop() {
		if res, err = (Sticky{}).Assign(in); err != nil {
			b.Fatal(err)
		}
	}
	moved := 0
	for _, m := range Moves(in.Previous, res.Queues) {
		if m.Handover() {
			moved++
		}
	}
	b.ReportMetric(float64(moved), "moved")
}

// BenchmarkSticky100x10000Skewed starts from every queue on one member, the
// worst case for the repair pass (9,900 moves).
func BenchmarkSticky100x10000Skewed(b *testing.B) {
	ms, qs := benchFleet(100, 10000, false)
	prev := make(map[string]string, len(qs))
	for _, q := range qs {
		prev[q.Name] = ms[0].Name
	}
	in := Input{Previous: prev, Members: ms, Queues: qs}
	var res Result
	var err error
	for b.Loop() {
		if res, err = (Sticky{}).Assign(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(Moves(prev, res.Queues))), "moved")
}

// BenchmarkReassign100x1000000 is what the leader computes at a join and
// a leave of a fleet of a million queues since a change of members is
// computed from what moves (docs/decisions.md, "Issue 43: a join moves
// what it needs"): BenchmarkSticky100x1000000's join and leave, by
// Placer.Reassign. Each op builds its Placer from the loads (as the
// leader holds them), outside the timer.
func BenchmarkReassign100x1000000(b *testing.B) {
	ms, qs := benchFleet(100, 1000000, false)
	base, err := Sticky{}.Assign(Input{Members: ms, Queues: qs})
	if err != nil {
		b.Fatal(err)
	}
	load := map[string]int64{}
	for _, m := range base.Queues {
		load[m]++
	}
	lookup := func(name string) (Queue, bool) { return Queue{Name: name}, true }
	joined := append(append([]Member(nil), ms...), Member{Name: "worker-new", Capacity: 1})
	for _, c := range []struct {
		name    string
		members []Member
	}{{"join", joined}, {"leave", ms[1:]}} {
		b.Run(c.name, func(b *testing.B) {
			moved := 0
			for b.Loop() {
				b.StopTimer()
				p := NewPlacer(ms, load)
				b.StartTimer()
				out, _, ok := p.Reassign(c.members, base.Queues, lookup, 1)
				if !ok {
					b.Fatal("refused")
				}
				moved = len(out)
			}
			b.ReportMetric(float64(moved), "moved")
		})
	}
}
