package sparkapp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The envtest suite creates rendered SparkApplications on a real
// kube-apiserver that serves spark-operator's own, unmodified CRD, so that
// its schema (required fields, types, enums, pruning) judges every object
// Render makes.
var (
	testEnv   *envtest.Environment
	k8sClient client.Client
	namespace string
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestSparkApplicationsOnTheRealCRD(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	// make does not pass Ginkgo flags to every run, so randomise here.
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "sparkapp envtest suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is not set: run `make test`, which builds kube-apiserver and etcd for envtest and points KUBEBUILDER_ASSETS at them")
	}
	ctx, cancel = context.WithCancel(context.Background())

	testEnv = &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join("..", "..", "config", "thirdparty", "sparkoperator.k8s.io_sparkapplications.yaml")},
			ErrorIfPathMissing: true,
		},
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "laxity-sparkapp-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	namespace = ns.Name
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
