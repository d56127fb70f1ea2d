package main

import (
	"context"
	"fmt"
	"io"

	"github.com/drover-dev/drover/internal/config"
)

// startDevWeb serves the web console of the dev fleet in this process, on
// a free loopback port (no tokens: loopback only, every local client is
// admin), and returns its URL. stop ends it and waits for it.
func startDevWeb(ctx context.Context, cfgPath string) (url string, stop func(), err error) {
	cfg, err := config.Load(cfgPath, nil, []config.Setting{
		{Key: "web.addr", Value: "127.0.0.1:0", Flag: "dev"},
		{Key: "log.level", Value: "warn", Flag: "dev"},
	}, "dev-web")
	if err != nil {
		return "", nil, fmt.Errorf("dev: web console configuration: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- runWeb(wctx, cfg, io.Discard, func(u string) { urls <- u }) }()
	select {
	case url = <-urls:
		return url, func() { cancel(); <-done }, nil
	case err := <-done:
		cancel()
		return "", nil, fmt.Errorf("dev: web console: %w", err)
	}
}
