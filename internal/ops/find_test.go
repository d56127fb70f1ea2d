package ops

import (
	"context"
	"strings"
	"testing"
)

func TestMatchSelectsByPrefixOrPattern(t *testing.T) {
	names := []string{"acme-emails", "acme-sms", "acme2-emails", "beta-emails", "beta-sms"}
	for _, c := range []struct {
		match Match
		want  string
	}{
		{"acme-", "acme-emails,acme-sms"},
		{"acme", "acme-emails,acme-sms,acme2-emails"},
		{"*-emails", "acme-emails,acme2-emails,beta-emails"},
		{"beta-?ms", "beta-sms"},
		{"[ab]*-sms", "acme-sms,beta-sms"},
		{"zzz", ""},
		{"", ""},
		{"*", strings.Join(names, ",")},
	} {
		got, err := (&core{}).filter(context.Background(), c.match, names)
		if err != nil {
			t.Fatal(err)
		}
		if have := strings.Join(got, ","); have != c.want {
			t.Errorf("%q: want %q, have %q", c.match, c.want, have)
		}
	}
	if err := Match("[x").Validate(); !IsBadInput(err) {
		t.Errorf("[x: want bad input, have %v", err)
	}
}
