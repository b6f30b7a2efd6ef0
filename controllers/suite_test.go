package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/laxity-dev/laxity/internal/pool"
	"github.com/laxity-dev/laxity/test/testenv"
)

// The suite runs the reconcilers against a real kube-apiserver and etcd,
// with laxity's CRDs and the real SparkApplication CRD. Reconcile is called
// directly with a fake clock; two simulation stand-ins play the cluster
// around laxity (see internal/standin).

// concurrent labels the specs that run code on goroutines besides the
// test's: a manager, an informer cache, stories run side by side, the
// in-process AWS, S3 and Kafka servers. hack/test.sh runs them with the
// race detector; the other specs call the reconcilers from the test's
// goroutine only, where it has nothing to find, and run without it.
var concurrent = Label("concurrent")

var (
	cfg         *rest.Config
	k8sClient   client.Client
	poolOptions pool.Options
	testEnv     *testenv.Env
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
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, cancelSuite = context.WithCancel(context.Background())

	// The MachineDeployment and NodePool CRDs are targets of the scale
	// backend, the CapacityBuffer CRD the object of the capacityBuffer
	// backend (story 7). The poison suite relaxes a CRD to store what
	// validation now refuses, through the scheme's apiextensions kinds.
	var err error
	testEnv, err = testenv.Start(testenv.WithThirdPartyCRDs(testenv.SparkApplications, testenv.MachineDeployments, testenv.NodePools, testenv.CapacityBuffers))
	Expect(err).NotTo(HaveOccurred())
	cfg, k8sClient = testEnv.Config, testEnv.Client
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
	Expect(testEnv.Stop()).To(Succeed())
})
