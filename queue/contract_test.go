package queue

import (
	"context"
	"testing"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// One contract suite, run against every kind of Redis deployment the package
// supports (litestream's replica_client_test.go style): each case gets a
// fresh key prefix, so the cases share the servers but not their data.

// testBackend is a kind of Redis deployment.
type testBackend struct {
	name   string
	client func(t *testing.T) redis.UniversalClient
}

var testBackends = []testBackend{
	{"standalone", func(t *testing.T) redis.UniversalClient {
		return testClient(t, ClientOptions{Addrs: []string{testenv.Redis(t).Addr}})
	}},
	{"cluster", func(t *testing.T) redis.UniversalClient {
		return testClient(t, ClientOptions{Addrs: testenv.RedisCluster(t).Addrs, Cluster: true})
	}},
}

// testClient builds a client with NewClient, closed when the test ends.
func testClient(t *testing.T, o ClientOptions) redis.UniversalClient {
	t.Helper()
	rdb, err := NewClient(o)
	if err != nil {
		t.Fatalf("NewClient(%+v): %v", o, err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping %v: %v", o.Addrs, err)
	}
	return rdb
}

// contractCase is one case of the suite.
type contractCase struct {
	name string
	run  func(t *testing.T, rdb redis.UniversalClient)
}

// contractCases lists every case; the files that define them add to it.
var contractCases []contractCase

func addContractCases(cs ...contractCase) bool {
	contractCases = append(contractCases, cs...)
	return true
}

// TestStoreContract runs every contract case against every backend.
func TestStoreContract(t *testing.T) {
	for _, b := range testBackends {
		t.Run(b.name, func(t *testing.T) {
			rdb := b.client(t)
			for _, c := range contractCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, rdb) })
			}
		})
	}
}

// newTestStore returns a Store on rdb under a prefix unique to the test.
// edit, if not nil, adjusts the Config first.
func newTestStore(t *testing.T, rdb redis.UniversalClient, edit func(*Config)) *Store {
	t.Helper()
	cfg := Config{Client: rdb, Prefix: testenv.Prefix(t)}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// msg returns a message for queue q with task "t" and the given id ("" for a
// generated one).
func msg(q, id string) *drover.Message {
	return &drover.Message{Queue: q, ID: id, Task: "t", Args: []byte(`{"n":1}`)}
}

// mustEnqueue enqueues m and fails the test on error.
func mustEnqueue(t *testing.T, s *Store, m *drover.Message) EnqueueResult {
	t.Helper()
	r, err := s.Producer().Enqueue(context.Background(), m)
	if err != nil {
		t.Fatalf("Enqueue(%s/%s): %v", m.Queue, m.ID, err)
	}
	return r
}

// readAll reads queue after offset in batches of n until nothing is left.
func readAll(t *testing.T, s *Store, queue string, offset drover.Position, n int) []Entry {
	t.Helper()
	var all []Entry
	for {
		es, err := s.Log().ReadAfter(context.Background(), queue, offset, n)
		if err != nil {
			t.Fatalf("ReadAfter(%s, %d, %d): %v", queue, offset, n, err)
		}
		if len(es) == 0 {
			return all
		}
		all = append(all, es...)
		offset = es[len(es)-1].Position
	}
}

// mustDecode decodes e and fails the test on error.
func mustDecode(t *testing.T, e Entry) *drover.Message {
	t.Helper()
	m, err := e.Decode()
	if err != nil {
		t.Fatalf("Decode(%s at %d): %v", e.ID, e.Position, err)
	}
	return m
}
