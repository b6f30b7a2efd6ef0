package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Validator checks custom resources of one CustomResourceDefinition offline,
// with the rules the API server applies when such an object is created: the
// version's structural OpenAPI schema (types, formats, enums, bounds,
// required fields, list types, embedded resources), its CEL
// x-kubernetes-validations, its defaults and ObjectMeta validation. Unknown
// fields are errors, as with the server's strict field validation.
//
// A Validator is built once per CRD and is safe for concurrent use.
type Validator struct {
	crdName    string
	gk         schema.GroupKind
	namespaced bool
	// served is the served versions, sorted.
	served []string
	// versions builds, or returns what was built of, one entry per served
	// version: schema, defaults and compiled CEL rules.
	versions func() (map[string]*versionValidator, error)
}

// versionValidator is what the API server builds for one served version of
// a CRD (see apiextensions-apiserver's crdHandler.getOrCreateServingInfoFor
// and customresource.NewStrategy).
type versionValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator // nil when the schema has no CEL rules
	hasStatus  bool           // the status subresource is enabled
	scale      *apiextensionsv1.CustomResourceSubresourceScale
}

// NewValidator builds a Validator from a CustomResourceDefinition
// (apiextensions.k8s.io/v1) in YAML or JSON. The CRD itself is validated
// first, as the API server does when it is created, so a CRD the server would
// reject is an error here too.
func NewValidator(crdYAML []byte) (*Validator, error) { return newValidator(crdYAML, true) }

// NewEmbeddedValidator is NewValidator for a CRD compiled into the binary,
// whose tests hold it to the API server's create-time checks
// (TestEmbeddedCRDsAreValid): those checks are left out, since they
// compile every CEL rule a second time, and the schema and rules are built
// on the first object validated, so a run that reads no object of the kind
// pays nothing for it. Both would otherwise slow the start of every
// `laxity plan`.
func NewEmbeddedValidator(crdYAML []byte) (*Validator, error) { return newValidator(crdYAML, false) }

// newValidator is NewValidator, or NewEmbeddedValidator when checkCRD is
// false.
func newValidator(crdYAML []byte, checkCRD bool) (*Validator, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := decodeCRD(crdYAML, crd); err != nil {
		return nil, fmt.Errorf("decoding custom resource definition: %w", err)
	}
	if gvk := crd.GroupVersionKind(); gvk != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
		return nil, fmt.Errorf("decoding custom resource definition: got %s, want apiextensions.k8s.io/v1 CustomResourceDefinition", gvk)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	if checkCRD {
		if err := validateCRD(crd); err != nil {
			return nil, err
		}
	}

	v := &Validator{
		crdName:    crd.Name,
		gk:         schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind},
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
	}
	for _, ver := range crd.Spec.Versions {
		if ver.Served {
			v.served = append(v.served, ver.Name)
		}
	}
	sort.Strings(v.served)
	if len(v.served) == 0 {
		return nil, fmt.Errorf("building validator for %s: no served version", crd.Name)
	}
	build := func() (map[string]*versionValidator, error) {
		versions := map[string]*versionValidator{}
		for _, name := range v.served {
			vv, err := newVersionValidator(crd, name)
			if err != nil {
				return nil, fmt.Errorf("building validator for %s version %s: %w", crd.Name, name, err)
			}
			versions[name] = vv
		}
		return versions, nil
	}
	if !checkCRD {
		// Built on first use: a run that reads no object of the kind
		// compiles none of its rules.
		v.versions = sync.OnceValues(build)
		return v, nil
	}
	versions, err := build()
	if err != nil {
		return nil, err
	}
	v.versions = func() (map[string]*versionValidator, error) { return versions, nil }
	return v, nil
}

// Prepare builds what validating an object of every served version needs
// (schema, defaults, compiled CEL rules), which an embedded validator
// otherwise builds on the first object it validates: a caller that will
// validate one later can build it beside other work.
func (v *Validator) Prepare() { _, _ = v.versions() }

// decodeCRD decodes a CRD in YAML or JSON strictly, as the server decodes
// one: JSON as it is, since going through YAML first takes three times as
// long (the SparkApplication CRD, 450 KB of JSON: 46 ms against 15).
func decodeCRD(data []byte, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !json.Valid(data) {
		return yaml.UnmarshalStrict(data, crd)
	}
	strict, err := kjson.UnmarshalStrict(data, crd, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// validateCRD runs the API server's create-time validation of the CRD
// (structural schema, pruned defaults, CEL compilation and cost).
func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return fmt.Errorf("converting custom resource definition %s: %w", crd.Name, err)
	}
	// The server records the storage version on create (crd strategy
	// PrepareForCreate); a CRD read from a file has no status.
	internal.Status = apiextensionsinternal.CustomResourceDefinitionStatus{}
	for _, ver := range internal.Spec.Versions {
		if ver.Storage {
			internal.Status.StoredVersions = []string{ver.Name}
		}
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return fmt.Errorf("invalid custom resource definition %s: %w", crd.Name, errs.ToAggregate())
	}
	return nil
}

