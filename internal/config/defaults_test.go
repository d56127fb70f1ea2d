package config

import (
	"testing"

	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/fleet"
	"github.com/drover-dev/drover/queue"
	"github.com/drover-dev/drover/rebalance"
	"github.com/drover-dev/drover/scheduler"
	"github.com/drover-dev/drover/worker"
)

// An unset setting must behave as the component it configures behaves with
// its own zero value: the binary's defaults are the components' defaults.
func TestDefaultsAreTheComponentsDefaults(t *testing.T) {
	c := Default("host")
	cc, err := c.Coordinator(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		setting    string
		have, want any
	}{
		{"cluster", cc.Cluster, coordinator.DefaultCluster},
		{"zookeeper.session_timeout", cc.SessionTimeout, coordinator.DefaultSessionTimeout},
		{"redis.prefix", c.Redis.Prefix, queue.DefaultPrefix},
		{"worker.capacity", c.Worker.Capacity, worker.DefaultCapacity},
		{"worker.batch_size", c.Worker.BatchSize, worker.DefaultBatchSize},
		{"worker.drain_timeout", c.Worker.DrainTimeout, worker.DefaultDrainTimeout},
		{"worker.strategy", c.Worker.Strategy, rebalance.DefaultName},
		{"worker.settle", c.Worker.Settle, fleet.DefaultSettle},
		{"worker.balance_every", c.Worker.BalanceEvery, fleet.DefaultBalanceEvery},
		{"worker.redis_giveup_after", c.Worker.RedisGiveUpAfter, fleet.DefaultRedisGiveUpAfter},
		{"scheduler.poll_interval", c.Scheduler.PollInterval, scheduler.DefaultPollInterval},
		{"scheduler.misfire_grace", c.Scheduler.MisfireGrace, scheduler.DefaultMisfireGrace},
		{"scheduler.catchup_limit", c.Scheduler.CatchupLimit, scheduler.DefaultCatchupLimit},
	} {
		if tc.have != tc.want {
			t.Errorf("%s: want the component's default %v, have %v", tc.setting, tc.want, tc.have)
		}
	}
}
