package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/defaults"
)

// Errors of Authenticate. Callers answer 401 to both.
var (
	// ErrNoCredentials: the request carries no token and no session.
	ErrNoCredentials = errors.New("auth: no credentials")
	// ErrBadCredentials: a token or session was presented and is not valid.
	ErrBadCredentials = errors.New("auth: invalid or expired credentials")
	// ErrForeignHost: an open authenticator was asked by a request whose
	// Host is not a loopback address, localhost or a configured name
	// (DNS rebinding). Callers answer 403.
	ErrForeignHost = errors.New("auth: the request's Host is not this server's")
)

// SessionCookie is the name of the browser session's cookie.
const SessionCookie = "drover_session"

// DefaultSessionTTL is how long a browser session lasts.
const DefaultSessionTTL = 12 * time.Hour

// Config configures an Authenticator. The zero value is an open
// authenticator (no tokens) with a random session key.
type Config struct {
	// Tokens are the token specs (auth.tokens), name:role:sha256:<hex>.
	// None makes the authenticator open: only loopback clients are let in,
	// as the admin "local".
	Tokens []string
	// SessionKey signs session cookies and CSRF tokens (auth.session_key).
	// Every console server behind one load balancer needs the same key;
	// empty: a random key per process (sessions end when it restarts).
	SessionKey string
	// SessionTTL is how long a browser session lasts. Default 12h.
	SessionTTL time.Duration
	// SecureCookies marks cookies Secure (set when serving TLS).
	SecureCookies bool
	// Hosts are the names, besides loopback addresses and "localhost",
	// that a request's Host may carry when the authenticator is open (it
	// trusts loopback clients): the listen address and the public name
	// (web.public_name). Any other Host is refused with ErrForeignHost, so
	// that a page whose name is rebound to 127.0.0.1 cannot act as the
	// local admin.
	Hosts []string
	// Revocations stores the sessions ended by Logout. drover web gives
	// the fleet's Redis (queue.Sessions), so that a logged-out cookie is
	// refused by every console server and after a restart. Default: this
	// process's memory (a revocation ends with the process).
	Revocations Revocations
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Revocations stores the ids of sessions ended by Logout, each until the
// session would have expired. Its errors (a store that does not answer)
// are returned by Authenticate, Login and Logout as they are, not as
// ErrBadCredentials: the caller answers 503, not 401.
type Revocations interface {
	// Revoke records that session id is ended until until.
	Revoke(ctx context.Context, id string, until, now time.Time) error
	// Revoked reports whether session id is ended at now.
	Revoked(ctx context.Context, id string, now time.Time) (bool, error)
	// RevokedSessionsFull reports whether the store holds as many live
	// revocations as it may: Login then refuses new sessions
	// (ErrTooManyRevoked) rather than the store forgetting one.
	RevokedSessionsFull(ctx context.Context, now time.Time) (bool, error)
}

// ErrTooManyRevoked: Login refused a new session because the revocation
// store is full (Revocations.RevokedSessionsFull); bearer tokens still
// work, and logins again as revocations expire.
var ErrTooManyRevoked = errors.New("auth: too many logged-out sessions are still live; log in again later or use a bearer token")

// Authenticator checks requests' credentials. It is safe for concurrent use.
type Authenticator struct {
	tokens []Token
	key    []byte
	ttl    time.Duration
	secure bool
	hosts  []string
	now    func() time.Time

	revoked Revocations // the ids of sessions ended by Logout, until they expire
}

// New validates cfg and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	tokens, err := ParseTokens(cfg.Tokens)
	if err != nil {
		return nil, fmt.Errorf("auth.tokens: %w", err)
	}
	a := &Authenticator{tokens: tokens, ttl: cfg.SessionTTL, secure: cfg.SecureCookies, hosts: cfg.Hosts, now: cfg.Now,
		revoked: cfg.Revocations}
	if a.revoked == nil {
		a.revoked = &memoryRevocations{until: map[string]time.Time{}}
	}
	a.ttl = defaults.Positive(a.ttl, DefaultSessionTTL)
	if a.now == nil {
		a.now = time.Now
	}
	if cfg.SessionKey != "" {
		if len(cfg.SessionKey) < 16 {
			return nil, errors.New("auth.session_key: want at least 16 characters (say, `openssl rand -hex 32`)")
		}
		sum := sha256.Sum256([]byte(cfg.SessionKey))
		a.key = sum[:]
	} else {
		a.key = make([]byte, 32)
		if _, err := rand.Read(a.key); err != nil {
			return nil, fmt.Errorf("auth: session key: %w", err)
		}
	}
	return a, nil
}

