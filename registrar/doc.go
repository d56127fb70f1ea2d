// Package registrar registers the queues of queue families at their first
// enqueue and retires those that stay empty and idle (docs/decisions.md,
// "Queue families (issue 31)"). It runs beside each rebalance leadership
// term: the fleet's leader hands it each registry snapshot it reads and
// places the queues it created at once (fleet.FamilyRegistrar). It reads
// Redis through queue.Families (FamilyRedis) and ZooKeeper through three
// roles of the session (Registry: coordinator.Queues, Families, Claims).
//
// A fleet member makes one per session (cmd/drover, run_worker.go):
//
//	fleet.MemberConfig{…, Registrar: func(s *coordinator.Session) (fleet.FamilyRegistrar, error) {
//		return registrar.New(registrar.Config{Registry: registrar.ZooKeeper(s), Redis: store.Families()})
//	}}
//
// It is its own package, not part of fleet, so that the fleet layer (a
// member's life in ZooKeeper) does not depend on Redis's package.
package registrar
