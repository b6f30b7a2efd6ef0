package tenancy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var nodePool = Pool{Group: "karpenter.sh", Kind: "NodePool", Name: "shared"}

func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ns         Namespace
		annotation PoolAnnotation
		refused    bool
		because    string
	}{
		{name: "no annotation, no policy", ns: Namespace{Name: "team-a"}, refused: true, because: "the pool has no laxity.dev/allowed-namespaces annotation"},
		{name: "annotation lists the namespace", ns: Namespace{Name: "team-a"}, annotation: PoolAnnotation{Value: "team-b, team-a", Present: true}},
		{name: "annotation allows every namespace", ns: Namespace{Name: "team-a"}, annotation: PoolAnnotation{Value: "*", Present: true}},
		{name: "annotation lists others", ns: Namespace{Name: "team-a"}, annotation: PoolAnnotation{Value: "team-b,team-ab", Present: true}, refused: true, because: `annotation ("team-b,team-ab") does not list namespace team-a`},
		{name: "empty annotation", ns: Namespace{Name: "team-a"}, annotation: PoolAnnotation{Present: true}, refused: true, because: "does not list namespace team-a"},
		{name: "policy grants the pool", ns: Namespace{Name: "team-a", Grants: []Grant{{Pools: []Pool{nodePool}}}}},
		{name: "policy grants every pool of the kind", ns: Namespace{Name: "team-a", Grants: []Grant{{Pools: []Pool{{Group: "karpenter.sh", Kind: "NodePool", Name: "*"}}}}}},
		{name: "policy grants another pool", ns: Namespace{Name: "team-a", Grants: []Grant{{Pools: []Pool{{Group: "karpenter.sh", Kind: "NodePool", Name: "other"}}}}}, refused: true, because: "spec.pools"},
		{name: "policy grants the name in another group", ns: Namespace{Name: "team-a", Grants: []Grant{{Pools: []Pool{{Group: "cluster.x-k8s.io", Kind: "NodePool", Name: "shared"}}}}}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.ns.Pool("spec.nodePool.backend.scale", nodePool, tc.annotation)
			if (r != nil) != tc.refused {
				t.Fatalf("refusal = %v, want refused %v", r, tc.refused)
			}
			if r == nil {
				return
			}
			if r.Field != "spec.nodePool.backend.scale" || !strings.Contains(r.Error(), "NodePool.karpenter.sh shared") || !strings.Contains(r.Error(), tc.because) {
				t.Errorf("refusal %q: want the field, the pool and %q", r, tc.because)
			}
		})
	}
}

func TestServiceAccount(t *testing.T) {
	ns := Namespace{Name: "team-a", DefaultServiceAccounts: []string{"spark"}, Grants: []Grant{{Policy: "p", ServiceAccounts: []string{"etl"}}}}
	for _, tc := range []struct {
		sa      string
		refused bool
	}{
		{sa: "default"}, {sa: "spark"}, {sa: "etl"}, {sa: "admin", refused: true},
	} {
		if r := ns.ServiceAccount("f", tc.sa); (r != nil) != tc.refused {
			t.Errorf("service account %s: refusal %v, want refused %v", tc.sa, r, tc.refused)
		}
	}
	everyone := Namespace{Name: "team-a", Grants: []Grant{{ServiceAccounts: []string{"*"}}}}
	if r := everyone.ServiceAccount("f", "admin"); r != nil {
		t.Errorf("a grant of * refused %v", r)
	}
	r := Namespace{Name: "team-a"}.ServiceAccount("spec.sparkApplication.driver.serviceAccount", "admin")
	if r == nil || !strings.Contains(r.Error(), "allowed service accounts (none)") || !strings.HasPrefix(r.Error(), "spec.sparkApplication.driver.serviceAccount: running as service account admin") {
		t.Errorf("refusal %v", r)
	}
}

