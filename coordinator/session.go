package coordinator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-dev/drover"
)

// Session is one ZooKeeper session: its lifetime (State, Done, Err, Close)
// and the roles built on it (Group, Assignments, Claims, Queues, Families,
// Pauses; roles.go). It is safe for concurrent use. See the package
// documentation for its states.
type Session struct {
	cfg       Config
	log       hclog.Logger
	conn      zkConn
	id        int64 // the session id everything here belongs to
	acl       []zk.ACL
	contact   *contactClock
	kick      chan struct{} // wakes the monitor; never blocks the sender
	hub       *watchHub     // routes watch events to the watch sets (watch.go)
	batch     multiBatcher  // coalesces the commits and releases of claims (multi_batch.go)
	reads     readBatcher   // coalesces the reads of claims and configs (read_batch.go)
	claims    chan struct{} // bounds the claims in flight (claim.go)
	ownerJSON ownerCache    // the owner JSON of the last claim (claim.go)
	routes    routeInterner // shares task-route tables among watched configs (route_intern.go)
	shapes    configShapes  // decodes watched configs once a shape (config_shapes.go)
	stats     statsCache    // queue counts Group.Stats reuses (stats.go)
	written   bucketCache   // the buckets CreateMany wrote last (create_many.go)
	// registryWrites: the packed registry writers take turns (registry_turn.go).
	registryWrites registryTurn
	// candidacies: the candidate nodes this session created that are not
	// known deleted (election.go).
	candidacies candidacySet

	// notifyMu is held from a state change to the end of its callback, so
	// OnStateChange sees the changes in the order they were made, even when
	// two goroutines (the monitor, Close) change the state.
	notifyMu sync.Mutex
	mu       sync.Mutex
	state    SessionState
	changed  chan struct{} // closed and replaced on every state change
	err      error         // why the session was lost
	done     chan struct{} // closed when Lost

	closeOnce sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup

	// movedAt is when serverDisagrees last moved the session to another
	// server (UnixNano; 0: never).
	movedAt atomic.Int64
}

// Connect opens a session to cfg.Servers, waits (bounded by
// cfg.ConnectTimeout and ctx) until the server has granted a session,
// authenticates, and creates the persistent nodes of the layout under
// cfg.Root when they are missing. Cancelling ctx abandons the attempt; it
// does not affect the returned Session.
func Connect(ctx context.Context, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	contact := &contactClock{}
	kick := make(chan struct{}, 1)
	// Every server can be tried within the 2/3 of the session timeout after
	// which the session is reported lost.
	clamp := cfg.SessionTimeout * 2 / 3 / time.Duration(len(cfg.Servers))
	hostOf := hostNames(cfg.Servers)
	std := zkLogger{log: cfg.Logger.Named("zk")}
	expired := make(chan struct{})
	var expiredOnce sync.Once
	hub := newWatchHub()
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithDialer(newDialer(cfg.TLS, hostOf, clamp, contact)),
		zk.WithLogger(std),
		zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			hub.deliver(ev)
			if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
				expiredOnce.Do(func() { close(expired) })
			}
			select {
			case kick <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("connect to zookeeper %s: %w", strings.Join(cfg.Servers, ","), err)
	}
	s, err := newSession(ctx, cfg, conn, contact, kick, expired, hub)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// newSession waits for conn's session and starts the monitor. expired is
