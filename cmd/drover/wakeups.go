package main

import (
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/worker"
)

// The store is the worker's wake-up source (its amortised backstop against
// lost wake-ups, heads and checks, is part of worker.Store).
var _ worker.WakeupSource = queue.Listener{}
