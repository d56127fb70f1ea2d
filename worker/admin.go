package worker

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
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
}

// JobState is /debug/job's answer: a message's in-flight attempt on this
// member.
type JobState struct {
	Member string    `json:"member"`
	Queue  string    `json:"queue"`
	Task   TaskState `json:"task"`
}

// AdminHandler serves /healthz (the process runs), /readyz (Ready),
// /debug/state (State plus Info, as JSON), /debug/job?queue=&id= (one
// message's in-flight attempt, 404 when it does not run here: one map
// lookup, for status lookups), /metrics and /debug/pprof. The
// admin address is loopback by default: expose it only to operators.
func (w *Worker) AdminHandler(cfg AdminConfig) http.Handler {
	mux := http.NewServeMux()
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
	mux.HandleFunc("GET /debug/state", func(rw http.ResponseWriter, _ *http.Request) {
		out := map[string]any{"worker": w.State()}
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
	mux.HandleFunc("GET /debug/job", func(rw http.ResponseWriter, r *http.Request) {
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
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
