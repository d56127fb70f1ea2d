package coordinator

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// zkLogger is the zk library's logger, as hclog. It rewords the library's
// lines that mislead an operator: the library calls its session handshake
// "authentication", so a frozen or unreachable server logged
// "authentication failed" with no credentials configured at all.
type zkLogger struct{ log hclog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if rest, ok := strings.CutPrefix(msg, "authentication failed: "); ok {
		l.log.Info("zookeeper session handshake failed (the server did not complete the connect request; not a credentials problem)", "error", rest)
		return
	}
	l.log.Info(msg)
}
