// Package structured prints values as JSON or YAML with the same keys in
// the same order: YAML is written from the JSON encoding's tokens, never
// through a map, whose keys a YAML library would sort.
package structured

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Write prints v as JSON (format "json") or YAML ("yaml"). Both come from
// v's JSON encoding, so that they have the same fields, names and key
// order.
func Write(out io.Writer, format string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	switch format {
	case "json":
		_, err := out.Write(buf.Bytes())
		return err
	case "yaml":
		data, err := YAML(buf.Bytes())
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	default:
		return fmt.Errorf("unknown output format %q", format)
	}
}

// YAML turns one JSON document into YAML with the keys of every object in
// the order the JSON has them. Numbers keep their JSON text, and
// strings are quoted wherever a YAML 1.1 or 1.2 reader would take them for
// something else ("no", "1.0", "null").
func YAML(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := yamlNode(dec)
	if err != nil {
		return nil, fmt.Errorf("converting JSON to YAML: %w", err)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	// "- " counts as indentation, as kubectl prints lists.
	enc.CompactSeqIndent()
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing YAML: %w", err)
	}
	return out.Bytes(), nil
}

// yamlNode reads the next JSON value from dec as a YAML node.
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		kind, end := yaml.MappingNode, json.Delim('}')
		if t == '[' {
			kind, end = yaml.SequenceNode, ']'
		}
		n := &yaml.Node{Kind: kind}
		for dec.More() {
			if kind == yaml.MappingNode {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, stringNode(key.(string)))
			}
			v, err := yamlNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if tok, err := dec.Token(); err != nil || tok != end {
			return nil, errors.Join(fmt.Errorf("expected %q", end), err)
		}
		if len(n.Content) == 0 {
			// [] and {} rather than a block with nothing in it.
			n.Style = yaml.FlowStyle
		}
		return n, nil
	case string:
		return stringNode(t), nil
	case json.Number:
		// Untagged: every JSON number reads as a YAML number, and a tag
		// would be printed whenever the YAML library reads the text as
		// another kind of number than the tag (an integer too large for
		// 64 bits reads as a float).
		return &yaml.Node{Kind: yaml.ScalarNode, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// stringNode is s as a YAML string, quoted as the YAML library quotes a Go
// string: wherever a reader would take it for a number, a boolean (YAML
// 1.1's too) or null.
func stringNode(s string) *yaml.Node {
	var n yaml.Node
	if err := n.Encode(s); err != nil {
		// Encoding a Go string does not fail; keep the string quoted
		// should it ever.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
	}
	return &n
}