func newVersionValidator(crd *apiextensionsv1.CustomResourceDefinition, version string) (*versionValidator, error) {
	val, err := apiextensionshelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, fmt.Errorf("getting schema: %w", err)
	}
	if val == nil || val.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("version has no openAPIV3Schema")
	}
	internalValidation := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internalValidation, nil); err != nil {
		return nil, fmt.Errorf("converting schema to internal version: %w", err)
	}
	s, err := structuralschema.NewStructural(internalValidation.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("converting schema to structural: %w", err)
	}
	// As the server does: work on a copy, with defaults pruned.
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("pruning defaults: %w", err)
	}
	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(internalValidation.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building schema validator: %w", err)
	}
	subresources, err := apiextensionshelpers.GetSubresourcesForVersion(crd, version)
	if err != nil {
		return nil, fmt.Errorf("getting subresources: %w", err)
	}
	vv := &versionValidator{
		structural: s,
		schema:     schemaValidator,
		// Compiles and caches every CEL program, with the server's per-call
		// cost limit.
		cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
	}
	if subresources != nil {
		vv.hasStatus = subresources.Status != nil
		vv.scale = subresources.Scale
	}
	return vv, nil
}

// GroupKind returns the group and kind of the resources the Validator
// checks.
func (v *Validator) GroupKind() schema.GroupKind { return v.gk }

// Namespaced reports whether the resource is namespace-scoped.
func (v *Validator) Namespaced() bool { return v.namespaced }

// Versions returns the served versions, sorted.
func (v *Validator) Versions() []string { return slices.Clone(v.served) }

// Validate checks obj as the API server checks a create request for it and
// returns the object the server would store, and every error found. obj is
// not modified. The returned object has unknown fields pruned, defaults
// applied, ObjectMeta normalised and, when the status subresource is
// enabled, status dropped (a create cannot set it). It is nil only when obj
// cannot be processed at all (for example a wrong apiVersion or kind, or
// malformed metadata).
//
// Unlike the server, which stops at the first unknown field, Validate
// reports unknown fields (as Forbidden errors) together with every other
// error. A namespaced resource without metadata.namespace is an error, as it
// is on the server; callers that want kubectl's "default" set it first.
func (v *Validator) Validate(obj map[string]any) (map[string]any, field.ErrorList) {
	u, err := normalize(obj)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(nil, nil, err.Error())}
	}
	return v.validate(u)
}

// validate is Validate for an object the caller owns and that holds only
// the types a JSON decoder produces; u is modified.
func (v *Validator) validate(u map[string]any) (out map[string]any, errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			out = nil
			errs = append(errs, field.InternalError(nil, fmt.Errorf("validating: unexpected failure: %v", r)))
		}
	}()

	vv, errs := v.versionFor(u)
	if len(errs) > 0 {
		return nil, errs
	}

	// Decoding (crdHandler's unstructuredSchemaCoercer): ObjectMeta,
	// pruning of unknown fields, nulls, embedded resources.
	objectMeta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), u["metadata"], err.Error())}
	}
	apiVersion, kind := u["apiVersion"], u["kind"]
	unknown = append(unknown, structuralpruning.PruneWithOptions(u, vv.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, vv.structural)
	coerceErr, coerceUnknown := schemaobjectmeta.CoerceWithOptions(nil, u, vv.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if coerceErr != nil {
		return nil, append(unknownFieldErrors(append(unknown, coerceUnknown...)), coerceErr)
	}
	unknown = append(unknown, coerceUnknown...)
	errs = append(errs, unknownFieldErrors(unknown)...)
	u["apiVersion"], u["kind"] = apiVersion, kind
	if foundMeta {
		if !v.namespaced {
			// rest.BeforeCreate clears the namespace of cluster-scoped objects.
			objectMeta.Namespace = ""
		}
		if err := schemaobjectmeta.SetObjectMeta(u, objectMeta); err != nil {
			return nil, append(errs, field.Invalid(field.NewPath("metadata"), nil, err.Error()))
		}
	}

	// Defaulting (unstructuredDefaulter), then the strategy's
	// PrepareForCreate: a create cannot set status.
	structuraldefaulting.Default(u, vv.structural)
	if vv.hasStatus {
		delete(u, "status")
	}

	// Validation (customResourceStrategy.Validate).
	if !foundMeta {
		objectMeta = &metav1.ObjectMeta{}
	}
	checked := validateObjectMeta(objectMeta, v.namespaced)
	checked = append(checked, apiservervalidation.ValidateCustomResource(nil, u, vv.schema)...)
	checked = append(checked, validateScaleSpec(u, vv.scale)...)
	checked = append(checked, schemaobjectmeta.Validate(context.Background(), nil, u, vv.structural, false)...)
	checked = append(checked, structurallisttype.ValidateListSetsAndMaps(nil, vv.structural, u)...)
	if vv.cel != nil {
		if blocked, e := hasBlockingErr(checked); blocked {
			checked = append(checked, e)
		} else {
			celErrs, _ := vv.cel.Validate(context.Background(), nil, vv.structural, u, nil, celconfig.RuntimeCELCostBudget)
			checked = append(checked, celErrs...)
		}
	}
	errs = append(errs, checked...)
	sortFieldErrors(errs)
	return u, errs
}

// sortFieldErrors orders errors by field path, errors about the whole
// object last: the schema and CEL validators walk maps, so their order
// across fields is not stable. Errors of one field keep their order (that
// of the schema's checks and of the CEL rules).
func sortFieldErrors(errs field.ErrorList) {
	root := func(e *field.Error) bool { return e.Field == "" || e.Field == "<nil>" }
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		if ra, rb := root(a), root(b); ra != rb {
			if ra {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Field, b.Field)
	})
}

