package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/drover-dev/drover/internal/config"
)

// stopMargin is the least time a stop must allow beyond worker.drain_timeout
// for the final commits, releases and leaving the membership.
const stopMargin = 10 * time.Second

func loadConfig(t *testing.T, path string, env []string) *config.Config {
	t.Helper()
	c, err := config.Load(path, env, nil, "host")
	if err != nil {
		t.Fatalf("load %s %v: %v", path, env, err)
	}
	return c
}

// unitSettings reads the [Service] settings of a systemd unit.
func unitSettings(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	out := map[string]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			out[k] = v
		}
	}
	return out
}

func TestSystemdUnitsRestartAndOutlastTheDrain(t *testing.T) {
	cfg := loadConfig(t, "drover.hcl", nil)
	if cfg.Worker.AdminAddr != "0.0.0.0:9090" || !cfg.Metrics.Prometheus {
		t.Errorf("drover.hcl: want /metrics on 0.0.0.0:9090, have admin %q prometheus %v", cfg.Worker.AdminAddr, cfg.Metrics.Prometheus)
	}
	// Both units read this file; on one host they need two ports.
	if cfg.Scheduler.AdminAddr == cfg.Worker.AdminAddr {
		t.Errorf("drover.hcl: want the scheduler's admin address to differ from the worker's, both are %q", cfg.Worker.AdminAddr)
	}
	for unit, command := range map[string]string{"systemd/drover-worker.service": "worker", "systemd/drover-scheduler.service": "scheduler"} {
		s := unitSettings(t, unit)
		for k, want := range map[string]string{
			"Restart": "always", "KillMode": "mixed", "NoNewPrivileges": "yes", "PrivateTmp": "yes",
			"ExecStart": "/usr/local/bin/drover " + command + " --config /etc/drover/drover.hcl",
		} {
			if s[k] != want {
				t.Errorf("%s: want %s=%s, have %q", unit, k, want, s[k])
			}
		}
		stop, err := time.ParseDuration(s["TimeoutStopSec"])
		if err != nil {
			t.Errorf("%s: TimeoutStopSec %q: %v", unit, s["TimeoutStopSec"], err)
		}
		if min := cfg.Worker.DrainTimeout + stopMargin; stop < min {
			t.Errorf("%s: want TimeoutStopSec ≥ drain_timeout %s + %s, have %s", unit, cfg.Worker.DrainTimeout, stopMargin, stop)
		}
	}
}

type composeFile struct {
	Services map[string]struct {
		Image            string            `yaml:"image"`
		Command          []string          `yaml:"command"`
		Environment      map[string]string `yaml:"environment"`
		StopGracePeriod  string            `yaml:"stop_grace_period"`
		Volumes          []string          `yaml:"volumes"`
		Ports            []string          `yaml:"ports"`
		Build            map[string]string `yaml:"build"`
		DependsOnHealthy map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
}

func TestComposeRunsTheWholeStack(t *testing.T) {
	var c composeFile
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatalf("read docker-compose.yml: %v", err)
	}
	// depends_on is a list for grafana and a map for drover services; read
	// the services' shapes leniently, then the drover ones strictly.
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatalf("parse docker-compose.yml: %v", err)
	}
	services, _ := raw["services"].(map[any]any)
	var names []string
	for k := range services {
		names = append(names, k.(string))
	}
	sort.Strings(names)
	want := []string{"grafana", "prometheus", "redis", "scheduler", "worker-1", "worker-2", "zookeeper"}
	if !slices.Equal(names, want) {
		t.Fatalf("docker-compose.yml services: want %v, have %v", want, names)
	}
	delete(services, "grafana")
	strict, _ := yaml.Marshal(raw)
	if err := yaml.Unmarshal(strict, &c); err != nil {
		t.Fatalf("parse docker-compose.yml services: %v", err)
	}

	redis := strings.Join(c.Services["redis"].Command, " ")
	if !strings.Contains(redis, "--appendonly yes") {
		t.Errorf("redis: want --appendonly yes, have command %q", redis)
	}
	var targets []string
	workerNames := map[string]bool{}
	for _, name := range []string{"worker-1", "worker-2", "scheduler"} {
		s := c.Services[name]
		var env []string
		for k, v := range s.Environment {
			env = append(env, k+"="+v)
		}
		cfg := loadConfig(t, "", env)
		if workerNames[cfg.Worker.Name] {
			t.Errorf("%s: member name %q is used twice", name, cfg.Worker.Name)
		}
		workerNames[cfg.Worker.Name] = true
		admin := cfg.Worker.AdminAddr
		if name == "scheduler" {
			admin = cfg.Scheduler.AdminAddr
		}
		if admin != "0.0.0.0:9090" || !slices.Equal(cfg.ZooKeeper.Servers, []string{"zookeeper:2181"}) || !slices.Equal(cfg.Redis.Addrs, []string{"redis:6379"}) {
			t.Errorf("%s: want admin 0.0.0.0:9090, zookeeper:2181, redis:6379; have %q %v %v", name, admin, cfg.ZooKeeper.Servers, cfg.Redis.Addrs)
		}
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil || grace < cfg.Worker.DrainTimeout+stopMargin {
			t.Errorf("%s: want stop_grace_period ≥ drain_timeout %s + %s, have %q", name, cfg.Worker.DrainTimeout, stopMargin, s.StopGracePeriod)
		}
		if s.Build["dockerfile"] != "deploy/Dockerfile" || s.Build["context"] != ".." {
			t.Errorf("%s: want built from deploy/Dockerfile in the repository root, have %v", name, s.Build)
		}
		for dep, d := range s.DependsOnHealthy {
			if d.Condition != "service_healthy" {
				t.Errorf("%s: want to wait for %s to be healthy, have %q", name, dep, d.Condition)
			}
		}
		targets = append(targets, name+":9090")
	}
	if cmd := c.Services["scheduler"].Command; !slices.Equal(cmd, []string{"scheduler"}) {
		t.Errorf("scheduler: want command [scheduler], have %v", cmd)
	}

	// Prometheus scrapes exactly the drover services.
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus/prometheus.yml", &prom)
	var scraped []string
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName == "drover" {
			for _, s := range sc.StaticConfigs {
				scraped = append(scraped, s.Targets...)
			}
		}
	}
	sort.Strings(scraped)
	sort.Strings(targets)
	if !slices.Equal(scraped, targets) {
		t.Errorf("prometheus.yml job drover: want targets %v, have %v", targets, scraped)
	}
	if !slices.Contains(prom.RuleFiles, "alerts.yml") {
		t.Errorf("prometheus.yml: want rule_files to load alerts.yml, have %v", prom.RuleFiles)
	}
	// Every mounted host path exists.
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			host, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(host, "./") {
				if _, err := os.Stat(host); err != nil {
					t.Errorf("%s mounts %s: %v", name, host, err)
				}
			}
		}
	}
	for _, p := range []string{"grafana/provisioning/datasources/prometheus.yml", "grafana/provisioning/dashboards/drover.yml", "grafana/dashboards/drover.json"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("grafana provisioning: %v", err)
		}
	}
}

