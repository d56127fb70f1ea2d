package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/auth"
)

// nonLoopbackIP returns an address of this machine that is not loopback, so
// that a request to it comes from a non-loopback client.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address: the test needs one to be a non-loopback client")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// TestShippedAdminListenerHidesDebugFromTheNetwork starts workers with the
// shipped deploy/drover.hcl (admin_addr 0.0.0.0:9090, moved to a free port)
// and asks from a non-loopback address: the scrape and probe endpoints
// answer, the debug endpoints do not — unless the request carries an
// operator token.
func TestShippedAdminListenerHidesDebugFromTheNetwork(t *testing.T) {
	f := newFleet(t, 10*time.Second)
	shipped, err := filepath.Abs("../deploy/drover.hcl")
	if err != nil {
		t.Fatal(err)
	}
	ip := nonLoopbackIP(t)
	opTok, opSpec, err := auth.NewToken("ops", auth.Operator)
	if err != nil {
		t.Fatal(err)
	}
	viewTok, viewSpec, _ := auth.NewToken("dash", auth.Viewer)

	for _, c := range []struct {
		name   string
		tokens string
	}{{"open", ""}, {"tokens", opSpec + "," + viewSpec}} {
		t.Run(c.name, func(t *testing.T) {
			port := freePort(t)
			env := []string{"DROVER_CONFIG=" + shipped, "DROVER_LOG_JSON=false", fmt.Sprintf("DROVER_WORKER_ADMIN_ADDR=0.0.0.0:%d", port)}
			if c.tokens != "" {
				env = append(env, "DROVER_AUTH_TOKENS="+c.tokens)
			}
			p := f.startDrover("worker", "admin-"+c.name, env...)
			base := fmt.Sprintf("http://%s:%d", ip, port)
			waitFor(t, 60*time.Second, "/readyz to answer 200", func() bool {
				select {
				case <-p.done:
					b, _ := os.ReadFile(p.log)
					t.Fatalf("worker exited: %s", b)
				default:
				}
				resp, err := http.Get(base + "/readyz")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == 200
			})
			if st, body := get(t, base+"/metrics", ""); st != 200 || !strings.Contains(body, "drover_") {
				t.Errorf("/metrics from %s: want 200 with drover_ metrics, have %d", ip, st)
			}
			for _, path := range []string{"/debug/state", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline", "/debug/pprof/"} {
				st, body := get(t, base+path, "")
				if st != 401 && st != 403 {
					t.Errorf("%s from %s without a token: want 401 or 403, have %d: %.200s", path, ip, st, body)
				}
			}
			if c.tokens == "" {
				// Loopback clients (ctl dump on the host) still get in.
				if st, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/debug/state", port), ""); st != 200 || !strings.Contains(body, `"worker"`) {
					t.Errorf("/debug/state from loopback: want 200 with the state, have %d: %.200s", st, body)
				}
				return
			}
			if st, _ := get(t, base+"/debug/state", viewTok); st != 403 {
				t.Errorf("/debug/state with a viewer token: want 403, have %d", st)
			}
			if st, body := get(t, base+"/debug/state", opTok); st != 200 || !strings.Contains(body, `"worker"`) {
				t.Errorf("/debug/state with an operator token: want 200 with the state, have %d: %.200s", st, body)
			}
			if st, body := get(t, base+"/debug/pprof/cmdline", opTok); st != 200 || !strings.Contains(body, "worker") {
				t.Errorf("/debug/pprof/cmdline with an operator token: want 200, have %d: %.200s", st, body)
			}
			// ctl dump keeps working for operators, with ctl.token.
			out, err := f.ctl(append(env, "DROVER_CTL_TOKEN="+opTok), "dump", "admin-"+c.name)
			if err != nil || !strings.Contains(out, "MEMBER admin-"+c.name) {
				t.Errorf("ctl dump with ctl.token: want the member's state, have %v: %s", err, out)
			}
			out, err = f.ctl(env, "dump", "admin-"+c.name)
			if err == nil {
				t.Errorf("ctl dump without a token against a worker with auth.tokens: want an error, have: %s", out)
			}
		})
	}

	// drover scheduler with the shipped file serves scrape and probe
	// endpoints only: no debug endpoint at all.
	port := freePort(t)
	f.startDrover("scheduler", "admin-sched", "DROVER_CONFIG="+shipped, "DROVER_LOG_JSON=false", fmt.Sprintf("DROVER_SCHEDULER_ADMIN_ADDR=0.0.0.0:%d", port))
	base := fmt.Sprintf("http://%s:%d", ip, port)
	waitFor(t, 60*time.Second, "the scheduler's /metrics", func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	for _, path := range []string{"/debug/state", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline"} {
		if st, _ := get(t, base+path, opTok); st != http.StatusNotFound {
			t.Errorf("scheduler %s: want 404 (not served), have %d", path, st)
		}
	}
}

// ctl runs `drover ctl args...` against the fleet with extra env and
// returns its combined output.
func (f *fleet) ctl(extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command(droverBin, append([]string{"ctl"}, args...)...)
	cmd.Env = append(append([]string(nil), f.env...), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