// template decodes a JSON SparkApplication spec.
func template(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTemplate(t *testing.T) {
	const field = "spec.sparkApplication"
	plain := Namespace{Name: "team-a", DefaultServiceAccounts: []string{"spark"}}
	granted := Namespace{Name: "team-a", Grants: []Grant{{ServiceAccounts: []string{"*"}, HostPath: true, Privileged: true}}}
	for _, tc := range []struct {
		name     string
		template string
		want     []string // the refused fields, in order
	}{
		{name: "allowed service accounts", template: `{"driver":{"serviceAccount":"spark"},"executor":{"serviceAccount":"default"}}`},
		{name: "no service account", template: `{"driver":{"cores":1},"executor":{}}`},
		{name: "unlisted driver and executor", template: `{"driver":{"serviceAccount":"admin"},"executor":{"serviceAccount":"ops"}}`,
			want: []string{field + ".driver.serviceAccount", field + ".executor.serviceAccount"}},
		{name: "host path volume", template: `{"volumes":[{"name":"a","emptyDir":{}},{"name":"b","hostPath":{"path":"/"}}]}`,
			want: []string{field + ".volumes[1].hostPath"}},
		{name: "privileged driver, capabilities on a sidecar, host network", template: `{"driver":{"securityContext":{"privileged":true},"sidecars":[{"name":"s","securityContext":{"capabilities":{"add":["NET_ADMIN"]}}}]},"executor":{"hostNetwork":true}}`,
			want: []string{field + ".driver.securityContext.privileged", field + ".driver.sidecars[0].securityContext.capabilities.add", field + ".executor.hostNetwork"}},
		{name: "not privileged", template: `{"driver":{"securityContext":{"privileged":false,"capabilities":{"drop":["ALL"]}}},"executor":{"hostNetwork":false}}`},
		{name: "pod template", template: `{"executor":{"template":{"spec":{"serviceAccountName":"admin","hostPID":true,"containers":[{"name":"c","securityContext":{"privileged":true}}],"volumes":[{"name":"h","hostPath":{"path":"/var"}}]}}}}`,
			want: []string{field + ".executor.template.spec.serviceAccountName", field + ".executor.template.spec.hostPID", field + ".executor.template.spec.containers[0].securityContext.privileged", field + ".executor.template.spec.volumes[0].hostPath"}},
		{name: "spark settings", template: `{"sparkConf":{"spark.kubernetes.authenticate.driver.serviceAccountName":"admin","spark.kubernetes.executor.volumes.hostPath.data.mount.path":"/data","spark.kubernetes.driver.podTemplateFile":"/t.yaml","spark.sql.shuffle.partitions":"8","spark.kubernetes.authenticate.executor.serviceAccountName":"spark"}}`,
			want: []string{
				field + `.sparkConf["spark.kubernetes.authenticate.driver.serviceAccountName"]`,
				field + `.sparkConf["spark.kubernetes.driver.podTemplateFile"]`,
				field + `.sparkConf["spark.kubernetes.executor.volumes.hostPath.data.mount.path"]`,
			}},
		{name: "wrong types are left to validation", template: `{"driver":"x","volumes":{"a":1},"sparkConf":[1]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range plain.Template(field, template(t, tc.template)) {
				got = append(got, r.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
			if rs := granted.Template(field, template(t, tc.template)); len(rs) != 0 {
				t.Errorf("a namespace granted everything was refused: %v", rs)
			}
		})
	}
}

func TestEMR(t *testing.T) {
	const field = "spec.nodePool.backend.emrContainers"
	want := EMR{VirtualClusterID: "vc1", ExecutionRoleARN: "arn:role", Nodegroup: Nodegroup{Cluster: "eks", Name: "spark"}}
	full := Grant{VirtualClusters: []string{"vc1"}, ExecutionRoles: []string{"arn:role"}, Nodegroups: []Nodegroup{{Cluster: "eks", Name: "*"}}}
	for _, tc := range []struct {
		name  string
		grant Grant
		use   EMR
		field string // "" when permitted
	}{
		{name: "everything granted", grant: full, use: want},
		{name: "nothing granted", use: want, field: field + ".virtualClusterId"},
		{name: "another role", grant: full, use: EMR{VirtualClusterID: "vc1", ExecutionRoleARN: "arn:admin", Nodegroup: want.Nodegroup}, field: field + ".executionRoleArn"},
		{name: "node group of another cluster", grant: full, use: EMR{VirtualClusterID: "vc1", ExecutionRoleARN: "arn:role", Nodegroup: Nodegroup{Cluster: "other", Name: "spark"}}, field: field + ".nodegroupName"},
		{name: "endpoint not granted", grant: full, use: EMR{VirtualClusterID: "vc1", ExecutionRoleARN: "arn:role", Nodegroup: want.Nodegroup, Endpoint: "http://fake"}, field: field + ".endpoint"},
		{name: "endpoint granted", grant: Grant{VirtualClusters: []string{"*"}, ExecutionRoles: []string{"*"}, Nodegroups: []Nodegroup{{Cluster: "eks", Name: "spark"}}, Endpoints: []string{"http://fake"}},
			use: EMR{VirtualClusterID: "vc9", ExecutionRoleARN: "arn:any", Nodegroup: want.Nodegroup, Endpoint: "http://fake"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Namespace{Name: "team-a", Grants: []Grant{tc.grant}}.EMR(field, tc.use)
			got := ""
			if r != nil {
				got = r.Field
			}
			if got != tc.field {
				t.Errorf("refused field %q (%v), want %q", got, r, tc.field)
			}
		})
	}
}

func TestBucketAndPriorityClass(t *testing.T) {
	ns := Namespace{Name: "team-a", Grants: []Grant{{Buckets: []string{"events"}, PriorityClasses: []string{"batch-low"}}}}
	if r := ns.Bucket("spec.input.objectStore", "events"); r != nil {
		t.Errorf("granted bucket refused: %v", r)
	}
	r := ns.Bucket("spec.input.objectStore", "payroll")
	if r == nil || r.Field != "spec.input.objectStore.bucket" || !strings.Contains(r.Error(), "secretRef") {
		t.Errorf("bucket refusal %v: want the field and the way out through a secretRef", r)
	}
	if r := ns.PriorityClass("f", ""); r != nil {
		t.Errorf("laxity's own class refused: %v", r)
	}
	if r := ns.PriorityClass("f", "batch-low"); r != nil {
		t.Errorf("granted class refused: %v", r)
	}
	if r := ns.PriorityClass("spec.nodePool.backend.placeholder.priorityClassName", "system-cluster-critical"); r == nil || !strings.Contains(r.Error(), "spec.priorityClasses") {
		t.Errorf("class refusal %v", r)
	}
}
