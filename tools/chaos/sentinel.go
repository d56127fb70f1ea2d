package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/clock"
	"github.com/drover-dev/drover/internal/localserver"
	"github.com/drover-dev/drover/tools/chaos/check"
	"github.com/redis/go-redis/v9"
)

// A run with the sentinel fault kind runs Redis as a Sentinel deployment:
// a master and one replica (appendonly, fsync always, both) and three
// Sentinels (quorum 2). The harness's producer and the schedulers use
// Drover's Sentinel client (redis.master_name), so they find the master as
// a deployment's producers do and the durable enqueue mode follows -durable.
// The workers reach Redis through a proxy each (redis-cut needs one per
// worker), which the harness points at the master Sentinel names, as
// HAProxy in front of a Sentinel deployment is: when the master changes
// every worker's connections are closed and it reconnects to the new one.
// The workers are told the durable mode explicitly (their address is a
// proxy, which the auto mode would take for a standalone server).
const (
	sentinelMaster = "drover-chaos"
	// sentinelDownAfter: a master silent this long is down. Two seconds:
	// above the stalls of a loaded 2-core machine, short enough for
	// several failovers a minute.
	sentinelDownAfter = 2 * time.Second
	// notReplicatedLead: the acknowledged messages looked for on the new
	// master start this long before the fault (replication lag is
	// milliseconds; the margin costs a few hundred ZSCOREs).
	notReplicatedLead = 5 * time.Second
)

// sentinelSet is the Sentinel deployment of a run.
type sentinelSet struct {
	servers   []*localserver.Redis // the two data servers
	sentinels []*localserver.Redis
	probes    []*redis.SentinelClient
	direct    map[string]*redis.Client // a plain client per data server, by address

	mu       sync.Mutex
	master   string                // the master's address as Sentinel last named it
	onSwitch []func(master string) // called (in order) when it changes
	stop     context.CancelFunc
	done     chan struct{}
}

// startSentinelSet starts the data servers, makes the second a replica of
// the first, starts the Sentinels and returns once they know the replica
// and each other.
func startSentinelSet(ctx context.Context, dir string) (*sentinelSet, error) {
	s := &sentinelSet{direct: map[string]*redis.Client{}}
	for _, name := range []string{"redis-a", "redis-b"} {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		r, err := localserver.StartRedis(d, localserver.RedisOptions{AppendOnly: true, FsyncAlways: true})
		if err != nil {
			return nil, err
		}
		s.servers = append(s.servers, r)
		s.direct[r.Addr] = redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	}
	master, replica := s.servers[0].Addr, s.servers[1].Addr
	host, port, _ := strings.Cut(master, ":")
	if err := s.direct[replica].SlaveOf(ctx, host, port).Err(); err != nil {
		return nil, fmt.Errorf("REPLICAOF %s on %s: %w", master, replica, err)
	}
	if err := s.waitReplicated(ctx, master, time.Minute); err != nil {
		return nil, err
	}
	for i := 1; i <= 3; i++ {
		d := filepath.Join(dir, fmt.Sprintf("sentinel-%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		sn, err := localserver.StartSentinel(d, sentinelMaster, master, 2,
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", sentinelMaster, sentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s 10000", sentinelMaster))
		if err != nil {
			return nil, err
		}
		s.sentinels = append(s.sentinels, sn)
		s.probes = append(s.probes, redis.NewSentinelClient(&redis.Options{Addr: sn.Addr, MaxRetries: -1}))
	}
	// Each Sentinel must know the replica (to promote it) and the two
	// others (to reach the quorum) before the first fault.
	deadline := time.Now().Add(time.Minute)
	for _, p := range s.probes {
		for {
			m, err := p.Master(ctx, sentinelMaster).Result()
			if err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2" {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("sentinel %s: does not know the replica and the other sentinels after a minute: %v %v", p, m, err)
			}
			if !clock.Sleep(ctx, 100*time.Millisecond) {
				return nil, ctx.Err()
			}
		}
	}
	s.master = master
	return s, nil
}

func (s *sentinelSet) addrs() []string {
	var out []string
	for _, sn := range s.sentinels {
		out = append(out, sn.Addr)
	}
	return out
}

