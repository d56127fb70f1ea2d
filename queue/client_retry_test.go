package queue

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestNewClientNeverResendsACommand: go-redis resends a command after a
// read timeout unless MaxRetries is negative, and a resent enqueue script
// may write a job twice or answer a first-time id "duplicate" (it sees its
// own first write). Every client Drover makes is built with no resend.
func TestNewClientNeverResendsACommand(t *testing.T) {
	for _, o := range []ClientOptions{
		{Addrs: []string{"127.0.0.1:1"}},
		{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}},   // Cluster
		{Addrs: []string{"127.0.0.1:1"}, MasterName: "m"}, // Sentinel
	} {
		c, err := NewClient(o)
		if err != nil {
			t.Fatal(err)
		}
		var retries int
		switch c := c.(type) {
		case *redis.Client:
			retries = c.Options().MaxRetries
		case *redis.ClusterClient:
			retries = c.Options().MaxRetries
		default:
			t.Fatalf("%+v: unexpected client type %T", o, c)
		}
		c.Close()
		// go-redis turns -1 into 0 and an unset 0 into its default of 3.
		if retries > 0 {
			t.Errorf("%+v: want no resend (MaxRetries -1, stored as 0 or -1), have %d", o, retries)
		}
	}
}
