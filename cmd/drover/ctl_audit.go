package main

import (
	"fmt"

	"github.com/drover-dev/drover/internal/ops"
)

// audit records a ctl mutation, or its refusal, in the fleet's audit log
// (the console's too), with the status the console would answer for the
// same outcome (ops.StatusOf). A failure to record is reported on stderr,
// not fatal: the mutation has happened.
func (e *ctlEnv) audit(o *ops.Ops, action, target, detail string, err error) {
	rec := ops.AuditRecord{Who: operator(), Role: "ctl", Via: "ctl", Action: action, Target: target, Detail: detail,
		Result: "ok", Status: ops.StatusOf(err)}
	if err != nil {
		rec.Result = err.Error()
	}
	if aerr := o.Audit().Record(e.ctx, rec); aerr != nil {
		fmt.Fprintf(e.a.stderr, "warning: audit record not written: %v\n", aerr)
	}
}
