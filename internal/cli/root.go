// Package cli is laxity's command line: one binary, one subcommand per job.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/laxity-dev/laxity/internal/version"
)

// Exit codes shared by the subcommands.
const (
	exitOK = 0
	// exitInvalid is bad input: a file, object or field the user must fix.
	exitInvalid = 1
	// exitInfeasible is a valid workload no plan can meet.
	exitInfeasible = 3
	// exitBudget is a schedule whose plan took longer than its budget
	// (laxity plan --plan-timeout).
	exitBudget = 4
)

// exitError carries a subcommand's exit code with the message to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// invalid is bad input, exit code exitInvalid, with its message.
func invalid(format string, args ...any) error {
	return &exitError{code: exitInvalid, err: fmt.Errorf(format, args...)}
}

// usageError is a mistake in the command line itself: an unknown command,
// flag or flag value, or an argument where none is taken. Only these end
// with the hint to read --help; an error met while running does not.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageArgs marks the errors of a positional-argument check as usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{err: err}
		}
		return nil
	}
}

// Streams are the standard streams a command line reads and writes.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// PluginName is the file name under which kubectl finds laxity as a plugin:
// `kubectl laxity plan` runs `kubectl-laxity plan`.
const PluginName = "kubectl-laxity"

// Run executes the command line args, reading standard input from os.Stdin,
// and returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	return Execute("laxity", args, Streams{In: os.Stdin, Out: stdout, Err: stderr})
}

// Execute executes the command line args of the program named program (the
// base name of its path, which says whether kubectl runs it as a plugin)
// and returns the process exit code.
func Execute(program string, args []string, streams Streams) int {
	stdout, stderr := streams.Out, streams.Err
	plugin := strings.TrimSuffix(program, ".exe") == PluginName
	root := &cobra.Command{
		Use:   "laxity",
		Short: "Intermittent query processing on an elastic Spark pool, finished before every deadline at the lowest cost",
		Long: `laxity collects the tuples of recurring analytical queries into batches,
runs each batch as a Spark job on an elastic node pool, and merges the
partial results after the window closes. It plans by simulating the whole
workload: which batch sizes, and how many nodes when.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what the version command prints, as text.
		Version: versionText(version.Get()),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	if plugin {
		// Help and usage then name the command as it is typed.
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl laxity"}
	}
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newPlanCommand(plugin), newManagerCommand(), newVersionCommand())
	root.AddCommand(developerCommands()...)
	for _, sub := range root.Commands() {
		if sub.Args != nil {
			sub.Args = usageArgs(sub.Args)
		}
	}

	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var exit *exitError
	if errors.As(err, &exit) {
		if exit.code != exitInfeasible {
			fmt.Fprintf(stderr, "laxity: %v\n", exit.err)
		}
		return exit.code
	}
	var usage *usageError
	// Cobra reports an unknown subcommand with an untyped error.
	if errors.As(err, &usage) || strings.HasPrefix(err.Error(), "unknown command ") {
		fmt.Fprintf(stderr, "laxity: %v\nRun '%s --help' for usage.\n", err, root.DisplayName())
		return exitInvalid
	}
	// An error met while running: the command line was fine, so no hint.
	fmt.Fprintf(stderr, "laxity: %v\n", err)
	return exitInvalid
}
