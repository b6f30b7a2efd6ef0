//go:build !lean

package cli

import "github.com/spf13/cobra"

// developerCommands are the commands of the full laxity CLI that the
// manager image leaves out (it is built with the lean tag): the demo,
// which starts a local control plane, and the experiments, which draw with
// a plotting library. Neither is needed to run the operator.
func developerCommands() []*cobra.Command {
	return []*cobra.Command{newDemoCommand(), newExperimentsCommand()}
}
