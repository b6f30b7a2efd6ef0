// Package crd embeds laxity's generated CustomResourceDefinitions
// (bases/*.yaml, written by `make manifests` from api/v1alpha1), so that
// programs such as `laxity plan` validate manifests with exactly the schema
// the API server is given.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
)

// FS holds the generated CustomResourceDefinitions under bases/.
//
//go:embed bases/*.yaml
var FS embed.FS

// JSONFS holds the same CustomResourceDefinitions as JSON under json/
// (written from bases/ by `make manifests`): JSON decodes in a quarter of
// the time, and `laxity plan` decodes them on every run.
//
//go:embed json/*.json
var JSONFS embed.FS

// Files of the CustomResourceDefinitions in FS.
const (
	// ElasticSchedulesFile is the CRD of ElasticSchedule.
	ElasticSchedulesFile = "bases/laxity.dev_elasticschedules.yaml"
	// IntermittentQueriesFile is the CRD of IntermittentQuery.
	IntermittentQueriesFile = "bases/laxity.dev_intermittentqueries.yaml"
	// RecurringQueriesFile is the CRD of RecurringQuery.
	RecurringQueriesFile = "bases/laxity.dev_recurringqueries.yaml"
	// TenantPoliciesFile is the CRD of TenantPolicy.
	TenantPoliciesFile = "bases/laxity.dev_tenantpolicies.yaml"
)

// ElasticSchedules returns the ElasticSchedule CRD as YAML.
func ElasticSchedules() []byte { return mustRead(ElasticSchedulesFile) }

// IntermittentQueries returns the IntermittentQuery CRD as YAML.
func IntermittentQueries() []byte { return mustRead(IntermittentQueriesFile) }

// RecurringQueries returns the RecurringQuery CRD as YAML.
func RecurringQueries() []byte { return mustRead(RecurringQueriesFile) }

// TenantPolicies returns the TenantPolicy CRD as YAML.
func TenantPolicies() []byte { return mustRead(TenantPoliciesFile) }

// All returns every embedded CRD as YAML, ordered by file name.
func All() [][]byte { return readAll(FS, "bases/*.yaml") }

// AllJSON returns every embedded CRD as JSON, in the order of All.
func AllJSON() [][]byte { return readAll(JSONFS, "json/*.json") }

// readAll returns the files of fsys that pattern matches, ordered by name.
// Both are fixed at build time, so an error is a programming error.
func readAll(fsys embed.FS, pattern string) [][]byte {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		panic(fmt.Sprintf("listing embedded crds: %v", err))
	}
	slices.Sort(names)
	out := make([][]byte, 0, len(names))
	for _, name := range names {
		data, err := fsys.ReadFile(path.Clean(name))
		if err != nil {
			panic(fmt.Sprintf("reading embedded crd: %v", err))
		}
		out = append(out, data)
	}
	return out
}

// mustRead returns an embedded file. The files are fixed at build time, so
// a missing one is a programming error.
func mustRead(name string) []byte {
	data, err := FS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("reading embedded crd: %v", err))
	}
	return data
}
