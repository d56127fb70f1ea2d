package check

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The task log holds one line per finished execution, written by the task
// process in a single write(2) to a file opened with O_APPEND (so lines of
// concurrent tasks never interleave):
//
//	queue id attempt position worker-pid pid start-µs end-µs [killed]
//
// A task killed by SIGTERM writes its line with "killed" and end-µs the
// time of the signal, then dies of the signal.
//
// Times are CLOCK_REALTIME in microseconds: comparable across the processes
// of one machine.

// FormatExecution returns e's task log line, newline included.
func FormatExecution(e Execution) string {
	killed := ""
	if e.Killed {
		killed = " killed"
	}
	return fmt.Sprintf("%s %s %d %d %d %d %d %d%s\n", e.Queue, e.ID, e.Attempt, e.Position,
		e.WorkerPID, e.PID, e.Start.UnixMicro(), e.End.UnixMicro(), killed)
}

// FormatStart returns the start line of e (Queue, ID, Attempt, Position,
// WorkerPID, PID, Start), newline included: "start queue id attempt
// position worker-pid pid start-µs". The task program writes it when it is
// given a start log (the churn benchmark).
func FormatStart(e Execution) string {
	return fmt.Sprintf("start %s %s %d %d %d %d %d\n", e.Queue, e.ID, e.Attempt, e.Position, e.WorkerPID, e.PID, e.Start.UnixMicro())
}

// ParseStart reads one start line (without its newline); End is zero.
func ParseStart(line string) (Execution, error) {
	rest, ok := strings.CutPrefix(line, "start ")
	if !ok {
		return Execution{}, fmt.Errorf("start line %q: want it to begin with \"start \"", line)
	}
	// The same fields as an execution line without the end.
	e, err := ParseExecution(rest + " 0")
	if err != nil {
		return Execution{}, fmt.Errorf("start line %q: %w", line, err)
	}
	e.End = time.Time{}
	return e, nil
}

// ParseExecution reads one task log line (without its newline).
func ParseExecution(line string) (Execution, error) {
	fs := strings.Fields(line)
	killed := len(fs) == 9 && fs[8] == "killed"
	if len(fs) != 8 && !killed {
		return Execution{}, fmt.Errorf("task log line %q: want 8 fields (9 with killed), have %d", line, len(fs))
	}
	var n [6]int64
	for i := range n {
		v, err := strconv.ParseInt(fs[2+i], 10, 64)
		if err != nil {
			return Execution{}, fmt.Errorf("task log line %q: field %d: %w", line, 3+i, err)
		}
		n[i] = v
	}
	return Execution{
		Queue: fs[0], ID: fs[1], Attempt: int(n[0]), Position: n[1],
		WorkerPID: int(n[2]), PID: int(n[3]),
		Start: time.UnixMicro(n[4]), End: time.UnixMicro(n[5]), Killed: killed,
	}, nil
}

// TaskLogReader reads a growing task log: each Next returns the complete
// lines appended since the previous call.
type TaskLogReader struct {
	r       io.Reader
	partial string
	// Malformed counts lines that could not be parsed.
	Malformed int
}

// NewTaskLogReader reads the task log r (typically an *os.File).
func NewTaskLogReader(r io.Reader) *TaskLogReader { return &TaskLogReader{r: r} }

// Next returns the executions of the lines completed since the last call. A
// line without its newline yet is kept for the next call.
func (t *TaskLogReader) Next() ([]Execution, error) {
	b, err := io.ReadAll(t.r)
	if err != nil {
		return nil, fmt.Errorf("read task log: %w", err)
	}
	data := t.partial + string(b)
	last := strings.LastIndexByte(data, '\n')
	if last < 0 {
		t.partial = data
		return nil, nil
	}
	t.partial = data[last+1:]
	var out []Execution
	sc := bufio.NewScanner(strings.NewReader(data[:last+1]))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		e, err := ParseExecution(sc.Text())
		if err != nil {
			t.Malformed++
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
