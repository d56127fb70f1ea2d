package jobs_test

import (
	"context"
	"fmt"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/jobs"
	"github.com/drover-dev/drover/queue"
)

// Where is my job? A producer with the fleet's Redis and ZooKeeper asks
// for one job's status by id.
func ExampleLookup_Job() {
	ctx := context.Background()
	rdb, _ := queue.NewClient(queue.ClientOptions{Addrs: []string{"127.0.0.1:6379"}})
	store, _ := queue.New(queue.Config{Client: rdb})
	sess, err := coordinator.Connect(ctx, coordinator.Config{Servers: []string{"127.0.0.1:2181"}})
	if err != nil {
		return
	}
	defer sess.Close()
	lookup := &jobs.Lookup{Store: store.Jobs(), Fleet: jobs.SessionFleet{Session: sess}}
	st, err := lookup.Job(ctx, "emails", "welcome-42")
	if err != nil {
		return
	}
	switch st.State {
	case "running":
		fmt.Println("running on", st.Member, "pid", st.PID, "since", st.StartedAt)
	case "dead":
		fmt.Println("failed:", st.Error, "exit", *st.ExitCode)
	default:
		fmt.Println(st.State, "as of", st.AsOf)
	}
}
