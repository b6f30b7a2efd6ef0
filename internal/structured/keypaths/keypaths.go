// Package keypaths lists the keys of a JSON or YAML document in the order
// its text has them, for tests that hold two renderings of one document to
// the same key order.
package keypaths

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// JSON is every key of doc, as its path (keys joined by sep; the elements
// of an array share their array's path), in the order the text has them.
func JSON(doc []byte, sep string) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var keys []string
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := k.(string)
				if !ok {
					return fmt.Errorf("keypaths: a key that is not a string: %v", k)
				}
				keys = append(keys, path+key)
				if err := walk(path + key + sep); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for dec.More() {
				if err := walk(path); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	return keys, walk("")
}

// YAML is JSON for a YAML document, read as a node tree, which keeps the
// order of its keys.
func YAML(doc []byte, sep string) ([]string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	return Node(&root, sep), nil
}

// Node is YAML for a node tree already read.
func Node(root *yaml.Node, sep string) []string {
	var keys []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				keys = append(keys, path+n.Content[i].Value)
				walk(n.Content[i+1], path+n.Content[i].Value+sep)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		}
	}
	walk(root, "")
	return keys
}
