package controllers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/internal/pool"
)

// The suite runs the reconcilers against a real kube-apiserver and etcd,
// with laxity's CRDs and the real SparkApplication CRD. Reconcile is called
// directly with a fake clock; two simulation stand-ins play the cluster
// around laxity (see internal/standin).

var (
	cfg         *rest.Config
	k8sClient   client.Client
	poolOptions pool.Options
	testEnv     *envtest.Environment
	suiteCtx    context.Context
	cancelSuite context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "Controllers", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is not set: run the controller tests with `make test`, which builds kube-apiserver and etcd")
	}
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, cancelSuite = context.WithCancel(context.Background())

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(laxityv1alpha1.AddToScheme(scheme))
	// The poison suite relaxes a CRD to store what validation now refuses.
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	testEnv = &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join("..", "config", "crd", "bases"),
			filepath.Join("..", "config", "thirdparty", "sparkoperator.k8s.io_sparkapplications.yaml"),
			// Targets of the scale backend (story 7). Neither declares a
			// conversion webhook, so every served version works in envtest.
			filepath.Join("..", "config", "thirdparty", "cluster.x-k8s.io_machinedeployments.yaml"),
			filepath.Join("..", "config", "thirdparty", "karpenter.sh_nodepools.yaml"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	Expect(err).NotTo(HaveOccurred())
	poolOptions, err = pool.NewOptions(cfg, httpClient, k8sClient, mapper, "pause")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if cancelSuite != nil { // nil when BeforeSuite failed early
		cancelSuite()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
