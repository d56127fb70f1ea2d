package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/queue"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c, err := Load("", nil, nil, "host-1")
	if err != nil {
		t.Fatalf("load defaults: %v", err)
	}
	if c.Worker.Name != "host-1" || c.ZooKeeper.Root != "/drover/default" || c.ZooKeeper.ConnectTimeout != DefaultSessionTimeout {
		t.Fatalf("want name host-1, root /drover/default, connect timeout %s; have %q, %q, %s",
			DefaultSessionTimeout, c.Worker.Name, c.ZooKeeper.Root, c.ZooKeeper.ConnectTimeout)
	}
	if c.Worker.AdminAddr != DefaultAdminAddr || c.Worker.Strategy != "sticky" || c.Origin("worker.capacity") != "default" {
		t.Fatalf("want default admin addr and strategy; have %q %q", c.Worker.AdminAddr, c.Worker.Strategy)
	}
}

func TestPrecedenceFlagsOverEnvOverFile(t *testing.T) {
	path := writeFile(t, "drover.hcl", `
cluster = "prod"
zookeeper {
  servers = ["zk1:2181", "zk2:2181"]
  session_timeout = "6s"
}
worker {
  name     = "from-file"
  capacity = 8
  tags     = ["gpu"]
}
`)
	env := []string{"DROVER_WORKER_NAME=from-env", "DROVER_WORKER_CAPACITY=12", "DROVER_LOG_LEVEL=", "PATH=/bin"}
	flags := []Setting{{Key: "worker.name", Value: "from-flag", Flag: "--name"}}
	c, err := Load(path, env, flags, "host")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if c.Worker.Name != "from-flag" || c.Worker.Capacity != 12 || c.Cluster != "prod" {
		t.Fatalf("want name from-flag, capacity 12, cluster prod; have %q %d %q", c.Worker.Name, c.Worker.Capacity, c.Cluster)
	}
	if c.ZooKeeper.SessionTimeout != 6*time.Second || c.ZooKeeper.ConnectTimeout != 6*time.Second || c.ZooKeeper.Root != "/drover/prod" {
		t.Fatalf("want session 6s, connect 6s, root /drover/prod; have %s %s %q", c.ZooKeeper.SessionTimeout, c.ZooKeeper.ConnectTimeout, c.ZooKeeper.Root)
	}
	if len(c.ZooKeeper.Servers) != 2 || c.Worker.Tags[0] != "gpu" || c.Log.Level != "info" {
		t.Fatalf("want 2 servers, tag gpu, level info; have %v %v %q", c.ZooKeeper.Servers, c.Worker.Tags, c.Log.Level)
	}
	for key, want := range map[string]string{
		"worker.name":       "flag --name",
		"worker.capacity":   "env DROVER_WORKER_CAPACITY",
		"cluster":           path + ":2:11",
		"worker.strategy":   "default",
		"zookeeper.servers": path + ":4:13",
	} {
		if have := c.Origin(key); have != want {
			t.Errorf("origin of %s: want %q, have %q", key, want, have)
		}
	}
}

func TestFileErrorsNameFileLineAndField(t *testing.T) {
	path := writeFile(t, "bad.hcl", `worker {
  capacity = -1
  strategy = "fastest"
  drain_timeout = "soon"
}
redis {
  db = "x"
}
`)
	_, err := Load(path, nil, nil, "host")
	var errs Errors
	if !errors.As(err, &errs) || !errors.Is(err, drover.ErrInvalidConfig) {
		t.Fatalf("want Errors wrapping ErrInvalidConfig, have %T %v", err, err)
	}
	text := err.Error()
	for _, want := range []string{
		path + ":4:19: worker.drain_timeout: want a duration",
		path + ":7:8: redis.db: want a whole number",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in:\n%s", want, text)
		}
	}
	// Decoding errors stop before validation; fix them and the rest shows.
	path = writeFile(t, "bad2.hcl", "worker {\n  capacity = -1\n  strategy = \"fastest\"\n}\n")
	_, err = Load(path, nil, nil, "host")
	for _, want := range []string{
		path + ":2:14: worker.capacity: must be ≥ 1, have -1",
		path + ":3:14: worker.strategy: want one of sticky, range, round-robin",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in:\n%v", want, err)
		}
	}
}

