package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/execfile"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

// fleet is a set of drover worker processes sharing a private ZooKeeper
// root and Redis key prefix.
type fleet struct {
	t       testing.TB
	dir     string
	env     []string
	zk      *coordinator.Session
	store   *queue.Store
	mu      sync.Mutex
	workers map[string]*process
	lastPos map[string]drover.Position // queue → position of the last message enqueued
}

// process is one running drover command.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func newFleet(t testing.TB, sessionTimeout time.Duration) *fleet {
	t.Helper()
	zkAddrs := testenv.ZooKeeper(t).Addrs
	redis := testenv.Redis(t)
	root := testenv.Chroot(t)
	prefix := testenv.Prefix(t)
	f := &fleet{t: t, dir: t.TempDir(), workers: map[string]*process{}, lastPos: map[string]drover.Position{}}
	f.env = append(os.Environ(),
		"DROVER_ZOOKEEPER_SERVERS="+strings.Join(zkAddrs, ","),
		"DROVER_ZOOKEEPER_ROOT="+root,
		"DROVER_ZOOKEEPER_SESSION_TIMEOUT="+sessionTimeout.String(),
		"DROVER_REDIS_ADDRS="+redis.Addr,
		"DROVER_REDIS_PREFIX="+prefix,
		"DROVER_WORKER_SETTLE=100ms",
		"DROVER_LOG_LEVEL=info",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: zkAddrs, Root: root, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect to zookeeper: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	f.zk = s
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{redis.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	if f.store, err = queue.New(queue.Config{Client: rdb, Prefix: prefix}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.killAll)
	return f
}

// createQueue registers a queue whose tasks run argv.
func (f *fleet) createQueue(name string, ordered bool, argv []string, mod func(*drover.QueueConfig)) {
	f.t.Helper()
	qc := drover.QueueConfig{Name: name, Ordered: ordered, MaxAttempts: 3,
		Backoff: drover.Backoff{Base: drover.Duration(50 * time.Millisecond), Max: drover.Duration(200 * time.Millisecond)},
		Tasks:   map[string]drover.TaskRoute{"*": {Command: argv}}}
	if mod != nil {
		mod(&qc)
	}
	if err := f.zk.Queues().Create(context.Background(), qc); err != nil {
		f.t.Fatalf("create queue %s: %v", name, err)
	}
}

// startWorker starts `drover worker` named name with extra env.
func (f *fleet) startWorker(name string, extraEnv ...string) *process {
	f.t.Helper()
	return f.startDrover("worker", name, extraEnv...)
}

// startDrover starts `drover <command>` as member name, with its own admin
// port and extra env, logging to a file that a failed test prints.
func (f *fleet) startDrover(command, name string, extraEnv ...string) *process {
	f.t.Helper()
	logPath := filepath.Join(f.dir, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(droverBin, command)
	cmd.Env = append(append(append([]string(nil), f.env...), "DROVER_WORKER_NAME="+name, "DROVER_WORKER_ADMIN_ADDR=127.0.0.1:0", "DROVER_SCHEDULER_ADMIN_ADDR=127.0.0.1:0"), extraEnv...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.t.Fatalf("start %s %s: %v", command, name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); out.Close(); close(p.done) }()
	f.mu.Lock()
	f.workers[name] = p
	f.mu.Unlock()
	return p
}

func (f *fleet) killAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.workers {
		p.cmd.Process.Kill()
		<-p.done
	}
	if f.t.Failed() {
		for _, p := range f.workers {
			b, _ := os.ReadFile(p.log)
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			f.t.Logf("--- worker %s log (tail) ---\n%s", p.name, b)
		}
	}
}

// waitFor polls cond; the bound only keeps a broken test from hanging.
func waitFor(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", bound, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// taskScript writes a task program that appends "queue id attempt pid ppid"
// to logPath (one write, atomic with O_APPEND) after an optional sleep.
func taskScript(t *testing.T, dir, logPath string, sleep string) string {
	t.Helper()
	p := filepath.Join(dir, "task.sh")
	body := "#!/bin/sh\n"
	if sleep != "" {
		body += "sleep " + sleep + "\n"
	}
	body += fmt.Sprintf("printf '%%s %%s %%s %%s %%s\\n' \"$DROVER_QUEUE\" \"$DROVER_MESSAGE_ID\" \"$DROVER_ATTEMPT\" \"$$\" \"$PPID\" >> %s\n", logPath)
	if err := execfile.Write(p, []byte(body)); err != nil {
		t.Fatal(err)
	}
	return p
}

// execution is one line of a task log.
type execution struct {
	queue, id      string
	attempt        int
	pid, workerPID int
}

func readExecutions(t *testing.T, path string) []execution {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []execution
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue // a line being written
		}
		a, _ := strconv.Atoi(fs[2])
		pid, _ := strconv.Atoi(fs[3])
		ppid, _ := strconv.Atoi(fs[4])
		out = append(out, execution{queue: fs[0], id: fs[1], attempt: a, pid: pid, workerPID: ppid})
	}
	return out
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// enqueue puts n messages round-robin into queues, in batches, and returns
// the ids per queue in enqueue order.
func (f *fleet) enqueue(queues []string, n int) map[string][]string {
	f.t.Helper()
	ids := map[string][]string{}
	ctx := context.Background()
	const batch = 500
	for start := 0; start < n; start += batch {
		var msgs []*drover.Message
		for i := start; i < min(start+batch, n); i++ {
			q := queues[i%len(queues)]
			msgs = append(msgs, &drover.Message{Queue: q, Task: "record", Args: []byte(strconv.Itoa(i))})
		}
		res, err := f.store.Producer().EnqueueBatch(ctx, msgs)
		if err != nil {
			f.t.Fatalf("enqueue: %v", err)
		}
		for i, r := range res {
			ids[msgs[i].Queue] = append(ids[msgs[i].Queue], r.ID)
			f.lastPos[msgs[i].Queue] = max(f.lastPos[msgs[i].Queue], r.Position)
		}
	}
	return ids
}
