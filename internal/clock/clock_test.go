package clock

import (
	"context"
	"testing"
	"time"
)

func TestSleepReportsTheWholePause(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep of 1 ms with a live context: want true, have false")
	}
	if !SleepOrDone(context.Background(), time.Millisecond, make(chan struct{})) {
		t.Fatal("SleepOrDone of 1 ms with a live context and an open done: want true, have false")
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An hour: the test would time out if the cancelled context did not end it.
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with a cancelled context: want false, have true")
	}
	if SleepOrDone(ctx, time.Hour, nil) {
		t.Fatal("SleepOrDone with a cancelled context: want false, have true")
	}
}

func TestSleepOrDoneEndsWhenDoneCloses(t *testing.T) {
	done := make(chan struct{})
	close(done)
	if SleepOrDone(context.Background(), time.Hour, done) {
		t.Fatal("SleepOrDone with a closed done: want false, have true")
	}
}
