package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/drover-dev/drover/internal/chaos/check"
	"github.com/drover-dev/drover/scheduler"
)

// Files of a run directory.
const (
	tasksLogName    = "tasks.log"    // one line per execution, written by the tasks
	enqueuedLogName = "enqueued.log" // one line per confirmed enqueue
	recordName      = "run.json"     // the rest of the checker's input
)

// run sets up the cluster and the fleet, runs the load and the faults for
// o.Duration, drains, and checks. Progress goes to logw.
func run(ctx context.Context, o options, logw io.Writer) (*result, error) {
	dir, temp := o.Dir, false
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "drover-chaos-"); err != nil {
			return nil, err
		}
		temp = true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	prog := &progress{w: logw, start: time.Now()}
	prog.printf("run directory %s (seed %d)", dir, o.Seed)
	res, err := runIn(ctx, o, dir, prog)
	if err != nil || !res.Report.OK() || o.Keep || !temp {
		prog.printf("kept the run directory %s (check it again with: go run ./internal/chaos -check %s)", dir, dir)
	} else {
		os.RemoveAll(dir)
	}
	return res, err
}

func runIn(ctx context.Context, o options, dir string, prog *progress) (*result, error) {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(o.Seed>>32)^0x9e3779b97f4a7c15))
	bin := o.Drover
	if bin == "" {
		bin = filepath.Join(dir, "drover")
		prog.printf("building %s", bin)
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/drover-dev/drover/cmd/drover")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build drover: %w\n%s", err, out)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the task program (this binary): %w", err)
	}
	tasksLog := filepath.Join(dir, tasksLogName)

	prog.printf("starting a 3-node ZooKeeper ensemble and Redis (appendonly, fsync always)")
	c, err := startCluster(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer c.close()

	queues := queueNames(o.Queues)
	ordered := map[string]bool{}
	sess, err := c.zk.session(ctx)
	if err != nil {
		return nil, err
	}
	for i, q := range queues {
		ordered[q] = i < o.Ordered
		if err := sess.CreateQueue(ctx, queueConfig(q, ordered[q], []string{self, taskCommand, tasksLog})); err != nil {
			return nil, fmt.Errorf("create queue %s: %w", q, err)
		}
	}
	mgr := scheduler.NewManager(c.store.Schedules())
	for i := 0; i < o.Schedules; i++ {
		if err := mgr.Add(ctx, scheduleDefinition(i, queues[i%len(queues)])); err != nil {
			return nil, err
		}
	}

	f, err := newFleet(bin, dir, o, fleetSettings{zkServers: c.ensemble.Addrs, redisAddr: c.redis.Addr, sessionTimeout: o.SessionTimeout})
	if err != nil {
		return nil, err
	}
	defer f.killAll()
	prog.printf("starting %d workers and %d scheduler candidates", len(f.workers), len(f.schedulers))
	for _, p := range f.all() {
		if err := p.start(); err != nil {
			return nil, err
		}
	}
	for _, p := range f.workers {
		if err := p.waitReady(ctx, readyBound); err != nil {
			return nil, err
		}
	}
	if err := waitOwned(ctx, c, queues, 60*time.Second); err != nil {
		return nil, err
	}

	enqLog, err := os.Create(filepath.Join(dir, enqueuedLogName))
	if err != nil {
		return nil, err
	}
	defer enqLog.Close()
	gen := &loadGen{store: c.store, queues: queues, rate: o.Rate, sleepMax: o.TaskSleep, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), out: enqLog}
	sampler := &offsetSampler{zk: c.zk, queues: queues, every: 500 * time.Millisecond}
	inj := &injector{o: o, rng: rng, c: c, f: f, prog: prog}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	hardCtx, stopHard := context.WithCancel(context.Background())
	defer stopHard()
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	loadDone, sampleDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(loadDone); gen.run(loadCtx, hardCtx) }()
	go func() { defer close(sampleDone); sampler.run(sampleCtx) }()

	phaseStart := time.Now()
	prog.printf("load and faults for %s: %s", o.Duration, o.loadDescription())
	faultErr := inj.run(ctx, phaseStart.Add(o.Duration))
	if faultErr == nil {
		sleepCtx(ctx, time.Until(phaseStart.Add(o.Duration)))
	}
	phase := time.Since(phaseStart)

	// Drain: no more faults; stop enqueueing, then the schedulers; wait until
	// everything that was enqueued or fired ran and every offset reached
	// the end of its queue.
	drainStart := time.Now()
	stopLoad()
	bound := time.AfterFunc(30*time.Second, stopHard) // the last batch's retries
	<-loadDone
	bound.Stop()
	for _, p := range f.schedulers {
		p.kill()
	}
	for _, p := range f.workers {
		if p.pid() == 0 { // a fault aborted mid-way: bring it back
			_ = p.start()
		}
	}
	if faultErr != nil {
		prog.printf("error: %v", faultErr)
	}
	scheds, err := readSchedules(ctx, mgr)
	if err != nil {
		return nil, err
	}
	enq, retries := gen.confirmed()
	prog.printf("drain: %d messages enqueued (%d batch sends retried), %d schedules stopped; waiting for the backlog", len(enq), retries, len(scheds))
	follower, err := newFollower(filepath.Join(dir, tasksLogName))
	if err != nil {
		return nil, err
	}
	defer follower.close()
	pending := follower.waitAll(ctx, enq, scheds, drainStart.Add(o.DrainBound))
	prog.printf("drain: %d expected executions missing after %s", pending, time.Since(drainStart).Round(time.Millisecond))
	final := waitOffsets(ctx, c, queues, follower, enq, drainStart.Add(o.DrainBound).Add(15*time.Second))
	stopSampling()
	<-sampleDone
	offsets, sampleErrs := sampler.result()
	prog.printf("drain done in %s; %d offset changes sampled (%d failed reads); checking", time.Since(drainStart).Round(time.Millisecond), len(offsets), sampleErrs)

	for _, p := range f.workers {
		p.terminate(10 * time.Second)
	}
	dead, err := deadLetters(ctx, c, queues)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	losses, err := sessionLosses(dir, f.lifetimes(), o.SessionTimeout)
	if err != nil {
		return nil, err
	}
	rec := record{
		Run:          check.Run{Command: o.command(), Duration: phase.Round(time.Second), Load: o.loadDescription(), Seed: o.Seed},
		Policy:       check.Policy{SessionTimeout: o.SessionTimeout, CommitWindow: o.CommitWindow},
		Ordered:      orderedNames(ordered),
		Faults:       append(inj.injected(), losses...),
		Offsets:      offsets,
		Schedules:    scheds,
		FinalOffsets: final,
		DeadLetters:  dead,
		Lives:        f.lifetimes(),
	}
	if err := rec.save(dir); err != nil {
		return nil, err
	}
	res, err := recheck(dir)
	if err != nil {
		return nil, err
	}
	if faultErr != nil {
		return res, faultErr
	}
	return res, nil
}
