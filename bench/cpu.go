package main

import (
	"syscall"
	"time"
)

// cpuTimes is this process's and its reaped children's CPU time (user +
// system).
type cpuTimes struct{ self, children time.Duration }

func readCPU() cpuTimes {
	var self, ch syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ch)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return cpuTimes{self: tv(self.Utime) + tv(self.Stime), children: tv(ch.Utime) + tv(ch.Stime)}
}

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{self: c.self - o.self, children: c.children - o.children}
}
