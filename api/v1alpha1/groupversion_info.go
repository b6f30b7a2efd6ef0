/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package v1alpha1 contains the laxity API, group laxity.dev, version
// v1alpha1: ElasticSchedule (an elastic executor pool and how to plan for it),
// IntermittentQuery (a windowed query processed in batches before its
// deadline), RecurringQuery (a query on every window of a cron schedule,
// each window an IntermittentQuery) and TenantPolicy (an administrator's
// grant of shared things to namespaces).
//
// Decimal numbers are strings holding a Go-parsable float ("0.25", "2e-8")
// because Kubernetes APIs avoid floats; durations are Go duration strings
// ("90s", "1h30m"); instants are RFC 3339 ("2026-12-01T00:00:00Z"). The API
// server validates every field declaratively (OpenAPI and CEL rules in the
// generated CRDs), so this package holds types, markers and constants only.
//
// The CEL rules use two-variable comprehensions and so need Kubernetes 1.32
// or newer.
//
// +kubebuilder:object:generate=true
// +groupName=laxity.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every object in this package.
	GroupVersion = schema.GroupVersion{Group: "laxity.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Go types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds and their lists. The API package keeps
// to apimachinery so that clients can import it cheaply.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ElasticSchedule{}, &ElasticScheduleList{},
		&IntermittentQuery{}, &IntermittentQueryList{},
		&RecurringQuery{}, &RecurringQueryList{},
		&TenantPolicy{}, &TenantPolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
