// Package fleet is a member's life in the fleet: the session loop that
// joins and rejoins, the leadership terms of the rebalancer and the
// scheduler, the rebalance leader loop and the reconciler that makes the
// member own exactly the queues assigned to it.
//
// It depends on small interfaces (ports.go) rather than on ZooKeeper, so
// the reconciler, the leader loop and a Member's whole life (its sessions
// come from MemberConfig.Connect) are table-tested with fakes; the
// adapters from the coordinator's types (zookeeper.go) are tested with a
// real ZooKeeper. A member runs as:
//
//	m, err := fleet.NewMember(fleet.MemberConfig{…})
//	err = m.Run(ctx) // until ctx ends: leave, then drain and release
//
// Shutdown order (docs/decisions.md): resign the leaderships, leave the
// membership so that the leader moves the queues at once, then stop (drain
// and release) what the member still owns. A lost session aborts every
// queue and joins again as a new member.
package fleet
