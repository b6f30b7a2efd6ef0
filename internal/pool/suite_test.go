package pool

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/test/builder"
	"github.com/laxity-dev/laxity/test/testenv"
)

// testImage is the placeholder image of the suite. Nothing pulls it: envtest
// runs no kubelet.
const testImage = "pause:test"

var (
	testEnv *testenv.Env
	ctx     context.Context
	cancel  context.CancelFunc
	// k8sClient sets up and inspects the world; its requests are not
	// recorded.
	k8sClient client.Client
	// opts are the Options under test. Every request they send goes through
	// recorded.
	opts     Options
	recorded = &requestRecorder{}
)

func TestPool(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	// make does not pass Ginkgo flags, so randomise here.
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "Node pool backends suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	testEnv, err = testenv.Start(testenv.WithThirdPartyCRDs(testenv.MachineDeployments, testenv.NodePools, testenv.CapacityBuffers))
	Expect(err).NotTo(HaveOccurred())
	cfg, scheme := testEnv.Config, testEnv.Scheme
	k8sClient = testEnv.Client

	// The package under test gets its own connection, wrapped so that the
	// specs can see every request it sends.
	poolCfg := rest.CopyConfig(cfg)
	poolCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recorded.wrap(rt) })
	httpClient, err := rest.HTTPClientFor(poolCfg)
	Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(poolCfg, httpClient)
	Expect(err).NotTo(HaveOccurred())
	poolClient, err := client.New(poolCfg, client.Options{Scheme: scheme, HTTPClient: httpClient, Mapper: mapper})
	Expect(err).NotTo(HaveOccurred())
	opts, err = NewOptions(poolCfg, httpClient, poolClient, mapper, testImage)
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// requestRecorder records the method and path of every request sent through
// the transports it wraps.
type requestRecorder struct {
	mu       sync.Mutex
	requests []string
}

func (r *requestRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// reset forgets what was recorded.
func (r *requestRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = nil
}

// matching returns the recorded requests for which keep is true.
func (r *requestRecorder) matching(keep func(method, path string) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.requests {
		method, path, _ := strings.Cut(req, " ")
		if keep(method, path) {
			out = append(out, req)
		}
	}
	return out
}

// writes returns the recorded requests that are not reads.
func (r *requestRecorder) writes() []string {
	return r.matching(func(method, _ string) bool {
		return !slices.Contains([]string{http.MethodGet, http.MethodHead, http.MethodOptions}, method)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// newNamespace creates a namespace for one spec.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "laxity-pool-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// createSchedule stores an ElasticSchedule with the given pool backend and
// node selector in namespace, so that the API server validates it and gives
// it a UID.
func createSchedule(namespace string, backend laxityv1alpha1.PoolBackend, nodeSelector map[string]string) *laxityv1alpha1.ElasticSchedule {
	es := builder.Schedule(namespace, "").GenerateName("es-").Bare().
		Sizes(2, 4, 10).Price("0.25").NodeSelector(nodeSelector).Backend(backend).Obj()
	Expect(k8sClient.Create(ctx, es)).To(Succeed())
	return es
}
