package fleetbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// CPUTime returns the CPU time (user + system) a process has used, from
// /proc/<pid>/stat, at a resolution of 10 ms. Children are not included.
func CPUTime(pid int) (time.Duration, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may hold spaces and parentheses):
	// index 0 is the state (field 3 of proc(5)); utime and stime are fields
	// 14 and 15.
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name in %q", pid, s)
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 13 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields after the name, want ≥ 13", pid, len(fields))
	}
	return fields, nil
}

// RSS returns a process's resident memory (VmRSS in /proc/<pid>/status).
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, v)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// Children returns the pids of a process's live children (by the parent pid
// in each /proc/<pid>/stat).
func Children(pid int) ([]int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, d := range dirs {
		child, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		fields, err := statFields(child)
		if err != nil {
			continue // gone meanwhile
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
			out = append(out, child)
		}
	}
	return out, nil
}

// hostCPU is the machine's CPU time so far, in clock ticks summed over its
// cores (the first line of /proc/stat): busy is what the processes and the
// kernel used (user, nice, system, irq, softirq, steal), all adds the idle
// time (idle, iowait). Guest time is inside user already.
type hostCPU struct{ busy, all int64 }

// HostCPU reads the machine's CPU time so far from /proc/stat.
func HostCPU() (hostCPU, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{}, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return parseHostCPU(line)
}

// parseHostCPU reads /proc/stat's aggregate "cpu" line.
func parseHostCPU(line string) (hostCPU, error) {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return hostCPU{}, fmt.Errorf("/proc/stat: want a first line \"cpu\" with 8 or more counters, have %q", line)
	}
	var v [8]int64 // user nice system idle iowait irq softirq steal
	for i := range v {
		n, err := strconv.ParseInt(fields[i+1], 10, 64)
		if err != nil {
			return hostCPU{}, fmt.Errorf("/proc/stat: counter %d of %q: %w", i+1, line, err)
		}
		v[i] = n
	}
	busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	return hostCPU{busy: busy, all: busy + v[3] + v[4]}, nil
}

// usedPct is the share of the machine's CPU (all cores) used between a and
// z, in %; 0 when no time passed.
func usedPct(a, z hostCPU) float64 {
	if z.all <= a.all {
		return 0
	}
	return 100 * float64(z.busy-a.busy) / float64(z.all-a.all)
}
