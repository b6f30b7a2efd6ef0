// Command promrules turns the Prometheus Operator PrometheusRule a chart
// renders into the rule file Prometheus and promtool read: the object's
// spec.groups under a top-level groups key, nothing else.
//
// Usage:
//
//	helm template ... --show-only templates/prometheusrule.yaml | promrules > rules.yaml
//
// The input must hold exactly one document, a monitoring.coreos.com/v1
// PrometheusRule with at least one group; anything else is an error, so
// that a render that lost its rules fails the rule tests instead of passing
// them with none.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err == nil {
		data, err = ruleFile(data)
	}
	if err == nil {
		_, err = os.Stdout.Write(data)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promrules:", err)
		os.Exit(1)
	}
}

// prometheusRule is the part of a PrometheusRule the rule file takes.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Groups []any `json:"groups"`
	} `json:"spec"`
}

// ruleFile is the rule file of the one PrometheusRule in a YAML stream.
func ruleFile(stream []byte) ([]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the input: %w", err)
		}
		if len(bytes.TrimSpace(doc)) > 0 && string(bytes.TrimSpace(doc)) != "---" {
			docs = append(docs, doc)
		}
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("the input holds %d YAML documents, want the one PrometheusRule", len(docs))
	}
	var rule prometheusRule
	if err := yaml.Unmarshal(docs[0], &rule); err != nil {
		return nil, fmt.Errorf("decoding the PrometheusRule: %w", err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("the input is a %q %q, not a monitoring.coreos.com/v1 PrometheusRule", rule.APIVersion, rule.Kind)
	}
	if len(rule.Spec.Groups) == 0 {
		return nil, errors.New("the PrometheusRule has no rule groups")
	}
	return yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
}
