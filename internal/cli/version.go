package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/laxity-dev/laxity/internal/structured"
	"github.com/laxity-dev/laxity/internal/version"
)

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print laxity's version, the source revision it was built from and the Go version that built it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeVersion(cmd.OutOrStdout(), output, version.Get())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

func writeVersion(out io.Writer, format string, v version.Info) error {
	switch format {
	case "text":
		_, err := io.WriteString(out, versionText(v))
		return err
	case "json", "yaml":
		return structured.Write(out, format, v)
	default:
		return &usageError{err: fmt.Errorf("version: -o must be text, json or yaml, got %q", format)}
	}
}

// versionText is what `laxity version` and `laxity --version` print.
func versionText(v version.Info) string {
	revision := v.Revision
	if revision == "" {
		revision = "unknown"
	}
	return fmt.Sprintf("laxity %s\nrevision: %s\ngo: %s\n", v.Version, revision, v.GoVersion)
}
