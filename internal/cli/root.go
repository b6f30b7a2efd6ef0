// Package cli is laxity's command line: one binary, one subcommand per job.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes shared by the subcommands.
const (
	exitOK = 0
	// exitInvalid is bad input: a file, object or field the user must fix.
	exitInvalid = 1
	// exitInfeasible is a valid workload no plan can meet.
	exitInfeasible = 3
)

// exitError carries a subcommand's exit code with the message to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// Run executes the command line args and returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:   "laxity",
		Short: "Intermittent query processing on an elastic Spark pool, finished before every deadline at the lowest cost",
		Long: `laxity collects the tuples of recurring analytical queries into batches,
runs each batch as a Spark job on an elastic node pool, and merges the
partial results after the window closes. It plans by simulating the whole
workload: which batch sizes, and how many nodes when.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newPlanCommand(), newManagerCommand(), newDemoCommand(), newExperimentsCommand())

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
	// Cobra's own errors: unknown commands and flags.
	fmt.Fprintf(stderr, "laxity: %v\nRun 'laxity --help' for usage.\n", err)
	return exitInvalid
}