// Open reports whether no tokens are configured: then only loopback clients
// are admitted.
func (a *Authenticator) Open() bool { return len(a.tokens) == 0 }

// CheckListen refuses to serve an open authenticator on anything but a
// loopback address.
func (a *Authenticator) CheckListen(addr string) error {
	if !a.Open() {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) {
		return fmt.Errorf("refusing to listen on %s without authentication: configure auth.tokens (`drover web token NAME ROLE` makes one) or listen on 127.0.0.1", addr)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopback reports whether the request came from a loopback address.
func IsLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Authenticate returns who made the request: a bearer token
// (Authorization: Bearer <token>) wins over a session cookie. An open
// authenticator admits loopback clients as the admin "local" and nobody
// else. It fails with ErrNoCredentials or ErrBadCredentials, or with the
// revocation store's error when it cannot say whether a session was ended.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	if a.Open() {
		if !LocalHost(r, a.hosts...) {
			return Principal{}, fmt.Errorf("%w: Host %q is not a loopback address, localhost or this server's configured name (web.public_name)", ErrForeignHost, r.Host)
		}
		if IsLoopback(r) {
			return Principal{Name: "local", Role: Admin, Via: "loopback"}, nil
		}
		return Principal{}, fmt.Errorf("%w: this server has no tokens configured and admits loopback clients only", ErrBadCredentials)
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return Principal{}, fmt.Errorf("%w: want Authorization: Bearer <token>", ErrBadCredentials)
		}
		t, ok := match(a.tokens, strings.TrimSpace(tok))
		if !ok {
			return Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
		}
		return Principal{Name: t.Name, Role: t.Role, Via: "token"}, nil
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return Principal{}, ErrNoCredentials
	}
	return a.verifySession(r.Context(), c.Value)
}

// CheckToken returns the principal holding token.
func (a *Authenticator) CheckToken(token string) (Principal, error) {
	t, ok := match(a.tokens, token)
	if !ok {
		return Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
	}
	return Principal{Name: t.Name, Role: t.Role, Via: "token"}, nil
}

// session is the signed content of a session cookie.
type session struct {
	ID      string `json:"i"`
	Name    string `json:"n"`
	Role    string `json:"r"`
	Expires int64  `json:"e"` // unix seconds
	// Token is a prefix of the token's hash: a session ends when its token
	// is removed from the configuration or given another role.
	Token string `json:"t"`
}

// Login checks token and returns the session cookie to set. It fails with
// ErrBadCredentials for an unknown token, ErrTooManyRevoked, or the
// revocation store's error.
func (a *Authenticator) Login(ctx context.Context, token string) (*http.Cookie, Principal, error) {
	t, ok := match(a.tokens, strings.TrimSpace(token))
	if !ok {
		return nil, Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
	}
	full, err := a.revoked.RevokedSessionsFull(ctx, a.now())
	if err != nil {
		return nil, Principal{}, err
	}
	if full {
		return nil, Principal{}, ErrTooManyRevoked
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, Principal{}, err
	}
	exp := a.now().Add(a.ttl)
	s := session{ID: hex.EncodeToString(id), Name: t.Name, Role: t.Role.String(), Expires: exp.Unix(), Token: hex.EncodeToString(t.Hash[:8])}
	payload, _ := json.Marshal(s)
	value := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(a.mac("session", payload))
	c := &http.Cookie{Name: SessionCookie, Value: value, Path: "/", Expires: exp, MaxAge: int(a.ttl.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.secure}
	return c, Principal{Name: t.Name, Role: t.Role, Via: "session", Session: s.ID}, nil
}

// CheckHost returns ErrForeignHost when the authenticator is open and r's
// Host is not a loopback address, localhost or one of Config.Hosts; nil
// otherwise (with tokens, credentials are never ambient to another
// origin, so any Host may be served).
func (a *Authenticator) CheckHost(r *http.Request) error {
	if a.Open() && !LocalHost(r, a.hosts...) {
		return fmt.Errorf("%w: Host %q is not a loopback address, localhost or this server's configured name (web.public_name)", ErrForeignHost, r.Host)
	}
	return nil
}

// Logout ends p's session (a copy of its cookie is refused from now on,
// by every Authenticator on the same Revocations) and returns a cookie
// that clears it in the browser. The cookie is returned even when the
// revocation could not be stored (err): clearing the browser's copy is
// still right.
func (a *Authenticator) Logout(ctx context.Context, p Principal) (*http.Cookie, error) {
	var err error
	if p.Via == "session" && p.Session != "" {
		now := a.now()
		err = a.revoked.Revoke(ctx, p.Session, now.Add(a.ttl), now)
	}
	return &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.secure}, err
}

