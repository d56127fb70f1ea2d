package executor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The lease supervisor: the worker binary re-executed once per Lease, with
// DROVER_CHILD=lease and the argv
//
//	<name> drover-lease <bound-ns> <grace-ns> <armed-at-boottime-ns>
//
// and the read end of the lease pipe as fd 3. It is not frozen with the
// worker (its own process, its own process group), so it can kill the
// worker's task groups when the worker stops renewing — a SIGSTOP, a stuck
// syscall, a debugger, a long pause of any kind. See lease.go for the
// contract and docs/decisions.md for why it is built this way.
//
// It wakes every tick on CLOCK_BOOTTIME (which keeps counting while the
// machine is suspended), reads every record the worker wrote since the last
// tick (the worker's writes never wake it: a task start costs the worker one
// write(2) and the supervisor nothing), and acts on them in order:
//
//   - a renewal whose stamp is more than the bound after the previous one
//     means the lease lapsed in between: every group tracked before it is
//     killed before the renewal re-arms the lease;
//   - after the records, a lease whose last renewal is more than the bound
//     old fires the same way.
//
// So a whole machine frozen past the bound (worker, tasks and supervisor
// together) kills on wake, whatever the worker managed to write after it
// thawed; a supervisor merely slow to read (starved of CPU) does not fire as
// long as the renewals it finds were on time. Firing sends SIGTERM to every
// tracked group and SIGKILL to those still tracked a grace later. While the
// lease stays expired, a group tracked is killed at once: no task runs
// without a lease. At EOF (the worker exited or closed the lease) every
// tracked group is killed the same way and the supervisor exits.

// childArgLease is argv[1] of the lease supervisor.
const childArgLease = "drover-lease"

// leaseFD is the descriptor the supervisor reads the lease pipe from.
const leaseFD = 3

// Record operations on the lease pipe. Every record is leaseRecordSize
// bytes: op (uint32), pid (int32), stamp (int64, CLOCK_BOOTTIME ns), little
// endian; written with one write(2), which is atomic on a pipe.
const (
	opRenew   = 1
	opTrack   = 2
	opUntrack = 3

	leaseRecordSize = 16
)

// leaseRecord is one record of the lease pipe.
type leaseRecord struct {
	op    uint32
	pid   int
	stamp int64
}

func (r leaseRecord) encode(b *[leaseRecordSize]byte) {
	binary.LittleEndian.PutUint32(b[0:4], r.op)
	binary.LittleEndian.PutUint32(b[4:8], uint32(int32(r.pid)))
	binary.LittleEndian.PutUint64(b[8:16], uint64(r.stamp))
}

func decodeLeaseRecord(b []byte) leaseRecord {
	return leaseRecord{
		op:    binary.LittleEndian.Uint32(b[0:4]),
		pid:   int(int32(binary.LittleEndian.Uint32(b[4:8]))),
		stamp: int64(binary.LittleEndian.Uint64(b[8:16])),
	}
}

// boottime returns CLOCK_BOOTTIME in nanoseconds: monotonic, shared by every
// process of the machine, and counting while the machine is suspended.
func boottime() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// Linux has had CLOCK_BOOTTIME since 2.6.39.
		panic(fmt.Sprintf("clock_gettime(CLOCK_BOOTTIME): %v", err))
	}
	return ts.Nano()
}

// leaseFire describes one firing, for the supervisor's notice.
type leaseFire struct {
	late   time.Duration // how long after the last renewal it fired
	groups int           // process groups sent SIGTERM
}

// line is what the supervisor prints when the lease fires at now: what it
// killed and why. A lease that lapses with no task running (a worker that
// has not reached ZooKeeper yet, say) says that it stopped nothing: the
// worker's own log says why it is not renewing. The chaos run reads the
// firings from these lines (tools/chaos/observe.go).
func (f leaseFire) line(now time.Time, bound, grace time.Duration) string {
	what := fmt.Sprintf("SIGTERM to %d process groups, SIGKILL after %s", f.groups, grace)
	if f.groups == 0 {
		what = "no task to stop"
	}
	return fmt.Sprintf("drover lease: fired at %s: renewal late by %s (bound %s): %s",
		now.UTC().Format(time.RFC3339Nano), f.late.Round(time.Millisecond), bound, what)
}

// leaseState is the supervisor's decision logic, free of I/O: the records
// it read and the clock go in, signals come out through kill.
type leaseState struct {
	bound, grace int64 // ns
	lastRenew    int64 // stamp of the latest renewal (the arming time at first)
	expired      bool  // fired, not renewed since
	groups       map[int]bool
	killAt       map[int]int64 // groups sent SIGTERM → when SIGKILL is due
	kill         func(pgid int, sig syscall.Signal)
	fired        func(leaseFire)
}

func newLeaseState(bound, grace time.Duration, armedAt int64, kill func(int, syscall.Signal), fired func(leaseFire)) *leaseState {
	return &leaseState{
		bound: int64(bound), grace: int64(grace), lastRenew: armedAt,
		groups: map[int]bool{}, killAt: map[int]int64{}, kill: kill, fired: fired,
	}
}

// apply takes one record read at now.
func (s *leaseState) apply(r leaseRecord, now int64) {
	switch r.op {
	case opTrack:
		s.groups[r.pid] = true
		if s.expired {
			s.terminate(r.pid, now)
		}
	case opUntrack:
		delete(s.groups, r.pid)
		delete(s.killAt, r.pid)
	case opRenew:
		if !s.expired && r.stamp-s.lastRenew > s.bound {
			s.fire(now) // it lapsed before this renewal
		}
		if r.stamp > s.lastRenew {
			s.lastRenew = r.stamp
		}
		if s.expired && now-r.stamp <= s.bound {
			s.expired = false // renewed on time again: re-armed
		}
	}
}

