package worker

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/drover-dev/drover/internal/auth"
)

// AdminConfig configures the admin HTTP handler.
type AdminConfig struct {
	// Ready returns nil when the worker may receive work (session connected,
	// member registered); /readyz answers 503 with the error otherwise.
	Ready func() error
	// Info returns extra fields for /debug/state (member node, generation,
	// session state). Optional.
	Info func() map[string]any
	// Metrics serves /metrics. Optional.
	Metrics http.Handler
	// Debug wraps the debug endpoints (/debug/state, /debug/pprof/*) to
	// authenticate them; the scrape and probe endpoints (/metrics,
	// /healthz, /readyz) are never wrapped. Default: only loopback clients
	// reach the debug endpoints.
	Debug func(http.Handler) http.Handler
	// Audit writes a record of a mutation made through the debug
	// endpoints (a cancel) to the fleet's audit log; its failure is
	// logged. Optional: without it nothing is audited.
	Audit func(ctx context.Context, rec AuditEntry) error
}

// JobState is /debug/job's answer: a message's in-flight attempt on this
// member.
type JobState struct {
	Member string    `json:"member"`
	Queue  string    `json:"queue"`
	Task   TaskState `json:"task"`
}

// loopbackOnly answers 403 to a client that is not on a loopback address,
// and to a request whose Host is not a loopback address or localhost (a
// page whose name is rebound to 127.0.0.1 is a loopback client too).
func loopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			http.Error(w, "forbidden: debug endpoints answer loopback clients only", http.StatusForbidden)
			return
		}
		if !auth.LocalHost(r) {
			http.Error(w, "forbidden: Host "+r.Host+" is not a loopback address or localhost", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// AdminHandler serves /healthz (the process runs), /readyz (Ready) and
// /metrics to anyone — what a scraper and a kubelet need — and /debug/state
// (State plus Info, as JSON; ?queues=names lists the owned queues' names
// instead of their states, ?queues=rate_limited only those held back by
// their rate limit), /debug/job?queue=&id= (one message's in-flight
// attempt, 404 when it does not run here: one map lookup, for status
// lookups), POST /debug/cancel?queue=&id=&then= (stop a running task as the
// authenticated principal, audited through cfg.Audit: cancel.go) and
// /debug/pprof behind cfg.Debug.
func (w *Worker) AdminHandler(cfg AdminConfig) http.Handler {
	guard := cfg.Debug
	if guard == nil {
		guard = loopbackOnly
	}
	debug := http.NewServeMux()
	mux := http.NewServeMux()
	mux.Handle("/debug/", guard(debug))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil {
			if err := cfg.Ready(); err != nil {
				http.Error(rw, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		rw.Write([]byte("ready\n"))
	})
	debug.HandleFunc("GET /debug/state", func(rw http.ResponseWriter, r *http.Request) {
		var st State
		switch q := r.URL.Query().Get("queues"); q {
		case "":
			st = w.State()
		case "names":
			st = w.StateNames()
		case "rate_limited":
			st = w.StateRateLimited()
		case "running": // the queues running a task now (the console's running view)
			st = w.StateRunning()
		default:
			http.Error(rw, "queues: want names, rate_limited or running, or leave it out for every queue's state", http.StatusBadRequest)
			return
		}
		out := map[string]any{"worker": st}
		if cfg.Info != nil {
			for k, v := range cfg.Info() {
				out[k] = v
			}
		}
		rw.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(rw)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	})
	debug.HandleFunc("GET /debug/job", func(rw http.ResponseWriter, r *http.Request) {
		q, id := r.URL.Query().Get("queue"), r.URL.Query().Get("id")
		if q == "" || id == "" {
			http.Error(rw, "want ?queue=<queue>&id=<id>", http.StatusBadRequest)
			return
		}
		ts, ok := w.Job(q, id)
		if !ok {
			http.Error(rw, "not running here", http.StatusNotFound)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(JobState{Member: w.cfg.Member, Queue: q, Task: ts})
	})
	// A cancel is a mutation: besides the guard's authentication and Host
	// check, a browser's cross-site POST is refused (a page on another
	// site must not stop tasks through a loopback admin server).
	debug.Handle("POST /debug/cancel", http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.serveCancel(rw, r, cfg.Audit)
	})))
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	debug.HandleFunc("/debug/pprof/", pprof.Index)
	debug.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	debug.HandleFunc("/debug/pprof/profile", pprof.Profile)
	debug.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	debug.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
