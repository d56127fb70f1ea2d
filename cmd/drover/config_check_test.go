package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	bad := filepath.Join(dir, "drover.hcl")
	os.WriteFile(bad, []byte(`cluster = "prod"

worker {
  capacity = -2
  strategy = "fastest"
}
`), 0o644)
	r := runDrover(t, env, "", "config", "check", "-c", bad)
	checkFailure(t, r, exitUsage, []string{
		bad + ":4:14: worker.capacity: must be ≥ 1, have -2",
		bad + ":5:14: worker.strategy: want one of sticky, range, round-robin",
	})
	var out struct {
		Valid  bool
		Errors []map[string]string
	}
	r = runDrover(t, env, "", "config", "check", "-c", bad, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != exitUsage || out.Valid || len(out.Errors) != 2 || out.Errors[0]["where"] != bad+":4:14" || out.Errors[0]["key"] != "worker.capacity" {
		t.Fatalf("want 2 errors with where and key as JSON, exit 2; have %v\n%s", err, r)
	}

	typo := filepath.Join(dir, "typo.hcl")
	os.WriteFile(typo, []byte("redis {\n  adrs = [\"r:6379\"]\n}\n"), 0o644)
	checkFailure(t, runDrover(t, env, "", "config", "check", "-c", typo), exitUsage, []string{typo + ":2:3", `"adrs"`, "addrs"})
	checkFailure(t, runDrover(t, env, "", "config", "check", "-c", filepath.Join(dir, "missing.hcl")), exitUsage, []string{"missing.hcl", "no such file"})

	good := filepath.Join(dir, "good.hcl")
	os.WriteFile(good, []byte("worker {\n  name = \"w1\"\n  capacity = 4\n}\n"), 0o644)
	r = runDrover(t, append(env, "DROVER_WORKER_CAPACITY=8", "DROVER_CONFIG="+good), "", "config", "check", "--name", "w2")
	if r.code != 0 || !contains(r.stdout, `name = "w2" # from flag --name`, "capacity = 8 # from env DROVER_WORKER_CAPACITY", `strategy = "sticky"`+"\n") {
		t.Fatalf("want flags over env over file, with origins, have:\n%s", r)
	}
	if !strings.Contains(r.stdout, "effective configuration ("+good+")") {
		t.Fatalf("want the file named, have:\n%s", r.stdout)
	}
	keys := runDrover(t, env, "", "config", "keys")
	if keys.code != 0 || !contains(keys.stdout, "worker.admin_addr", "DROVER_WORKER_ADMIN_ADDR", "127.0.0.1:9090") {
		t.Fatalf("want every key with its variable and default, have:\n%s", keys)
	}
	// The worker loads the configuration the same way and refuses a bad one.
	checkFailure(t, runDrover(t, env, "", "worker", "-c", bad), exitUsage, []string{bad + ":4:14: worker.capacity"})
	// The shipped example configuration is valid.
	if r := runDrover(t, env, "", "config", "check", "-c", filepath.Join("..", "..", "examples", "drover.hcl")); r.code != 0 {
		t.Fatalf("want examples/drover.hcl valid, have:\n%s", r)
	}
}
