package deploy_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redis.conf is accepted by redis-server and in force: the settings
// docs/operations.md describes are what a server started with it reports.
func TestRedisConfLoads(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (%v): apt-get install redis-server (make deps)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf, err := filepath.Abs(filepath.Join("redis", "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", t.TempDir(), "--daemonize", "no")
	out, err := os.CreateTemp(t.TempDir(), "redis-log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	want := map[string]string{"min-replicas-to-write": "1", "min-replicas-max-lag": "10", "appendonly": "yes", "appendfsync": "everysec"}
	deadline := time.Now().Add(20 * time.Second)
	for name, v := range want {
		for {
			got, err := configGet(port, name)
			if err == nil {
				if got != v {
					t.Fatalf("%s: want %s, have %s", name, v, got)
				}
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(out.Name())
				t.Fatalf("redis-server with %s does not answer: %v\n%s", conf, err, log)
			}
			time.Sleep(20 * time.Millisecond) // polling for the server to listen
		}
	}
}

// configGet asks the server on port for one setting (CONFIG GET, RESP).
func configGet(port int, name string) (string, error) {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("CONFIG GET " + name + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	var lines []string
	for len(lines) < 5 { // *2, $n, name, $n, value
		s, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		lines = append(lines, strings.TrimRight(s, "\r\n"))
	}
	return lines[4], nil
}
