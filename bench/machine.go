package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// machine describes where the figures were taken.
type machine struct {
	CPU     string            `json:"cpu"`
	Cores   int               `json:"cores"`
	Memory  string            `json:"memory"`
	Kernel  string            `json:"kernel"`
	Go      string            `json:"go"`
	Load    string            `json:"load_at_start"`
	Servers map[string]string `json:"servers"`
}

func describeMachine() machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), CPU: "unknown", Memory: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if st, err := procMeminfo(); err == nil {
		m.Memory = mib(float64(st))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	return m
}

func procMeminfo() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			for _, c := range strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")) {
				if c >= '0' && c <= '9' {
					kb = kb*10 + int64(c-'0')
				}
			}
			return kb * 1024, nil
		}
	}
	return 0, os.ErrNotExist
}

// serverVersions reports the Redis and ZooKeeper in use.
func serverVersions(srv *servers) map[string]string {
	out := map[string]string{}
	out["redis"], out["zookeeper"] = "unknown", "unknown"
	if b, err := exec.Command("redis-server", "--version").Output(); err == nil {
		// "Redis server v=7.0.15 sha=… malloc=… bits=64 build=…"
		for _, f := range strings.Fields(string(b)) {
			if v, ok := strings.CutPrefix(f, "v="); ok {
				out["redis"] = v
			}
		}
	}
	if st, err := mntrStrings(srv.zk.Addr); err == nil && st["zk_version"] != "" {
		// "3.8.0-${mvngit.commit.id}, built on …"
		v, _, _ := strings.Cut(st["zk_version"], ",")
		v, _, _ = strings.Cut(v, "-")
		out["zookeeper"] = v
	}
	return out
}
