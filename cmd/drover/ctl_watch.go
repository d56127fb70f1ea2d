package main

import (
	"bytes"
	"time"

	"github.com/spf13/cobra"
)

// withWatch adds --watch and --interval to a command: with --watch its body
// runs again every interval, the screen cleared before each run, until
// Ctrl-C. A run that fails is shown and the watch goes on.
func (a *app) withWatch(cmd *cobra.Command) *cobra.Command {
	var (
		watch    bool
		interval time.Duration
	)
	f := cmd.Flags()
	f.BoolVarP(&watch, "watch", "w", false, "run again every --interval until Ctrl-C")
	f.DurationVar(&interval, "interval", 2*time.Second, "how often --watch runs the command")
	body := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !watch {
			return body(c, args)
		}
		if interval < 100*time.Millisecond {
			return usagef("--interval %s: want at least 100ms", interval)
		}
		out := a.stdout
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			var buf bytes.Buffer
			a.stdout = &buf
			err := body(c, args)
			a.stdout = out
			out.Write([]byte("\x1b[H\x1b[2J")) // home, clear
			out.Write([]byte(time.Now().Format("15:04:05") + "  every " + interval.String() + ", Ctrl-C to stop\n\n"))
			out.Write(buf.Bytes())
			if err != nil {
				out.Write([]byte("error: " + err.Error() + "\n"))
			}
			select {
			case <-c.Context().Done():
				return nil
			case <-t.C:
			}
		}
	}
	return cmd
}

// withSubcommands adds subs to cmd and returns it.
func withSubcommands(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
	return cmd
}
