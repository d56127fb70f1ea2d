package main

import (
	"fmt"
	"maps"
	"math/rand"
	"testing"

	"github.com/drover-dev/drover"
)

// recount is what setWant's counts must equal: the queues of want not run
// by the member it names, and the queues per member.
func recount(o *ownership) (int, map[string]int) {
	off, members := 0, map[string]int{}
	for q, m := range o.want {
		members[m]++
		if o.owner[q] != m {
			off++
		}
	}
	return off, members
}

// TestSetWantCountsWhatEachGenerationMoved: a generation of the same queues
// is counted from the queues it moved (setWant's incremental path), while
// members start and stop queues between generations; its counts must
// equal a count of every queue, as must a generation of other queues.
func TestSetWantCountsWhatEachGenerationMoved(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	members := []string{"m0", "m1", "m2", "m3"}
	want := map[string]string{}
	for i := range 200 {
		want[fmt.Sprintf("q%03d", i)] = members[rng.Intn(len(members))]
	}
	o := newOwnership()
	for gen := int64(1); gen <= 60; gen++ {
		next := maps.Clone(want)
		switch {
		case gen%20 == 0: // another set of queues
			delete(next, "q000")
			next[fmt.Sprintf("x%03d", gen)] = "m0"
		default:
			for range rng.Intn(30) {
				next[fmt.Sprintf("q%03d", rng.Intn(200))] = members[rng.Intn(len(members))]
			}
		}
		want = next
		a := drover.Assignment{Generation: gen, Queues: want}
		o.setWant(&a)
		check := func(when string) {
			t.Helper()
			off, per := recount(o)
			if o.off != off || !maps.Equal(o.wantMembers, per) {
				t.Fatalf("generation %d, %s: off %d, members %v; counted %d, %v", gen, when, o.off, o.wantMembers, off, per)
			}
		}
		check("after setWant")
		// Members follow part of the way: some queues start on their
		// assigned member, some stop, some start elsewhere.
		for q, m := range want {
			switch rng.Intn(4) {
			case 0:
				if cur := o.owner[q]; cur != "" && cur != m {
					o.end(cur, q)
				}
				o.start(m, q)
			case 1:
				if cur := o.owner[q]; cur != "" {
					o.end(cur, q)
				}
			case 2:
				if o.owner[q] == "" {
					o.start(members[rng.Intn(len(members))], q)
				}
			}
		}
		check("after starts and stops")
	}
	if o.wantGen != 60 {
		t.Fatalf("wantGen %d, want 60", o.wantGen)
	}
}