func TestUnknownAttributeAndSyntaxError(t *testing.T) {
	path := writeFile(t, "typo.hcl", "zookeeper {\n  sevrers = [\"a:1\"]\n}\n")
	_, err := Load(path, nil, nil, "host")
	if err == nil || !strings.Contains(err.Error(), path+":2:3") || !strings.Contains(err.Error(), "servers") {
		t.Fatalf("want the typo's position and a suggestion of servers, have %v", err)
	}
	path = writeFile(t, "syntax.hcl", "worker {\n  capacity = \n")
	_, err = Load(path, nil, nil, "host")
	if err == nil || !strings.Contains(err.Error(), path+":") {
		t.Fatalf("want a syntax error naming the file, have %v", err)
	}
	path = writeFile(t, "dup.hcl", "log {\n}\nlog {\n}\n")
	_, err = Load(path, nil, nil, "host")
	if err == nil || !strings.Contains(err.Error(), path+":3:1: log: duplicate block") {
		t.Fatalf("want a duplicate-block error, have %v", err)
	}
}

func TestEnvAndFlagErrorsNameTheirSource(t *testing.T) {
	_, err := Load("", []string{"DROVER_WORKER_SETTLE=fast"}, []Setting{{Key: "worker.capacity", Value: "many", Flag: "--capacity"}}, "host")
	if err == nil {
		t.Fatal("want errors, have none")
	}
	for _, want := range []string{"env DROVER_WORKER_SETTLE: worker.settle: want a duration", "flag --capacity: worker.capacity: want a whole number"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in:\n%v", want, err)
		}
	}
}

func TestJSONFile(t *testing.T) {
	path := writeFile(t, "drover.json", `{"worker": {"name": "j", "capacity": 3}, "redis": {"addrs": ["r:6379"]}}`)
	c, err := Load(path, nil, nil, "host")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if c.Worker.Name != "j" || c.Worker.Capacity != 3 || c.Redis.Addrs[0] != "r:6379" {
		t.Fatalf("want j/3/r:6379, have %q/%d/%v", c.Worker.Name, c.Worker.Capacity, c.Redis.Addrs)
	}
}

func TestHCLRoundTripsAndRedactsSecrets(t *testing.T) {
	c, err := Load("", []string{"DROVER_REDIS_PASSWORD=hunter2", "DROVER_WORKER_TAGS=a,b"}, nil, "host")
	if err != nil {
		t.Fatal(err)
	}
	out := string(c.HCL())
	if strings.Contains(out, "hunter2") || !strings.Contains(out, `password = "(redacted)" # from env DROVER_REDIS_PASSWORD`) {
		t.Fatalf("want the password redacted with its origin, have:\n%s", out)
	}
	path := writeFile(t, "printed.hcl", out)
	c2, err := Load(path, nil, nil, "other")
	if err != nil {
		t.Fatalf("the printed configuration does not load: %v\n%s", err, out)
	}
	if c2.Worker.Name != "host" || len(c2.Worker.Tags) != 2 || c2.ZooKeeper.SessionTimeout != c.ZooKeeper.SessionTimeout {
		t.Fatalf("want the printed values back, have name %q tags %v", c2.Worker.Name, c2.Worker.Tags)
	}
}

func TestEveryKeyHasAnEnvNameAndParses(t *testing.T) {
	samples := map[kind]string{kindString: "x", kindStrings: "a,b", kindInt: "3", kindBool: "true", kindDuration: "2s", kindFloat: "0.5"}
	for _, f := range fields {
		c := Default("h")
		if err := f.setString(c, samples[f.kind]); err != nil {
			t.Errorf("%s: %v", f.key, err)
		}
		if !strings.HasPrefix(EnvName(f.key), "DROVER_") || strings.Contains(EnvName(f.key), ".") {
			t.Errorf("%s: bad env name %s", f.key, EnvName(f.key))
		}
	}
}