// watch follows the master Sentinel names (polled every 100 ms) and calls
// the onSwitch functions when it changes, until close.
func (s *sentinelSet) watch(onSwitch ...func(master string)) {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.onSwitch, s.stop, s.done = onSwitch, cancel, make(chan struct{})
	s.mu.Unlock()
	go func() {
		defer close(s.done)
		for clock.Sleep(ctx, 100*time.Millisecond) {
			m, err := s.named(ctx)
			if err != nil {
				continue
			}
			s.mu.Lock()
			changed := m != s.master
			s.master = m
			fs := s.onSwitch
			s.mu.Unlock()
			if changed {
				for _, f := range fs {
					f(m)
				}
			}
		}
	}()
}

// named asks the Sentinels, in turn, for the master's address.
func (s *sentinelSet) named(ctx context.Context) (string, error) {
	var errs []error
	for _, p := range s.probes {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		a, err := p.GetMasterAddrByName(qctx, sentinelMaster).Result()
		cancel()
		if err == nil && len(a) == 2 {
			return a[0] + ":" + a[1], nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no sentinel names the master: %w", errors.Join(errs...))
}

// current returns the master's address as last seen.
func (s *sentinelSet) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}

// server returns the data server at addr.
func (s *sentinelSet) server(addr string) *localserver.Redis {
	for _, r := range s.servers {
		if r.Addr == addr {
			return r
		}
	}
	return nil
}

// other returns the data server that is not at addr.
func (s *sentinelSet) other(addr string) *localserver.Redis {
	for _, r := range s.servers {
		if r.Addr != addr {
			return r
		}
	}
	return nil
}

// role returns what the server at addr says it is ("master", "slave") and,
// for a replica, its master's address and whether the link is up.
func (s *sentinelSet) role(ctx context.Context, addr string) (role, master string, up bool, err error) {
	info, err := s.replication(ctx, addr)
	if err != nil {
		return "", "", false, err
	}
	return infoField(info, "role"), infoField(info, "master_host") + ":" + infoField(info, "master_port"), infoField(info, "master_link_status") == "up", nil
}

// replication returns the server at addr's INFO replication.
func (s *sentinelSet) replication(ctx context.Context, addr string) (string, error) {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return s.direct[addr].Info(qctx, "replication").Result()
}

// infoField returns field k of an INFO reply ("" when it has none).
func infoField(info, k string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), k+":"); ok {
			return v
		}
	}
	return ""
}

// behind says how far the replica at replica is behind the master at
// master ("" when it holds every write the master had taken when asked).
// A replica's link is up as soon as it has loaded a full resync's snapshot;
// the writes the master took meanwhile (seconds of them after a
// redis-restart on a loaded host) reach it only after that. A failover
// started then loses writes taken well before the fault, which the
// checker reads as taken during the failover only from a second before its
// start (check.go, reenqueuedAcross): a run on 2026-12-02 failed so, a
// message written 8 s before the kill, run from the old master and enqueued
// again on the new one.
func (s *sentinelSet) behind(ctx context.Context, master, replica string) string {
	mi, err := s.replication(ctx, master)
	if err != nil {
		return fmt.Sprintf("the master %s: %v", master, err)
	}
	// Under load the replica is always a few writes behind the moment the
	// master was asked: give it a second to reach that moment.
	deadline := time.Now().Add(time.Second)
	for {
		ri, err := s.replication(ctx, replica)
		if err != nil {
			return fmt.Sprintf("the replica %s: %v", replica, err)
		}
		why := caughtUp(infoField(mi, "master_repl_offset"), infoField(ri, "slave_repl_offset"))
		if why == "" || time.Now().After(deadline) || !clock.Sleep(ctx, 20*time.Millisecond) {
			return why
		}
	}
}

// caughtUp compares a master's replication offset with its replica's, read
// after it: "" when the replica's is at least the master's, else why not.
func caughtUp(master, replica string) string {
	m, err := strconv.ParseInt(master, 10, 64)
	if err != nil {
		return fmt.Sprintf("the master's replication offset %q: %v", master, err)
	}
	r, err := strconv.ParseInt(replica, 10, 64)
	if err != nil {
		return fmt.Sprintf("the replica's replication offset %q: %v", replica, err)
	}
	if r < m {
		return fmt.Sprintf("the replica is at replication offset %d, %d bytes behind the master", r, m-r)
	}
	return ""
}

