package localserver

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Redis is a private Redis server.
type Redis struct {
	Addr string // 127.0.0.1:port
	*Process
}

// RedisOptions configures a private Redis server.
type RedisOptions struct {
	AppendOnly bool // appendonly yes (appendfsync everysec unless FsyncAlways)
	// FsyncAlways sets appendfsync always, so that even kill -9 loses nothing.
	FsyncAlways bool
	// Port to listen on; 0 picks a free one.
	Port int
}

// StartRedis starts redis-server with its data in dir and waits until it
// answers PING. The error wraps ErrNotInstalled when the binary is missing.
func StartRedis(dir string, o RedisOptions) (*Redis, error) {
	bin, err := lookBinary("redis-server", "/usr/bin/redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, RedisHint)
	}
	if o.Port != 0 {
		return launchRedis(bin, dir, o.Port, o, nil)
	}
	var r *Redis
	err = onFreePorts(1, func(ports []int) (err error) {
		r, err = launchRedis(bin, dir, ports[0], o, nil)
		return err
	})
	return r, err
}

func launchRedis(bin, dir string, port int, o RedisOptions, extra []string) (*Redis, error) {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	aof, fsync := "no", "everysec"
	if o.AppendOnly {
		aof = "yes"
	}
	if o.FsyncAlways {
		fsync = "always"
	}
	argv := []string{bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", aof, "--appendfsync", fsync,
		"--protected-mode", "no", "--daemonize", "no", "--loglevel", "warning",
	}
	argv = append(argv, extra...)
	p := &Process{
		name: "redis " + addr, argv: argv, dir: dir, logPath: join(dir, "redis.log"),
		ready: func() error { return PingRedis(addr) }, port: port,
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	track(p)
	return &Redis{Addr: addr, Process: p}, nil
}

// PingRedis reports whether a Redis server answers PING at addr.
func PingRedis(addr string) error {
	r, err := ask(addr, "PING\r\n", time.Second)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(r, "+PONG") {
		return fmt.Errorf("PING answered %q", r)
	}
	return nil
}

// RedisCluster is a Redis Cluster of three masters, without replicas or
// with one each (StartRedisClusterWithReplicas).
type RedisCluster struct {
	Addrs []string
	Nodes []*Redis
}

// StartRedisCluster starts three cluster-enabled masters under dir, joins
// them with redis-cli --cluster create, and waits for cluster_state:ok.
func StartRedisCluster(dir string) (*RedisCluster, error) { return startRedisCluster(dir, 0) }

// StartRedisClusterWithReplicas starts three masters with one replica each
// (six nodes; redis-cli --cluster create --cluster-replicas 1) and waits for
// cluster_state:ok and every replica's link to its master up.
func StartRedisClusterWithReplicas(dir string) (*RedisCluster, error) {
	return startRedisCluster(dir, 1)
}

func startRedisCluster(dir string, replicas int) (*RedisCluster, error) {
	bin, err := lookBinary("redis-server", "/usr/bin/redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, RedisHint)
	}
	cli, err := lookBinary("redis-cli", "/usr/bin/redis-cli")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, RedisHint)
	}
	// A client port and a cluster bus port per node, all free. Left to
	// itself a node listens for the bus on its port + 10,000, which
	// nothing reserved: another process's listener or an outgoing
	// connection's local port there made the start fail now and then.
	nodes := 3 * (1 + replicas)
	var c *RedisCluster
	err = onFreePorts(2*nodes, func(ports []int) error {
		c = &RedisCluster{}
		for i, port := range ports[:nodes] {
			nodeDir := join(dir, strconv.Itoa(i))
			os.RemoveAll(nodeDir) // an earlier attempt's nodes.conf
			err := mkdir(nodeDir)
			var s *Redis
			if err == nil {
				s, err = launchRedis(bin, nodeDir, port, RedisOptions{}, []string{
					"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
					"--cluster-port", strconv.Itoa(ports[nodes+i]), "--cluster-node-timeout", "5000",
				})
			}
			if err != nil {
				for _, n := range c.Nodes {
					n.Kill()
				}
				return err
			}
			c.Nodes = append(c.Nodes, s)
			c.Addrs = append(c.Addrs, s.Addr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	deadline := time.Now().Add(StartTimeout)
	for _, a := range c.Addrs {
		host, port, _ := strings.Cut(a, ":")
		for {
			out, _ := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").Output()
			repl, _ := exec.Command(cli, "-h", host, "-p", port, "info", "replication").Output()
			if strings.Contains(string(out), "cluster_state:ok") &&
				(strings.Contains(string(repl), "role:master") || strings.Contains(string(repl), "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("redis cluster at %s not ok after %s: %s", a, StartTimeout, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c, nil
}

// StartSentinel starts a Redis Sentinel (redis-server --sentinel, its
// config file in dir, which it rewrites) monitoring the master at
// masterAddr under name with the given quorum, and waits until it answers
// PING. lines are more sentinel.conf lines, for example
// "sentinel down-after-milliseconds NAME 2000".
func StartSentinel(dir, name, masterAddr string, quorum int, lines ...string) (*Redis, error) {
	bin, err := lookBinary("redis-server", "/usr/bin/redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, RedisHint)
	}
	host, mport, ok := strings.Cut(masterAddr, ":")
	if !ok {
		return nil, fmt.Errorf("sentinel: master address %q is not host:port", masterAddr)
	}
	var r *Redis
	err = onFreePorts(1, func(ports []int) error {
		conf := join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s %d\n", ports[0], dir, name, host, mport, quorum)
		for _, l := range lines {
			text += l + "\n"
		}
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(ports[0])
		p := &Process{
			name: "sentinel " + addr, argv: []string{bin, conf, "--sentinel"}, dir: dir, logPath: join(dir, "sentinel.log"),
			ready: func() error { return PingRedis(addr) }, port: ports[0],
		}
		if err := p.Start(); err != nil {
			return err
		}
		track(p)
		r = &Redis{Addr: addr, Process: p}
		return nil
	})
	return r, err
}