// check fires a lapsed lease and sends the SIGKILLs that are due. It runs
// after the records of a tick.
func (s *leaseState) check(now int64) {
	if !s.expired && now-s.lastRenew > s.bound {
		s.fire(now)
	}
	for _, g := range slices.Sorted(maps.Keys(s.killAt)) {
		if now >= s.killAt[g] {
			s.kill(g, syscall.SIGKILL)
			delete(s.killAt, g)
		}
	}
}

// fire expires the lease and terminates every tracked group.
func (s *leaseState) fire(now int64) {
	s.expired = true
	gs := slices.Sorted(maps.Keys(s.groups))
	// The notice goes out before the signals: whoever sees a task die of
	// the lease can already read why.
	if s.fired != nil {
		s.fired(leaseFire{late: time.Duration(now - s.lastRenew), groups: len(gs)})
	}
	for _, g := range gs {
		s.terminate(g, now)
	}
}

// terminate sends SIGTERM to group g and schedules its SIGKILL.
func (s *leaseState) terminate(g int, now int64) {
	s.kill(g, syscall.SIGTERM)
	if _, ok := s.killAt[g]; !ok {
		s.killAt[g] = now + s.grace
	}
}

// nextWake returns when the supervisor must look again at the latest.
func (s *leaseState) nextWake(now, tick int64) int64 {
	next := now + tick
	for _, at := range s.killAt {
		next = min(next, at)
	}
	if !s.expired {
		// Just after the lease would lapse, so a frozen worker is seen
		// at once rather than up to a tick late.
		next = min(next, max(s.lastRenew+s.bound+1, now+1))
	}
	return next
}

// runLeaseSupervisor is the supervisor's main; it returns its exit code.
func runLeaseSupervisor(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "drover lease: "+format+"\n", a...)
		return exitChildSetup
	}
	if len(args) != 5 || args[1] != childArgLease {
		return fail("want argv <name> %s <bound-ns> <grace-ns> <armed-at-ns>, have %q", childArgLease, args)
	}
	var nums [3]int64
	for i := range nums {
		n, err := strconv.ParseInt(args[2+i], 10, 64)
		if err != nil || n <= 0 {
			return fail("argument %q: want a positive number", args[2+i])
		}
		nums[i] = n
	}
	bound, grace, armedAt := time.Duration(nums[0]), time.Duration(nums[1]), nums[2]
	// A terminal's ^C or hangup is for the worker, which then closes the
	// lease; the supervisor follows the pipe, not the terminal.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	if err := syscall.SetNonblock(leaseFD, true); err != nil {
		return fail("lease pipe: %v", err)
	}
	st := newLeaseState(bound, grace, armedAt,
		func(g int, sig syscall.Signal) { _ = syscall.Kill(-g, sig) },
		func(f leaseFire) {
			fmt.Fprintln(os.Stderr, f.line(time.Now(), bound, grace))
		})
	tick := int64(leaseTick(bound))
	buf := make([]byte, 64*1024)
	var carry []byte
	for {
		now := boottime()
		eof := false
		for {
			n, err := syscall.Read(leaseFD, buf)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			if err != nil || n == 0 {
				eof = true
				break
			}
			data := append(carry, buf[:n]...)
			for len(data) >= leaseRecordSize {
				st.apply(decodeLeaseRecord(data[:leaseRecordSize]), now)
				data = data[leaseRecordSize:]
			}
			carry = append(carry[:0:0], data...)
		}
		if eof {
			return drainOnExit(st)
		}
		st.check(now)
		sleepUntil(st.nextWake(boottime(), tick))
	}
}

// drainOnExit kills every group still tracked when the worker is gone: the
// worker died (its direct children got their parent-death signal, but not
// their descendants) or closed the lease with tasks left.
func drainOnExit(st *leaseState) int {
	if len(st.groups) == 0 {
		return 0
	}
	now := boottime()
	fmt.Fprintf(os.Stderr, "drover lease: the worker is gone: SIGTERM to %d process groups, SIGKILL after %s\n",
		len(st.groups), time.Duration(st.grace))
	for _, g := range slices.Sorted(maps.Keys(st.groups)) {
		st.terminate(g, now)
	}
	for len(st.killAt) > 0 {
		// Stop early once every group is empty: a long grace must not
		// keep the supervisor of a dead worker around.
		for _, g := range slices.Sorted(maps.Keys(st.killAt)) {
			if errors.Is(syscall.Kill(-g, 0), syscall.ESRCH) {
				delete(st.killAt, g)
			}
		}
		if len(st.killAt) == 0 {
			break
		}
		sleepUntil(st.nextWake(boottime(), int64(50*time.Millisecond)))
		st.expired = true // nothing renews any more
		st.check(boottime())
	}
	return 0
}

// leaseTick is how often the supervisor reads the pipe: a small fraction of
// the bound, at most 100 ms.
func leaseTick(bound time.Duration) time.Duration {
	return min(max(bound/16, time.Millisecond), 100*time.Millisecond)
}

// sleepUntil sleeps until the CLOCK_BOOTTIME instant at (ns). A signal may
// end it early; the caller's loop looks again.
func sleepUntil(at int64) {
	ts := unix.NsecToTimespec(at)
	_ = unix.ClockNanosleep(unix.CLOCK_BOOTTIME, unix.TIMER_ABSTIME, &ts, nil)
}
