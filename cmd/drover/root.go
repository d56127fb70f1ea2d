package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/queue"
)

// app is one invocation of the binary: its streams, environment and the
// global flags. Nothing in this package reads os.Stdout or os.Environ
// directly, so that commands can be run in process by tests.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            []string

	configPath string
	output     string
	sets       []string
	// flagKeys maps a setting flag to the setting it sets. Keyed by the
	// flag, not its name: --admin-addr sets worker.admin_addr under
	// `worker` and scheduler.admin_addr under `scheduler`.
	flagKeys map[*pflag.Flag]string
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, env []string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, env: env, flagKeys: map[*pflag.Flag]string{}}
}

// execute runs the command line and returns the exit code, printing the
// error (if any) to stderr.
func execute(args []string, a *app) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// go-redis prints its own pool noise to stderr; a command says what
	// failed in one "drover:" line. Workers and schedulers send the
	// driver's lines to their log at debug level (openStore).
	queue.SetDriverLogger(hclog.NewNullLogger())
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		code := exitCode(err)
		fmt.Fprintln(a.stderr, errorLine(err))
		if code == exitUsage && isCobraUsage(err) {
			fmt.Fprintf(a.stderr, "Run 'drover --help' or 'drover <command> --help' for usage.\n")
		}
		return code
	}
	return exitOK
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "drover",
		Short: "A distributed, queue-partitioned worker runtime",
		Long: `Drover runs tasks from Redis queues on a fleet of workers that coordinate
through ZooKeeper: every queue is owned by exactly one worker at a time, each
task runs in its own process, and an elected scheduler feeds periodic jobs.

Settings come from a file (-c drover.hcl), DROVER_* environment variables and
flags; flags win over the environment, the environment over the file.

Exit codes: 0 ok, 1 error, 2 usage or invalid configuration, 3 not found,
4 unreachable (ZooKeeper, Redis or a worker did not answer), 5 refused by the
cluster's state (exists, owned, conflict).`,
		Example: `  drover dev --workers 3 --demo          # a local fleet to try things out
  drover worker -c /etc/drover/drover.hcl
  drover ctl status
  drover ctl enqueue emails send --args '{"to":"a@example.com"}'`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	pf := root.PersistentFlags()
	pf.StringVarP(&a.configPath, "config", "c", "", "configuration file (default: $DROVER_CONFIG, else ./drover.hcl when present)")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	pf.StringArrayVar(&a.sets, "set", nil, "set any setting, key=value (repeatable; list them with: drover config keys)")
	a.settingFlag(pf, "cluster", "cluster", "cluster name")
	a.settingFlag(pf, "zookeeper", "zookeeper.servers", "ZooKeeper servers, comma-separated host:port")
	a.settingFlag(pf, "zk-root", "zookeeper.root", "ZooKeeper root path (default /drover/<cluster>)")
	a.settingFlag(pf, "connect-timeout", "zookeeper.connect_timeout", "give up connecting to ZooKeeper after this long")
	a.settingFlag(pf, "redis", "redis.addrs", "Redis addresses, comma-separated host:port")
	a.settingFlag(pf, "redis-prefix", "redis.prefix", "Redis key prefix")
	a.settingFlag(pf, "log-level", "log.level", "log level: trace, debug, info, warn, error")
	_ = root.RegisterFlagCompletionFunc("output", fixedCompletion("table", "json"))
	_ = root.RegisterFlagCompletionFunc("log-level", fixedCompletion(config.LogLevels...))
	_ = root.RegisterFlagCompletionFunc("set", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		keys := config.Keys()
		for i, k := range keys {
			keys[i] = k + "="
		}
		return keys, cobra.ShellCompDirectiveNoSpace
	})
	_ = root.MarkPersistentFlagFilename("config", "hcl", "json")

	root.AddCommand(a.workerCommand(), a.schedulerCommand(), a.ctlCommand(), a.configCommand(), a.devCommand(), a.scalerCommand(), a.webCommand())
	return root
}

// settingFlag adds a string flag that sets the setting key when given.
func (a *app) settingFlag(fs *pflag.FlagSet, name, key, usage string) {
	fs.String(name, "", usage+" ("+config.EnvName(key)+")")
	a.flagKeys[fs.Lookup(name)] = key
}

// settingFlagP is settingFlag with a shorthand.
func (a *app) settingFlagP(fs *pflag.FlagSet, name, short, key, usage string) {
	fs.StringP(name, short, "", usage+" ("+config.EnvName(key)+")")
	a.flagKeys[fs.Lookup(name)] = key
}

// loadConfig returns the effective configuration for cmd: the file, the
// environment, then the setting flags given on cmd's command line.
func (a *app) loadConfig(cmd *cobra.Command) (*config.Config, error) {
	var settings []config.Setting
	for _, s := range a.sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, usagef("--set %q: want key=value", s)
		}
		settings = append(settings, config.Setting{Key: k, Value: v, Flag: "--set " + k})
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if key, ok := a.flagKeys[f]; ok {
			settings = append(settings, config.Setting{Key: key, Value: f.Value.String(), Flag: "--" + f.Name})
		}
	})
	host, _ := os.Hostname()
	return config.Load(a.resolveConfigPath(), a.env, settings, host)
}

// processRun is the RunE of a long-running process (worker, scheduler,
// scaler, web): it loads the configuration and runs run with the
// command's context, which SIGINT and SIGTERM cancel.
func (a *app) processRun(run func(ctx context.Context, cfg *config.Config) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		cfg, err := a.loadConfig(cmd)
		if err != nil {
			return err
		}
		return run(cmd.Context(), cfg)
	}
}

// resolveConfigPath returns -c, else $DROVER_CONFIG, else ./drover.hcl when
// it exists, else "" (no file).
func (a *app) resolveConfigPath() string {
	if a.configPath != "" {
		return a.configPath
	}
	if p := a.getenv("DROVER_CONFIG"); p != "" {
		return p
	}
	if _, err := os.Stat("drover.hcl"); err == nil {
		return "drover.hcl"
	}
	return ""
}

func (a *app) getenv(name string) string {
	for _, kv := range a.env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// jsonOutput reports whether -o json was asked for; it rejects other
// formats than table and json.
func (a *app) jsonOutput() (bool, error) {
	switch a.output {
	case "json":
		return true, nil
	case "table", "":
		return false, nil
	}
	return false, usagef("-o %q: want table or json", a.output)
}

// Argument validators that report usage errors (exit code 2).
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: want %s, have %d argument(s)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

func rangeArgs(min, max int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return usagef("%s: want %s, have %d argument(s)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, have %q", cmd.CommandPath(), args)
	}
	return nil
}

// groupCommand is a command that only holds subcommands: an unknown
// subcommand is a usage error.
func groupCommand(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				// The suggestions cobra gives under the root command (its
				// default distance is 2).
				hint := ""
				if cmd.SuggestionsMinimumDistance <= 0 {
					cmd.SuggestionsMinimumDistance = 2
				}
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					hint = "; did you mean " + strings.Join(s, " or ") + "?"
				}
				return usagef("unknown command %q for %q%s", args[0], cmd.CommandPath(), hint)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
