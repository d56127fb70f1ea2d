package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/drover-dev/drover/internal/config"
)

// devWebRestartWait is how long dev waits before serving its console again
// after it stopped.
const devWebRestartWait = time.Second

// webRunner serves a console on addr until ctx ends, calling ready with its
// URL once it listens: runWeb, or a fake in tests.
type webRunner func(ctx context.Context, addr string, ready func(url string)) error

// startDevWeb serves the web console of the dev fleet in this process, on
// a free loopback port (no tokens: loopback only, with the Host check;
// every local client is admin), and returns its URL. stop ends it and
// waits for it.
func startDevWeb(ctx context.Context, cfgPath string, stderr io.Writer) (url string, stop func(), err error) {
	run := func(ctx context.Context, addr string, ready func(string)) error {
		cfg, err := config.Load(cfgPath, nil, []config.Setting{
			{Key: "web.addr", Value: addr, Flag: "dev"},
			{Key: "log.level", Value: "warn", Flag: "dev"},
		}, "dev-web")
		if err != nil {
			return fmt.Errorf("web console configuration: %w", err)
		}
		return runWeb(ctx, cfg, io.Discard, ready)
	}
	return superviseDevWeb(ctx, run, stderr)
}

// superviseDevWeb starts run on a free loopback port and keeps it up: when
// it stops while ctx lasts, dev says so on stderr and serves it again on
// the same address (the URL it printed stays right), every
// devWebRestartWait until it listens. It fails only when the first start
// fails.
func superviseDevWeb(ctx context.Context, run webRunner, stderr io.Writer) (string, func(), error) {
	wctx, cancel := context.WithCancel(ctx)
	urls := make(chan string, 1)
	first := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		addr := "127.0.0.1:0"
		started := false
		for {
			err := run(wctx, addr, func(u string) {
				if !started {
					started = true
					if pu, perr := url.Parse(u); perr == nil {
						addr = pu.Host
					}
					urls <- u
				}
			})
			if !started {
				if err == nil {
					err = errors.New("stopped before listening")
				}
				first <- err
				return
			}
			if wctx.Err() != nil {
				return
			}
			fmt.Fprintf(stderr, "dev: the web console stopped (%v); serving it again on %s\n", err, addr)
			select {
			case <-wctx.Done():
				return
			case <-time.After(devWebRestartWait):
			}
		}
	}()
	select {
	case u := <-urls:
		return u, func() { cancel(); <-done }, nil
	case err := <-first:
		cancel()
		return "", nil, fmt.Errorf("dev: web console: %w", err)
	}
}
