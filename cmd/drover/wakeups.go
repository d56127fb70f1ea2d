package main

import (
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
)

// The store is the worker's wake-up source and its amortised backstop
// against lost wake-ups: heads every poll interval, the full check for
// queues just started and after missed wake-ups.
var (
	_ worker.WakeupSource = queue.Listener{}
	_ worker.QueueChecker = queue.Log{}
	_ worker.HeadReader   = queue.Log{}
	_ worker.BatchTrimmer = queue.Log{}
)