// settle waits until the deployment is at rest: every Sentinel names the
// same master and sees one replica of it with its link up, and that
// replica says so too and holds every write the master had taken (behind). A failover started before (right after the killed
// master came back, say) races Sentinel's own reconfiguration: one Sentinel
// still converting the old master to a replica undid the promotion of the
// next failover, which then aborted (-failover-abort-slave-timeout).
func (s *sentinelSet) settle(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		why := s.unsettled(ctx)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sentinel deployment not at rest after %s: %s", bound, why)
		}
		if !clock.Sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// unsettled says why the deployment is not at rest ("" when it is).
func (s *sentinelSet) unsettled(ctx context.Context) string {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	master := ""
	for _, p := range s.probes {
		a, err := p.GetMasterAddrByName(qctx, sentinelMaster).Result()
		if err != nil || len(a) != 2 {
			return fmt.Sprintf("sentinel %s: no master (%v)", p, err)
		}
		m := a[0] + ":" + a[1]
		if master != "" && m != master {
			return fmt.Sprintf("the sentinels name %s and %s", master, m)
		}
		master = m
		rs, err := p.Replicas(qctx, sentinelMaster).Result()
		if err != nil {
			return fmt.Sprintf("sentinel %s: replicas: %v", p, err)
		}
		ok := 0
		for _, r := range rs {
			if r["flags"] == "slave" && r["master-link-status"] == "ok" && r["master-host"]+":"+r["master-port"] == master {
				ok++
			}
		}
		if ok != 1 {
			return fmt.Sprintf("sentinel %s sees %d healthy replicas of %s: %v", p, ok, master, rs)
		}
	}
	replica := s.other(master)
	if replica == nil {
		return "the master " + master + " is not one of the data servers"
	}
	role, of, up, err := s.role(ctx, replica.Addr)
	if err != nil || role != "slave" || of != master || !up {
		return fmt.Sprintf("the replica %s: role %s of %s, link up %v (%v)", replica.Addr, role, of, up, err)
	}
	return s.behind(ctx, master, replica.Addr)
}

// waitReplicated waits until the server at master is a master with a
// replica online.
func (s *sentinelSet) waitReplicated(ctx context.Context, master string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := s.direct[master].Info(qctx, "replication").Result()
		cancel()
		if err == nil && strings.Contains(info, "role:master") && strings.Contains(info, "state=online") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no replica online at the master %s after %s: %v", master, bound, err)
		}
		if !clock.Sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// waitNamed waits until the Sentinels name a master other than old.
func (s *sentinelSet) waitNamed(ctx context.Context, old string, bound time.Duration) (string, error) {
	deadline := time.Now().Add(bound)
	for {
		if m, err := s.named(ctx); err == nil && m != old {
			return m, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the sentinels still name %s as the master after %s", old, bound)
		}
		if !clock.Sleep(ctx, 50*time.Millisecond) {
			return "", ctx.Err()
		}
	}
}

// waitDemoted waits until the server at old is a replica of master.
func (s *sentinelSet) waitDemoted(ctx context.Context, old, master string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		if role, of, _, err := s.role(ctx, old); err == nil && role == "slave" && of == master {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the old master %s is not a replica of %s after %s", old, master, bound)
		}
		if !clock.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// missing returns, of msgs, those whose caller-chosen id the server at
// addr does not hold in its queue's :seen set (kept for the dedupe window,
// 24 h: the message was written there, whether it ran or not).
func (s *sentinelSet) missing(ctx context.Context, addr string, msgs []check.Enqueued) ([]string, error) {
	pipe := s.direct[addr].Pipeline()
	cmds := make([]*redis.FloatCmd, len(msgs))
	for i, m := range msgs {
		cmds[i] = pipe.ZScore(ctx, redisPrefix+":{"+m.Queue+"}:seen", m.ID)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("look for the acknowledged messages on %s: %w", addr, err)
	}
	var out []string
	for i, c := range cmds {
		if errors.Is(c.Err(), redis.Nil) {
			out = append(out, msgs[i].Queue+"/"+msgs[i].ID)
		}
	}
	return out, nil
}

func (s *sentinelSet) close() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	for _, p := range s.probes {
		p.Close()
	}
	for _, c := range s.direct {
		c.Close()
	}
}

