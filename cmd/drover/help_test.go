package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasExamples: docs/cli.md promises that every command's
// --help has examples (`ctl offsets --help` had none).
func TestEveryCommandHasExamples(t *testing.T) {
	root := newApp(strings.NewReader(""), io.Discard, io.Discard, nil).rootCommand()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "__complete" || c.Name() == "__completeNoDesc" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: want examples in --help, have none", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