// TestRedisGiveUpAfterIsValidated: worker.redis_giveup_after below 1s (one
// ping per fifth of it) is refused with its source; 1s and more load.
func TestRedisGiveUpAfterIsValidated(t *testing.T) {
	_, err := Load("", []string{"DROVER_WORKER_REDIS_GIVEUP_AFTER=500ms"}, nil, "host")
	if err == nil || !strings.Contains(err.Error(), "worker.redis_giveup_after: must be ≥ 1s") {
		t.Fatalf("want 500ms refused, have %v", err)
	}
	c, err := Load("", []string{"DROVER_WORKER_REDIS_GIVEUP_AFTER=30s"}, nil, "host")
	if err != nil || c.Worker.RedisGiveUpAfter != 30*time.Second {
		t.Fatalf("want 30s, have %v, %v", c, err)
	}
}

// TestBalanceEveryIsReadAndValidated: worker.balance_every comes from the
// file (and the environment over it), and below 1s it is refused naming the
// key and where it came from.
func TestBalanceEveryIsReadAndValidated(t *testing.T) {
	path := writeFile(t, "drover.hcl", "worker {\n  balance_every = \"30s\"\n}\n")
	c, err := Load(path, nil, nil, "host")
	if err != nil || c.Worker.BalanceEvery != 30*time.Second {
		t.Fatalf("want 30s from the file, have %v, %v", c, err)
	}
	if c.Origin("worker.balance_every") != path+":2:19" {
		t.Errorf("want the origin %s:2:19, have %q", path, c.Origin("worker.balance_every"))
	}
	c, err = Load(path, []string{"DROVER_WORKER_BALANCE_EVERY=2m"}, nil, "host")
	if err != nil || c.Worker.BalanceEvery != 2*time.Minute {
		t.Fatalf("want 2m from the environment, have %v, %v", c, err)
	}
	for _, v := range []string{"500ms", "0s", "-1s"} {
		_, err := Load("", []string{"DROVER_WORKER_BALANCE_EVERY=" + v}, nil, "host")
		if err == nil || !strings.Contains(err.Error(), "worker.balance_every: must be ≥ 1s") || !strings.Contains(err.Error(), "DROVER_WORKER_BALANCE_EVERY") {
			t.Errorf("want %s refused naming worker.balance_every and its source, have %v", v, err)
		}
	}
}

// TestDurableFollowsTheDeployment: redis.durable.mode "auto" (the default)
// turns durable enqueue on with Sentinel only; "on" and "off" are obeyed;
// what cannot work is refused naming the key.
func TestDurableFollowsTheDeployment(t *testing.T) {
	on := queue.Durable{Replicas: 1, Timeout: 500 * time.Millisecond}
	for _, tc := range []struct {
		name string
		env  []string
		want queue.Durable
	}{
		{"standalone, auto", nil, queue.Durable{}},
		{"sentinel, auto", []string{"DROVER_REDIS_MASTER_NAME=m"}, on},
		{"sentinel, off", []string{"DROVER_REDIS_MASTER_NAME=m", "DROVER_REDIS_DURABLE_MODE=off"}, queue.Durable{}},
		{"standalone, on", []string{"DROVER_REDIS_DURABLE_MODE=on", "DROVER_REDIS_DURABLE_REPLICAS=2", "DROVER_REDIS_DURABLE_TIMEOUT=1s", "DROVER_REDIS_DURABLE_AOF=true"},
			queue.Durable{Replicas: 2, Timeout: time.Second, AOF: true}},
		{"cluster, auto", []string{"DROVER_REDIS_CLUSTER=true"}, queue.Durable{}},
		{"cluster, on", []string{"DROVER_REDIS_CLUSTER=true", "DROVER_REDIS_DURABLE_MODE=on"}, on},
	} {
		c, err := Load("", tc.env, nil, "host")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if have := c.QueueDurable(); have != tc.want {
			t.Errorf("%s: want %+v, have %+v", tc.name, tc.want, have)
		}
	}
	for _, tc := range []struct{ env, want string }{
		{"DROVER_REDIS_DURABLE_MODE=always", `redis.durable.mode: want "auto", "on" or "off"`},
		{"DROVER_REDIS_DURABLE_REPLICAS=0", "redis.durable.replicas: must be ≥ 1"},
		{"DROVER_REDIS_DURABLE_TIMEOUT=5s", "redis.durable.timeout: want whole milliseconds"},
		{"DROVER_REDIS_DURABLE_TIMEOUT=0s", "redis.durable.timeout: want whole milliseconds"},
	} {
		if _, err := Load("", []string{tc.env}, nil, "host"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, have %v", tc.env, tc.want, err)
		}
	}
}
