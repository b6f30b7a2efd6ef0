// Package samples embeds the sample workloads, so that `laxity demo` runs
// one without a checkout.
package samples

import "embed"

// FS holds the sample manifests (*.yaml).
//
//go:embed *.yaml
var FS embed.FS

// Demo is the sample `laxity demo` runs when given no workload.
const Demo = "tpch.yaml"
