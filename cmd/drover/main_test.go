package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/testing/testenv"
)

// droverBin is the drover binary built by TestMain: the end-to-end tests
// run it as a user would.
var droverBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "drover-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	droverBin = filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", droverBin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build drover: %v\n%s", err, out)
		return 1
	}
	return testenv.Run(m)
}

// cluster is a test's own corner of the shared servers: a ZooKeeper root and
// a Redis prefix, passed to the binary through DROVER_* variables.
type cluster struct {
	t      *testing.T
	env    []string
	zk     []string
	redis  string
	root   string
	prefix string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	zk, rds := testenv.ZooKeeper(t), testenv.Redis(t)
	c := &cluster{t: t, zk: zk.Addrs, redis: rds.Addr, root: testenv.Chroot(t), prefix: testenv.Prefix(t)}
	c.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"DROVER_ZOOKEEPER_SERVERS=" + strings.Join(c.zk, ","),
		"DROVER_ZOOKEEPER_ROOT=" + c.root,
		"DROVER_ZOOKEEPER_SESSION_TIMEOUT=4s",
		"DROVER_REDIS_ADDRS=" + c.redis,
		"DROVER_REDIS_PREFIX=" + c.prefix,
	}
	return c
}

// result is one run of the binary.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r result) String() string {
	return fmt.Sprintf("drover %s → exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// cmdTimeout bounds one ctl run; every ctl command must finish well within.
const cmdTimeout = 60 * time.Second

// run runs the binary with the cluster's environment (plus extra
// variables, KEY=VALUE) and returns what it printed and its exit code.
func (c *cluster) run(args ...string) result {
	c.t.Helper()
	return runDrover(c.t, c.env, "", args...)
}

// runIn is run with stdin.
func (c *cluster) runIn(stdin string, args ...string) result {
	c.t.Helper()
	return runDrover(c.t, c.env, stdin, args...)
}

func runDrover(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, droverBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run drover %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("drover %v did not finish within %s", args, cmdTimeout)
	}
	return r
}

// ok runs the binary and fails the test unless it exits 0.
func (c *cluster) ok(args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("want exit 0, have:\n%s", r)
	}
	return r
}

// okJSON runs the binary with -o json and decodes its output into v.
func (c *cluster) okJSON(v any, args ...string) result {
	c.t.Helper()
	r := c.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		c.t.Fatalf("decode the JSON output: %v\n%s", err, r)
	}
	return r
}

// fails runs the binary and fails the test unless it exits with code and
// stderr holds every one of msgs.
func (c *cluster) fails(code int, msgs []string, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	checkFailure(c.t, r, code, msgs)
	return r
}

func checkFailure(t *testing.T, r result, code int, msgs []string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, have:\n%s", code, r)
	}
	for _, m := range msgs {
		if !strings.Contains(r.stderr, m) {
			t.Fatalf("want %q in stderr, have:\n%s", m, r)
		}
	}
}

// eventually polls cond until it returns nil, failing with its last error
// after limit. It waits for progress; it asserts nothing about speed.
func eventually(t *testing.T, limit time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s: %v", limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
