package drover

import (
	"context"
	"errors"
	"sort"
	"sync"
)

// HandlerFunc runs one task in Go. Returning nil is success; an error wrapping
// ErrRetry asks for a retry without counting as a failure's reason; any other
// error is a failure, retried with backoff until the queue's max_attempts.
type HandlerFunc func(ctx context.Context, m *Message) error

// ErrRetry, returned (or wrapped) by a handler, is the Go form of exit code 75
// (EX_TEMPFAIL): try again later.
var ErrRetry = errors.New("drover: retry later")

var handlers = struct {
	sync.RWMutex
	m map[string]HandlerFunc
}{m: map[string]HandlerFunc{}}

// Register makes a Go handler available under name, for task routes marked
// "inline" or "go". Register it in an init function or before the worker
// starts, in every binary that runs the worker (a "go" route re-executes the
// worker's own binary). Registering a name twice panics, as http.Handle does:
// it is a programming error.
func Register(name string, h HandlerFunc) {
	if name == "" || h == nil {
		panic("drover.Register: empty name or nil handler")
	}
	handlers.Lock()
	defer handlers.Unlock()
	if _, dup := handlers.m[name]; dup {
		panic("drover.Register: handler " + name + " registered twice")
	}
	handlers.m[name] = h
}

// LookupHandler returns the handler registered under name.
func LookupHandler(name string) (HandlerFunc, bool) {
	handlers.RLock()
	defer handlers.RUnlock()
	h, ok := handlers.m[name]
	return h, ok
}

// Handlers lists the registered handler names, sorted.
func Handlers() []string {
	handlers.RLock()
	defer handlers.RUnlock()
	names := make([]string, 0, len(handlers.m))
	for n := range handlers.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