// sentinelFailover: the master fails over under load, by kill -9 (started
// again once the replica is promoted, so that Sentinel makes it a replica
// of the new master) and by SENTINEL FAILOVER (the master stays up and
// goes on answering writes until Sentinel demotes it), in turn. The fault
// lasts until the new master has a replica online again. Then every
// message acknowledged from notReplicatedLead before the fault until the
// old master was gone (killed) or demoted is looked for on the new master:
// those absent were never replicated (Fault.NotReplicated).
func (in *injector) sentinelFailover(ctx context.Context) (check.Fault, error) {
	s := in.c.sentinel
	if s == nil {
		return check.Fault{}, fmt.Errorf("%s: the run's Redis is not a Sentinel deployment", check.Sentinel)
	}
	in.failovers++
	graceful := in.failovers%2 == 0
	if err := s.settle(ctx, 2*time.Minute); err != nil {
		return check.Fault{}, err
	}
	old, err := s.named(ctx)
	if err != nil {
		return check.Fault{}, err
	}
	oldServer := s.server(old)
	f := check.Fault{Kind: check.Sentinel, Target: "redis " + old, Start: time.Now()}
	var master string
	if graceful {
		f.Note = "SENTINEL FAILOVER"
		// A failover Sentinel aborts (a replica not promoted in time) is
		// asked for again, up to three times.
		for try := 1; ; try++ {
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := s.probes[in.rng.IntN(len(s.probes))].Failover(fctx, sentinelMaster).Err()
			cancel()
			if err == nil {
				if master, err = s.waitNamed(ctx, old, 30*time.Second); err == nil {
					break
				}
			}
			if try == 3 || ctx.Err() != nil {
				f.End = time.Now()
				return f, fmt.Errorf("SENTINEL FAILOVER (%d tries): %w", try, err)
			}
			in.prog.printf("warning: SENTINEL FAILOVER try %d: %v; asking again", try, err)
			f.Note += fmt.Sprintf(" (try %d failed: %v)", try, err)
			if err := s.settle(ctx, 2*time.Minute); err != nil {
				f.End = time.Now()
				return f, err
			}
		}
		switched := time.Since(f.Start)
		// The old master answers writes until Sentinel demotes it.
		if err := s.waitDemoted(ctx, old, master, time.Minute); err != nil {
			f.End = time.Now()
			return f, err
		}
		f.Note += fmt.Sprintf(": new master named after %s, old master demoted after %s", switched.Round(time.Millisecond), time.Since(f.Start).Round(time.Millisecond))
	} else {
		f.Note = "kill -9 of the master"
		oldServer.Kill()
		if master, err = s.waitNamed(ctx, old, time.Minute); err != nil {
			f.End = time.Now()
			return f, err
		}
		f.Note += fmt.Sprintf(": new master named after %s", time.Since(f.Start).Round(time.Millisecond))
	}
	// A reply of the old master in flight at the switch reaches the
	// producer within a moment: wait one before taking the list.
	clock.Sleep(ctx, time.Second)
	var acked []check.Enqueued
	for _, m := range in.gen.ackedSince(f.Start.Add(-notReplicatedLead)) {
		if !strings.HasPrefix(m.Queue, churnPrefix) { // the churn family's dedupe window is 30 s: it may be over
			acked = append(acked, m)
		}
	}
	f.Checked = len(acked)
	f.NotReplicated, err = s.missing(ctx, master, acked)
	if err != nil {
		f.End = time.Now()
		return f, err
	}
	f.Note += fmt.Sprintf("; %d of %d acknowledged messages not on the new master", len(f.NotReplicated), len(acked))
	if !graceful {
		clock.Sleep(ctx, in.between(500*time.Millisecond, 1500*time.Millisecond))
		if err := oldServer.Start(); err != nil {
			f.End = time.Now()
			return f, fmt.Errorf("restart the old master %s: %w", old, err)
		}
	}
	// Sentinel makes the old master a replica of the new one; until it has
	// caught up, a durable enqueue is not acknowledged. The fault ends when
	// the deployment is at rest again.
	err = s.settle(ctx, 2*time.Minute)
	f.End = time.Now()
	return f, err
}
