package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// writeStructured prints values as JSON or YAML: one value as itself,
// several as a list, so that both formats have the same shape.
func writeStructured[T any](out io.Writer, format string, values []T) error {
	var v any = values
	if len(values) == 1 {
		v = values[0]
	}
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		// Through JSON, so that YAML has exactly the JSON fields and names.
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	default:
		return fmt.Errorf("unknown output format %q", format)
	}
}
