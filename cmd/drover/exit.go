package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/ops"
	"github.com/drover-dev/drover/scheduler"
)

// Exit codes (docs/cli.md, "Exit codes").
const (
	exitOK          = 0 // done
	exitError       = 1 // anything else went wrong
	exitUsage       = 2 // bad command line, arguments, JSON, duration or configuration
	exitNotFound    = 3 // the queue, message, schedule or member does not exist
	exitUnreachable = 4 // ZooKeeper, Redis or a worker's admin address did not answer in time
	exitRefused     = 5 // refused by the cluster's state: exists, owned and not paused, version conflict
)

// usageError is a mistake on the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// unreachableError says a server did not answer.
type unreachableError struct{ err error }

func (e unreachableError) Error() string { return e.err.Error() }
func (e unreachableError) Unwrap() error { return e.err }

// refusedError is an operation the cluster's current state does not allow.
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

// exitCode maps an error to the documented exit code. Bad input and
// refusals are told apart by the rules the HTTP API answers 400 and 409
// by (ops.IsBadInput, ops.IsRefused), so ctl and the API agree.
func exitCode(err error) int {
	var (
		usage       usageError
		unreachable unreachableError
		refused     refusedError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &unreachable), errors.Is(err, ops.ErrUnreachable):
		return exitUnreachable
	case errors.As(err, &usage), ops.IsBadInput(err), isCobraUsage(err):
		return exitUsage
	case errors.Is(err, drover.ErrNotFound), errors.Is(err, drover.ErrQueueNotFound):
		return exitNotFound
	case errors.As(err, &refused), ops.IsRefused(err), errors.Is(err, scheduler.ErrExists):
		return exitRefused
	}
	return exitError
}

// errorLine is the one line a failed command prints: "drover: " and the
// error, without the "drover: " that the wrapped sentinel errors
// (drover.ErrNotFound is "drover: not found") would repeat inside it. An
// error that starts with the command's path ("drover ctl enqueue: want
// <queue> <task>, …") already names the program and is printed as it is.
func errorLine(err error) string {
	msg := strings.TrimPrefix(err.Error(), "drover: ")
	msg = strings.ReplaceAll(msg, ": drover: ", ": ")
	msg = strings.ReplaceAll(msg, "(drover: ", "(")
	if strings.HasPrefix(msg, "drover ") {
		return msg
	}
	return "drover: " + msg
}

// isCobraUsage recognises the usage errors cobra returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "invalid argument", "flag needs an argument", "required flag", "if any flags in the group"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isNotFound reports whether err says something does not exist.
func isNotFound(err error) bool {
	return errors.Is(err, drover.ErrNotFound) || errors.Is(err, drover.ErrQueueNotFound)
}
