package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/scheduler/schedulertest"
)

// A Manager adds entries; a Scheduler, while it leads, fires them. Here the
// store is in memory and the clock is fixed; in production the store is
// (*queue.Store).Schedules() and the leadership the coordinator's election.
func Example() {
	ctx := context.Background()
	store := schedulertest.NewMemStore()
	m := scheduler.NewManager(store)
	err := m.Add(ctx, scheduler.Definition{
		Name: "nightly-report", Queue: "reports", Task: "build-report",
		Schedule: scheduler.Spec{Type: scheduler.TypeCron, Expr: "5 4 * * *", Timezone: "Europe/Berlin"},
	})
	fmt.Println("add:", err)

	enq := scheduler.EnqueuerFunc(func(ctx context.Context, msg *drover.Message) (bool, error) {
		fmt.Println("enqueue", msg.ID, "to", msg.Queue, "fire_at", msg.FireAt.Format(time.RFC3339))
		return false, nil
	})
	clock := newClock(time.Date(2030, 6, 3, 2, 5, 0, 0, time.UTC)) // 04:05 CEST
	s, _ := scheduler.New(scheduler.Config{Store: store, Enqueuer: enq, Leadership: scheduler.SoleLeader{}, Clock: clock})
	next, _ := s.Tick(ctx) // plans the first slot, which is due now, and fires it
	fmt.Println("next due:", next.Format(time.RFC3339))

	e, _ := m.Get(ctx, "nightly-report")
	fmt.Println(e.State, e.Meta.TotalRunCount)
	// Output:
	// add: <nil>
	// enqueue sched:nightly-report:1906682700 to reports fire_at 2030-06-03T02:05:00Z
	// next due: 2030-06-04T02:05:00Z
	// scheduled 1
}

// Validation errors name the field at fault.
func ExampleParseDefinition() {
	_, err := scheduler.ParseDefinition([]byte(`{"name":"x","queue":"q","task":"t",` +
		`"schedule":{"type":"cron","expr":"5 4 * * mon","timezone":"Mars/Base"}}`))
	fmt.Println(err)
	// Output: schedule.timezone: unknown time zone "Mars/Base"
}
