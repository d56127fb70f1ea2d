package main

import (
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/auth"
)

func TestWebRefusesANonLoopbackAddressWithoutTokens(t *testing.T) {
	r := runDrover(t, []string{"HOME=" + t.TempDir()}, "", "web", "--addr", "0.0.0.0:0")
	checkFailure(t, r, exitUsage, []string{"refusing to listen on 0.0.0.0:0 without authentication", "auth.tokens"})
	r = runDrover(t, []string{"HOME=" + t.TempDir(), "DROVER_AUTH_TOKENS=alice:admin:" + strings.Repeat("a", 64)}, "", "web")
	checkFailure(t, r, exitUsage, []string{"auth.tokens", "sha256"})
}

func TestWebTokenPrintsAHashedSpec(t *testing.T) {
	var out struct{ Name, Role, Token, Spec string }
	r := runDrover(t, []string{"HOME=" + t.TempDir()}, "", "web", "token", "alice", "operator", "-o", "json")
	if r.code != 0 || jsonUnmarshal(r.stdout, &out) != nil {
		t.Fatalf("web token: %s", r)
	}
	tok, err := auth.ParseToken(out.Spec)
	if err != nil || tok.Name != "alice" || tok.Role != auth.Operator || strings.Contains(out.Spec, out.Token) {
		t.Fatalf("spec %q: want alice operator holding only the hash, have %+v %v", out.Spec, tok, err)
	}
	a, _ := auth.New(auth.Config{Tokens: []string{out.Spec}})
	if p, err := a.CheckToken(out.Token); err != nil || p.Name != "alice" {
		t.Fatalf("the printed token does not match its spec: %v", err)
	}
	checkFailure(t, runDrover(t, nil, "", "web", "token", "alice", "root"), exitUsage, []string{"role"})
}
