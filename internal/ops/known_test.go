package ops

import (
	"context"
	"errors"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// fakeRegistry is Redis's registry of queues enqueued to, counting its
// questions.
type fakeRegistry struct {
	listed map[string]bool
	err    error
	asked  int
}

func (f *fakeRegistry) QueueKnown(_ context.Context, q string) (bool, error) {
	f.asked++
	return f.listed[q], f.err
}

// fakeConfigs is ZooKeeper's configurations, counting its questions.
type fakeConfigs struct {
	entries map[string]coordinator.QueueEntry // Err set: corrupt
	err     error
	asked   int
}

func (f *fakeConfigs) GetOrFamily(_ context.Context, q string) (coordinator.QueueEntry, error) {
	f.asked++
	if f.err != nil {
		return coordinator.QueueEntry{}, f.err
	}
	e, ok := f.entries[q]
	if !ok {
		return coordinator.QueueEntry{}, drover.ErrQueueNotFound
	}
	return e, e.Err
}

// KnownQueue's rule, every branch: Redis first (ZooKeeper not asked for a
// queue Redis lists), then the configuration, its own, its family's or a
// corrupt one; a failure of Redis does not hide a configured queue.
func TestKnownQueueRule(t *testing.T) {
	redisDown := errors.New("redis: connection refused")
	zkDown := errors.New("zk: connection closed")
	configs := map[string]coordinator.QueueEntry{
		"conf":    {Name: "conf", Version: 0},
		"fam-1":   {Name: "fam-1", Version: -1}, // a family's key, not registered yet
		"corrupt": {Name: "corrupt", Err: errors.New("decode queue config: bad json")},
	}
	for _, c := range []struct {
		name      string
		queue     string
		listed    bool
		redisErr  error
		zkErr     error
		want      error // nil: known
		wantZKAsk int
	}{
		{"listed in Redis", "used", true, nil, nil, nil, 0},
		{"configured", "conf", false, nil, nil, nil, 1},
		{"a family's key before its first enqueue", "fam-1", false, nil, nil, nil, 1},
		{"a corrupt configuration is still a queue", "corrupt", false, nil, nil, nil, 1},
		{"neither", "nosuch", false, nil, nil, drover.ErrQueueNotFound, 1},
		{"Redis down, configured", "conf", false, redisDown, nil, nil, 1},
		{"Redis down, not configured", "nosuch", false, redisDown, nil, redisDown, 1},
		{"ZooKeeper down, listed in Redis", "used", true, nil, zkDown, nil, 0},
		{"ZooKeeper down, not listed", "nosuch", false, nil, zkDown, zkDown, 1},
		{"invalid name", "a b/c", false, nil, nil, ErrBadInput, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := &fakeRegistry{listed: map[string]bool{c.queue: c.listed}, err: c.redisErr}
			confs := &fakeConfigs{entries: configs, err: c.zkErr}
			err := KnownQueue(context.Background(), reg, confs, c.queue)
			switch {
			case c.want == nil && err != nil:
				t.Errorf("want known, have %v", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("want %v, have %v", c.want, err)
			}
			if confs.asked != c.wantZKAsk {
				t.Errorf("ZooKeeper asked: want %d times, have %d", c.wantZKAsk, confs.asked)
			}
			wantRedisAsk := 1 // one SISMEMBER, whatever the number of queues
			if c.want == ErrBadInput {
				wantRedisAsk = 0
			}
			if reg.asked != wantRedisAsk {
				t.Errorf("Redis asked: want %d times, have %d", wantRedisAsk, reg.asked)
			}
		})
	}
}

// ProducerAdmission is KnownQueue's ZooKeeper half as an admission: a
// family's key not registered yet under its family's bound (the default
// when none is given), a configured (or corrupt) queue registered,
// anything else KnownQueue's error.
func TestProducerAdmission(t *testing.T) {
	zkDown := errors.New("zk: connection closed")
	configs := map[string]coordinator.QueueEntry{
		"conf":    {Name: "conf", Version: 0},
		"fam-1":   {Name: "fam-1", Version: -1, Config: drover.QueueConfig{Name: "fam-1", Family: "fam"}, MaxQueues: 7},
		"fam-2":   {Name: "fam-2", Version: -1, Config: drover.QueueConfig{Name: "fam-2", Family: "fam"}},
		"fam-3":   {Name: "fam-3", Version: 4, Config: drover.QueueConfig{Name: "fam-3", Family: "fam"}}, // registered by the family already
		"corrupt": {Name: "corrupt", Err: errors.New("decode queue config: bad json")},
	}
	for _, c := range []struct {
		queue   string
		zkErr   error
		want    queue.Admission
		wantErr error
	}{
		{"conf", nil, queue.Admission{Register: true}, nil},
		{"fam-1", nil, queue.Admission{Family: "fam", MaxQueues: 7}, nil},
		{"fam-2", nil, queue.Admission{Family: "fam", MaxQueues: drover.DefaultFamilyMaxQueues}, nil},
		{"fam-3", nil, queue.Admission{Register: true}, nil},
		{"corrupt", nil, queue.Admission{Register: true}, nil},
		{"nosuch", nil, queue.Admission{}, drover.ErrQueueNotFound},
		{"conf", zkDown, queue.Admission{}, zkDown},
		{"a b", nil, queue.Admission{}, ErrBadInput},
	} {
		adm, err := ProducerAdmission(context.Background(), &fakeConfigs{entries: configs, err: c.zkErr}, c.queue)
		if c.wantErr != nil && !errors.Is(err, c.wantErr) || c.wantErr == nil && err != nil {
			t.Errorf("%s (ZooKeeper error %v): want error %v, have %v", c.queue, c.zkErr, c.wantErr, err)
		}
		if adm != c.want {
			t.Errorf("%s: want admission %+v, have %+v", c.queue, c.want, adm)
		}
	}
}
