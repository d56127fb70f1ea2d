package coordinator

// SessionState is what a Session knows about its ZooKeeper session.
type SessionState int

// Session states. Connected and Suspended alternate; Lost is final.
const (
	// Connected: the session is established and the server was heard from
	// recently. Ephemeral nodes, claims and leadership are valid.
	Connected SessionState = iota + 1
	// Suspended: the connection is down or silent; the session may still be
	// alive on the server. Stop starting work, keep claims; no leader acts.
	Suspended
	// Lost: the session expired, was replaced by a new session id, was not
	// confirmed within 2/3 of the session timeout, or was closed. Final.
	Lost
)

// String returns "connected", "suspended" or "lost".
func (s SessionState) String() string {
	switch s {
	case Connected:
		return "connected"
	case Suspended:
		return "suspended"
	case Lost:
		return "lost"
	}
	return "unknown"
}
