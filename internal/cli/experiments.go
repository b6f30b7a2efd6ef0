//go:build !lean

package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/laxity-dev/laxity/internal/experiments"
)

func newExperimentsCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "experiments [-o FILE]",
		Short: "Run the planner experiments (cost grids, baselines, variable rates, run-time noise) on the TPC-H-shaped and Yahoo-like samples, as Markdown next to the numbers published for the same method",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out != "" {
				// Fail before the minutes the experiments take, not after.
				if st, err := os.Stat(filepath.Dir(out)); err != nil || !st.IsDir() {
					return invalid("experiments: -o %s: the directory %s does not exist", out, filepath.Dir(out))
				}
			}
			var doc bytes.Buffer
			figures, err := experiments.Write(&doc)
			if err != nil {
				return fmt.Errorf("experiments: %w", err)
			}
			if out == "" {
				_, err := cmd.OutOrStdout().Write(doc.Bytes())
				return err
			}
			// The report shows the figures from its own directory.
			for name, svg := range figures {
				if err := os.WriteFile(filepath.Join(filepath.Dir(out), name), svg, 0o666); err != nil {
					return invalid("experiments: -o: %v", err)
				}
			}
			if err := os.WriteFile(out, doc.Bytes(), 0o666); err != nil {
				return invalid("experiments: -o: %v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the Markdown to this file, and its figures (margin.svg, variable-rates.svg) beside it, instead of standard output")
	return cmd
}