// closed when the library reports the session expired.
// hub receives the connection's watch events (nil: a new hub that nothing
// feeds, for a connection without an event callback).
func newSession(ctx context.Context, cfg Config, conn zkConn, contact *contactClock, kick chan struct{}, expired <-chan struct{}, hub *watchHub) (*Session, error) {
	if hub == nil {
		hub = newWatchHub()
	}
	s := &Session{
		hub:     hub,
		cfg:     cfg,
		log:     cfg.Logger.Named("coordinator"),
		conn:    conn,
		contact: contact,
		kick:    kick,
		state:   Connected,
		changed: make(chan struct{}),
		done:    make(chan struct{}),
		stop:    make(chan struct{}),
	}
	s.batch.s = s
	s.reads.s = s
	s.claims = make(chan struct{}, maxClaimsInFlight)
	if err := s.awaitSession(ctx); err != nil {
		return nil, err
	}
	contact.touch()
	s.acl = zk.WorldACL(zk.PermAll)
	if cfg.Auth != "" {
		user, pass, _ := strings.Cut(cfg.Auth, ":")
		s.acl = zk.DigestACL(zk.PermAll, user, pass)
	}
	s.wg.Add(1)
	go s.monitor(expired)
	if cfg.Auth != "" {
		if _, err := bounded(ctx, s, func(c zkConn) (struct{}, error) {
			return struct{}{}, c.AddAuth("digest", []byte(cfg.Auth))
		}); err != nil {
			s.Close()
			return nil, fmt.Errorf("authenticate to zookeeper: %w", err)
		}
	}
	if err := s.ensureLayout(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.log.Debug("session established", "session", fmt.Sprintf("%#x", s.id), "root", cfg.Root)
	return s, nil
}

// awaitSession waits until conn holds a session and records its id.
func (s *Session) awaitSession(ctx context.Context) error {
	deadline := time.NewTimer(s.cfg.ConnectTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		if s.conn.State() == zk.StateHasSession {
			if id := s.conn.SessionID(); id != 0 {
				s.id = id
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect to zookeeper %s: %w", strings.Join(s.cfg.Servers, ","), ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("connect to zookeeper %s: no session within %s (state %s)",
				strings.Join(s.cfg.Servers, ","), s.cfg.ConnectTimeout, s.conn.State())
		case <-s.kick:
		case <-poll.C:
		}
	}
}

// ensureLayout creates the root and the persistent nodes of the layout
// that are missing. It reads first and creates only what is missing: a
// create of an existing node fails, but ZooKeeper still logs and orders the
// failed create like any write, so sixteen of them at every connect queue up
// behind a busy server's writes (seconds per new session under load), while
// sixteen reads are answered at once.
func (s *Session) ensureLayout(ctx context.Context) error {
	// The ancestors of the root hold nothing and are shared with other
	// clusters: they get the open ACL. The root and below get s.acl.
	var paths []string
	acls := map[string][]zk.ACL{}
	parts := strings.Split(strings.TrimPrefix(s.cfg.Root, "/"), "/")
	for i := range parts[:len(parts)-1] {
		p := "/" + strings.Join(parts[:i+1], "/")
		paths = append(paths, p)
		acls[p] = zk.WorldACL(zk.PermAll)
	}
	paths = append(paths, s.cfg.Root)
	for _, d := range persistentDirs {
		paths = append(paths, s.path(d))
	}
	type found struct {
		exists bool
		err    error
	}
	checks := parallelMap(ctx, paths, func(p string) found {
		exists, err := bounded(ctx, s, func(c zkConn) (bool, error) {
			exists, _, err := c.Exists(p)
			return exists, err
		})
		return found{exists, err}
	})
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("create layout under %s: %w", s.cfg.Root, err)
	}
	for i, p := range paths { // parents first
		if checks[i].err != nil {
			return fmt.Errorf("create layout under %s: check %s: %w", s.cfg.Root, p, checks[i].err)
		}
		if checks[i].exists {
			continue
		}
		acl := acls[p]
		if acl == nil {
			acl = s.acl
		}
		_, err := bounded(ctx, s, func(c zkConn) (string, error) {
			return c.Create(p, nil, zk.FlagPersistent, acl)
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create layout under %s: create %s: %w", s.cfg.Root, p, err)
		}
	}
	return nil
}

// createIfMissing creates a persistent node with data unless it exists.
func (s *Session) createIfMissing(ctx context.Context, p string, data []byte) error {
	_, err := bounded(ctx, s, func(c zkConn) (string, error) {
		return c.Create(p, data, zk.FlagPersistent, s.acl)
	})
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}

// monitor keeps the session state up to date from the library's events and
// a poll of State() and SessionID() (the event path can drop events).
func (s *Session) monitor(expired <-chan struct{}) {
	defer s.wg.Done()
	poll := min(max(s.cfg.SessionTimeout/40, 10*time.Millisecond), 250*time.Millisecond)
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-expired:
			s.setState(Lost, "the server expired the session")
			return
		case <-s.kick:
		case <-ticker.C:
		}
		if s.evaluate(time.Now()) == Lost {
			return
		}
	}
}

