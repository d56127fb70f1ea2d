package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

// The producers in other languages: the Node client
// (clients/node/test/chaos_producer.mjs) and the Python client
// (python/tests/chaos_producer.py), each run as a child of the harness that
// enqueues the batches it is given, so that their scripts, their batching
// and their answers after a fault are checked as the Go producer's are: a
// message confirmed by either must run, once in order on an ordered queue.
const (
	producerGo     = "go"
	producerNode   = "node"
	producerPython = "python"
)

// foreignTimeout bounds a batch's answer: a child that has not answered
// by then is killed and started again, and the batch counts as failed (the
// harness sends it again, the same ids).
const foreignTimeout = 10 * time.Second

// foreignProducer is one such child. enqueue is called by one goroutine at
// a time (the load generator's).
type foreignProducer struct {
	name string
	argv []string
	env  []string
	dir  string // the program's working directory
	log  string // its stderr goes here

	mu       sync.Mutex
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	lines    chan string // its answers; closed when its stdout ends
	starts   int
	failures int // batches answered with an error, or not answered in time
}

// foreignRequest and foreignAnswer are the lines the children read and
// write.
type foreignRequest struct {
	Msgs []foreignMessage `json:"msgs"`
}

type foreignMessage struct {
	Queue string          `json:"queue"`
	Task  string          `json:"task"`
	Args  json.RawMessage `json:"args,omitempty"`
	ID    string          `json:"id,omitempty"` // empty: the client generates one
}

type foreignAnswer struct {
	Results []struct {
		ID     string `json:"id"`
		Result int64  `json:"result"` // the position, 0 when delayed, -1 when the id was known
	} `json:"results"`
	Error string `json:"error"`
}

// redisTarget is where the children's clients connect: a standalone
// server, or a Sentinel set's master by name; durable is the producers'
// durable mode ("" when off).
type redisTarget struct {
	addr      string
	sentinels []string
	master    string
	durable   *queue.Durable
}

// newForeignProducers returns the children for names (producerNode,
// producerPython), built and ready to start. root is the repository's
// directory.
func newForeignProducers(ctx context.Context, names []string, root, runDir string, t redisTarget) ([]*foreignProducer, error) {
	env := []string{"CHAOS_PREFIX=" + redisPrefix}
	if len(t.sentinels) > 0 {
		env = append(env, "CHAOS_SENTINELS="+strings.Join(t.sentinels, ","), "CHAOS_SENTINEL_MASTER="+t.master)
	} else {
		env = append(env, "CHAOS_REDIS_URL=redis://"+t.addr+"/0")
	}
	if t.durable != nil && t.durable.Replicas > 0 {
		env = append(env, fmt.Sprintf("CHAOS_DURABLE=%d:%d", t.durable.Replicas, t.durable.Timeout.Milliseconds()))
	}
	var out []*foreignProducer
	for _, name := range names {
		p := &foreignProducer{name: name, env: append(os.Environ(), env...), log: filepath.Join(runDir, name+"-producer.log")}
		switch name {
		case producerNode:
			node, err := exec.LookPath("node")
			if err != nil {
				return nil, fmt.Errorf("the Node producer needs node: apt-get install -y nodejs npm (or make deps): %w", err)
			}
			dir, err := buildNodeClient(ctx, node, filepath.Join(root, "clients", "node"), filepath.Join(runDir, "node-client"))
			if err != nil {
				return nil, err
			}
			p.dir = dir
			p.argv = []string{node, filepath.Join("test", "chaos_producer.mjs")}
		case producerPython:
			// Debian's python3 (python3-redis, as make deps installs it),
			// not one a version manager puts first in PATH.
			py := "/usr/bin/python3"
			if _, err := os.Stat(py); err != nil {
				return nil, fmt.Errorf("the Python producer needs /usr/bin/python3 with python3-redis (apt-get install -y python3-redis, or make deps): %w", err)
			}
			p.dir = filepath.Join(root, "python")
			p.env = append(p.env, "PYTHONPATH="+p.dir)
			p.argv = []string{py, filepath.Join("tests", "chaos_producer.py")}
		default:
			return nil, fmt.Errorf("unknown producer %q", name)
		}
		out = append(out, p)
	}
	return out, nil
}

