// Package manifest reads laxity manifests from files and validates them
// offline with exactly the rules the API server applies, so that what a user
// plans with `laxity plan -f` is what the operator will run.
//
// The rules are not written twice: a Validator is built from a
// CustomResourceDefinition with the API server's own packages
// (k8s.io/apiextensions-apiserver): the structural schema, the OpenAPI
// schema validator, the CEL x-kubernetes-validations with the server's cost
// limits, structural defaulting and pruning, list-type and embedded-resource
// checks and ObjectMeta validation, applied in the order of a create
// request. Unknown fields are errors, as with kubectl's strict server-side
// field validation.
//
// A Loader splits files into YAML documents as kubectl does, skips
// documents of other API groups, defaults the namespace to "default",
// validates every object and reports every problem, one per line, naming
// the file, the document, the object and the field. Load and Read do this
// for laxity's own CRDs (embedded from config/crd) and decode the objects
// into the api/v1alpha1 types.
package manifest
