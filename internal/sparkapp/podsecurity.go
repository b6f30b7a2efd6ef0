package sparkapp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	kjson "sigs.k8s.io/json"

	"github.com/laxity-dev/laxity/internal/tenancy"
)

// The driver's and executors' pods are held to a Pod Security Standards
// level (https://kubernetes.io/docs/concepts/security/pod-security-standards/)
// with the checks of Kubernetes' own Pod Security admission
// (k8s.io/pod-security-admission), run on the pods spark-operator would
// make of the template: the namespace's own admission would see the pods
// only once spark-operator creates them, as the driver's failure, and many
// namespaces enforce no level at all. This is here, not in internal/tenancy,
// because the library works on Kubernetes' own types.

// gradedApart are the Pod Security checks whose subject internal/tenancy
// grants on its own (allowPrivileged, allowHostPath), so that a refusal
// names that grant, once.
var gradedApart = []policy.CheckID{"privileged", "hostNamespaces", "capabilities_baseline", "hostPathVolumes"}

var evaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	checks := slices.DeleteFunc(policy.DefaultChecks(), func(c policy.Check) bool { return slices.Contains(gradedApart, c.ID) })
	return policy.NewEvaluator(checks, nil)
})

// PodSecurityViolation is what keeps one pod of a template from the
// level: Field names the pod (spec.sparkApplication.driver), Check the
// rule (such as "runAsUser=0") and Detail the pod's field that breaks it.
type PodSecurityViolation struct {
	Field, Check, Detail string
}

func (v PodSecurityViolation) String() string {
	return fmt.Sprintf("%s: %s (%s)", v.Field, v.Check, v.Detail)
}

// PodSecurity evaluates the driver's and the executors' pods that
// spark-operator would make of spec (a decoded template, after
// SecureDefaults) against the Pod Security level ("restricted",
// "baseline" or "privileged"), and returns every violation, in a fixed
// order. A pod is made of the role's pod template (driver.template), then
// the role's podSecurityContext, securityContext (of the Spark container),
// hostNetwork, sidecars and initContainers, the spec's volumes and the
// volumes sparkConf adds (spark.kubernetes.<role>.volumes.<type>.*):
// every volume counts for both pods. hostPath volumes, privileged
// containers, added capabilities and host namespaces are left to
// internal/tenancy, which grants them apart. A field that is not what the
// Kubernetes type says is a violation: laxity cannot judge it.
func PodSecurity(spec map[string]any, level string) []PodSecurityViolation {
	lvl, err := api.ParseLevel(level)
	if err != nil {
		return []PodSecurityViolation{{Field: templateField, Check: "Pod Security level " + strconv.Quote(level), Detail: err.Error()}}
	}
	eval, err := evaluator()
	if err != nil {
		return []PodSecurityViolation{{Field: templateField, Check: "Pod Security checks", Detail: err.Error()}}
	}
	var out []PodSecurityViolation
	for _, role := range []string{"driver", "executor"} {
		at := templateField + "." + role
		pod, errs := podOf(spec, role)
		for _, e := range errs {
			out = append(out, PodSecurityViolation{Field: e.field, Check: "not a Kubernetes " + e.kind, Detail: e.err.Error()})
		}
		if len(errs) > 0 {
			continue
		}
		for _, r := range eval.EvaluatePod(api.LevelVersion{Level: lvl, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
			if !r.Allowed {
				out = append(out, PodSecurityViolation{Field: at, Check: r.ForbiddenReason, Detail: r.ForbiddenDetail})
			}
		}
	}
	return out
}

type decodeError struct {
	field, kind string
	err         error
}

// decodeInto decodes v, a decoded JSON value, into out, as the API server
// would: field names compared with their case.
func decodeInto(v any, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(data, out)
}

// podOf is the pod of role that spark-operator would make of spec, as far
// as Pod Security looks.
func podOf(spec map[string]any, role string) (*corev1.Pod, []decodeError) {
	at := templateField + "." + role
	var errs []decodeError
	decode := func(v any, out any, field, kind string) bool {
		if v == nil {
			return false
		}
		if err := decodeInto(v, out); err != nil {
			errs = append(errs, decodeError{field: field, kind: kind, err: err})
			return false
		}
		return true
	}
	p, _ := spec[role].(map[string]any)
	pod := &corev1.Pod{}
	var tmpl corev1.PodTemplateSpec
	if decode(p["template"], &tmpl, at+".template", "PodTemplateSpec") {
		pod.ObjectMeta, pod.Spec = tmpl.ObjectMeta, tmpl.Spec
	}
	name := "spark-kubernetes-" + role
	main := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if main < 0 {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
		main = len(pod.Spec.Containers) - 1
	}
	var sc corev1.SecurityContext
	if decode(p["securityContext"], &sc, at+".securityContext", "SecurityContext") {
		pod.Spec.Containers[main].SecurityContext = &sc
	}
	var psc corev1.PodSecurityContext
	if decode(p["podSecurityContext"], &psc, at+".podSecurityContext", "PodSecurityContext") {
		pod.Spec.SecurityContext = &psc
	}
	if on, _ := p["hostNetwork"].(bool); on {
		pod.Spec.HostNetwork = true
	}
	var sidecars, inits []corev1.Container
	if decode(p["sidecars"], &sidecars, at+".sidecars", "list of Containers") {
		pod.Spec.Containers = append(pod.Spec.Containers, sidecars...)
	}
	if decode(p["initContainers"], &inits, at+".initContainers", "list of Containers") {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, inits...)
	}
	var volumes []corev1.Volume
	if decode(spec["volumes"], &volumes, templateField+".volumes", "list of Volumes") {
		pod.Spec.Volumes = append(pod.Spec.Volumes, volumes...)
	}
	confVolumes := tenancy.ConfVolumeTypes(spec, role)
	for _, name := range sortedKeys(confVolumes) {
		v := corev1.Volume{Name: name}
		switch strings.ToLower(confVolumes[name]) {
		case "emptydir":
			v.EmptyDir = &corev1.EmptyDirVolumeSource{}
		case "persistentvolumeclaim":
			v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}
		case "hostpath":
			v.HostPath = &corev1.HostPathVolumeSource{}
		default:
			// nfs and whatever else Spark learns to mount: not one of
			// the types the restricted level allows.
			v.NFS = &corev1.NFSVolumeSource{}
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, v)
	}
	pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil })
	return pod, errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// SecureDefaults sets, in spec (a decoded template), the values the Pod