// evaluate derives the state from the connection and the last contact.
func (s *Session) evaluate(now time.Time) SessionState {
	st, id := s.conn.State(), s.conn.SessionID()
	silent := now.Sub(s.contact.last())
	switch {
	case id != s.id:
		s.setState(Lost, fmt.Sprintf("the session id changed from %#x to %#x (the session expired)", s.id, id))
		return Lost
	case silent >= s.cfg.SessionTimeout*2/3:
		s.setState(Lost, fmt.Sprintf("the session was not confirmed for %s (2/3 of the %s session timeout)",
			silent.Round(time.Millisecond), s.cfg.SessionTimeout))
		return Lost
	case st == zk.StateHasSession && silent < s.cfg.SessionTimeout/2:
		s.setState(Connected, "")
		return Connected
	case st == zk.StateHasSession:
		// Pings go out every third of the timeout: a server silent for half
		// of it is hung (a frozen JVM, a follower cut from its leader). The
		// library would wait 2/3 of the timeout — as long as the session
		// has before it is reported lost — so drop the connection now and
		// let the library move to the next server. With one server there is
		// nowhere to move (and the library pauses a second before retrying
		// it), so the connection is left alone.
		if len(s.cfg.Servers) > 1 {
			s.contact.dropCurrent()
		}
		s.setState(Suspended, "")
		return Suspended
	default:
		s.setState(Suspended, "")
		return Suspended
	}
}

// ErrServerDisagrees marks a claim refused because the ZooKeeper server
// the session reads from disagrees with the ensemble's leader on the
// version of the queue's offset node (Session.serverDisagrees).
var ErrServerDisagrees = errors.New("coordinator: the session's ZooKeeper server disagrees with the leader")

// moveEvery is the least time between two moves of a session to another
// server by serverDisagrees.
const moveEvery = 30 * time.Second

// serverDisagrees is told by a claim that the session's server read the
// version of path twice as version and the leader refused a write at that
// version twice: the server's data tree is not the leader's. On a healthy
// ensemble that cannot happen (the refusal comes back after the server
// applied every transaction before it, so the read that follows sees the
// leader's version). It happened with ZooKeeper 3.8.0, whose server kept a
// transaction it had truncated after a leader's death ("First digest
// mismatch" in its log), and every claim of the queues that transaction
// touched was refused for the rest of the run (docs/reliability.md, "The
// chaos minute on an overloaded host"). Drover cannot repair the server;
// it logs the disagreement at error level and moves the session to the
// next server (as for a silent one: the library reconnects on its own),
// at most once per moveEvery. With one server there is nowhere to move.
func (s *Session) serverDisagrees(path string, version int32) {
	server := "?"
	if hc := s.contact.conn.Load(); hc != nil {
		server = hc.RemoteAddr().String()
	}
	if s.cfg.OnServerDisagrees != nil {
		s.cfg.OnServerDisagrees(server)
	}
	now := time.Now().UnixNano()
	last := s.movedAt.Load()
	if last != 0 && time.Duration(now-last) < moveEvery || !s.movedAt.CompareAndSwap(last, now) {
		s.log.Debug("ZooKeeper server disagrees with the leader; moved lately", "node", path, "version read", version, "server", server)
		return
	}
	if len(s.cfg.Servers) < 2 {
		s.log.Error("the ZooKeeper server disagrees with the ensemble's leader on a node's version (its data tree diverged: check its log for \"digest mismatch\"); with one server configured the session cannot move",
			"node", path, "version read", version, "server", server)
		return
	}
	s.log.Error("the ZooKeeper server disagrees with the ensemble's leader on a node's version (its data tree diverged: check its log for \"digest mismatch\" and restore it from a healthy member); moving the session to the next server",
		"node", path, "version read", version, "server", server)
	s.contact.dropCurrent()
}

