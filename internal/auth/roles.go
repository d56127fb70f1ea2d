// Package auth authenticates the people and programs that use Drover's HTTP
// surfaces (the web console, its /api/v1, and the workers' and schedulers'
// debug endpoints): bearer tokens, browser sessions, CSRF tokens and roles.
//
// Tokens are configured as "name:role:sha256:<hex>" (auth.tokens): only the
// SHA-256 of a token is stored, and a presented token is hashed and compared
// with every configured hash in constant time. Tokens are random 256-bit
// strings (NewToken), so a fast hash is enough: there is nothing to guess.
//
// With no tokens configured a server is "open": it must listen on loopback
// only (CheckListen refuses anything else), and every loopback client acts as
// the admin "local".
package auth

import (
	"fmt"
	"strings"
)

// Role is what a principal may do. Viewer < Operator < Admin; Producer is a
// side role that may only enqueue (and read what it enqueued), for programs
// that feed queues over HTTP.
type Role int

// The roles.
const (
	RoleNone Role = iota
	Viewer
	Producer
	Operator
	Admin
)

// Roles lists the roles by name, for messages and documentation.
var Roles = []string{"viewer", "producer", "operator", "admin"}

func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Producer:
		return "producer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return "none"
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "viewer":
		return Viewer, nil
	case "producer":
		return Producer, nil
	case "operator":
		return Operator, nil
	case "admin":
		return Admin, nil
	}
	return RoleNone, fmt.Errorf("role %q: want one of %s", s, strings.Join(Roles, ", "))
}

// Allows reports whether a principal with role r may do what needs role
// need:
//
//	need Viewer:   viewer, operator, admin
//	need Producer: producer, operator, admin
//	need Operator: operator, admin
//	need Admin:    admin
func (r Role) Allows(need Role) bool {
	switch need {
	case RoleNone:
		return true
	case Viewer:
		return r == Viewer || r == Operator || r == Admin
	case Producer:
		return r == Producer || r == Operator || r == Admin
	case Operator:
		return r == Operator || r == Admin
	case Admin:
		return r == Admin
	}
	return false
}

// Principal is who is acting.
type Principal struct {
	Name string `json:"name"`
	Role Role   `json:"-"`
	// Via is how they authenticated: "token", "session" or "loopback" (an
	// open server's local client).
	Via string `json:"via"`
	// Session is the browser session's id ("" unless Via is "session"); the
	// CSRF token is derived from it.
	Session string `json:"-"`
}

// String is "name (role)", for audit records.
func (p Principal) String() string { return p.Name + " (" + p.Role.String() + ")" }
