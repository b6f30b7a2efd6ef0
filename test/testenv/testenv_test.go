package testenv

import (
	"errors"
	"strings"
	"testing"
)

func TestStartWithoutTheControlPlaneBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir())
	env, err := Start()
	if !errors.Is(err, ErrNoControlPlane) {
		t.Fatalf("Start without kube-apiserver and etcd: %v, want ErrNoControlPlane", err)
	}
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop of a nil Env: %v", err)
	}
}

func TestCRDs(t *testing.T) {
	crds, err := CRDs(true, SparkApplications, MachineDeployments, NodePools)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	want := "elasticschedules.laxity.dev intermittentqueries.laxity.dev recurringqueries.laxity.dev tenantpolicies.laxity.dev sparkapplications.sparkoperator.k8s.io machinedeployments.cluster.x-k8s.io nodepools.karpenter.sh"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("CRDs: %s, want %s", got, want)
	}
	if _, err := CRDs(false, "no-such.yaml"); err == nil || !strings.Contains(err.Error(), "no-such.yaml") {
		t.Errorf("CRDs of a missing file: %v, want an error naming it", err)
	}
}