// closedReason is the reason of the Lost state that Close sets: a clean
// end, logged at info level, not as a loss.
const closedReason = "the session was closed"

// setState records a state change; Lost is final.
func (s *Session) setState(st SessionState, reason string) {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.mu.Lock()
	if s.state == st || s.state == Lost {
		s.mu.Unlock()
		return
	}
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
	if st == Lost {
		s.err = fmt.Errorf("%w: %s", drover.ErrSessionLost, reason)
		close(s.done)
	}
	s.mu.Unlock()
	switch {
	case st == Lost && reason == closedReason:
		s.log.Info("zookeeper session closed", "session", fmt.Sprintf("%#x", s.id))
	case st == Lost:
		s.log.Warn("zookeeper session lost", "session", fmt.Sprintf("%#x", s.id), "reason", reason)
	case st == Suspended:
		s.log.Warn("zookeeper session suspended", "session", fmt.Sprintf("%#x", s.id))
	default:
		s.log.Info("zookeeper session connected", "session", fmt.Sprintf("%#x", s.id))
	}
	if s.cfg.OnStateChange != nil {
		s.cfg.OnStateChange(st)
	}
}

// State returns the current state.
func (s *Session) State() SessionState {
	st, _ := s.status()
	return st
}

// Status returns the current state and a channel closed at the next change.
func (s *Session) status() (SessionState, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.changed
}

// SessionID returns the id of the session this Session belongs to (it never
// changes; when the library moves to a new id, this Session is Lost).
func (s *Session) SessionID() int64 { return s.id }

// Done is closed when the session is Lost (including by Close).
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns nil while the session is not Lost, then an error wrapping
// drover.ErrSessionLost that says why.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// LastHeard returns when bytes last arrived from a ZooKeeper server (the
// instant the session's lost deadline counts from). A process that was
// frozen cannot trust it until Confirm succeeds: replies that waited in the
// socket buffer make it look fresh.
func (s *Session) LastHeard() time.Time { return s.contact.last() }

// Root returns the root path every node lives under.
func (s *Session) Root() string { return s.cfg.Root }

// SessionTimeout returns the configured session timeout.
func (s *Session) SessionTimeout() time.Duration { return s.cfg.SessionTimeout }

// usable returns an error wrapping drover.ErrSessionLost when the session is
// lost or the library has moved to another session id.
func (s *Session) usable() error {
	if err := s.Err(); err != nil {
		return err
	}
	if id := s.conn.SessionID(); id != s.id {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return fmt.Errorf("%w: the session id changed from %#x to %#x", drover.ErrSessionLost, s.id, id)
	}
	return nil
}

// Close ends the session: Done is closed, the connection is closed (which
// deletes this session's ephemeral nodes — member, candidacies, owner nodes —
// when the server can still be reached) and the monitor is stopped. It is
// idempotent and returns nil.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.setState(Lost, closedReason)
		close(s.stop)
		s.conn.Close()
		s.wg.Wait()
	})
	return nil
}

// hostNames maps "ip:port" back to the configured host name, for TLS.
func hostNames(servers []string) func(addr string) string {
	names := map[string]string{}
	for _, srv := range servers {
		host, port, err := net.SplitHostPort(srv)
		if err != nil {
			host, port = srv, "2181"
		}
		names[net.JoinHostPort(host, port)] = host
		if ips, err := net.LookupHost(host); err == nil {
			for _, ip := range ips {
				names[net.JoinHostPort(ip, port)] = host
			}
		}
	}
	return func(addr string) string {
		if h, ok := names[addr]; ok {
			return h
		}
		host, _, _ := net.SplitHostPort(addr)
		return host
	}
}
