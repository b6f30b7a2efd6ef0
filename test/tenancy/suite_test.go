// Package tenancy_test runs laxity's manager, with the ClusterRole its
// RBAC markers generate and nothing more, against a control plane where two
// tenants hold namespaced Roles and an administrator holds cluster-admin,
// each client impersonating its user. It shows every rule of the tenancy
// boundary: what a tenant cannot make laxity do, and how the
// administrator's grant makes it work.
package tenancy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/controllers"
	"github.com/laxity-dev/laxity/test/testenv"
)

// The users of the suite.
const (
	// laxityUser is the manager's identity, bound to the generated
	// ClusterRole only.
	laxityUser = "system:serviceaccount:laxity-system:laxity"
	// alice works in teamA, bob in teamB; carol administers the cluster.
	alice, bob, carol = "alice", "bob", "carol"
	teamA, teamB      = "team-a", "team-b"
)

var (
	env *testenv.Env
	// asAlice, asBob and asCarol are clients impersonating each user.
	asAlice, asBob, asCarol client.Client
	suiteCtx                context.Context
	cancelSuite             context.CancelFunc
)

func TestTenancy(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "Tenancy", suiteConfig, reporterConfig)
}

// as is a client of the control plane impersonating user.
func as(user string) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, cancelSuite = context.WithCancel(context.Background())
	var err error
	env, err = testenv.Start(testenv.WithThirdPartyCRDs(testenv.SparkApplications, testenv.NodePools, testenv.CapacityBuffers))
	Expect(err).NotTo(HaveOccurred())
	admin := env.Client
	ctx := suiteCtx

	By("binding laxity's generated ClusterRole, and nothing else, to the manager's identity")
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	Expect(yaml.UnmarshalStrict(data, &role)).To(Succeed())
	Expect(admin.Create(ctx, &role)).To(Succeed())
	Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "laxity-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: laxityUser}},
	})).To(Succeed())

	By("installing the tenants' roles of config/rbac/tenant_roles.yaml")
	tenantRoles := readClusterRoles(filepath.Join("..", "..", "config", "rbac", "tenant_roles.yaml"))
	for i := range tenantRoles {
		Expect(admin.Create(ctx, &tenantRoles[i])).To(Succeed())
	}

	By("giving carol cluster-admin, and alice and bob laxity-edit in their own namespace, as docs/design.md tells platform teams")
	Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "carol-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: carol}},
	})).To(Succeed())
	for user, ns := range map[string]string{alice: teamA, bob: teamB} {
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "laxity-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "laxity-edit"},
			Subjects:   subjects,
		})).To(Succeed())
		// What the built-in edit role gives besides laxity-edit, and the
		// stories use: the namespace's Secrets, and reading the
		// SparkApplications laxity makes (spark-operator's chart grants it).
		Expect(admin.Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "create", "delete"}},
				{APIGroups: []string{"sparkoperator.k8s.io"}, Resources: []string{"sparkapplications"}, Verbs: []string{"get", "list"}},
			},
		})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
			Subjects:   subjects,
		})).To(Succeed())
	}
	asAlice, asBob, asCarol = as(alice), as(bob), as(carol)

	By("starting laxity's manager as its own identity")
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: laxityUser}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Cache: controllers.CacheOptions(), Client: controllers.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	opts := controllers.Options{MaxAttempts: 3, Backoff: time.Second, ResultRoot: "s3a://results", Poll: time.Second,
		AllowedServiceAccounts: []string{"spark"},
		// A small search budget, which search_budget_test.go's workloads
		// exceed many times over and every other story's stays far below.
		PlanTimeout: searchBudget}
	Expect(controllers.Setup(ctx, mgr, clock.RealClock{}, opts, "pause")).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

// readClusterRoles reads the ClusterRoles of a multi-document YAML file.
func readClusterRoles(path string) []rbacv1.ClusterRole {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var roles []rbacv1.ClusterRole
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		Expect(yaml.UnmarshalStrict([]byte(doc), &role)).To(Succeed())
		roles = append(roles, role)
	}
	return roles
}

var _ = AfterSuite(func() {
	if cancelSuite != nil {
		cancelSuite()
	}
	Expect(env.Stop()).To(Succeed())
})
