package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/drover-dev/drover/queue"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// python is the interpreter the Python suite runs with: Debian's, which
// sees Debian's python3-redis (as examples.TestPythonClientAgainstAFleet).
const python = "/usr/bin/python3"

var pyDir = filepath.Join("..", "..", "python")

// corpusCase is one line of python/tests/validation_cases.json.
type corpusCase struct {
	Field  string          `json:"field"`
	Value  json.RawMessage `json:"value"`
	Repeat *[2]any         `json:"repeat"`
	Raw    *string         `json:"raw"`
	Valid  bool            `json:"valid"`
	Why    string          `json:"why"`
}

func (c corpusCase) String() string {
	switch {
	case c.Repeat != nil:
		return fmt.Sprintf("%s %q×%v", c.Field, c.Repeat[0], c.Repeat[1])
	case c.Raw != nil:
		return fmt.Sprintf("%s %s", c.Field, *c.Raw)
	}
	return fmt.Sprintf("%s %s", c.Field, c.Value)
}

// value is the case's value as JSON.
func (c corpusCase) value(t *testing.T) json.RawMessage {
	if c.Repeat == nil {
		return c.Value
	}
	s, _ := c.Repeat[0].(string)
	n, _ := c.Repeat[1].(float64)
	b, err := json.Marshal(strings.Repeat(s, int(n)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pyDir, "tests", "validation_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []corpusCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("validation_cases.json: %v", err)
	}
	if len(doc.Cases) < 50 {
		t.Fatalf("validation_cases.json: %d cases, want the whole table", len(doc.Cases))
	}
	return doc.Cases
}

// TestCorpusMatchesGoProducer: every case of the shared table is accepted
// or refused by the Go producer as the table says. A value is given to Go
// as the HTTP API gives it: decoded from JSON into the field's Go type (a
// value of another type is refused there), then enqueued with
// Producer.Enqueue on a real Redis. The Python suite checks the same table
// (python/tests/test_validation.py), so the two agree case by case.
func TestCorpusMatchesGoProducer(t *testing.T) {
	ctx := context.Background()
	rdb, err := queue.NewClient(queue.ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	st, err := queue.New(queue.Config{Client: rdb, Prefix: testenv.Prefix(t), DisableWakeups: true})
	if err != nil {
		t.Fatal(err)
	}
	p := st.Producer()
	for _, c := range readCorpus(t) {
		m := &drover.Message{Queue: "corpus", Task: "t"}
		v := c.value(t)
		// Decoded into the field's zero value, as the HTTP API decodes a
		// job: JSON null leaves it zero.
		var refusal error
		switch c.Field {
		case "queue":
			m.Queue = ""
			refusal = json.Unmarshal(v, &m.Queue)
		case "id":
			refusal = json.Unmarshal(v, &m.ID)
		case "task":
			m.Task = ""
			refusal = json.Unmarshal(v, &m.Task)
		case "max_attempts":
			refusal = json.Unmarshal(v, &m.MaxAttempts)
		case "headers":
			refusal = json.Unmarshal(v, &m.Headers)
		case "args":
			if c.Raw == nil {
				t.Fatalf("%v: an args case gives raw JSON text", c)
			}
			m.Args = json.RawMessage(*c.Raw)
		default:
			t.Fatalf("%v: unknown field %q", c, c.Field)
		}
		if refusal == nil && c.Field == "queue" {
			// The validator every Go producer calls, and Enqueue below.
			if qerr := drover.ValidateQueueName(m.Queue); (qerr == nil) != c.Valid {
				t.Errorf("%v: ValidateQueueName: want valid=%v, have %v", c, c.Valid, qerr)
			}
		}
		if refusal == nil {
			_, refusal = p.Enqueue(ctx, m)
		}
		if (refusal == nil) != c.Valid {
			t.Errorf("%v (%s): want valid=%v, have error %v", c, c.Why, c.Valid, refusal)
		}
	}
}

// TestRulesAreTheValidators: the data the Python client gets says what
// the Go code does at each limit.
func TestRulesAreTheValidators(t *testing.T) {
	r := queue.Rules()
	if err := drover.ValidateQueueName(strings.Repeat("x", r.Queue.MaxBytes)); err != nil {
		t.Errorf("a name of max_bytes (%d): %v", r.Queue.MaxBytes, err)
	}
	if drover.ValidateQueueName(strings.Repeat("x", r.Queue.MaxBytes+1)) == nil {
		t.Errorf("a name of max_bytes+1 (%d) accepted", r.Queue.MaxBytes+1)
	}
	for _, name := range r.Queue.Reserved {
		if drover.ValidateQueueName(name) == nil {
			t.Errorf("reserved %q accepted", name)
		}
	}
	// Every code point: refused inside a name exactly when a range holds it.
	for cp := rune(0); cp <= utf8.MaxRune; cp++ {
		if cp >= 0xD800 && cp <= 0xDFFF {
			continue
		}
		in := false
		for _, rg := range r.Queue.Forbidden {
			if cp >= rg[0] && cp <= rg[1] {
				in = true
				break
			}
		}
		if (drover.ValidateQueueName("a"+string(cp)+"b") != nil) != in {
			t.Fatalf("U+%04X: forbidden=%v in the rules, and the validator disagrees", cp, in)
		}
	}
	if r.ID.MaxBytes != queue.MaxIDLen {
		t.Errorf("id max_bytes: want %d, have %d", queue.MaxIDLen, r.ID.MaxBytes)
	}
}

// askPython runs drover.validate.check_queue on each name and returns its
// verdicts (true: accepted).
func askPython(t *testing.T, names []string) []bool {
	t.Helper()
	in, err := json.Marshal(names)
	if err != nil {
		t.Fatal(err)
	}
	const prog = `import json, sys
from drover.errors import InvalidArgument
from drover.validate import check_queue
out = []
for n in json.load(sys.stdin):
    try:
        check_queue(n)
        out.append(True)
    except InvalidArgument:
        out.append(False)
json.dump(out, sys.stdout)`
	cmd := exec.Command(python, "-c", prog)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pyDir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", python, err, stderr.String())
	}
	var verdicts []bool
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(names) {
		t.Fatalf("python answered %q: %v", out, err)
	}
	return verdicts
}

// TestPythonQueueNamesAgreeWithGo: the Python client's reading of the
// rules gives ValidateQueueName's verdict at every edge of every forbidden
// range, at the byte limit with multi-byte characters, and on random
// names.
func TestPythonQueueNamesAgreeWithGo(t *testing.T) {
	var names []string
	for _, rg := range queue.Rules().Queue.Forbidden {
		for _, cp := range []rune{rg[0] - 1, rg[0], rg[1], rg[1] + 1} {
			if cp >= 0 && utf8.ValidRune(cp) {
				names = append(names, "q"+string(cp), string(cp), string(cp)+"q")
			}
		}
	}
	for _, s := range []string{"é", "日", "😀"} {
		n := drover.MaxQueueNameLen / len(s)
		names = append(names, strings.Repeat(s, n), strings.Repeat(s, n+1), strings.Repeat(s, n)+"x")
	}
	rnd := rand.New(rand.NewSource(40))
	for range 2000 {
		b := make([]rune, 1+rnd.Intn(6))
		for i := range b {
			switch rnd.Intn(3) {
			case 0:
				b[i] = rune(rnd.Intn(0x80))
			case 1:
				b[i] = rune(rnd.Intn(0x3100))
			default:
				b[i] = rune(rnd.Intn(utf8.MaxRune + 1))
			}
			if !utf8.ValidRune(b[i]) {
				b[i] = 'x'
			}
		}
		names = append(names, string(b))
	}
	names = append(names, ".", "..", "...", "")
	verdicts := askPython(t, names)
	for i, n := range names {
		goOK := drover.ValidateQueueName(n) == nil
		if verdicts[i] != goOK {
			t.Errorf("%q: Go valid=%v, Python valid=%v", n, goOK, verdicts[i])
		}
	}
}

// TestPythonRefusesWhatGoRefuses runs the Python client's validation suite
// (python/tests/test_validation.py) against a real Redis: each bad input
// is refused with its field named and leaves no key behind, and the
// Python client reads the shared table as Go does.
func TestPythonRefusesWhatGoRefuses(t *testing.T) {
	runPythonSuite(t, "tests.test_validation",
		"REDIS_URL=redis://"+testenv.Redis(t).Addr+"/0", "DROVER_PREFIX="+testenv.Prefix(t))
}

// runPythonSuite runs one module of the Python client's tests (from
// python/, with PYTHONPATH there and env added) and fails the test unless
// the suite reports OK.
func runPythonSuite(t *testing.T, module string, env ...string) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import redis").CombinedOutput(); err != nil {
		t.Fatalf("%s with redis-py is needed: apt-get install -y python3 python3-redis (or make deps): %v\n%s", python, err, out)
	}
	abs, err := filepath.Abs(pyDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "unittest", "-v", module)
	cmd.Dir = abs
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+abs), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Python suite %s failed: %v\n%s", module, err, out)
	}
	if !strings.Contains(string(out), "\nOK") {
		t.Fatalf("the Python suite %s did not report OK:\n%s", module, out)
	}
}
