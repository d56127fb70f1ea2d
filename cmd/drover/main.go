// Command drover is the one Drover binary: the worker, the scheduler, the
// operator's ctl commands, the configuration checker and a local dev fleet.
// docs/cli.md describes every command.
package main

import (
	"os"

	// The example Go handlers, so that `drover dev` and the examples can
	// route tasks to them.
	_ "github.com/drover-dev/drover/examples/gohandler"
	"github.com/drover-dev/drover/worker/executor"
)

func main() {
	// A task child re-executed by the worker's executor (Go handlers,
	// resource limits) must run before anything else.
	executor.RunChildIfRequested()
	os.Exit(execute(os.Args[1:], newApp(os.Stdin, os.Stdout, os.Stderr, os.Environ())))
}
