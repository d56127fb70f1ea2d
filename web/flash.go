package web

import (
	"fmt"
	"net/http"
	"net/url"
)

// flashes are the sentences shown after a console form's action: %s is the
// action's subject (the queue, message id, member or schedule named in
// its path).
var flashes = map[string]string{
	"queue.pause":      "Paused queue %s.",
	"queue.resume":     "Resumed queue %s.",
	"member.pause":     "Paused member %s: it starts no task until resumed.",
	"member.resume":    "Resumed member %s.",
	"all.pause":        "Paused everything%s.",
	"all.resume":       "Resumed everything%s.",
	"delayed.revoke":   "Revoked delayed job %s.",
	"delayed.run_now":  "Delayed job %s is due now: it runs in its turn.",
	"dead.retry":       "Dead letter %s is back on its queue.",
	"dead.purge":       "Purged dead letter %s.",
	"dead.purge_all":   "Purged the dead letters of %s.",
	"schedule.enable":  "Enabled schedule %s.",
	"schedule.disable": "Disabled schedule %s.",
	"schedule.trigger": "Triggered schedule %s: its job is enqueued.",
	"schedule.put":     "Saved schedule %s.",
	"schedule.remove":  "Removed schedule %s.",
	"offset.reset":     "Reset the offset of %s.",
	"queue.config":     "Saved the configuration of %s.",
	"queue.delete":     "Deleted the configuration of %s.",
	"job.cancel":       "Cancelled job %s: its process group is stopped.",
	"parked.retry":     "Retried the parked head of %s.",
	"parked.skip":      "Moved the parked head of %s to the dead letters.",
}

// flashSigParam is the query parameter of a flash message's signature.
const flashSigParam = "flash_sig"

// flashQuery returns r's flash message when the server signed it
// (withFlash), else "".
func (s *Server) flashQuery(r *http.Request) string {
	q := r.URL.Query()
	msg := q.Get("flash")
	if msg == "" || !s.auth.Verify("flash", msg, q.Get(flashSigParam)) {
		return ""
	}
	return msg
}

// withoutFlash is u's path and query without the flash message: where
// the page's forms return to.
func withoutFlash(u *url.URL) string {
	q := u.Query()
	if !q.Has("flash") && !q.Has(flashSigParam) {
		return u.RequestURI()
	}
	q.Del("flash")
	q.Del(flashSigParam)
	v := *u
	v.RawQuery = q.Encode()
	return v.RequestURI()
}

// flashOf is the sentence shown after action succeeded: the answer's own
// when it has one (a bulk action's counts), else the action's sentence
// with its subject, else "<action>: done". Never raw JSON.
func flashOf(action string, r *http.Request, v any) string {
	if c, ok := v.(Created); ok {
		v = c.Value
	}
	if f, ok := v.(interface{ flash() string }); ok {
		return f.flash()
	}
	subject := ""
	for _, k := range []string{"id", "queue", "member", "name"} {
		if p := r.PathValue(k); p != "" {
			subject = p
			break
		}
	}
	if f, ok := flashes[action]; ok {
		if m, ok := v.(map[string]any); ok && action == "dead.purge_all" {
			if n, ok := m["purged"]; ok {
				return fmt.Sprintf("Purged %v dead letter(s) of %s.", n, subject)
			}
		}
		return fmt.Sprintf(f, subject)
	}
	return action + ": done"
}
