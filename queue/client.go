package queue

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/drover-dev/drover"
	"github.com/redis/go-redis/v9"
)

// ClientOptions says how to reach Redis. The zero value of every field but
// Addrs means the documented default.
type ClientOptions struct {
	// Addrs are "host:port" addresses: the server (standalone), seed nodes
	// (Cluster), or the Sentinels (when MasterName is set). Required.
	Addrs []string
	// Cluster selects Redis Cluster. Implied by more than one address
	// without MasterName.
	Cluster bool
	// MasterName selects Sentinel: the name of the monitored master.
	MasterName string
	// Username and Password authenticate to Redis (AUTH; Username needs
	// Redis 6 ACLs). Empty: no AUTH.
	Username, Password string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels
	// themselves. Empty: no AUTH to the Sentinels.
	SentinelUsername, SentinelPassword string
	// DB is the database number (standalone and Sentinel; Cluster has only 0).
	DB int
	// TLS enables TLS with this configuration. Nil: plain TCP.
	TLS *tls.Config
	// DialTimeout bounds connecting; default 5s.
	DialTimeout time.Duration
	// ReadTimeout and WriteTimeout bound one command's socket I/O; default
	// 3s. A context deadline, when shorter, applies as well.
	ReadTimeout, WriteTimeout time.Duration
	// PoolSize is the connections per node; default 10 per CPU.
	PoolSize int
	// ClientName is sent with CLIENT SETNAME, for CLIENT LIST; default none.
	ClientName string
}

// NewClient validates o and returns a Redis client for the standalone,
// Sentinel or Cluster deployment it describes. It does not connect: the
// first command does, and the client reconnects by itself after a failure.
// The caller closes it.
//
// The client never sends a command again by itself (MaxRetries -1): go-redis
// would resend a script after a read timeout, when its first run may have
// written. An enqueue resent that way is written twice (a generated id) or
// answered "duplicate" although the caller sent it once (a caller's id saw
// its own first write). Every failed command is returned to the caller,
// which retries with the same ids where a retry is safe (docs/http-api.md).
func NewClient(o ClientOptions) (redis.UniversalClient, error) {
	if len(o.Addrs) == 0 {
		return nil, fmt.Errorf("%w: redis addresses are required", drover.ErrInvalidConfig)
	}
	for i, a := range o.Addrs {
		if a == "" {
			return nil, fmt.Errorf("%w: redis address %d is empty", drover.ErrInvalidConfig, i)
		}
	}
	if o.Cluster && o.MasterName != "" {
		return nil, fmt.Errorf("%w: redis Cluster and Sentinel (master name %q) are exclusive", drover.ErrInvalidConfig, o.MasterName)
	}
	if o.DB < 0 {
		return nil, fmt.Errorf("%w: redis DB %d is negative", drover.ErrInvalidConfig, o.DB)
	}
	if o.Cluster && o.DB != 0 {
		return nil, fmt.Errorf("%w: redis Cluster has only DB 0, have %d", drover.ErrInvalidConfig, o.DB)
	}
	if o.DialTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.PoolSize < 0 {
		return nil, fmt.Errorf("%w: redis timeouts and pool size must not be negative", drover.ErrInvalidConfig)
	}
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 o.Addrs,
		IsClusterMode:         o.Cluster,
		MasterName:            o.MasterName,
		Username:              o.Username,
		Password:              o.Password,
		SentinelUsername:      o.SentinelUsername,
		SentinelPassword:      o.SentinelPassword,
		DB:                    o.DB,
		TLSConfig:             o.TLS,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		PoolSize:              o.PoolSize,
		MaxRetries:            -1, // no resend of a write whose outcome is unknown
		ClientName:            o.ClientName,
		ContextTimeoutEnabled: true,
	}), nil
}
