package config

import (
	"testing"
	"time"
)

// The metrics budget's settings (docs/metrics.md, "The budget") parse from
// the file, nested detail block included.
func TestMetricsBudgetSettings(t *testing.T) {
	path := writeFile(t, "drover.hcl", `
metrics {
  groups     = ["tenant-*", "device-*"]
  max_groups = 20
  detail {
    top_oldest       = 5
    top_lagging      = 6
    oldest_age_above = "2m"
    lag_above        = 500
    max              = 40
  }
}
`)
	c, err := Load(path, nil, nil, "host")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	m := c.Metrics
	want := MetricsDetail{TopOldest: 5, TopLagging: 6, OldestAgeAbove: 2 * time.Minute, LagAbove: 500, Max: 40}
	if len(m.Groups) != 2 || m.Groups[1] != "device-*" || m.MaxGroups != 20 || m.Detail != want {
		t.Fatalf("want groups [tenant-* device-*], max 20, detail %+v; have %v, %d, %+v", want, m.Groups, m.MaxGroups, m.Detail)
	}
}
