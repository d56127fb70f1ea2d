package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// tokenPrefix starts every token NewToken makes, so that a leaked one is
// easy to recognise (secret scanners, logs).
const tokenPrefix = "drv_"

// Token is one configured token: who holds it, their role, and the SHA-256
// of the token.
type Token struct {
	Name string
	Role Role
	Hash [sha256.Size]byte
}

// ParseToken reads "name:role:sha256:<64 hex digits>".
func ParseToken(spec string) (Token, error) {
	parts := strings.Split(strings.TrimSpace(spec), ":")
	if len(parts) != 4 || parts[2] != "sha256" {
		return Token{}, fmt.Errorf("token %q: want name:role:sha256:<hex> (make one with `drover web token NAME ROLE`)", redactSpec(spec))
	}
	name := parts[0]
	if name == "" || strings.ContainsAny(name, " \t") {
		return Token{}, fmt.Errorf("token %q: name must be non-empty without blanks", redactSpec(spec))
	}
	role, err := ParseRole(parts[1])
	if err != nil {
		return Token{}, fmt.Errorf("token of %s: %w", name, err)
	}
	sum, err := hex.DecodeString(parts[3])
	if err != nil || len(sum) != sha256.Size {
		return Token{}, fmt.Errorf("token of %s: want the SHA-256 as 64 hex digits after sha256:", name)
	}
	t := Token{Name: name, Role: role}
	copy(t.Hash[:], sum)
	return t, nil
}

// redactSpec keeps a spec's name and role for messages: someone may have
// pasted a plain token where the hash belongs.
func redactSpec(spec string) string {
	parts := strings.SplitN(strings.TrimSpace(spec), ":", 3)
	if len(parts) < 3 {
		return "…"
	}
	return parts[0] + ":" + parts[1] + ":…"
}

// ParseTokens reads every spec; it fails on the first bad one and on a name
// given twice.
func ParseTokens(specs []string) ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	for _, s := range specs {
		if strings.TrimSpace(s) == "" {
			continue
		}
		t, err := ParseToken(s)
		if err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("token name %q given twice", t.Name)
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out, nil
}

// NewToken returns a fresh random token and the spec that configures it for
// name and role.
func NewToken(name string, role Role) (token, spec string, err error) {
	if role == RoleNone {
		return "", "", fmt.Errorf("new token: want a role (%s)", strings.Join(Roles, ", "))
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("new token: %w", err)
	}
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	spec = Spec(name, role, token)
	if _, err := ParseToken(spec); err != nil {
		return "", "", err
	}
	return token, spec, nil
}

// Spec is the configuration line for a token: name:role:sha256:<hex>.
func Spec(name string, role Role, token string) string {
	sum := sha256.Sum256([]byte(token))
	return name + ":" + role.String() + ":sha256:" + hex.EncodeToString(sum[:])
}

// match returns the configured token whose hash is presented's SHA-256. It
// compares with every configured hash, each in constant time, so its
// running time does not say which (or whether one) matched.
func match(tokens []Token, presented string) (Token, bool) {
	sum := sha256.Sum256([]byte(presented))
	var found Token
	ok := 0
	for _, t := range tokens {
		eq := subtle.ConstantTimeCompare(sum[:], t.Hash[:])
		if eq == 1 {
			found = t
		}
		ok |= eq
	}
	return found, ok == 1
}