// k8sObject is the part of a Kubernetes object the tests read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Args           []string `yaml:"args"`
					ReadinessProbe *probe   `yaml:"readinessProbe"`
					LivenessProbe  *probe   `yaml:"livenessProbe"`
					Lifecycle      struct {
						PreStop struct {
							Exec struct {
								Command []string `yaml:"command"`
							} `yaml:"exec"`
						} `yaml:"preStop"`
					} `yaml:"lifecycle"`
					VolumeMounts []struct {
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

func readK8s(t *testing.T) map[string]k8sObject {
	t.Helper()
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	readYAML(t, "kubernetes/kustomization.yaml", &kust)
	objs := map[string]k8sObject{}
	for _, r := range kust.Resources {
		b, err := os.ReadFile(filepath.Join("kubernetes", r))
		if err != nil {
			t.Fatalf("kustomization resource: %v", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("parse %s: %v", r, err)
			}
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	return objs
}

func TestKubernetesWorkersDrainAndProbeTheAdminEndpoints(t *testing.T) {
	objs := readK8s(t)
	cm, ok := objs["ConfigMap/drover"]
	if !ok {
		t.Fatalf("want ConfigMap/drover, have %v", keys(objs))
	}
	hcl := filepath.Join(t.TempDir(), "drover.hcl")
	if err := os.WriteFile(hcl, []byte(cm.Data["drover.hcl"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := loadConfig(t, hcl, nil)
	if cfg.Worker.AdminAddr != "0.0.0.0:9090" {
		t.Errorf("ConfigMap drover.hcl: want admin_addr 0.0.0.0:9090 (probes and scrapes come from outside the pod), have %q", cfg.Worker.AdminAddr)
	}

	w, ok := objs["Deployment/drover-worker"]
	if !ok {
		t.Fatalf("want Deployment/drover-worker, have %v", keys(objs))
	}
	pod := w.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("worker: want one container, have %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("worker: want readiness on /readyz, have %+v", c.ReadinessProbe)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("worker: want liveness on /healthz, have %+v", c.LivenessProbe)
	}
	preStop := c.Lifecycle.PreStop.Exec.Command
	if len(preStop) != 2 || preStop[0] != "sleep" {
		t.Fatalf("worker: want a preStop sleep, have %v", preStop)
	}
	sleep, err := time.ParseDuration(preStop[1] + "s")
	if err != nil {
		t.Fatalf("worker preStop sleep %q: %v", preStop[1], err)
	}
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	if min := sleep + cfg.Worker.DrainTimeout + stopMargin; grace < min {
		t.Errorf("worker: want terminationGracePeriodSeconds ≥ preStop %s + drain_timeout %s + %s, have %s", sleep, cfg.Worker.DrainTimeout, stopMargin, grace)
	}
	if !slices.Equal(c.Args, []string{"worker", "--config", "/etc/drover/drover.hcl"}) || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/drover" {
		t.Errorf("worker: want drover.hcl mounted at /etc/drover and passed with --config, have args %v mounts %+v", c.Args, c.VolumeMounts)
	}

	s, ok := objs["Deployment/drover-scheduler"]
	if !ok {
		t.Fatalf("want Deployment/drover-scheduler, have %v", keys(objs))
	}
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 2 {
		t.Errorf("scheduler: want 2 replicas (one leads, one waits), have %v", s.Spec.Replicas)
	}
	if args := s.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, []string{"scheduler", "--config", "/etc/drover/drover.hcl", "--admin-addr", "0.0.0.0:9090"}) {
		t.Errorf("scheduler: want args scheduler --config /etc/drover/drover.hcl --admin-addr 0.0.0.0:9090 (its probes and scrapes use port 9090), have %v", args)
	}
}

func keys(m map[string]k8sObject) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
