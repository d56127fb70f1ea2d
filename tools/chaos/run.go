package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/drover-dev/drover/internal/clock"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/tools/chaos/check"
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
	// A pass that needed the graceful-stop rule's excuse keeps its
	// directory too, so that the excused runs can be read.
	if err != nil || !res.Report.OK() || res.Report.GracefulRepeatsExcused > 0 || o.Keep || !temp {
		prog.printf("kept the run directory %s (check it again with: go run ./tools/chaos -check %s)", dir, dir)
	} else {
		os.RemoveAll(dir)
	}
	return res, err
}

// harness is one run's moving parts.
type harness struct {
	o       options
	dir     string
	prog    *progress
	rng     *rand.Rand
	c       *cluster
	f       *fleet
	mgr     *scheduler.Manager
	queues  []string
	ordered map[string]bool
	parker  *parker            // parked.go
	churn   *churner           // churn.go; nil when the run has no key-churn
	foreign []*foreignProducer // foreign.go: the Node and Python producers of -producers

	// Filled by the phase and the drain.
	gen       *loadGen
	sampler   *offsetSampler
	inj       *injector
	phase     time.Duration
	achieved  float64 // load messages confirmed per second
	drain     drainResult
	drainTook time.Duration // from the faults' end until nothing expected was missing, or the drain gave up
	scheds    []check.Schedule
	final     map[string]int64
	retired   map[string]bool // churn keys retired after the drain
}

