package main

import (
	"net/http"
	_ "net/http/pprof" // BENCH_PPROF: profile a long scale run while it runs
	"os"
)

func init() {
	if addr := os.Getenv("BENCH_PPROF"); addr != "" {
		go http.ListenAndServe(addr, nil)
	}
}
