package main

import (
	"fmt"

	"github.com/drover-dev/drover/internal/ops"
)

// audit records a ctl mutation, or its failure, in the fleet's audit log
// (the console's too) as the console records the same operation: its
// action ("queue.pause") and target (the console API's path,
// "/queues/emails/pause"), who is operator() (user@host, role and via
// "ctl"), and the status the console would answer (ops.StatusOf). It
// writes through ops (ops.WriteAudit: one format and one set of caps for
// every writer) on the command's Redis connection, so that a command
// that needs no ZooKeeper (enqueue) is audited too. A failure to record is
// reported on stderr, not fatal: the mutation has happened.
func (e *ctlEnv) audit(action, target, detail string, err error) {
	rec := ops.AuditRecord{Who: operator(), Role: "ctl", Via: "ctl", Action: action, Target: target, Detail: detail,
		Result: "ok", Status: ops.StatusOf(err)}
	if err != nil {
		rec.Result = err.Error()
	}
	st, aerr := e.queues()
	if aerr == nil {
		aerr = ops.WriteAudit(e.ctx, st.Operator(), rec, nil)
	}
	if aerr != nil {
		fmt.Fprintf(e.a.stderr, "warning: audit record not written: %v\n", aerr)
	}
}

// knownQueueAudited is knownQueue for a mutation: a queue that does not
// exist (or cannot be checked) is the mutation's outcome, recorded under
// its action and target as the console records the same 404.
func (e *ctlEnv) knownQueueAudited(q, action, target string) error {
	err := e.knownQueue(q)
	if err != nil {
		e.audit(action, target, "", err)
	}
	return err
}
