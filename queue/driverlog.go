package queue

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// SetDriverLogger sends go-redis's own log lines (connection pool dial
// failures and the like, by default printed to stderr with a "redis:"
// prefix and a source line) to l at debug level: Drover reports the
// failures that matter itself, once, with its own words. go-redis has one
// logger per process, so this is process-wide: a command-line tool calls
// it once, before its first Redis client.
func SetDriverLogger(l hclog.Logger) {
	redis.SetLogger(driverLogger{l})
}

type driverLogger struct{ l hclog.Logger }

func (d driverLogger) Printf(_ context.Context, format string, v ...any) {
	d.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
