package fleetbench

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestProcessFiguresOfAChild(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	kids, err := Children(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kids, cmd.Process.Pid) {
		t.Fatalf("children of this test: want %d among them, have %v", cmd.Process.Pid, kids)
	}
	rss, err := RSS(cmd.Process.Pid)
	if err != nil || rss <= 0 {
		t.Fatalf("RSS of sleep: want > 0, have %d (err %v)", rss, err)
	}
	if _, err := CPUTime(cmd.Process.Pid); err != nil {
		t.Fatalf("CPU time of sleep: %v", err)
	}
	if _, err := CPUTime(-1); err == nil {
		t.Fatal("CPU time of no process: want an error, have none")
	}
}

func TestCPUTimeCountsWork(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has charged at least two ticks: no timing
	// assumption, only that work shows up eventually.
	x := 0
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatal("a minute of spinning never showed up in the CPU time")
		}
		for i := 0; i < 1e7; i++ {
			x += i
		}
		now, err := CPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now-before >= 2*clockTick {
			break
		}
	}
	_ = x
}

func TestTheMachinesCPUIsReadFromProcStat(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	h, err := parseHostCPU("cpu  4705 150 1120 16250 520 0 25 30 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if want := (hostCPU{busy: 4705 + 150 + 1120 + 25 + 30, all: 4705 + 150 + 1120 + 16250 + 520 + 25 + 30}); h != want {
		t.Errorf("want %+v, have %+v", want, h)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8"} {
		if _, err := parseHostCPU(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if _, err := HostCPU(); err != nil {
		t.Errorf("this machine's /proc/stat: %v", err)
	}
	if have := usedPct(hostCPU{busy: 100, all: 400}, hostCPU{busy: 250, all: 600}); have != 75 {
		t.Errorf("150 busy ticks of 200: want 75%%, have %v", have)
	}
}
