package sparkapp_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/laxity-dev/laxity/test/testenv"
)

// The envtest suite creates rendered SparkApplications on a real
// kube-apiserver that serves spark-operator's own, unmodified CRD, so that
// its schema (required fields, types, enums, pruning) judges every object
// Render makes.
var (
	testEnv   *testenv.Env
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
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	testEnv, err = testenv.Start(testenv.WithoutLaxityCRDs(), testenv.WithThirdPartyCRDs(testenv.SparkApplications))
	Expect(err).NotTo(HaveOccurred())
	k8sClient = testEnv.Client

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "laxity-sparkapp-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	namespace = ns.Name
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(testEnv.Stop()).To(Succeed())
})
