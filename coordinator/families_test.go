package coordinator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
)

// Families in real ZooKeeper: create, a refused duplicate (name or prefix),
// an update at the version read and a stale one, the watch, delete.
func TestFamiliesStoreAndWatch(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	watch := s.Families().Watch(ctx)
	if fs := <-watch; len(fs) != 0 {
		t.Fatalf("watch before any family: want none, have %+v", fs)
	}
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-", Queue: drover.QueueConfig{Concurrency: 2}}
	if err := s.Families().Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := s.Families().Create(ctx, f); !errors.Is(err, ErrFamilyExists) {
		t.Fatalf("create twice: want ErrFamilyExists, have %v", err)
	}
	if err := s.Families().Create(ctx, drover.FamilyConfig{Name: "other", Prefix: "cust-"}); !errors.Is(err, drover.ErrInvalidConfig) {
		t.Fatalf("create with a prefix taken: want ErrInvalidConfig, have %v", err)
	}
	waitFamilies(t, watch, func(fs drover.Families) bool { return len(fs) == 1 && fs[0].Queue.Concurrency == 2 })
	e, err := s.Families().Get(ctx, "cust")
	if err != nil {
		t.Fatal(err)
	}
	f.Queue.Concurrency = 5
	if _, err := s.Families().Update(ctx, f, e.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Families().Update(ctx, f, e.Version); !errors.Is(err, ErrConflict) {
		t.Fatalf("update at a stale version: want ErrConflict, have %v", err)
	}
	waitFamilies(t, watch, func(fs drover.Families) bool { return len(fs) == 1 && fs[0].Queue.Concurrency == 5 })
	qe, err := s.Queues().GetOrFamily(ctx, "cust-9")
	if err != nil || qe.Config.Family != "cust" || qe.Config.Concurrency != 5 {
		t.Fatalf("QueueOrFamily of a queue under the family: want its config, have %+v, %v", qe.Config, err)
	}
	if _, err := s.Queues().GetOrFamily(ctx, "dev-1"); !errors.Is(err, drover.ErrQueueNotFound) {
		t.Fatalf("QueueOrFamily of a queue under no family: want ErrQueueNotFound, have %v", err)
	}
	if err := s.Families().Delete(ctx, "cust"); err != nil {
		t.Fatal(err)
	}
	if err := s.Families().Delete(ctx, "cust"); !errors.Is(err, drover.ErrFamilyNotFound) || !errors.Is(err, drover.ErrNotFound) {
		t.Fatalf("delete twice: want ErrFamilyNotFound (a not-found), have %v", err)
	}
	waitFamilies(t, watch, func(fs drover.Families) bool { return len(fs) == 0 })
}

func waitFamilies(t *testing.T, watch <-chan drover.Families, ok func(drover.Families) bool) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case fs := <-watch:
			if ok(fs) {
				return
			}
		case <-timeout:
			t.Fatal("gave up waiting for the family watch")
		}
	}
}

// Registry.Has finds queues through the bucket index, in a watched
// snapshot, and RetireQueue removes only a queue of the family named.
func TestRegistryHasAndRetireQueue(t *testing.T) {
	t.Parallel()
	server := testenv.ZooKeeper(t)
	s := connect(t, server.Addrs, testenv.Chroot(t))
	ctx := ctxT(t)
	f := drover.FamilyConfig{Name: "cust", Prefix: "cust-"}
	var cfgs []drover.QueueConfig
	for _, q := range []string{"cust-1", "cust-2", "cust-3"} {
		cfgs = append(cfgs, f.QueueFor(q))
	}
	cfgs = append(cfgs, drover.QueueConfig{Name: "cust-own"})
	if _, err := s.Queues().CreateMany(ctx, cfgs); err != nil {
		t.Fatal(err)
	}
	reg := <-s.Queues().WatchRegistry(ctx)
	for _, q := range []string{"cust-1", "cust-2", "cust-3", "cust-own"} {
		if !reg.Has(q) {
			t.Errorf("Has(%s): want true, have false", q)
		}
	}
	if reg.Has("cust-4") || reg.Has("cust-") {
		t.Error("Has of a queue not registered: want false, have true")
	}
	for _, c := range []struct {
		queue, family string
		want          bool
	}{{"cust-own", "cust", false}, {"cust-1", "other", false}, {"cust-1", "cust", true}, {"cust-1", "cust", false}} {
		done, err := s.Queues().Retire(ctx, c.queue, c.family, func(context.Context) (bool, error) { return true, nil })
		if err != nil || done != c.want {
			t.Errorf("RetireQueue(%s, %s): want %v, have %v, %v", c.queue, c.family, c.want, done, err)
		}
	}
	if _, err := s.Queues().Get(ctx, "cust-own"); err != nil {
		t.Fatalf("cust-own, configured on its own: want it kept, have %v", err)
	}
}
