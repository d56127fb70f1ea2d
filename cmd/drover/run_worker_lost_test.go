package main

import (
	"errors"
	"fmt"
	"testing"
)

// Every queue the worker reports lost must reach the reconciler, however
// many are lost while it is busy: a dropped report leaves the queue's loop
// registered and the queue dead until the assignment changes.
func TestLostQueueReportsAreNeverDropped(t *testing.T) {
	lost := make(chan string, 256)
	report := relayLost(lost)
	const n = 300 // more than the relay buffers
	for i := range n {
		report(fmt.Sprintf("q%d", i), errors.New("fenced"))
	}
	if have := len(lost); have != n {
		t.Fatalf("want %d lost queues delivered, have %d", n, have)
	}
}
