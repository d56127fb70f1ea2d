// Package web is Drover's console: server-rendered HTML pages (templates and
// a stylesheet embedded with go:embed; no script, no Node toolchain) and a
// JSON API under /api/v1 for every page and action, over package ops.
//
// Authentication and roles come from package auth: a bearer token
// (Authorization: Bearer …) or a browser session cookie set by /login.
// Every state-changing route is checked for cross-origin requests
// (net/http.CrossOriginProtection: 403), for the CSRF token of a browser
// session, bounded in size (413), and written to the audit log (Redis,
// shown on /audit) with who, what, target and result; a request refused
// for who sent it goes to the refusal stream instead, sampled and counted
// per source (refusal.go).
//
// # Adding routes
//
// Features built on the console (job status, HTTP producers) register their
// endpoints on a Server after New and before serving:
//
//	srv.HandleAPI("GET", "/jobs/{id}", auth.Viewer, func(r *web.Request) (any, error) { … })
//	srv.HandleMutation("POST", "/queues/{queue}/pause", auth.Operator, "queue.pause",
//		func(r *web.Request) (any, error) { … r.In.Get("reason") … })
//
// (The producer API's enqueue and revoke, RouteJobs, are registered by
// handleProducer: counted in Config.Metrics and logged at debug, not
// audited.)
//
// Paths are net/http patterns below APIPrefix (/api/v1). A handler returns
// a value to encode as JSON, or an error: web.Errorf(status, …) for a
// status of its choice; errors of package ops map to 404 (not found), 400
// (bad input), 409 (refused) and 502 (a member unreachable). The roles are
// auth.Viewer (read), auth.Producer (enqueue only), auth.Operator (pause,
// retry, revoke, trigger; also holds Viewer and Producer) and auth.Admin
// (offset reset, purge, queue configuration). cmd/drover/web.go builds the
// server; add registrations there (or in a function it calls).
package web
