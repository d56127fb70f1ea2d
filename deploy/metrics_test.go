package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v2"

	"github.com/drover-dev/drover/metrics"
)

// promtoolHint is how to get promtool on Debian (make deps does it).
const promtoolHint = "promtool not found on PATH: install it with `apt-get install -y --no-install-recommends prometheus` (Debian's package ships /usr/bin/promtool), or run `make deps`"

func promtool(t *testing.T, args ...string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal(promtoolHint)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool %s: want SUCCESS, have:\n%s", strings.Join(args, " "), out)
	}
}

func TestAlertRulesPassPromtool(t *testing.T) {
	promtool(t, "check", "rules", "alerts.yml")
	// alerts_test.yml: every alert fires on the series that should trigger
	// it, with its annotations, and stays quiet on healthy ones.
	promtool(t, "test", "rules", "alerts_test.yml")
	promtool(t, "check", "config", "prometheus.yml")
}

// alertRules is the part of a Prometheus rule file the tests read.
type alertRules struct {
	Groups []struct {
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readAlerts(t *testing.T) alertRules {
	t.Helper()
	var r alertRules
	readYAML(t, "prometheus/alerts.yml", &r)
	if len(r.Groups) == 0 || len(r.Groups[0].Rules) == 0 {
		t.Fatal("prometheus/alerts.yml: want rules, have none")
	}
	return r
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

// dashboardExprs returns every PromQL string of the dashboard: panel target
// expressions and template variable queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("grafana/dashboards/drover.json")
	if err != nil {
		t.Fatalf("read dashboard: %v", err)
	}
	var dash struct {
		Panels []struct {
			Title      string `json:"title"`
			Type       string `json:"type"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("parse dashboard: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q: want queries, have none", p.Title)
		}
		if p.Datasource.UID != "prometheus" {
			t.Errorf("dashboard panel %q: want the provisioned datasource uid prometheus, have %q", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	return exprs
}

var metricName = regexp.MustCompile(`\bdrover_[a-z0-9_]+`)

// TestDashboardAndAlertsUseOnlyDocumentedEmittedMetrics extracts every
// drover_* name the dashboard and the alert rules query and checks that the
// code exports it (the catalog of metrics/names.go under the Prometheus
// sink's naming) and that docs/metrics.md documents it.
func TestDashboardAndAlertsUseOnlyDocumentedEmittedMetrics(t *testing.T) {
	emitted := map[string]string{} // series name → family documented
	for _, d := range metrics.Catalog() {
		for _, s := range metrics.PrometheusSeries(d) {
			emitted[s] = metrics.PrometheusName(d.Name)
		}
	}
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatalf("read docs/metrics.md: %v", err)
	}
	sources := map[string][]string{"grafana/dashboards/drover.json": dashboardExprs(t)}
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			sources["prometheus/alerts.yml"] = append(sources["prometheus/alerts.yml"], r.Expr)
		}
	}
	for file, exprs := range sources {
		var used []string
		for _, e := range exprs {
			used = append(used, metricName.FindAllString(e, -1)...)
		}
		slices.Sort(used)
		used = slices.Compact(used)
		if len(used) < 5 {
			t.Errorf("%s: want the drover metrics it queries, found only %v", file, used)
		}
		for _, name := range used {
			family, ok := emitted[name]
			if !ok {
				t.Errorf("%s queries %s, which the code does not export", file, name)
				continue
			}
			if !strings.Contains(string(doc), "`"+family+"`") {
				t.Errorf("%s queries %s; docs/metrics.md does not document %s", file, name, family)
			}
		}
	}
}

// TestEveryAlertHasARunbookInOperations checks each alert's runbook_url
// points at a heading of docs/operations.md.
func TestEveryAlertHasARunbookInOperations(t *testing.T) {
	ops, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatalf("read docs/operations.md: %v", err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(ops), "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "# "))] = true
		}
	}
	const base = "https://github.com/drover-dev/drover/blob/main/docs/operations.md#"
	n := 0
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			n++
			url := r.Annotations["runbook_url"]
			if !strings.HasPrefix(url, base) {
				t.Errorf("alert %s: want runbook_url %s<section>, have %q", r.Alert, base, url)
				continue
			}
			anchor := strings.TrimPrefix(url, base)
			if anchor != strings.ToLower(r.Alert) || !anchors[anchor] {
				t.Errorf("alert %s: want a heading %q in docs/operations.md and the runbook_url pointing at it, have %q", r.Alert, r.Alert, url)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want summary and description annotations", r.Alert)
			}
		}
	}
	if n < 5 {
		t.Fatalf("want at least the 5 alerts of DESIGN.md §8, have %d", n)
	}
}

// githubAnchor is the id GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// queueLabel matches a PromQL use of the queue label: a matcher, a
// grouping or a template reference.
var queueLabel = regexp.MustCompile(`\bqueue\s*(=~|!~|!=|=)|by \([^)]*\bqueue\b|\{\{\s*\$?labels\.queue`)

// TestDashboardAndAlertsUseTheQueueLabelOnlyOnDetailGauges holds the
// dashboard and the alerts to the metrics budget (docs/metrics.md): the
// counters and histograms carry a group, not a queue, and only the
// per-queue backlog gauges of the detail queues have a queue label.
func TestDashboardAndAlertsUseTheQueueLabelOnlyOnDetailGauges(t *testing.T) {
	hasQueue := map[string]bool{} // series name → carries a queue label
	for _, d := range metrics.Catalog() {
		for _, s := range metrics.PrometheusSeries(d) {
			hasQueue[s] = slices.Contains(d.Labels, "queue")
		}
	}
	exprs := dashboardExprs(t)
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr, r.Annotations["summary"]+r.Annotations["description"])
		}
	}
	for _, e := range exprs {
		if !queueLabel.MatchString(e) {
			continue
		}
		for _, name := range metricName.FindAllString(e, -1) {
			if !hasQueue[name] {
				t.Errorf("%q uses the queue label with %s, which has none (it has a group): use group", e, name)
			}
		}
	}
}
