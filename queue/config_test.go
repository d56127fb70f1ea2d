package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

func TestNewValidatesConfig(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	for name, cfg := range map[string]Config{
		"no client":       {},
		"brace prefix":    {Client: rdb, Prefix: "a{b"},
		"space prefix":    {Client: rdb, Prefix: "a b"},
		"negative window": {Client: rdb, DedupeWindow: -time.Second},
		"negative batch":  {Client: rdb, MaxCoalesce: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, drover.ErrInvalidConfig) {
			t.Errorf("%s: want ErrInvalidConfig, have %v", name, err)
		}
	}
	s, err := New(Config{Client: rdb})
	if err != nil {
		t.Fatalf("New with defaults: %v", err)
	}
	if s.Prefix() != "drover" || s.dedupeWindow != DefaultDedupeWindow || s.batcher.max != DefaultMaxCoalesce || s.Listener().WakeupChannel("m") != "drover:wake-b:m" {
		t.Fatalf("defaults: have prefix %q, window %s, max %d, channel %q", s.Prefix(), s.dedupeWindow, s.batcher.max, s.Listener().WakeupChannel("m"))
	}
	if k := s.keys.queue("emails"); k.log != "drover:{emails}:log" || k.deadmsg != "drover:{emails}:deadmsg" || s.keys.queues() != "drover:queues" {
		t.Fatalf("key names: have %+v, %s", k, s.keys.queues())
	}
}

func TestNewClientPicksTheDeployment(t *testing.T) {
	for name, o := range map[string]ClientOptions{
		"no address":           {},
		"empty address":        {Addrs: []string{""}},
		"cluster and sentinel": {Addrs: []string{"a:1"}, Cluster: true, MasterName: "m"},
		"cluster db":           {Addrs: []string{"a:1"}, Cluster: true, DB: 2},
		"negative db":          {Addrs: []string{"a:1"}, DB: -1},
		"negative timeout":     {Addrs: []string{"a:1"}, ReadTimeout: -1},
	} {
		if _, err := NewClient(o); !errors.Is(err, drover.ErrInvalidConfig) {
			t.Errorf("%s: want ErrInvalidConfig, have %v", name, err)
		}
	}
	kinds := map[string]struct {
		o    ClientOptions
		want string
	}{
		"standalone": {ClientOptions{Addrs: []string{"a:1"}, DB: 3}, "*redis.Client"},
		"cluster":    {ClientOptions{Addrs: []string{"a:1"}, Cluster: true}, "*redis.ClusterClient"},
		"seeds":      {ClientOptions{Addrs: []string{"a:1", "b:1"}}, "*redis.ClusterClient"},
		"sentinel":   {ClientOptions{Addrs: []string{"a:1", "b:1"}, MasterName: "m"}, "*redis.Client"},
	}
	for name, k := range kinds {
		c, err := NewClient(k.o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var have string
		switch c.(type) {
		case *redis.Client:
			have = "*redis.Client"
		case *redis.ClusterClient:
			have = "*redis.ClusterClient"
		}
		_ = c.Close()
		if have != k.want {
			t.Errorf("%s: want %s, have %T", name, k.want, c)
		}
	}
}