// Security restricted level requires wherever the template leaves them
// unset, so that an ordinary template runs under it: on the driver's and
// executors' pods runAsNonRoot true and the RuntimeDefault seccomp profile
// (podSecurityContext), on their Spark containers, sidecars and init
// containers (and a pod template's) allowPrivilegeEscalation false and
// capabilities dropping ALL. A value the template sets is kept, to be
// judged: runAsNonRoot is not set next to a runAsUser of 0, nor
// allowPrivilegeEscalation next to a privileged container or an added
// CAP_SYS_ADMIN, which Kubernetes rejects together. Fields of the wrong
// type are left alone.
func SecureDefaults(spec map[string]any) {
	for _, role := range []string{"driver", "executor"} {
		p, _ := spec[role].(map[string]any)
		if p == nil {
			continue
		}
		root := rootUser(p["podSecurityContext"]) || rootUser(p["securityContext"])
		psc, ok := objectAt(p, "podSecurityContext")
		if ok {
			if _, set := psc["runAsNonRoot"]; !set && !root {
				psc["runAsNonRoot"] = true
			}
			if _, set := psc["seccompProfile"]; !set {
				psc["seccompProfile"] = map[string]any{"type": string(corev1.SeccompProfileTypeRuntimeDefault)}
			}
		}
		secureContainer(p)
		for _, list := range []string{"sidecars", "initContainers"} {
			items, _ := p[list].([]any)
			for _, item := range items {
				if c, ok := item.(map[string]any); ok {
					secureContainer(c)
				}
			}
		}
		tmpl, _ := p["template"].(map[string]any)
		podSpec, _ := tmpl["spec"].(map[string]any)
		for _, list := range []string{"containers", "initContainers"} {
			items, _ := podSpec[list].([]any)
			for _, item := range items {
				if c, ok := item.(map[string]any); ok {
					secureContainer(c)
				}
			}
		}
	}
}

// objectAt returns m[key] as an object, made when absent; ok is false
// when it holds something else.
func objectAt(m map[string]any, key string) (map[string]any, bool) {
	switch v := m[key].(type) {
	case nil:
		o := map[string]any{}
		m[key] = o
		return o, true
	case map[string]any:
		return v, true
	default:
		return nil, false
	}
}

// rootUser says whether a security context sets runAsUser 0.
func rootUser(v any) bool {
	sc, _ := v.(map[string]any)
	switch u := sc["runAsUser"].(type) {
	case int64:
		return u == 0
	case float64:
		return u == 0
	case json.Number:
		return u.String() == "0"
	}
	return false
}

// secureContainer defaults a container's securityContext.
func secureContainer(c map[string]any) {
	sc, ok := objectAt(c, "securityContext")
	if !ok {
		return
	}
	caps, capsOK := objectAt(sc, "capabilities")
	sysAdmin := false
	if capsOK {
		added, _ := caps["add"].([]any)
		sysAdmin = slices.ContainsFunc(added, func(a any) bool {
			s, _ := a.(string)
			return s == "SYS_ADMIN" || s == "CAP_SYS_ADMIN"
		})
		if _, set := caps["drop"]; !set {
			caps["drop"] = []any{"ALL"}
		}
	}
	privileged, _ := sc["privileged"].(bool)
	if _, set := sc["allowPrivilegeEscalation"]; !set && !privileged && !sysAdmin {
		sc["allowPrivilegeEscalation"] = false
	}
}
