package examples_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/internal/auth"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// python is the interpreter the suite runs with: Debian's, which sees
// Debian's python3-redis (a pyenv python3 on PATH does not).
const python = "/usr/bin/python3"

var (
	buildOnce sync.Once
	droverBin string
	buildErr  error
)

// drover builds the drover binary once per test run.
func droverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-examples-bin-")
		if err != nil {
			buildErr = err
			return
		}
		droverBin = filepath.Join(dir, "drover")
		out, err := exec.Command("go", "build", "-o", droverBin, "../cmd/drover").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build drover: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return droverBin
}

// needPython fails the test, with the install hint, when Debian's python3
// or its redis module is missing.
func needPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import redis").CombinedOutput(); err != nil {
		t.Fatalf("%s with redis-py is needed: apt-get install -y python3 python3-redis (or make deps): %v\n%s", python, err, out)
	}
}

// fleet is a real Drover fleet on private servers: ZooKeeper, Redis and
// drover processes (worker, scheduler, web), each logging to a file that a
// failed test prints.
type fleet struct {
	t      *testing.T
	dir    string
	env    []string
	redis  string
	prefix string
	zk     *coordinator.Session
	procs  []*exec.Cmd
	logs   []string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	zkAddrs := testenv.ZooKeeper(t).Addrs
	f := &fleet{t: t, dir: t.TempDir(), redis: testenv.Redis(t).Addr, prefix: testenv.Prefix(t)}
	root := testenv.Chroot(t)
	f.env = append(os.Environ(),
		"DROVER_ZOOKEEPER_SERVERS="+strings.Join(zkAddrs, ","),
		"DROVER_ZOOKEEPER_ROOT="+root,
		"DROVER_REDIS_ADDRS="+f.redis,
		"DROVER_REDIS_PREFIX="+f.prefix,
		"DROVER_WORKER_SETTLE=100ms",
		"DROVER_WORKER_ADMIN_ADDR=127.0.0.1:0",
		"DROVER_SCHEDULER_ADMIN_ADDR=127.0.0.1:0",
		"DROVER_SCHEDULER_POLL_INTERVAL=200ms",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: zkAddrs, Root: root, SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect to zookeeper: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	f.zk = s
	t.Cleanup(f.stop)
	return f
}

// start runs `drover <args>` with extra env until the test ends.
func (f *fleet) start(name string, args []string, extraEnv ...string) {
	f.t.Helper()
	logPath := filepath.Join(f.dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(droverBinary(f.t), args...)
	cmd.Env = append(append(append([]string(nil), f.env...), "DROVER_WORKER_NAME="+name), extraEnv...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.t.Fatalf("start drover %v: %v", args, err)
	}
	f.procs = append(f.procs, cmd)
	f.logs = append(f.logs, logPath)
}

func (f *fleet) stop() {
	for _, c := range f.procs {
		c.Process.Kill()
		c.Wait()
	}
	if f.t.Failed() {
		for _, l := range f.logs {
			b, _ := os.ReadFile(l)
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			f.t.Logf("--- %s (tail) ---\n%s", filepath.Base(l), b)
		}
	}
}

// createQueue registers a queue whose every task runs argv in a pool.
func (f *fleet) createQueue(name string, argv []string, env map[string]string) {
	f.t.Helper()
	qc := drover.QueueConfig{Name: name, MaxAttempts: 3, Concurrency: 2,
		Backoff: drover.Backoff{Base: drover.Duration(50 * time.Millisecond), Max: drover.Duration(200 * time.Millisecond)},
		Tasks: map[string]drover.TaskRoute{"*": {Command: argv, Env: env,
			Pool: &drover.PoolConfig{MaxTasksPerChild: 1000}}}}
	if err := f.zk.Queues().Create(context.Background(), qc); err != nil {
		f.t.Fatalf("create queue %s: %v", name, err)
	}
}

// startWeb starts `drover web` with one producer token and returns its
// URL and the token.
func (f *fleet) startWeb() (string, string) {
	f.t.Helper()
	tok, spec, err := auth.NewToken("py-producer", auth.Producer)
	if err != nil {
		f.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f.start("web", []string{"web"}, "DROVER_AUTH_TOKENS="+spec, "DROVER_WEB_ADDR="+addr)
	url := "http://" + addr
	waitFor(f.t, "drover web to answer /readyz", func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return url, tok
}

// waitFor polls cond; the bound only keeps a broken test from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPythonClientAgainstAFleet runs python/tests (the Python client's
// suite) against a real fleet: enqueue → the pooled Python task runs →
// status succeeded; delayed + revoke → revoked; a schedule written from
// Python fires each slot once; the HTTP producer under a producer token;
// what an enqueue costs Redis in commands, counted on a private Redis of
// its own (DROVER_QUIET_REDIS_URL: the fleet's runs other clients'
// commands). A failing Python test fails this test.
func TestPythonClientAgainstAFleet(t *testing.T) {
	needPython(t)
	f := newFleet(t)
	pyDir, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(f.dir, "done")
	f.createQueue("py", []string{python, filepath.Join(pyDir, "tests", "fleet_tasks.py")},
		map[string]string{"PYTHONPATH": pyDir, "DONE_FILE": done})
	f.start("worker-1", []string{"worker"})
	f.start("scheduler-1", []string{"scheduler"})
	url, token := f.startWeb()
	quiet := testenv.NewRedis(t, testenv.RedisOptions{})

	cmd := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", pyDir)
	cmd.Dir = pyDir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pyDir,
		"REDIS_URL=redis://"+f.redis+"/0", "DROVER_PREFIX="+f.prefix, "DROVER_QUEUE=py",
		"DONE_FILE="+done, "DROVER_URL="+url, "DROVER_TOKEN="+token,
		"DROVER_QUIET_REDIS_URL=redis://"+quiet.Addr+"/0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Python suite failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("the Python suite did not report OK:\n%s", out)
	}
	t.Logf("%s", out)
}