// versionFor checks apiVersion and kind and returns the version's validator.
func (v *Validator) versionFor(u map[string]any) (*versionValidator, field.ErrorList) {
	var errs field.ErrorList
	apiVersion, _ := u["apiVersion"].(string)
	kind, _ := u["kind"].(string)
	if kind != v.gk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u["kind"], fmt.Sprintf("must be %s", v.gk.Kind)))
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	switch {
	case err != nil || gv.Group != v.gk.Group:
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u["apiVersion"], fmt.Sprintf("must be %s/<version>", v.gk.Group)))
	case !slices.Contains(v.served, gv.Version):
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), apiVersion, v.apiVersions()))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	versions, err := v.versions()
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	return versions[gv.Version], nil
}

func (v *Validator) apiVersions() []string {
	vers := v.Versions()
	for i, ver := range vers {
		vers[i] = v.gk.Group + "/" + ver
	}
	return vers
}

// normalize deep-copies obj into the form the API server decodes a JSON
// request body into: maps, slices, strings, bools, int64 and float64.
func normalize(obj map[string]any) (map[string]any, error) {
	if obj == nil {
		return nil, fmt.Errorf("object is empty")
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding object as json: %w", err)
	}
	var u map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &u); err != nil {
		return nil, fmt.Errorf("decoding object from json: %w", err)
	}
	return u, nil
}

// unknownFieldErrors turns pruned field paths into Forbidden errors.
func unknownFieldErrors(paths []string) field.ErrorList {
	if len(paths) == 0 {
		return nil
	}
	paths = append([]string(nil), paths...)
	sort.Strings(paths)
	errs := make(field.ErrorList, 0, len(paths))
	for i, p := range paths {
		if i > 0 && paths[i-1] == p {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath(strings.TrimPrefix(p, ".")), "unknown field"))
	}
	return errs
}

// validateObjectMeta runs the server's create-time ObjectMeta validation.
// Names cannot be generated offline, so a name is required.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(meta, namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if meta.Name == "" && meta.GenerateName != "" {
		for i, e := range errs {
			if e.Type == field.ErrorTypeRequired && e.Field == "metadata.name" {
				errs[i] = field.Required(field.NewPath("metadata", "name"), "name is required (generateName cannot be used offline)")
			}
		}
	}
	return errs
}

// validateScaleSpec mirrors customResourceValidator.ValidateScaleSpec.
func validateScaleSpec(u map[string]any, scale *apiextensionsv1.CustomResourceSubresourceScale) field.ErrorList {
	if scale == nil {
		return nil
	}
	p := strings.TrimPrefix(scale.SpecReplicasPath, ".")
	replicas, _, err := unstructured.NestedInt64(u, strings.Split(p, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(scale.SpecReplicasPath), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(scale.SpecReplicasPath), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(scale.SpecReplicasPath), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// hasBlockingErr mirrors the server: CEL rules are not evaluated when the
// object has errors that could make them fail to evaluate.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}
