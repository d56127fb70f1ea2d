package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// The flags that several ctl commands share, each declared and parsed
// here: a command declares only its own flags and gets these parsed. A
// value that does not parse fails while the flags are parsed, as a usage
// error (exit 2) naming the flag. The connection flags and -o are the
// root's (root.go); the queue configuration flags are ctl_queue_flags.go.

// jsonValue is a flag whose value must be JSON (--args).
type jsonValue struct{ raw json.RawMessage }

func (v *jsonValue) String() string { return string(v.raw) }
func (v *jsonValue) Type() string   { return "json" }
func (v *jsonValue) Set(s string) error {
	if !json.Valid([]byte(s)) {
		return fmt.Errorf("not valid JSON: %s", s)
	}
	v.raw = json.RawMessage(s)
	return nil
}

// argsFlag declares --args, the task's arguments as JSON; nil when not
// given.
func argsFlag(f *pflag.FlagSet, usage string) *json.RawMessage {
	v := &jsonValue{}
	f.Var(v, "args", usage)
	return &v.raw
}

// timeValue is a flag read by parseTime (--at).
type timeValue struct{ t *time.Time }

func (v timeValue) String() string {
	if v.t == nil || v.t.IsZero() {
		return ""
	}
	return v.t.Format(time.RFC3339)
}
func (v timeValue) Type() string { return "time" }
func (v timeValue) Set(s string) error {
	t, err := parseTime(s)
	if err != nil {
		return err
	}
	*v.t = t
	return nil
}

// atFlag declares --at, a time in RFC 3339 or local YYYY-MM-DD HH:MM[:SS];
// the zero time when not given.
func atFlag(f *pflag.FlagSet, usage string) *time.Time {
	t := new(time.Time)
	f.Var(timeValue{t}, "at", usage)
	return t
}

// durationValue is a duration flag with a least value; it remembers
// whether it was given (a given 0 differs from none).
type durationValue struct {
	d       time.Duration
	given   bool
	least   time.Duration
	example string
}

func (v *durationValue) String() string {
	if !v.given {
		return ""
	}
	return v.d.String()
}
func (v *durationValue) Type() string { return "duration" }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < v.least {
		least := v.least.String()
		if v.least == 0 {
			least = "0"
		}
		return fmt.Errorf("want a duration ≥ %s like %s", least, v.example)
	}
	v.d, v.given = d, true
	return nil
}

// durationFlag declares a duration flag of at least least (example shows
// good values in the error); given reports whether it was on the command
// line.
func durationFlag(f *pflag.FlagSet, name string, least time.Duration, example, usage string) *durationValue {
	v := &durationValue{least: least, example: example}
	f.Var(v, name, usage)
	return v
}

// keepPausedFlag declares --keep-paused of the commands that resolve a
// parked queue.
func keepPausedFlag(f *pflag.FlagSet) *bool {
	return f.Bool("keep-paused", false, "leave the queue paused (resume it later with 'drover ctl resume')")
}

// page is --limit and --offset of the listing commands.
type page struct{ limit, offset int }

// pageFlags declares --limit (default limit) and --offset.
func pageFlags(f *pflag.FlagSet, limit int, limitUsage, offsetUsage string) *page {
	p := &page{}
	f.IntVar(&p.limit, "limit", limit, limitUsage)
	f.IntVar(&p.offset, "offset", 0, offsetUsage)
	return p
}

// check refuses a page that would list nothing or start before the
// first: checked, not silently empty (--limit 0 listed nothing).
func (p *page) check() error {
	if p.limit < 1 {
		return usagef("--limit: want ≥ 1, have %d", p.limit)
	}
	if p.offset < 0 {
		return usagef("--offset: want ≥ 0, have %d", p.offset)
	}
	return nil
}

// readFileFlag reads the file of -f (- for stdin); a failure is a usage
// error.
func readFileFlag(path string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usagef("-f: %v", err)
	}
	return data, nil
}