// memoryRevocations is the default Revocations: this process's memory.
type memoryRevocations struct {
	mu    sync.Mutex
	until map[string]time.Time
}

func (m *memoryRevocations) Revoke(_ context.Context, id string, until, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, exp := range m.until {
		if !now.Before(exp) {
			delete(m.until, id)
		}
	}
	m.until[id] = until
	return nil
}

func (m *memoryRevocations) Revoked(_ context.Context, id string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.until[id]
	return ok && now.Before(exp), nil
}

func (m *memoryRevocations) RevokedSessionsFull(context.Context, time.Time) (bool, error) {
	return false, nil
}

func (a *Authenticator) verifySession(ctx context.Context, value string) (Principal, error) {
	p64, m64, ok := strings.Cut(value, ".")
	if !ok {
		return Principal{}, fmt.Errorf("%w: malformed session", ErrBadCredentials)
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, a.mac("session", payload)) {
		return Principal{}, fmt.Errorf("%w: session signature", ErrBadCredentials)
	}
	var s session
	if err := json.Unmarshal(payload, &s); err != nil {
		return Principal{}, fmt.Errorf("%w: session content", ErrBadCredentials)
	}
	if a.now().Unix() >= s.Expires {
		return Principal{}, fmt.Errorf("%w: session expired", ErrBadCredentials)
	}
	for _, t := range a.tokens {
		if t.Name == s.Name && t.Role.String() == s.Role && hex.EncodeToString(t.Hash[:8]) == s.Token {
			// Last, so that only a signed, live cookie of a configured
			// token costs a read of the store.
			revoked, err := a.revoked.Revoked(ctx, s.ID, a.now())
			if err != nil {
				return Principal{}, err
			}
			if revoked {
				return Principal{}, fmt.Errorf("%w: session ended by logout", ErrBadCredentials)
			}
			return Principal{Name: t.Name, Role: t.Role, Via: "session", Session: s.ID}, nil
		}
	}
	return Principal{}, fmt.Errorf("%w: the session's token is no longer configured", ErrBadCredentials)
}

// Sign returns a signature of text for purpose with the session key, for
// what the server hands a browser and must recognise as its own when it
// comes back (the console's flash messages).
func (a *Authenticator) Sign(purpose, text string) string {
	return base64.RawURLEncoding.EncodeToString(a.mac(purpose, []byte(text)))
}

// Verify reports whether sig is Sign(purpose, text).
func (a *Authenticator) Verify(purpose, text, sig string) bool {
	got, err := base64.RawURLEncoding.DecodeString(sig)
	return err == nil && hmac.Equal(got, a.mac(purpose, []byte(text)))
}

func (a *Authenticator) mac(purpose string, data []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(data)
	return m.Sum(nil)
}

// CSRFField is the form field, and CSRFHeader the header, that carry the
// CSRF token of a session.
const (
	CSRFField  = "csrf_token"
	CSRFHeader = "X-CSRF-Token"
)

// CSRFToken returns the CSRF token for p's session ("" when p is not a
// session: token and loopback requests carry no ambient credential).
func (a *Authenticator) CSRFToken(p Principal) string {
	if p.Via != "session" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(a.mac("csrf", []byte(p.Session)))
}

// CheckCSRF verifies the CSRF token of a state-changing request made with a
// session cookie (form field csrf_token or header X-CSRF-Token). Requests
// authenticated otherwise pass. The form must have been parsed.
func (a *Authenticator) CheckCSRF(r *http.Request, p Principal) error {
	if p.Via != "session" {
		return nil
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		got = r.PostFormValue(CSRFField)
	}
	want := a.CSRFToken(p)
	if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		return errors.New("missing or wrong CSRF token: reload the page and try again")
	}
	return nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by WithPrincipal.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
