package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/examples/gohandler"
	"github.com/drover-dev/drover/internal/ops"
)

// demoFailEvery makes every n-th generated message fail on purpose, so the
// demo shows retries and dead letters.
const demoFailEvery = 40

// demoLoad is the load generator's record of what it enqueued: per queue,
// the positions, in order (positions only grow).
type demoLoad struct {
	mu        sync.Mutex
	positions map[string][]drover.Position
	enqueued  int
	errors    int
	lastErr   error
}

// done returns how many generated messages of q are at or below committed.
func (l *demoLoad) done(q string, committed drover.Position) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.positions[q]
	return sort.Search(len(ps), func(i int) bool { return ps[i] > committed })
}

// generate enqueues a steady trickle of example tasks, round-robin over the
// example queues, until ctx ends.
func (l *demoLoad) generate(ctx context.Context, cl *devClients, rate float64) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m := demoMessage(n)
		res, err := cl.store.Producer().Enqueue(ctx, m)
		l.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				l.errors++
				l.lastErr = err
			}
		} else {
			l.enqueued++
			l.positions[m.Queue] = append(l.positions[m.Queue], res.Position)
		}
		l.mu.Unlock()
	}
}

// demoMessage is the n-th generated message.
func demoMessage(n int) *drover.Message {
	fail := n%demoFailEvery == 0
	var q, task string
	var args any
	switch n % 3 {
	case 0:
		q, task, args = "hello", "greet", map[string]any{"n": n, "fail": fail}
	case 1:
		q, task, args = "python", "greet", map[string]any{"n": n, "sleep": 0.2, "fail": fail}
	default:
		q, task, args = "checksums", gohandler.ChecksumTask, map[string]any{"text": fmt.Sprintf("message %d", n), "fail": fail}
	}
	raw, _ := json.Marshal(args)
	return &drover.Message{Queue: q, Task: task, Args: raw}
}

// runDemo runs the load generator and the status view until ctx ends, then
// prints a summary. With a duration, a demo that processed nothing fails,
// so that `make demo` doubles as a smoke test.
// hints (how to point ctl at the fleet) stay under the view: the view
// clears the screen.
func runDemo(ctx context.Context, a *app, cl *devClients, fl *devFleet, o devOptions, hints string) error {
	load := &demoLoad{positions: map[string][]drover.Position{}}
	genCtx, stopGen := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		load.generate(genCtx, cl, o.rate)
	}()
	defer func() {
		stopGen()
		wg.Wait()
	}()

	tty := isTerminal(a)
	every := time.Second
	if !tty {
		every = 5 * time.Second // a log, not a screen: print less often
	}
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last string
	var down []string // reports of the children that died
	for {
		select {
		case <-ctx.Done():
			stopGen()
			wg.Wait()
			total, done := demoTotals(context.Background(), cl, load)
			fmt.Fprintf(a.stdout, "\ndemo: enqueued %d, done %d after %s\n", total, done, time.Since(start).Round(time.Second))
			if o.duration > 0 && total > 0 && done == 0 {
				return errors.New("dev: the demo processed nothing; see the logs in the data directory")
			}
			return nil
		case <-fl.allExited:
			for _, c := range fl.children {
				fmt.Fprint(a.stderr, c.report())
			}
			return errors.New("dev: every child process exited")
		case c := <-fl.died:
			// At once, by name, with its last log lines; the view keeps
			// showing it, since it clears the screen.
			r := c.report()
			down = append(down, r)
			if !tty {
				fmt.Fprint(a.stderr, r)
			}
			continue
		case <-tick.C:
		}
		view := demoView(ctx, cl, load, fl, time.Since(start))
		if view == "" {
			continue
		}
		if tty {
			fmt.Fprint(a.stdout, "\033[H\033[2J"+view+strings.Join(down, "")+hints)
		} else if view != last {
			fmt.Fprint(a.stdout, view+"\n")
		}
		last = view
	}
}

// demoTotals counts generated messages and those done (at or below their
// queue's committed offset).
func demoTotals(ctx context.Context, cl *devClients, load *demoLoad) (total, done int) {
	load.mu.Lock()
	total = load.enqueued
	queues := make([]string, 0, len(load.positions))
	for q := range load.positions {
		queues = append(queues, q)
	}
	load.mu.Unlock()
	for _, q := range queues {
		off, err := cl.sess.Claims().Offset(ctx, q)
		if err == nil {
			done += load.done(q, off.Offset.Position)
		}
	}
	return total, done
}

// demoView renders the compact status table and the progress line.
func demoView(ctx context.Context, cl *devClients, load *demoLoad, fl *devFleet, elapsed time.Duration) string {
	var b strings.Builder
	o, err := ops.New(ops.Config{ZK: cl.sess, Store: cl.store})
	if err != nil {
		return ""
	}
	snap, err := o.Members().ReadSnapshot(ctx, ops.SnapshotOptions{Owners: true})
	if err != nil {
		return ""
	}
	t := newTable(&b, "QUEUE", "OWNER", "LAG", "OLDEST", "DELAYED", "DEAD", "DONE", "PAUSED")
	total, done := 0, 0
	for _, q := range devQueues("") {
		qs, err := snap.Queue(q.Name)
		if errors.Is(err, drover.ErrQueueNotFound) {
			qs = ops.QueueRow{Queue: q.Name} // not created yet: nothing waits in it
		} else if err != nil || qs.Error != "" {
			t.row(q.Name, "?", "", "", "", "", "", "")
			continue
		}
		owner := qs.Owner
		if owner == "" {
			owner = "(unowned)"
		}
		d := load.done(q.Name, qs.Committed)
		done += d
		paused := ""
		if qs.Paused {
			paused = "yes"
		}
		t.row(q.Name, owner, qs.Lag, fmtAge(time.Duration(qs.OldestAge*float64(time.Second))), qs.Delayed, qs.Dead, d, paused)
	}
	t.flush()
	load.mu.Lock()
	total = load.enqueued
	errs, lastErr := load.errors, load.lastErr
	load.mu.Unlock()
	alive, dead := 0, []string{}
	for _, c := range fl.children {
		select {
		case <-c.done:
			dead = append(dead, c.name)
		default:
			alive++
		}
	}
	fmt.Fprintf(&b, "\ngeneration %d · %d/%d children up", snap.Generation, alive, len(fl.children))
	if len(dead) > 0 {
		fmt.Fprintf(&b, " (down: %s)", strings.Join(dead, ", "))
	}
	fmt.Fprintf(&b, " · enqueued %d · done %d · %s elapsed", total, done, elapsed.Round(time.Second))
	if errs > 0 {
		fmt.Fprintf(&b, " · %d enqueue errors (last: %v)", errs, lastErr)
	}
	b.WriteString("\nCtrl-C stops everything.\n")
	return "drover dev --demo\n\n" + b.String()
}

// isTerminal reports whether a's stdout is a terminal.
func isTerminal(a *app) bool {
	f, ok := a.stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
