package rebalance

import (
	"slices"
	"strings"
)

// Move is one queue whose owner differs between two assignments.
type Move struct {
	Queue string
	From  string // the previous owner; "" when the queue had none
	To    string // the new owner; "" when the queue has none now
}

// Handover reports whether the move takes a queue from one member to another
// (as opposed to a queue gaining its first owner or losing its last).
func (m Move) Handover() bool { return m.From != "" && m.To != "" }

// Moves returns the differences between prev and next (queue → member name),
// sorted by queue: one Move for every queue whose owner changed, appeared or
// disappeared. Entries with an empty member name count as no owner. Count the
// moves with Handover to know how many queues changed hands.
func Moves(prev, next map[string]string) []Move {
	var moves []Move
	for q, to := range next {
		if from := prev[q]; from != to {
			moves = append(moves, Move{Queue: q, From: from, To: to})
		}
	}
	for q, from := range prev {
		if _, ok := next[q]; !ok && from != "" {
			moves = append(moves, Move{Queue: q, From: from})
		}
	}
	slices.SortFunc(moves, func(a, b Move) int { return strings.Compare(a.Queue, b.Queue) })
	return moves
}
