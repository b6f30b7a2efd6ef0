//go:build !lean

package cli

import "github.com/spf13/cobra"

// developerCommands are the commands of the full laxity CLI that the
// manager image leaves out (built with the lean tag): the demo, which
// starts a control plane, and the experiments, which draw with a plotting
// library. Neither is needed to run the operator, and together they make
// up most of the binary.
func developerCommands() []*cobra.Command {
	return []*cobra.Command{newDemoCommand(), newExperimentsCommand()}
}
