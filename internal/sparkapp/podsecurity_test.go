package sparkapp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decoded(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPodSecurity(t *testing.T) {
	const plain = `{"driver":{"cores":1},"executor":{"cores":2}}`
	for _, tc := range []struct {
		name, template, level string
		undefaulted           bool
		want                  []string // "field: check" of each violation, in order
	}{
		{name: "an ordinary template, as rendered, is restricted", template: plain, level: "restricted"},
		{name: "the same, before rendering sets its values", template: plain, level: "restricted", undefaulted: true, want: []string{
			"spec.sparkApplication.driver: allowPrivilegeEscalation != false",
			"spec.sparkApplication.driver: unrestricted capabilities",
			"spec.sparkApplication.driver: runAsNonRoot != true",
			"spec.sparkApplication.driver: seccompProfile",
			"spec.sparkApplication.executor: allowPrivilegeEscalation != false",
			"spec.sparkApplication.executor: unrestricted capabilities",
			"spec.sparkApplication.executor: runAsNonRoot != true",
			"spec.sparkApplication.executor: seccompProfile",
		}},
		{name: "root, Unconfined and NFS of the reproduced template", level: "restricted",
			template: `{"volumes":[{"name":"n","nfs":{"server":"s","path":"/"}}],"driver":{"podSecurityContext":{"runAsUser":0,"seccompProfile":{"type":"Unconfined"}}},"executor":{}}`,
			want: []string{
				"spec.sparkApplication.driver: restricted volume types",
				"spec.sparkApplication.driver: runAsNonRoot != true",
				"spec.sparkApplication.driver: runAsUser=0",
				"spec.sparkApplication.driver: seccompProfile",
				"spec.sparkApplication.executor: restricted volume types",
			}},
		{name: "baseline allows root and NFS, not Unconfined", level: "baseline",
			template: `{"volumes":[{"name":"n","nfs":{"server":"s","path":"/"}}],"driver":{"podSecurityContext":{"runAsUser":0,"seccompProfile":{"type":"Unconfined"}}},"executor":{}}`,
			want:     []string{"spec.sparkApplication.driver: seccompProfile"}},
		{name: "privileged allows everything", level: "privileged", undefaulted: true,
			template: `{"driver":{"podSecurityContext":{"seccompProfile":{"type":"Unconfined"}},"sidecars":[{"name":"s","ports":[{"containerPort":1,"hostPort":1}]}]},"executor":{}}`},
		{name: "host ports of a sidecar and volumes through sparkConf", level: "baseline",
			template: `{"driver":{"sidecars":[{"name":"s","ports":[{"containerPort":1,"hostPort":1}]}]},"executor":{},"sparkConf":{"spark.kubernetes.executor.volumes.nfs.data.mount.path":"/d"}}`,
			want:     []string{"spec.sparkApplication.driver: hostPort"}},
		{name: "NFS through sparkConf is not restricted", level: "restricted",
			template: `{"driver":{},"executor":{},"sparkConf":{"spark.kubernetes.executor.volumes.nfs.data.mount.path":"/d","spark.kubernetes.driver.volumes.hostPath.h.mount.path":"/h"}}`,
			want:     []string{"spec.sparkApplication.executor: restricted volume types"}},
		{name: "a pod template's containers", level: "restricted",
			template: `{"driver":{},"executor":{"template":{"spec":{"containers":[{"name":"spark-kubernetes-executor"},{"name":"side","securityContext":{"runAsUser":0}}]}}}}`,
			want:     []string{"spec.sparkApplication.executor: runAsUser=0"}},
		{name: "hostPath, privileged and host namespaces are graded apart", level: "restricted",
			template: `{"volumes":[{"name":"h","hostPath":{"path":"/"}}],"driver":{"hostNetwork":true,"securityContext":{"privileged":true}},"executor":{}}`,
			// A privileged container escalates: rendering does not say
			// otherwise, which Kubernetes would reject.
			want: []string{"spec.sparkApplication.driver: allowPrivilegeEscalation != false"}},
		{name: "fields of the wrong type cannot be judged", level: "restricted",
			template: `{"driver":{"securityContext":{"runAsUser":"root"}},"executor":{}}`,
			want:     []string{"spec.sparkApplication.driver.securityContext: not a Kubernetes SecurityContext"}},
		{name: "field names are read with their case, as the API server does", level: "restricted",
			template: `{"driver":{"podSecurityContext":{"RunAsUser":1000,"runAsUser":0}},"executor":{}}`,
			want:     []string{"spec.sparkApplication.driver: runAsNonRoot != true", "spec.sparkApplication.driver: runAsUser=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := decoded(t, tc.template)
			if !tc.undefaulted {
				SecureDefaults(spec)
			}
			var got []string
			for _, v := range PodSecurity(spec, tc.level) {
				got = append(got, v.Field+": "+v.Check)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	if vs := PodSecurity(decoded(t, plain), "lax"); len(vs) != 1 || !strings.Contains(vs[0].String(), "lax") {
		t.Errorf("an unknown level: %v", vs)
	}
}

func TestSecureDefaults(t *testing.T) {
	spec := decoded(t, `{"driver":{"podSecurityContext":{"runAsUser":0},"securityContext":{"privileged":true}},
"executor":{"securityContext":{"capabilities":{"add":["SYS_ADMIN"],"drop":[]}},"sidecars":[{"name":"s"}],"template":{"spec":{"containers":[{"name":"c","securityContext":{"allowPrivilegeEscalation":true}}]}}}}`)
	SecureDefaults(spec)
	want := decoded(t, `{"driver":{"podSecurityContext":{"runAsUser":0,"seccompProfile":{"type":"RuntimeDefault"}},"securityContext":{"privileged":true,"capabilities":{"drop":["ALL"]}}},
"executor":{"podSecurityContext":{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}},"securityContext":{"capabilities":{"add":["SYS_ADMIN"],"drop":[]}},
"sidecars":[{"name":"s","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}],
"template":{"spec":{"containers":[{"name":"c","securityContext":{"allowPrivilegeEscalation":true,"capabilities":{"drop":["ALL"]}}}]}}}}`)
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("SecureDefaults (-want +got):\n%s", diff)
	}
	// Fields of the wrong type are left alone.
	odd := decoded(t, `{"driver":{"podSecurityContext":"x","securityContext":[1]},"executor":"y"}`)
	SecureDefaults(odd)
	if diff := cmp.Diff(decoded(t, `{"driver":{"podSecurityContext":"x","securityContext":[1]},"executor":"y"}`), odd); diff != "" {
		t.Errorf("SecureDefaults changed fields of the wrong type (-want +got):\n%s", diff)
	}
}

// FuzzPodSecurity: hostile templates never panic the defaults or the
// evaluation, and every violation names a field of the template.
func FuzzPodSecurity(f *testing.F) {
	f.Add(`{"driver":{"podSecurityContext":{"runAsUser":0}},"executor":{"template":{"spec":{"containers":[{}]}}}}`, "restricted")
	f.Add(`{"driver":{"sidecars":[null,{"name":1}]},"executor":[],"volumes":[{}],"sparkConf":{"spark.kubernetes.driver.volumes...":"x"}}`, "baseline")
	f.Fuzz(func(t *testing.T, doc, level string) {
		var spec map[string]any
		if json.Unmarshal([]byte(doc), &spec) != nil || spec == nil {
			return
		}
		SecureDefaults(spec)
		for _, v := range PodSecurity(spec, level) {
			if !strings.HasPrefix(v.Field, templateField) || v.Check == "" {
				t.Fatalf("violation %+v names no field of the template", v)
			}
		}
	})
}
