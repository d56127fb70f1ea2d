package worker

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The default guard of the debug endpoints refuses a loopback client whose
// Host is another site's name: a page rebound to 127.0.0.1 (DNS
// rebinding) must not read /debug/state or /debug/pprof. /metrics and the
// probes answer any Host.
func TestAdminDebugRefusesAForeignHost(t *testing.T) {
	w := newTestWorker(t, newMemLog(), &scriptedExecutor{}, nil)
	h := w.AdminHandler(AdminConfig{})
	get := func(path, host string) int {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr, req.Host = "127.0.0.1:1", host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, path := range []string{"/debug/state", "/debug/pprof/", "/debug/pprof/cmdline", "/debug/job?queue=q&id=x"} {
		if st := get(path, "evil.example:9090"); st != http.StatusForbidden {
			t.Errorf("GET %s with Host evil.example: want 403, have %d", path, st)
		}
	}
	for _, host := range []string{"127.0.0.1:9090", "localhost:9090", "[::1]:9090"} {
		if st := get("/debug/state", host); st != http.StatusOK {
			t.Errorf("GET /debug/state with Host %s: want 200, have %d", host, st)
		}
	}
	if st := get("/healthz", "evil.example:9090"); st != http.StatusOK {
		t.Errorf("GET /healthz with any Host: want 200, have %d", st)
	}
}
