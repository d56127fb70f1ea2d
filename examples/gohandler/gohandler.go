// Package gohandler registers example Go task handlers. The drover binary
// imports it, so a queue can route a task to them with {"go": true} (run in
// a re-executed child of the worker) or {"inline": true} (run in the worker
// process):
//
//	drover ctl queue create checksums --task 'checksum=@go'
//	drover ctl enqueue checksums checksum --args '{"text":"hello"}'
//
// A program of your own registers its handlers the same way, in an init
// function or before it starts the worker, and calls
// executor.RunChildIfRequested first thing in main.
package gohandler

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"

	"github.com/drover-dev/drover"
)

// ChecksumTask is the name the checksum handler is registered under.
const ChecksumTask = "example.checksum"

func init() {
	drover.Register(ChecksumTask, Checksum)
}

// checksumArgs are the checksum task's arguments.
type checksumArgs struct {
	Text string `json:"text"`
	Fail bool   `json:"fail"` // fail on purpose, to show retries and dead letters
}

// Checksum prints the SHA-256 of args.text. It fails when args.fail is
// true, and asks for a retry (drover.ErrRetry, the Go form of exit code 75)
// when args is not an object it understands.
func Checksum(ctx context.Context, m *drover.Message) error {
	var a checksumArgs
	if len(m.Args) > 0 {
		if err := json.Unmarshal(m.Args, &a); err != nil {
			return fmt.Errorf("%w: args: %v", drover.ErrRetry, err)
		}
	}
	if a.Fail {
		return fmt.Errorf("asked to fail (args.fail is true)")
	}
	fmt.Fprintf(os.Stdout, "sha256(%q) = %x (message %s, attempt %d)\n", a.Text, sha256.Sum256([]byte(a.Text)), m.ID, m.Attempt)
	return nil
}
