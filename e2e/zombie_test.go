package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/execfile"
)

// A worker frozen (SIGSTOP) past its session timeout and then resumed is a
// zombie: another worker owns its queues by then. It must not start a task
// of them: the executions of an ordered queue never overlap.
func TestResumedZombieNeverOverlapsAnOrderedQueue(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Fatal("this test's task needs /bin/bash")
	}
	f := newFleet(t, 4*time.Second)
	logPath := filepath.Join(f.dir, "intervals.log")
	script := filepath.Join(f.dir, "interval.sh")
	body := fmt.Sprintf("#!/bin/bash\ns=$EPOCHREALTIME\nsleep 0.05\nprintf '%%s %%s %%s %%s\\n' \"$DROVER_MESSAGE_ID\" \"$PPID\" \"$s\" \"$EPOCHREALTIME\" >> %s\n", logPath)
	if err := execfile.Write(script, []byte(body)); err != nil {
		t.Fatal(err)
	}
	f.createQueue("fifo", true, []string{script}, nil)
	zombie := f.startWorker("zombie")
	waitFor(t, time.Minute, "the zombie to own the queue", func() bool {
		st := f.state("zombie")
		return st != nil && len(st.Worker.Queues) == 1
	})
	f.startWorker("heir")
	ids := f.enqueue([]string{"fifo"}, 400)["fifo"]
	waitFor(t, time.Minute, "tasks to run", func() bool { return countLines(logPath) >= 5 })

	zombie.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(7 * time.Second) // past the 4 s session timeout: the heir takes over
	zombie.cmd.Process.Signal(syscall.SIGCONT)

	waitFor(t, 3*time.Minute, "every message to run", func() bool {
		done := map[string]bool{}
		for _, iv := range readIntervals(t, logPath) {
			done[iv.id] = true
		}
		for _, id := range ids {
			if !done[id] {
				return false
			}
		}
		return true
	})
	ivs := readIntervals(t, logPath)
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	for i := 1; i < len(ivs); i++ {
		if ivs[i].start < ivs[i-1].end {
			t.Fatalf("ordered queue overlap: %s (worker %d) started at %.6f before %s (worker %d) ended at %.6f",
				ivs[i].id, ivs[i].worker, ivs[i].start, ivs[i-1].id, ivs[i-1].worker, ivs[i-1].end)
		}
	}
}

type interval struct {
	id         string
	worker     int
	start, end float64
}

func readIntervals(t *testing.T, path string) []interval {
	t.Helper()
	fh, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []interval
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			continue
		}
		w, _ := strconv.Atoi(fs[1])
		s, _ := strconv.ParseFloat(fs[2], 64)
		e, _ := strconv.ParseFloat(fs[3], 64)
		out = append(out, interval{id: fs[0], worker: w, start: s, end: e})
	}
	return out
}
