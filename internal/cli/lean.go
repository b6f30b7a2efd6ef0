//go:build lean

package cli

import (
	"github.com/spf13/cobra"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/planner"
)

// The lean build is the manager image's: the manager, plan and version
// commands, without the demo, the experiments and the plotting library
// (see developerCommands in dev.go).

func developerCommands() []*cobra.Command { return nil }

// writeSVG says that this build cannot draw: plan --svg needs the plotting
// library the manager image leaves out.
func writeSVG(path string, _ *laxityv1alpha1.ElasticSchedule, _ planner.Workload, _ planner.Document) error {
	return invalid("plan: --svg %s: this laxity is the manager image's, built without the plotting library; draw with the full laxity CLI (make build)", path)
}
