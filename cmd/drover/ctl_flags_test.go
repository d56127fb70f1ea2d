package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The shared ctl flags refuse a bad value while the flags are parsed,
// naming the flag, and keep a good one (a given 0 is not "not given").
func TestCtlFlagsParse(t *testing.T) {
	newSet := func() (*pflag.FlagSet, func() string) {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		args := argsFlag(f, "")
		at := atFlag(f, "")
		in := durationFlag(f, "in", 0, "90s", "")
		every := durationFlag(f, "every", time.Second, "30s", "")
		pg := pageFlags(f, 10, "", "")
		return f, func() string {
			return strings.Join([]string{string(*args), at.UTC().Format(time.RFC3339), in.String(), every.String(),
				strings.TrimSpace(strings.Repeat("x", pg.limit))}, "|")
		}
	}
	for _, tc := range []struct {
		argv []string
		err  string // "" for none
		want string
	}{
		{nil, "", "|0001-01-01T00:00:00Z|||xxxxxxxxxx"},
		{[]string{"--args", `{"a":1}`, "--at", "2030-01-02T03:04:05Z", "--in", "0", "--every", "1m", "--limit", "2"}, "",
			`{"a":1}|2030-01-02T03:04:05Z|0s|1m0s|xx`},
		{[]string{"--args", `{"a":`}, `"--args" flag: not valid JSON`, ""},
		{[]string{"--at", "tomorrow"}, `"--at" flag: want RFC 3339`, ""},
		{[]string{"--in", "-5m"}, `"--in" flag: want a duration ≥ 0 like 90s`, ""},
		{[]string{"--every", "500ms"}, `"--every" flag: want a duration ≥ 1s like 30s`, ""},
	} {
		f, got := newSet()
		err := f.Parse(tc.argv)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: want no error, have %v", tc.argv, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: want an error with %q, have %v", tc.argv, tc.err, err)
		case tc.err == "" && got() != tc.want:
			t.Errorf("%q: want %s, have %s", tc.argv, tc.want, got())
		}
	}
	for _, tc := range []struct {
		p   page
		err string
	}{{page{1, 0}, ""}, {page{0, 0}, "--limit: want ≥ 1, have 0"}, {page{5, -1}, "--offset: want ≥ 0, have -1"}} {
		err := tc.p.check()
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("page %+v: want error %q, have %v", tc.p, tc.err, err)
		}
	}
}
