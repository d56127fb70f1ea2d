// Package coordinator is Drover's ZooKeeper adapter: sessions, membership,
// elections, the assignment node, queue ownership with fenced offsets, pause
// flags and the queue registry.
//
// It is the only package that imports github.com/go-zookeeper/zk. It speaks
// the root package's vocabulary (drover.Member, drover.Assignment,
// drover.Offset, drover.QueueConfig, drover.Pause) and translates the
// library's errors into drover's sentinels (drover.ErrFenced,
// drover.ErrNotOwner, drover.ErrNotLeader, drover.ErrSessionLost, …).
//
// # Sessions
//
// A Session is one ZooKeeper session. It is Connected, Suspended (the
// connection is down or silent, the session may still be alive on the
// server) or Lost (the same session was not confirmed within 2/3 of the
// session timeout counted from the last time the server was heard from, the
// server expired it, or the library opened a new session id). Lost is final:
// Done is closed, every operation fails with drover.ErrSessionLost, and the
// caller must Close the Session and Connect a new one (a new member that owns
// nothing and leads nothing). Because Lost is declared at 2/3 of the timeout
// from the last contact, it is reported before the server can expire the
// session and hand the caller's queues to someone else.
//
// # Roles
//
// A Session keeps only its lifetime. What a caller does with it goes
// through a small role sharing the session (roles.go): Group (members,
// elections, cluster counts), Assignments, Claims (claims, commits, owners,
// offsets), Queues (configurations, the registry, views), Families and
// Pauses — sess.Pauses().Set(ctx, drover.PauseQueue, "emails", p).
//
// # Bounded calls
//
// The library has no contexts. Every call here runs with a bound (the
// request timeout, by default the session timeout) and honours ctx; when the
// bound or ctx ends first the request may still be applied later: writes
// whose outcome matters (claims, commits, releases) re-read the node before
// deciding.
//
// # Fencing
//
// Offsets are fenced by the version of /offsets/<queue>, which every claim
// bumps; assignments by the version of /coord/epoch, which every new
// rebalance leader bumps. See docs/zookeeper-layout.md.
package coordinator
