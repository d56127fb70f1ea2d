package main

import (
	"errors"
	"strings"
	"testing"
)

// An error line names the program once: a usage error that starts with the
// command's path printed "drover: drover ctl enqueue: want …".
func TestErrorLineNamesTheProgramOnce(t *testing.T) {
	for err, want := range map[error]string{
		usagef("drover ctl enqueue: want <queue> <task>, have 0 argument(s)"): "drover ctl enqueue: want <queue> <task>, have 0 argument(s)",
		errors.New("revoke x: drover: not found"):                             "drover: revoke x: not found",
		errors.New("drover: not found"):                                       "drover: not found",
	} {
		if got := errorLine(err); got != want {
			t.Errorf("errorLine(%q) = %q, want %q", err, got, want)
		}
	}
}

// TestCtlErrorsAreOneClearLine: a failed command prints one "drover:" line
// that says what failed, without the driver's noise, a repeated prefix or
// a hint at a flag the command does not have.
func TestCtlErrorsAreOneClearLine(t *testing.T) {
	c := newCluster(t)
	c.ok("ctl", "queue", "create", "q")

	t.Run("unreachable Redis", func(t *testing.T) {
		// go-redis printed "redis: … pool.go:770 …" four times first.
		r := runDrover(t, withEnv(c.env, "DROVER_REDIS_ADDRS="+closedAddr(t)), "", "ctl", "dead", "ls", "q")
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if r.code != exitUnreachable || len(lines) != 1 || !strings.HasPrefix(lines[0], "drover: reach Redis") {
			t.Fatalf("want exit 4 and one line \"drover: reach Redis …\", have:\n%s", r)
		}
	})

	t.Run("no repeated prefix", func(t *testing.T) {
		// It said "drover: revoke … : drover: not found".
		r := c.fails(exitNotFound, []string{"not found"}, "ctl", "revoke", "q", "01JD3Q8ZQ3V6YB5W0J7J8F2K4M")
		if n := strings.Count(r.stderr, "drover:"); n != 1 {
			t.Fatalf("want \"drover:\" once, have %d times:\n%s", n, r)
		}
		r = c.fails(exitNotFound, []string{`queue "nosuch"`}, "ctl", "enqueue", "nosuch", "t")
		if n := strings.Count(r.stderr, "drover:"); n != 1 {
			t.Fatalf("want \"drover:\" once, have %d times:\n%s", n, r)
		}
	})

	t.Run("--force only where it exists", func(t *testing.T) {
		for _, args := range [][]string{
			{"ctl", "pause", "--queue", "nosuch"},
			{"ctl", "resume", "--queue", "nosuch"},
			{"ctl", "dead", "ls", "nosuch"},
			{"ctl", "offsets", "show", "nosuch"},
			{"ctl", "offsets", "reset", "nosuch", "--to-earliest"},
			{"ctl", "revoke", "nosuch", "01JD3Q8ZQ3V6YB5W0J7J8F2K4M"},
		} {
			r := c.fails(exitNotFound, []string{"queue not found", "drover ctl queue create nosuch"}, args...)
			if strings.Contains(r.stderr, "--force") {
				t.Errorf("%s has no --force, but its error suggests it:\n%s", strings.Join(args, " "), r)
			}
		}
		for _, args := range [][]string{
			{"ctl", "enqueue", "nosuch", "t"},
			{"ctl", "schedule", "add", "s", "--queue", "nosuch", "--task", "t", "--every", "1m"},
		} {
			c.fails(exitNotFound, []string{"queue not found", "--force"}, args...)
		}
	})
}
