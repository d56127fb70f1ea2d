package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover"
)

// TestMain makes the test binary usable as the executor's re-executed child
// ("go" routes, the rlimit trampoline), then runs the tests.
func TestMain(m *testing.M) {
	RunChildIfRequested()
	runPoolTestWorkerIfRequested() // pool_worker_test.go
	runFakeWorkerIfRequested()     // lease_test.go
	os.Exit(m.Run())
}

// Go handlers of the tests. The names are unique to this test binary.
const (
	handlerOK       = "worker-test-ok"
	handlerRetry    = "worker-test-retry"
	handlerFail     = "worker-test-fail"
	handlerPanic    = "worker-test-panic"
	handlerWait     = "worker-test-wait"   // returns ctx.Err() when its context ends
	handlerReport   = "worker-test-report" // prints what it was given
	handlerNoop     = "worker-test-noop"
	handlerNofile   = "worker-test-nofile"     // prints its RLIMIT_NOFILE
	handlerIgnoreCx = "worker-test-ignore-ctx" // sleeps an hour; announces its start at the path in args
)

func init() {
	drover.Register(handlerOK, func(ctx context.Context, m *drover.Message) error {
		fmt.Println("handled", m.ID)
		return nil
	})
	drover.Register(handlerRetry, func(ctx context.Context, m *drover.Message) error {
		return fmt.Errorf("upstream busy: %w", drover.ErrRetry)
	})
	drover.Register(handlerFail, func(ctx context.Context, m *drover.Message) error {
		return errors.New("boom: the widget is broken")
	})
	drover.Register(handlerPanic, func(ctx context.Context, m *drover.Message) error {
		panic("handler lost its mind")
	})
	drover.Register(handlerWait, func(ctx context.Context, m *drover.Message) error {
		<-ctx.Done()
		return fmt.Errorf("gave up: %w", ctx.Err())
	})
	drover.Register(handlerReport, func(ctx context.Context, m *drover.Message) error {
		deadline, _ := ctx.Deadline()
		fmt.Printf("id=%s task=%s attempt=%d position=%d args=%s deadline=%s\n",
			m.ID, m.Task, m.Attempt, m.Position, m.Args, deadline.UTC().Format(time.RFC3339Nano))
		return nil
	})
	drover.Register(handlerNoop, func(ctx context.Context, m *drover.Message) error { return nil })
	drover.Register(handlerNofile, func(ctx context.Context, m *drover.Message) error {
		var l syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return err
		}
		fmt.Printf("uid=%d nofile=%d/%d\n", os.Getuid(), l.Cur, l.Max)
		return nil
	})
	drover.Register(handlerIgnoreCx, func(ctx context.Context, m *drover.Message) error {
		var pidFile string // when args is a path, announce the start there
		if json.Unmarshal(m.Args, &pidFile) == nil && pidFile != "" {
			if err := os.WriteFile(pidFile+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
				return err
			}
			if err := os.Rename(pidFile+".tmp", pidFile); err != nil {
				return err
			}
		}
		time.Sleep(time.Hour) // killed by the executor
		return nil
	})
}
