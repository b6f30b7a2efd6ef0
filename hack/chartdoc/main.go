// Command chartdoc writes the values table of a Helm chart's README from the
// comments of its values.yaml, and checks that the README is up to date.
//
// A value is documented by a comment block directly above its key whose
// first line starts with "# --"; the block's text is the value's meaning.
// A documented key whose value is a mapping is one row (its default shown
// whole); an undocumented mapping is a group, whose keys are documented one
// by one. Every other key must be documented: an undocumented value is an
// error naming it, so that nothing a user may set goes unexplained.
//
// Usage:
//
//	chartdoc [-check] CHART_DIR
//
// The table replaces what lies between the lines "<!-- values:begin -->" and
// "<!-- values:end -->" of CHART_DIR/README.md. With -check nothing is
// written, and the exit status is 1 when the README differs from what would
// be written.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Markers around the generated table in the README.
const (
	beginMarker = "<!-- values:begin -->"
	endMarker   = "<!-- values:end -->"
)

// docPrefix starts the first line of a value's documentation comment.
const docPrefix = "# --"

// value is one row of the table.
type value struct {
	Path, Default, Description string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("chartdoc", flag.ContinueOnError)
	flags.SetOutput(stderr)
	check := flags.Bool("check", false, "only check that README.md is up to date; exit 1 if it is not")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: chartdoc [-check] CHART_DIR")
		return 2
	}
	dir := flags.Arg(0)
	readmePath := filepath.Join(dir, "README.md")
	valuesYAML, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		fmt.Fprintln(stderr, "chartdoc:", err)
		return 1
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		fmt.Fprintln(stderr, "chartdoc:", err)
		return 1
	}
	values, err := parseValues(valuesYAML)
	if err != nil {
		fmt.Fprintf(stderr, "chartdoc: %s: %v\n", filepath.Join(dir, "values.yaml"), err)
		return 1
	}
	updated, err := replaceTable(readme, renderTable(values))
	if err != nil {
		fmt.Fprintf(stderr, "chartdoc: %s: %v\n", readmePath, err)
		return 1
	}
	if bytes.Equal(updated, readme) {
		return 0
	}
	if *check {
		fmt.Fprintf(stderr, "chartdoc: %s is out of date with values.yaml: run `make chart-docs`\n", readmePath)
		return 1
	}
	if err := os.WriteFile(readmePath, updated, 0o644); err != nil {
		fmt.Fprintln(stderr, "chartdoc:", err)
		return 1
	}
	fmt.Fprintf(stdout, "chartdoc: wrote %d values into %s\n", len(values), readmePath)
	return 0
}

// parseValues reads the documented values of a values.yaml, in file order.
func parseValues(data []byte) ([]value, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("no values")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("the values are not a mapping")
	}
	var out []value
	if err := walk(root, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

func walk(mapping *yaml.Node, prefix string, out *[]value) error {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		key, val := mapping.Content[i], mapping.Content[i+1]
		path := prefix + key.Value
		description, documented := documentation(key.HeadComment)
		switch {
		case documented:
			def, err := defaultOf(val)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			*out = append(*out, value{Path: path, Default: def, Description: description})
		case val.Kind == yaml.MappingNode && len(val.Content) > 0:
			if err := walk(val, path+".", out); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s (line %d) has no %q comment above it: document it", path, key.Line, docPrefix)
		}
	}
	return nil
}

// documentation is the text of the comment block from its last line that
// starts with docPrefix on, joined into one line; documented is false when
// no line starts with docPrefix.
func documentation(comment string) (text string, documented bool) {
	lines := strings.Split(comment, "\n")
	start := -1
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), docPrefix) {
			start = i
		}
	}
	if start < 0 {
		return "", false
	}
	var words []string
	for i, line := range lines[start:] {
		line = strings.TrimSpace(line)
		if i == 0 {
			line = strings.TrimPrefix(line, docPrefix)
		} else {
			line = strings.TrimPrefix(line, "#")
		}
		if line = strings.TrimSpace(line); line != "" {
			words = append(words, line)
		}
	}
	return strings.Join(words, " "), true
}

// defaultOf is the value as compact JSON, the way `--set-json` takes it.
func defaultOf(n *yaml.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

func renderTable(values []value) string {
	var b strings.Builder
	b.WriteString("| value | default | meaning |\n|---|---|---|\n")
	for _, v := range values {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", v.Path, cell(v.Default), cell(v.Description))
	}
	return b.String()
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// replaceTable puts table between the markers of readme.
func replaceTable(readme []byte, table string) ([]byte, error) {
	text := string(readme)
	begin := strings.Index(text, beginMarker)
	end := strings.Index(text, endMarker)
	if begin < 0 || end < 0 || end < begin {
		return nil, fmt.Errorf("no %q line followed by a %q line to put the values table between", beginMarker, endMarker)
	}
	return []byte(text[:begin+len(beginMarker)] + "\n" + table + text[end:]), nil
}