// buildNodeClient builds the Node client from src into dir/dist (its own
// copy: the examples' tests build into src/dist, and go test runs packages
// at once), with dir/node_modules and dir/scripts links to src's and the
// producer's program in dir/test, where it finds ../dist. It returns dir.
func buildNodeClient(ctx context.Context, node, src, dir string) (string, error) {
	tsc := filepath.Join(src, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		return "", fmt.Errorf("the Node producer needs the client's dependencies: (cd clients/node && npm ci), or make deps: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "test"), 0o755); err != nil {
		return "", err
	}
	build := exec.CommandContext(ctx, node, tsc, "-p", src, "--outDir", filepath.Join(dir, "dist"))
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the Node client (tsc): %w\n%s", err, b)
	}
	program, err := os.ReadFile(filepath.Join(src, "test", "chaos_producer.mjs"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "test", "chaos_producer.mjs"), program, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module"}`+"\n"), 0o644); err != nil {
		return "", err
	}
	for _, link := range []string{"node_modules", "scripts"} { // ioredis; the Lua and versions the client reads at load
		if err := os.Symlink(filepath.Join(src, link), filepath.Join(dir, link)); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return dir, nil
}

// start starts the child (again).
func (p *foreignProducer) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *foreignProducer) startLocked() error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own copy
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stderr = p.dir, p.env, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the %s producer: %w", p.name, err)
	}
	lines := make(chan string, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	p.cmd, p.stdin, p.lines = cmd, stdin, lines
	p.starts++
	return nil
}

// stop ends the child.
func (p *foreignProducer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked()
}

func (p *foreignProducer) stopLocked() {
	if p.cmd == nil {
		return
	}
	p.stdin.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
	for range p.lines { // its reader ends with its stdout
	}
	p.cmd = nil
}

// enqueue sends msgs as one batch and returns what the child's client
// answered, in order. An error means the outcome is unknown: the caller
// sends the same messages again. A child that does not answer within
// foreignTimeout, or has exited, is started again.
func (p *foreignProducer) enqueue(msgs []*drover.Message) ([]queue.EnqueueResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res, err := p.roundTrip(msgs)
	if err != nil {
		p.failures++
	}
	return res, err
}

func (p *foreignProducer) roundTrip(msgs []*drover.Message) ([]queue.EnqueueResult, error) {
	if p.cmd == nil {
		if err := p.startLocked(); err != nil {
			return nil, err
		}
	}
	req := foreignRequest{Msgs: make([]foreignMessage, len(msgs))}
	for i, m := range msgs {
		req.Msgs[i] = foreignMessage{Queue: m.Queue, Task: m.Task, Args: m.Args, ID: m.ID}
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		p.stopLocked()
		return nil, fmt.Errorf("%s producer: write a batch: %w", p.name, err)
	}
	var ans string
	var ok bool
	select {
	case ans, ok = <-p.lines:
		if !ok {
			p.stopLocked()
			return nil, fmt.Errorf("%s producer exited (see %s)", p.name, p.log)
		}
	case <-time.After(foreignTimeout):
		p.stopLocked()
		return nil, fmt.Errorf("%s producer: no answer in %s; started again", p.name, foreignTimeout)
	}
	return parseForeignAnswer(p.name, ans, len(msgs))
}

