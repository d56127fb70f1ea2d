package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
	"github.com/drover-dev/drover/coordinator"
	"github.com/drover-dev/drover/queue"
)

// Coordinator returns the coordinator.Config for this configuration, with
// logger (nil: none) and, when zookeeper.tls.enabled, the TLS settings
// loaded from their files.
func (c *Config) Coordinator(logger hclog.Logger) (coordinator.Config, error) {
	tc, err := c.ZooKeeper.TLS.build("zookeeper.tls")
	if err != nil {
		return coordinator.Config{}, err
	}
	return coordinator.Config{
		Servers:        c.ZooKeeper.Servers,
		Cluster:        c.Cluster,
		Root:           c.ZooKeeper.Root,
		SessionTimeout: c.ZooKeeper.SessionTimeout,
		ConnectTimeout: c.ZooKeeper.ConnectTimeout,
		Auth:           c.ZooKeeper.Auth,
		TLS:            tc,
		Logger:         logger,
	}, nil
}

// RedisOptions returns the queue.ClientOptions for this configuration;
// clientName is sent with CLIENT SETNAME ("" for none).
func (c *Config) RedisOptions(clientName string) (queue.ClientOptions, error) {
	tc, err := c.Redis.TLS.build("redis.tls")
	if err != nil {
		return queue.ClientOptions{}, err
	}
	return queue.ClientOptions{
		Addrs:      c.Redis.Addrs,
		Cluster:    c.Redis.Cluster,
		MasterName: c.Redis.MasterName,
		Username:   c.Redis.Username,
		Password:   c.Redis.Password,
		DB:         c.Redis.DB,
		TLS:        tc,
		ClientName: clientName,
	}, nil
}

// maxDurableTimeout is the longest redis.durable.timeout: the Redis
// client's read timeout (5s, go-redis's default, which NewClient keeps)
// less the margin queue.Config.Durable requires.
const maxDurableTimeout = 4500 * time.Millisecond

// QueueDurable returns the queue.Durable of block redis.durable: the zero
// value (off) unless the mode is "on", or "auto" with Sentinel.
func (c *Config) QueueDurable() queue.Durable {
	d := c.Redis.Durable
	on := d.Mode == "on" || (d.Mode == "auto" && c.Redis.MasterName != "" && !c.Redis.Cluster)
	if !on {
		return queue.Durable{}
	}
	return queue.Durable{Replicas: d.Replicas, Timeout: d.Timeout, AOF: d.AOF}
}

// Logger returns an hclog.Logger named name writing to w at log.level, as
// JSON when log.json.
func (c *Config) Logger(name string, w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(c.Log.Level),
		Output:     w,
		JSONFormat: c.Log.JSON,
	})
}

// build returns the tls.Config for t, or nil when TLS is off. The error
// names the key of the file that could not be used.
func (t TLS) build(prefix string) (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	tc := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.ca_file: %v", drover.ErrInvalidConfig, prefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s.ca_file: no PEM certificate in %s", drover.ErrInvalidConfig, prefix, t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.cert_file: %v", drover.ErrInvalidConfig, prefix, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
