package main

import (
	"strings"
	"testing"
)

func TestRuleFile(t *testing.T) {
	const rule = `---
# Source: laxity/templates/prometheusrule.yaml
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: laxity
spec:
  groups:
    - name: laxity
      rules:
        - alert: A
          expr: vector(1)
`
	got, err := ruleFile([]byte(rule))
	if err != nil {
		t.Fatal(err)
	}
	want := "groups:\n- name: laxity\n  rules:\n  - alert: A\n    expr: vector(1)\n"
	if string(got) != want {
		t.Errorf("rule file:\n%s\nwant:\n%s", got, want)
	}

	for _, tc := range []struct{ name, input, want string }{
		{"nothing", "", "0 YAML documents"},
		{"two documents", rule + "---\n" + rule, "2 YAML documents"},
		{"another kind", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", `"v1" "ConfigMap"`},
		{"no groups", "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: []}\n", "no rule groups"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ruleFile([]byte(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