// parseForeignAnswer reads a child's answer to a batch of n messages.
func parseForeignAnswer(name, line string, n int) ([]queue.EnqueueResult, error) {
	var a foreignAnswer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		return nil, fmt.Errorf("%s producer: answer %q: %w", name, line, err)
	}
	if a.Error != "" {
		return nil, fmt.Errorf("%s producer: %s", name, a.Error)
	}
	if len(a.Results) != n {
		return nil, fmt.Errorf("%s producer: %d results for %d messages", name, len(a.Results), n)
	}
	out := make([]queue.EnqueueResult, n)
	for i, r := range a.Results {
		switch {
		case r.ID == "":
			return nil, fmt.Errorf("%s producer: result %d has no id", name, i)
		case r.Result > 0:
			out[i] = queue.EnqueueResult{ID: r.ID, Position: drover.Position(r.Result)}
		case r.Result == -1:
			out[i] = queue.EnqueueResult{ID: r.ID, Duplicate: true}
		default:
			// The harness sends nothing delayed: a 0 is a wrong answer.
			return nil, fmt.Errorf("%s producer: result %d for %s: %s", name, i, r.ID, strconv.FormatInt(r.Result, 10))
		}
	}
	return out, nil
}

// counts returns how many times the child was started and how many
// batches failed.
func (p *foreignProducer) counts() (starts, failures int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts, p.failures
}

// moduleRoot is the repository's directory (the module's go.mod), from
// wherever the harness runs.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("the chaos harness runs inside the drover module (no go.mod found)")
	}
	return filepath.Dir(mod), nil
}

// startForeign starts the producers of -producers other than Go's.
func (h *harness) startForeign(ctx context.Context, sentinel bool) error {
	var names []string
	for _, n := range h.o.Producers {
		if n != producerGo {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	t := redisTarget{addr: h.c.redisAddr()}
	if sentinel {
		t = redisTarget{sentinels: h.c.sentinel.addrs(), master: sentinelMaster}
		if h.o.Durable {
			t.durable = &queue.Durable{Replicas: durableReplicas, Timeout: durableTimeout}
		}
	}
	h.prog.printf("starting the %s producers", strings.Join(names, " and "))
	if h.foreign, err = newForeignProducers(ctx, names, root, h.dir, t); err != nil {
		return err
	}
	for _, p := range h.foreign {
		if err := p.start(); err != nil {
			return err
		}
	}
	return nil
}

// foreignRoutes gives every third queue of the load to each foreign
// producer: queue i to producers[i%3-1] when there is one (with two,
// q01, q04, … to the first and q02, q05, … to the second; the others stay
// the Go producer's). With the load's split of ids (every other queue's
// messages without one), each foreign producer gets queues of both kinds,
// and the first ordered queues include some of each producer's.
func foreignRoutes(queues []string, producers []*foreignProducer) map[string]*foreignProducer {
	if len(producers) == 0 {
		return nil
	}
	routes := map[string]*foreignProducer{}
	for i, q := range queues {
		if k := i%3 - 1; k >= 0 && k < len(producers) {
			routes[q] = producers[k]
		}
	}
	return routes
}

// foreignConfirmed reports each foreign producer's confirmed messages,
// starts and failed batches, and fails the run when one with queues to
// feed confirmed none: a client that cannot enqueue at all is a broken
// run, not a quiet one.
func (h *harness) foreignConfirmed() error {
	if len(h.foreign) == 0 {
		return nil
	}
	by := h.gen.confirmedBy()
	fed := map[*foreignProducer]bool{}
	for _, p := range h.gen.foreign {
		fed[p] = true
	}
	var errs []error
	for _, p := range h.foreign {
		starts, failures := p.counts()
		h.prog.printf("producer %s: %d messages confirmed, %d batches failed and sent again, started %d times", p.name, by[p.name], failures, starts)
		if fed[p] && h.o.Rate > 0 && by[p.name] == 0 {
			errs = append(errs, fmt.Errorf("the %s producer confirmed no message (see %s)", p.name, p.log))
		}
	}
	h.prog.printf("producer go: %d messages confirmed", by[producerGo])
	return errors.Join(errs...)
}
