package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
)

// DefaultRedisGiveUpAfter is RedisHealthConfig.GiveUpAfter's documented
// default. With the leader's grace (three ping intervals, 3.6 s) and a ping
// interval of slack, a member cut off from Redis loses its queues about 11 s
// after the cut: about one default session timeout (10 s), as soon as one
// cut off from ZooKeeper would.
const DefaultRedisGiveUpAfter = 6 * time.Second

// RedisHealthConfig configures a RedisHealth.
type RedisHealthConfig struct {
	// Ping is one round trip to Redis (queue.Store.Ping). Required.
	Ping func(ctx context.Context) error
	// GiveUpAfter is how long Redis may go unanswered before the member
	// gives its queues up. Default DefaultRedisGiveUpAfter.
	GiveUpAfter time.Duration
	// Interval is the time between pings, and each ping's timeout.
	// Default GiveUpAfter/5, at least 100ms.
	Interval time.Duration
	// Clock paces the pings and measures the silence. Default the wall
	// clock.
	Clock  drover.TimerClock
	Logger hclog.Logger
}

// RedisHealth is a member's view of its own Redis: one goroutine (Run)
// sends one PING per interval, and Redis is unreachable once no ping has
// been answered for GiveUpAfter. The member publishes the verdict in its
// member node (drover.Member.RedisUnreachable), and the rebalance leader
// gives an unreachable member no queues while another member can reach
// Redis (docs/decisions.md "Issue 29: a member cut off from Redis").
type RedisHealth struct {
	cfg RedisHealthConfig

	mu          sync.Mutex
	lastAnswer  time.Time // when Redis last answered (or Run began)
	lastErr     error
	failures    int    // consecutive failed pings
	answers     uint64 // pings answered
	unreachable bool
	changed     chan struct{} // closed, then replaced, at each transition
}

// NewRedisHealth validates cfg.
func NewRedisHealth(cfg RedisHealthConfig) (*RedisHealth, error) {
	if cfg.Ping == nil {
		return nil, fmt.Errorf("redis health: %w: Ping is required", drover.ErrInvalidConfig)
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = DefaultRedisGiveUpAfter
	}
	if cfg.Interval <= 0 {
		cfg.Interval = max(cfg.GiveUpAfter/5, 100*time.Millisecond)
	}
	if cfg.Clock == nil {
		cfg.Clock = drover.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &RedisHealth{cfg: cfg, changed: make(chan struct{})}, nil
}

// Run pings Redis once per interval until ctx ends. Redis counts as
// answering when Run starts.
func (h *RedisHealth) Run(ctx context.Context) {
	h.mu.Lock()
	h.lastAnswer = h.cfg.Clock.Now()
	h.mu.Unlock()
	t := h.cfg.Clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		pctx, cancel := context.WithTimeout(ctx, h.cfg.Interval)
		err := h.cfg.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.observe(h.cfg.Clock.Now(), err)
		t.Reset(h.cfg.Interval)
	}
}

// observe records one ping's outcome at now and logs a transition. It
// takes two failed pings in a row as well as GiveUpAfter of silence: a
// process resumed from a freeze (SIGSTOP, a stalled machine) finds the
// ping it had in flight timed out and the silence long, but its Redis
// answers the next one.
func (h *RedisHealth) observe(now time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.lastAnswer, h.lastErr, h.failures = now, nil, 0
		h.answers++
		if h.unreachable {
			h.unreachable = false
			h.cfg.Logger.Info("Redis answers again; this member takes work again")
			h.notifyLocked()
		}
		return
	}
	h.lastErr = err
	h.failures++
	if silent := now.Sub(h.lastAnswer); !h.unreachable && h.failures >= 2 && silent >= h.cfg.GiveUpAfter {
		h.unreachable = true
		h.cfg.Logger.Warn("Redis has not answered; giving this member's queues up to the members that reach it",
			"silent_for", silent, "redis_giveup_after", h.cfg.GiveUpAfter, "error", err)
		h.notifyLocked()
	}
}

func (h *RedisHealth) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// State returns whether Redis is unreachable now, and a channel closed at
// the next change.
func (h *RedisHealth) State() (unreachable bool, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unreachable, h.changed
}

// Unreachable reports whether Redis is unreachable now. A nil RedisHealth
// never is.
func (h *RedisHealth) Unreachable() bool {
	if h == nil {
		return false
	}
	bad, _ := h.State()
	return bad
}

// Answers counts the pings Redis has answered: the rebalance leader's
// evidence that Redis is up before it cuts a member off
// (RebalancerConfig.OwnRedis).
func (h *RedisHealth) Answers() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.answers
}

// Quiet reports whether Redis has answered no ping for more than two
// intervals, or is unreachable: silent, though perhaps not for GiveUpAfter
// yet. The rebalance leader moves nothing meanwhile (OwnRedis.Quiet). Not
// quiet before Run starts.
func (h *RedisHealth) Quiet() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unreachable {
		return true
	}
	return !h.lastAnswer.IsZero() && h.cfg.Clock.Now().Sub(h.lastAnswer) > 2*h.cfg.Interval
}

// Ready is a /readyz check: an error naming the give-up while Redis is
// unreachable. A nil RedisHealth is always ready.
func (h *RedisHealth) Ready() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.unreachable {
		return nil
	}
	return fmt.Errorf("Redis has not answered since %s (redis_giveup_after %s): this member's queues are given up to the others: %v",
		h.lastAnswer.UTC().Format(time.RFC3339), h.cfg.GiveUpAfter, h.lastErr)
}

// Grace is the RebalancerConfig.RedisGrace that matches this prober: three
// ping intervals. Members' last answers before an outage lie within one
// interval, and each notices at its first ping past GiveUpAfter, so they
// notice within two intervals of each other; the third absorbs scheduling
// and the watch's delivery. A nil RedisHealth returns 0 (the default).
func (h *RedisHealth) Grace() time.Duration {
	if h == nil {
		return 0
	}
	return 3 * h.cfg.Interval
}

// publishRedisHealth keeps the member node's RedisUnreachable equal to
// health's verdict until ctx ends. info is the data the node was joined
// with.
func publishRedisHealth(ctx context.Context, health *RedisHealth, mb Membership, info drover.Member, log hclog.Logger) {
	if health == nil {
		return
	}
	for {
		bad, changed := health.State()
		for bad != info.RedisUnreachable {
			next := info
			next.RedisUnreachable = bad
			err := mb.Update(ctx, next)
			if err == nil {
				info = next
				break
			}
			if ctx.Err() != nil {
				return
			}
			log.Warn("cannot publish this member's Redis health; retrying", "redis_unreachable", bad, "error", err)
			if !pause(ctx, never{}, time.Second) {
				return
			}
			bad, changed = health.State()
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
