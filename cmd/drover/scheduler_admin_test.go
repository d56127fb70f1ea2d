package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/config"
)

// TestSchedulerHasItsOwnAdminAddr: a worker and a scheduler on one host
// read one configuration. The scheduler listens on scheduler.admin_addr
// (or --admin-addr), so a worker holding worker.admin_addr does not stop
// it; it used to bind worker.admin_addr and exit.
func TestSchedulerHasItsOwnAdminAddr(t *testing.T) {
	if config.DefaultSchedulerAdminAddr == config.DefaultAdminAddr {
		t.Fatalf("want the scheduler's default admin address to differ from the worker's, both are %s", config.DefaultAdminAddr)
	}
	c := newCluster(t)
	// The "worker" on this host: it holds worker.admin_addr.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, viaFlag := range []bool{false, true} {
		t.Run(fmt.Sprintf("flag=%v", viaFlag), func(t *testing.T) {
			addr := freeAddr(t)
			args := []string{"scheduler", "--name", fmt.Sprintf("s-%v", viaFlag)}
			env := []string{"DROVER_WORKER_ADMIN_ADDR=" + held.Addr().String()}
			if viaFlag {
				args = append(args, "--admin-addr", addr)
			} else {
				env = append(env, "DROVER_SCHEDULER_ADMIN_ADDR="+addr)
			}
			logPath := filepath.Join(t.TempDir(), "scheduler.log")
			logf, err := os.Create(logPath)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(droverBin, args...)
			cmd.Env = withEnv(c.env, env...)
			cmd.Stdout, cmd.Stderr = logf, logf
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait(); logf.Close() }()
			defer func() {
				cmd.Process.Signal(syscall.SIGTERM)
				<-exited
				if t.Failed() {
					log, _ := os.ReadFile(logPath)
					t.Logf("scheduler log:\n%s", log)
				}
			}()
			eventually(t, 60*time.Second, func() error {
				select {
				case err := <-exited:
					exited <- err
					t.Fatalf("want the scheduler running, have it exited: %v", err)
				default:
				}
				resp, err := http.Get("http://" + addr + "/healthz")
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("/healthz: %s", resp.Status)
				}
				return nil
			})
		})
	}
}