func runIn(ctx context.Context, o options, dir string, prog *progress) (*result, error) {
	h := &harness{o: o, dir: dir, prog: prog, rng: rand.New(rand.NewPCG(uint64(o.Seed), uint64(o.Seed>>32)^0x9e3779b97f4a7c15))}
	defer h.close()
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	faultErr, err := h.run(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.save(ctx); err != nil {
		return nil, err
	}
	res, err := recheck(dir)
	if err != nil {
		return nil, err
	}
	return res, faultErr
}

func (h *harness) close() {
	for _, p := range h.foreign {
		p.stop()
	}
	if h.f != nil {
		h.f.killAll()
	}
	if h.c != nil {
		h.c.close()
	}
}

// setup builds drover if needed, starts the servers, creates the queues
// and schedule entries, and starts the fleet; it returns once every queue
// has an owner.
func (h *harness) setup(ctx context.Context) error {
	bin, err := h.build(ctx, h.o.Drover, "drover", "github.com/drover-dev/drover/cmd/drover")
	if err != nil {
		return err
	}
	task, err := h.build(ctx, h.o.Task, "task", "github.com/drover-dev/drover/tools/chaos/task")
	if err != nil {
		return err
	}
	taskArgv := []string{task, filepath.Join(h.dir, tasksLogName)}

	sentinel := slices.Contains(h.o.Kinds, check.Sentinel)
	if sentinel {
		h.prog.printf("starting a 3-node ZooKeeper ensemble and Redis as a Sentinel deployment (a master and a replica, appendonly, fsync always; three Sentinels; durable enqueue %s)", onOff(h.o.Durable))
	} else {
		h.prog.printf("starting a 3-node ZooKeeper ensemble and Redis (appendonly, fsync always)")
	}
	if h.c, err = startCluster(ctx, h.dir, sentinel, h.o.Durable); err != nil {
		return err
	}
	if err := h.startForeign(ctx, sentinel); err != nil {
		return err
	}
	h.queues, h.ordered = queueNames(h.o.Queues), map[string]bool{}
	sess, err := h.c.zk.session(ctx)
	if err != nil {
		return err
	}
	for i := range h.o.LongQueues {
		h.queues = append(h.queues, fmt.Sprintf("l%02d", i))
	}
	for i, q := range h.queues {
		h.ordered[q] = i < h.o.Ordered || i >= h.o.Queues // long queues are ordered
		if err := sess.Queues().Create(ctx, queueConfig(q, h.ordered[q], taskArgv)); err != nil {
			return fmt.Errorf("create queue %s: %w", q, err)
		}
	}
	if err := h.setupParking(ctx, sess.Queues().Create, taskArgv); err != nil { // parked.go
		return err
	}
	if slices.Contains(h.o.Kinds, check.KeyChurn) {
		if err := h.setupChurn(ctx, sess.Families().Create, taskArgv); err != nil { // churn.go
			return err
		}
	}
	h.mgr = scheduler.NewManager(h.c.store.Schedules())
	for i := 0; i < h.o.Schedules; i++ {
		if err := h.mgr.Add(ctx, scheduleDefinition(i, h.queues[i%h.o.Queues])); err != nil {
			return err
		}
	}

	fs := fleetSettings{zkServers: h.c.ensemble.Addrs, redisAddr: h.c.redisAddr(), sessionTimeout: h.o.SessionTimeout}
	if sentinel {
		fs.sentinels, fs.durable = h.c.sentinel.addrs(), onOff(h.o.Durable)
	}
	h.f, err = newFleet(bin, h.dir, h.o, fs)
	if err != nil {
		return err
	}
	if sentinel {
		// The workers' proxies follow the master (sentinel.go).
		h.c.sentinel.watch(func(master string) {
			h.prog.printf("sentinel: the master is now %s; the workers' proxies point at it", master)
			for _, p := range h.f.workers {
				p.redis.Retarget(master)
			}
		})
	}
	h.prog.printf("starting %d workers and %d scheduler candidates", len(h.f.workers), len(h.f.schedulers))
	for _, p := range h.f.all() {
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, p := range h.f.workers {
		if err := p.waitReady(ctx, readyBound); err != nil {
			return err
		}
	}
	return waitOwned(ctx, h.c, h.queues, 60*time.Second)
}

// build returns bin, or builds pkg into the run directory when bin is empty.
func (h *harness) build(ctx context.Context, bin, name, pkg string) (string, error) {
	if bin != "" {
		return filepath.Abs(bin)
	}
	bin = filepath.Join(h.dir, name)
	h.prog.printf("building %s", bin)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// run runs the load, the sampler and the faults for the phase, then drains.
// faultErr says why the fault schedule stopped early (a server that did not
// come back); the drain and the check still run.
func (h *harness) run(ctx context.Context) (faultErr, err error) {
	enqLog, err := os.Create(filepath.Join(h.dir, enqueuedLogName))
	if err != nil {
		return nil, err
	}
	defer enqLog.Close()
	fl, err := newFollower(filepath.Join(h.dir, tasksLogName))
	if err != nil {
		return nil, err
	}
	defer fl.close()
	h.gen = &loadGen{store: h.c.store, queues: h.queues[:h.o.Queues], rate: h.o.Rate, sleepMax: h.o.TaskSleep,
		long: h.queues[h.o.Queues:], longSleep: [2]time.Duration{h.o.SessionTimeout, 2 * h.o.SessionTimeout},
		rng: rand.New(rand.NewPCG(h.rng.Uint64(), h.rng.Uint64())), out: enqLog,
		ran: fl.loadRan, maxLag: h.o.MaxLag,
		// The Sentinel kind checks a failover by the caller ids in :seen:
		// every message keeps one there.
		generateIDs: !slices.Contains(h.o.Kinds, check.Sentinel),
		foreign:     foreignRoutes(h.queues[:h.o.Queues], h.foreign)}
	h.sampler = &offsetSampler{zk: h.c.zk, queues: h.checkedQueues(), every: 500 * time.Millisecond}
	if slices.Contains(h.o.Kinds, check.KeyChurn) {
		h.churn = newChurner(h.gen, h.c.churnStore, h.c.zk)
	}
	h.inj = &injector{o: h.o, rng: h.rng, c: h.c, f: h.f, prog: h.prog, long: h.queues[h.o.Queues:], churn: h.churn, gen: h.gen}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	hardCtx, stopHard := context.WithCancel(context.Background())
	defer stopHard()
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	loadDone, sampleDone := make(chan struct{}), make(chan struct{})
	go fl.follow(loadCtx, 250*time.Millisecond)
	go func() { defer close(loadDone); h.gen.run(loadCtx, hardCtx) }()
	go func() { defer close(sampleDone); h.sampler.run(sampleCtx) }()
	h.parker = &parker{gen: h.gen, zk: h.c.zk}
	parkCtx, stopParking := context.WithCancel(context.Background())
	defer stopParking()
	go h.parker.run(loadCtx, parkCtx) // resolves parks through the drain
	churnDone := make(chan struct{})
	go func() {
		defer close(churnDone)
		if h.churn != nil {
			h.churn.run(loadCtx)
		}
	}()

	phaseStart := time.Now()
	h.prog.printf("load and faults for %s: %s", h.o.Duration, h.o.loadDescription())
	faultErr = h.inj.run(ctx, phaseStart.Add(h.o.Duration))
	if faultErr == nil {
		clock.Sleep(ctx, time.Until(phaseStart.Add(h.o.Duration)))
	} else {
		h.prog.printf("error: %v", faultErr)
	}
	h.phase = time.Since(phaseStart)

	// Drain: no more faults; stop enqueueing (the last batch is retried
	// until confirmed, for a while), then the schedulers; wait until
	// everything enqueued or fired ran and every offset reached the end.
	drainStart := time.Now()
	stopLoad()
	bound := time.AfterFunc(30*time.Second, stopHard)
	<-loadDone
	<-churnDone
	bound.Stop()
	for _, p := range h.f.schedulers {
		p.kill()
	}
	for _, p := range h.f.workers {
		if p.pid() == 0 { // a fault stopped mid-way: bring it back
			_ = p.start()
		}
	}
	if h.scheds, err = readSchedules(ctx, h.mgr); err != nil {
		return faultErr, err
	}
	enq, retries, throttled := h.gen.confirmed()
	h.achieved = float64(len(enq)) / h.phase.Seconds()
	h.prog.printf("drain: %d messages enqueued (%.0f/s; %d batch sends retried; %s held back by -max-lag), %d schedules stopped; waiting for the backlog",
		len(enq), h.achieved, retries, time.Duration(throttled)*loadTick, len(h.scheds))
	if err := h.foreignConfirmed(); err != nil {
		return faultErr, err
	}
	h.drain = fl.waitAll(ctx, enq, h.scheds, h.o.DrainBound, drainStart.Add(h.o.DrainMax))
	h.drainTook = time.Since(drainStart)
	gaveUp := ""
	if h.drain.stalled {
		gaveUp = fmt.Sprintf("; gave up: the count did not fall for %s", h.o.DrainBound)
	}
	h.prog.printf("drain: %d expected executions missing after %s (%d when it began%s)",
		h.drain.missing, h.drainTook.Round(time.Millisecond), h.drain.atStart, gaveUp)
	offsetQueues := h.checkedQueues()
	if h.churn != nil {
		// A churn key retires once empty: those retired have no offset
		// node any more; those still registered are checked as any queue.
		var registered []string
		h.retired, registered = h.churn.settle(ctx, time.Now().Add(30*time.Second))
		h.prog.printf("drain: %d family keys retired, %d still registered", len(h.retired), len(registered))
		offsetQueues = append(offsetQueues, registered...)
	}
	offsetsBy := drainStart.Add(h.o.DrainBound) // as long as a quick drain had, and 15 s after a long one
	if now := time.Now(); now.After(offsetsBy) {
		offsetsBy = now
	}
	h.final = waitOffsets(ctx, h.c, offsetQueues, fl, enq, offsetsBy.Add(15*time.Second))
	stopSampling()
	stopParking()
	<-sampleDone
	h.prog.printf("drain done in %s", time.Since(drainStart).Round(time.Millisecond))
	return faultErr, nil
}

// save stops the workers and writes run.json.
func (h *harness) save(ctx context.Context) error {
	for _, p := range h.f.workers {
		p.terminate(10 * time.Second)
	}
	deadQueues := h.checkedQueues()
	if h.churn != nil {
		deadQueues = append(deadQueues, h.churn.names()...)
		for _, q := range h.churn.names() {
			h.ordered[q] = true // the family is ordered
		}
	}
	dead, err := deadLetters(ctx, h.c, deadQueues)
	if err != nil {
		return fmt.Errorf("read dead letters: %w", err)
	}
	queued, err := pending(ctx, h.c, h.final)
	if err != nil {
		return err
	}
	lives := h.f.lifetimes()
	losses, err := sessionLosses(h.dir, lives, h.o.SessionTimeout)
	if err != nil {
		return err
	}
	fires, err := leaseFires(h.dir, lives)
	if err != nil {
		return err
	}
	offsets, sampleErrs := h.sampler.result()
	h.prog.printf("checking: %d offset changes sampled (%d failed reads), %d session losses in the worker logs", len(offsets), sampleErrs, len(losses))
	rec := record{
		Run:          check.Run{Command: h.o.command(), Duration: h.phase.Round(time.Second), Load: fmt.Sprintf("%s; %.0f msg/s achieved; the drain began %d executions behind and took %s", h.o.loadDescription(), h.achieved, h.drain.atStart, h.drainTook.Round(time.Second)), Seed: h.o.Seed},
		Policy:       check.Policy{SessionTimeout: h.o.SessionTimeout, CommitWindow: h.o.CommitWindow},
		Ordered:      orderedNames(h.ordered),
		Faults:       append(h.inj.injected(), losses...),
		Offsets:      offsets,
		Schedules:    h.scheds,
		FinalOffsets: h.final,
		DeadLetters:  dead,
		Pending:      queued,
		Lives:        lives,
		LeaseFires:   fires,
		Parks:        h.parker.parks(),
	}
	if h.churn != nil {
		for q := range h.retired {
			rec.Retired = append(rec.Retired, q)
		}
		slices.Sort(rec.Retired)
		st := h.churn.stats(len(h.retired))
		rec.KeyChurn = &st
	}
	return rec.save(h.dir)
}
