package coordinator

import (
	"crypto/tls"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
)

// Defaults for Config's zero values.
const (
	DefaultCluster        = "default"
	DefaultSessionTimeout = 10 * time.Second
)

// Config configures a Session. The zero value of every field but Servers
// means the documented default.
type Config struct {
	// Servers is the ensemble, as host:port (the port defaults to 2181).
	// Required.
	Servers []string
	// Cluster names the fleet; it selects the default Root. Default "default".
	Cluster string
	// Root is the path under which every node lives (a client-side chroot).
	// Default "/drover/<Cluster>". It must be an absolute path without a
	// trailing slash.
	Root string
	// SessionTimeout is the session timeout asked of the server (which clamps
	// it to 2–20 × its tickTime). Default 10 s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds Connect's wait for the first session.
	// Default: SessionTimeout.
	ConnectTimeout time.Duration
	// RequestTimeout bounds every ZooKeeper call. Default: SessionTimeout.
	RequestTimeout time.Duration
	// Auth is "user:password" for ZooKeeper's digest scheme. When set, the
	// session authenticates with it and every node it creates carries a digest
	// ACL granting that user all permissions (and nobody else anything).
	// Empty: nodes are created with the open (world) ACL.
	Auth string
	// TLS, when set, wraps every connection in TLS (ZooKeeper's secure client
	// port). When TLS.ServerName is empty it is set to the host name of the
	// server being dialled, as written in Servers.
	TLS *tls.Config
	// Logger receives the session's and the ZooKeeper library's logs.
	// Default: a null logger.
	Logger hclog.Logger
	// OnStateChange, when set, is called with every session state change, in
	// order (from the monitor goroutine, or from Close for the final Lost).
	// It must not block, nor call the session's Close.
	OnStateChange func(SessionState)
	// OnServerDisagrees, when set, is called each time a claim finds the
	// session's server disagreeing with the ensemble's leader on a node's
	// version (ErrServerDisagrees), with the server's address, from the
	// claim's goroutine. It must not block.
	OnServerDisagrees func(server string)
}

// withDefaults validates c and fills in defaults; the error names the field.
func (c Config) withDefaults() (Config, error) {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: coordinator: %s: %s", drover.ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	if len(c.Servers) == 0 {
		return c, bad("servers", "at least one ZooKeeper server is required")
	}
	for _, s := range c.Servers {
		if strings.TrimSpace(s) == "" {
			return c, bad("servers", "empty server address")
		}
	}
	if c.Cluster == "" {
		c.Cluster = DefaultCluster
	}
	if err := validateNodeName(c.Cluster); err != nil {
		return c, bad("cluster", "%v", err)
	}
	if c.Root == "" {
		c.Root = "/drover/" + c.Cluster
	}
	if !strings.HasPrefix(c.Root, "/") || c.Root == "/" || strings.HasSuffix(c.Root, "/") || path.Clean(c.Root) != c.Root {
		return c, bad("root", "want an absolute, clean path other than /, have %q", c.Root)
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.SessionTimeout < 0 {
		return c, bad("session_timeout", "must be > 0, have %s", c.SessionTimeout)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = c.SessionTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = c.SessionTimeout
	}
	if c.ConnectTimeout < 0 || c.RequestTimeout < 0 {
		return c, bad("connect_timeout/request_timeout", "must be > 0")
	}
	if c.Auth != "" {
		if u, p, ok := strings.Cut(c.Auth, ":"); !ok || u == "" || p == "" {
			return c, bad("auth", "want user:password")
		}
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c, nil
}

// validateNodeName checks a name used as one path element (member names,
// cluster names, election names): the same rules as queue names.
func validateNodeName(name string) error {
	if err := drover.ValidateQueueName(name); err != nil {
		// Reword: the rules are the queue-name rules, but this is not a queue.
		detail := strings.TrimPrefix(err.Error(), drover.ErrInvalidQueueName.Error()+": ")
		return fmt.Errorf("%w: invalid name: %s", drover.ErrInvalidConfig, detail)
	}
	return nil
}
