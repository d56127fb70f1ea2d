package ops

import (
	"context"
	"errors"
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

// TestGlobAnswersAsPathMatch: the compiled glob gives path.Match's answer
// for every valid pattern, on random patterns and names over a small
// alphabet (so that they match often) and on hand-picked cases.
func TestGlobAnswersAsPathMatch(t *testing.T) {
	cases := [][2]string{
		{"a*b", "axxb"}, {"a*b", "axxbc"}, {"*", ""}, {"*x", "x"}, {"?", ""}, {"?", "é"}, {"[é-ü]x", "ñx"},
		{"[^a-c]", "d"}, {"[^a-c]", "b"}, {`\*a`, "*a"}, {`[\]]`, "]"}, {"a*b*c", "abcbc"}, {"*a*", "bab"},
		{"t-*-emails", "t-42-emails"}, {"t-*-emails", "t-42-emails-x"}, {"[a-]", "-"}, {"**a", "ba"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	atoms := []string{"a", "b", "é", "*", "?", "[ab]", "[^a]", "[a-é]", `\*`, "-"}
	letters := []string{"a", "b", "é", "*", "-", "c"}
	for i := 0; i < 20000; i++ {
		var p, n strings.Builder
		for j := r.IntN(7); j >= 0; j-- {
			p.WriteString(atoms[r.IntN(len(atoms))])
		}
		for j := r.IntN(9); j > 0; j-- {
			n.WriteString(letters[r.IntN(len(letters))])
		}
		cases = append(cases, [2]string{p.String(), n.String()})
	}
	for _, c := range cases {
		want, err := path.Match(c[0], c[1])
		if err != nil {
			continue
		}
		if have := compileGlob(c[0]).match(c[1]); have != want {
			t.Fatalf("pattern %q on %q: want %v (path.Match), have %v", c[0], c[1], want, have)
		}
	}
}

// TestMatchBounds: a pattern past MaxMatchBytes or MaxMatchWildcards is
// refused as bad input naming the limit; one within them is accepted.
func TestMatchBounds(t *testing.T) {
	for _, c := range []struct {
		m    Match
		want string
	}{
		{Match(strings.Repeat("a", MaxMatchBytes+1)), "at most 256"},
		{Match(strings.Repeat("a*", MaxMatchWildcards+1)), "wildcards"},
		{Match(strings.Repeat("?", MaxMatchWildcards+1)), "wildcards"},
	} {
		err := c.m.Validate()
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate of %d bytes: want bad input saying %q, have %v", len(c.m), c.want, err)
		}
	}
	if err := Match(strings.Repeat("a", MaxMatchBytes-MaxMatchWildcards) + strings.Repeat("*", MaxMatchWildcards)).Validate(); err != nil {
		t.Errorf("a pattern at the limits: want accepted, have %v", err)
	}
}

// TestFilterEndsAtTheDeadline: a match whose context has ended stops with
// ErrMatchDeadline instead of matching on.
func TestFilterEndsAtTheDeadline(t *testing.T) {
	o := &core{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := o.filter(ctx, "a*", []string{"ab", "ac"})
	if !errors.Is(err, ErrMatchDeadline) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want ErrMatchDeadline wrapping the context's error, have %v", err)
	}
}
