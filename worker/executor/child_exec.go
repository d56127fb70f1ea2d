package executor

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/drover-dev/drover"
)

// The rlimit trampoline. Go's os.StartProcess cannot set resource limits in
// the child between fork and exec, and prlimit(2) from the parent after the
// start races with the child's first instructions. So a task with limits is
// started as the worker binary itself, with DROVER_CHILD=exec and the
// argv
//
//	<name> drover-child-exec <address-space> <cpu-seconds> <open-files> <next-mode> <path> <argv...>
//
// It sets the limits on itself and execs path with argv — no shell — in the
// same process, so the pid, process group, parent-death signal and
// credentials the executor set all carry over. next-mode, when not "-", is
// the DROVER_CHILD mode of the program it execs (a "go" child, whose Go
// runtime then starts under the limits).

// childArgExec and childArgGo are argv[1] of re-executed children. The
// environment marks the mode; these make children readable in ps.
const (
	childArgExec = "drover-child-exec"
	childArgGo   = "drover-child-go"
)

// trampolineArgs returns the trampoline's argv for running path with argv
// under limits; childMode is the mode of the program it execs ("" for none).
func trampolineArgs(name string, l drover.Limits, childMode, path string, argv []string) []string {
	next := childMode
	if next == "" {
		next = "-"
	}
	out := make([]string, 0, 7+len(argv))
	out = append(out, name, childArgExec,
		strconv.FormatInt(l.AddressSpace, 10), strconv.FormatInt(l.CPUSeconds, 10),
		strconv.FormatInt(l.OpenFiles, 10), next, path)
	return append(out, argv...)
}

// trampolineSpec is a parsed trampoline argv.
type trampolineSpec struct {
	limits    drover.Limits
	childMode string
	path      string
	argv      []string
}

// parseTrampolineArgs is the inverse of trampolineArgs.
func parseTrampolineArgs(args []string) (trampolineSpec, error) {
	var s trampolineSpec
	if len(args) < 8 || args[1] != childArgExec {
		return s, fmt.Errorf("want argv <name> %s <as> <cpu> <nofile> <mode> <path> <argv...>, have %q", childArgExec, args)
	}
	for i, p := range []*int64{&s.limits.AddressSpace, &s.limits.CPUSeconds, &s.limits.OpenFiles} {
		n, err := strconv.ParseInt(args[2+i], 10, 64)
		if err != nil || n < 0 {
			return s, fmt.Errorf("limit %q: want a number ≥ 0", args[2+i])
		}
		*p = n
	}
	if args[5] != "-" {
		s.childMode = args[5]
	}
	s.path, s.argv = args[6], args[7:]
	return s, nil
}

// runExecChild is the trampoline's main: it returns an exit code only when
// it could not exec.
func runExecChild(args []string) int {
	s, err := parseTrampolineArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "drover: resource-limit trampoline: %v\n", err)
		return exitChildSetup
	}
	env := os.Environ() // without DROVER_CHILD, which RunChildIfRequested unset
	if s.childMode != "" {
		env = append(env, childEnv+"="+s.childMode)
	}
	x, err := prepareExec(s.path, s.argv, env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "drover: resource-limit trampoline: %v\n", err)
		return exitChildSetup
	}
	restoreOpenFiles()
	// Limits last: a small address space could starve even this process.
	if err := applyLimits(s.limits); err != nil {
		fmt.Fprintf(os.Stderr, "drover: resource-limit trampoline: %v\n", err)
		return exitChildSetup
	}
	x.exec()
	return exitChildSetup
}

// preparedExec is an execve(2) whose every argument, and the message that
// reports its failure, is built before the limits are set.
//
// Under RLIMIT_AS this Go process may not map one more page: a heap
// allocation that needs a new span then kills it ("fatal error: runtime:
// cannot allocate memory", seen in CI with a 300 MB limit, from the
// allocation of argv inside syscall.Exec). So nothing between applyLimits
// and the exec allocates; TestPreparedExecDoesNotAllocate holds that.
type preparedExec struct {
	path       *byte
	argv, envv []*byte
	failed     []byte // "drover: exec <path>: "
	stderr     int    // where that goes: 2, or a test's file
}

func prepareExec(path string, argv, env []string) (preparedExec, error) {
	var x preparedExec
	var err error
	if x.path, err = syscall.BytePtrFromString(path); err != nil {
		return x, fmt.Errorf("exec %q: %w", path, err)
	}
	if x.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return x, fmt.Errorf("exec %s: argv: %w", path, err)
	}
	if x.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return x, fmt.Errorf("exec %s: environment: %w", path, err)
	}
	x.failed, x.stderr = []byte("drover: exec "+path+": "), 2
	return x, nil
}

// exec replaces the process; it returns only when execve failed, after
// writing why to stderr, without allocating.
func (x preparedExec) exec() {
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE,
		uintptr(unsafe.Pointer(x.path)), uintptr(unsafe.Pointer(&x.argv[0])), uintptr(unsafe.Pointer(&x.envv[0])))
	runtime.KeepAlive(x)
	reason := errno.Error() // a constant from the errno table
	syscall.Write(x.stderr, x.failed)
	syscall.Write(x.stderr, unsafe.Slice(unsafe.StringData(reason), len(reason)))
	syscall.Write(x.stderr, newline)
}

var newline = []byte("\n")

// restoreOpenFiles gives this process back the soft RLIMIT_NOFILE it was
// started with, which Go raised for itself at start-up (syscall's init)
// and restores only inside syscall.Exec and os.StartProcess, from a value
// it does not export. The trampoline execs with a raw execve (see
// preparedExec), so it asks syscall.Exec to do the restore: an exec of the
// empty path restores the limit, then fails with ENOENT and returns.
// A task without an open-files limit so sees the same soft limit as a task
// started without the trampoline (TestExecAddressSpaceLimitKeepsTheOpenFilesLimit).
func restoreOpenFiles() {
	_ = syscall.Exec("", nil, nil)
}

// applyLimits sets the non-zero limits on the calling process, soft and
// hard, so the task cannot raise them. The CPU limit's hard value is one
// second above the soft one: the task gets SIGXCPU at the limit, and
// SIGKILL a second later if it ignores it. A limit above the current hard
// limit (which an unprivileged worker cannot raise) is cut to it.
func applyLimits(l drover.Limits) error {
	set := func(name string, resource int, value, hardExtra int64) error {
		if value <= 0 {
			return nil
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(resource, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", name, err)
		}
		want := syscall.Rlimit{Cur: uint64(value), Max: uint64(value + hardExtra)}
		want.Max = min(want.Max, cur.Max)
		want.Cur = min(want.Cur, want.Max)
		// syscall.Setrlimit (not x/sys/unix) so that Go does not restore
		// its saved RLIMIT_NOFILE at exec.
		if err := syscall.Setrlimit(resource, &want); err != nil {
			return fmt.Errorf("setrlimit %s to %d: %w", name, value, err)
		}
		return nil
	}
	if err := set("RLIMIT_CPU", syscall.RLIMIT_CPU, l.CPUSeconds, 1); err != nil {
		return err
	}
	if err := set("RLIMIT_NOFILE", syscall.RLIMIT_NOFILE, l.OpenFiles, 0); err != nil {
		return err
	}
	// The address space last: the errors above are built while this
	// process may still map memory.
	return set("RLIMIT_AS", syscall.RLIMIT_AS, l.AddressSpace, 0)
}
