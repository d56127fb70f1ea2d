package metrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/drover-dev/drover/metrics"
)

// A process sets up one Registry, hands it to every component as a Recorder
// (worker.Config.Metrics, scheduler.Config.Metrics, fleet.MemberConfig.Metrics)
// and its Handler to the admin server's /metrics.
func ExampleSetup() {
	r, err := metrics.Setup(metrics.SetupConfig{Prometheus: true})
	if err != nil {
		panic(err)
	}
	defer r.Close()

	var rec metrics.Recorder = r
	q := metrics.L("queue", "emails")
	rec.IncrCounter(metrics.TasksTotal, 1, q, metrics.L("task", "send"), metrics.L("outcome", "success"))
	rec.SetGauge(metrics.Lag, 20, q)

	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "drover_tasks_total{") || strings.HasPrefix(line, "drover_lag{") {
			fmt.Println(line)
		}
	}
	// Output:
	// drover_lag{queue="emails"} 20
	// drover_tasks_total{group="emails",outcome="success",task="send"} 1
}
