package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/drover-dev/drover/internal/config"
)

func (a *app) configCommand() *cobra.Command {
	cmd := groupCommand("config", "Check the configuration and list its settings")
	cmd.Example = `  drover config check -c /etc/drover/drover.hcl
  drover config keys`
	check := &cobra.Command{
		Use:   "check",
		Short: "Print the effective configuration, or every problem with file:line and field",
		Long: `Load the configuration as 'drover worker' would (file, then DROVER_*
environment, then flags) and print it with where each value came from, or
print every problem: a value from the file is named by file:line:column and
its key, one from the environment by its variable, one from a flag by the
flag. Exits 2 when the configuration is invalid.`,
		Example: `  drover config check -c /etc/drover/drover.hcl
  DROVER_WORKER_CAPACITY=64 drover config check -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := a.jsonOutput()
			if err != nil {
				return err
			}
			cfg, err := a.loadConfig(cmd)
			var errs config.Errors
			if errors.As(err, &errs) && asJSON {
				problems := make([]map[string]string, len(errs))
				for i, e := range errs {
					problems[i] = map[string]string{"where": e.Where, "key": e.Key, "error": e.Msg}
				}
				_ = writeJSON(a.stdout, map[string]any{"valid": false, "file": a.resolveConfigPath(), "errors": problems})
				return usageError{fmt.Errorf("invalid configuration (%d problem(s))", len(errs))}
			}
			if err != nil {
				return usageError{fmt.Errorf("invalid configuration:\n%w", err)}
			}
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"valid": true, "file": cfg.File, "settings": cfg.Effective()})
			}
			src := cfg.File
			if src == "" {
				src = "no file"
			}
			fmt.Fprintf(a.stdout, "# effective configuration (%s); values not marked are defaults\n", src)
			_, err = a.stdout.Write(cfg.HCL())
			return err
		},
	}
	a.memberFlags(check)
	keys := &cobra.Command{
		Use:     "keys",
		Short:   "List every setting with its environment variable",
		Example: `  drover config keys`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := a.jsonOutput()
			if err != nil {
				return err
			}
			defaults := config.Default("<hostname>")
			eff := defaults.Effective()
			// Defaults that are derived from other settings.
			derived := map[string]any{"zookeeper.root": "/drover/<cluster>", "zookeeper.connect_timeout": "<session_timeout>"}
			for i, e := range eff {
				if v, ok := derived[e.Key]; ok {
					eff[i].Value = v
				}
			}
			if asJSON {
				out := make([]map[string]any, len(eff))
				for i, e := range eff {
					out[i] = map[string]any{"key": e.Key, "env": config.EnvName(e.Key), "default": e.Value}
				}
				return writeJSON(a.stdout, out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tENVIRONMENT\tDEFAULT")
			for _, e := range eff {
				fmt.Fprintf(tw, "%s\t%s\t%v\n", e.Key, config.EnvName(e.Key), e.Value)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(check, keys)
	return cmd
}
