// Package localcluster starts and stops a local Kubernetes cluster made of
// real control-plane processes and fake nodes, for `laxity demo --cluster
// karpenter` and the end-to-end suites of test/cluster:
//
//   - etcd and kube-apiserver, started by envtest (from Options.ControlPlane
//     or KUBEBUILDER_ASSETS), with laxity's CRDs, the SparkApplication CRD
//     and Karpenter's CRDs (the CapacityBuffer CRD among them);
//   - kube-scheduler, which places pods on nodes;
//   - kube-controller-manager with the controllers a workload needs
//     (Deployments, ReplicaSets, Jobs, garbage collection, namespaces,
//     service accounts, node lifecycle);
//   - KWOK, which plays the kubelet of every node Karpenter creates: a node
//     becomes Ready NodeReadyDelay after it was created (the provisioning
//     lead time), a pod runs as soon as it is bound, and a pod annotated
//     with RunSecondsAnnotation succeeds that long after it started;
//   - Karpenter with its KWOK cloud provider, which turns NodePools into
//     NodeClaims and Node objects, and keeps the room CapacityBuffers ask
//     for.
//
// The binaries beyond envtest's are built by hack/cluster-binaries.sh (`make
// cluster-binaries`); FindBinaries says where they are looked for. Each
// Start makes a run directory holding the kubeconfig, KWOK's configuration
// and one log per process; errors name it.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	_ "embed" // the KWOK stages

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/config/thirdparty"
	"github.com/laxity-dev/laxity/internal/controlplane"
)

const (
	// BinariesEnv names the environment variable holding the directory
	// hack/cluster-binaries.sh prints: kube-scheduler,
	// kube-controller-manager, kwok, karpenter-kwok and crds/.
	BinariesEnv = "LAXITY_CLUSTER_BINARIES"
	// CacheEnv names the environment variable that moves the per-user build
	// cache of hack/cluster-binaries.sh (default: the user's cache
	// directory, laxity/cluster).
	CacheEnv = "LAXITY_CLUSTER_CACHE"
	// RunSecondsAnnotation on a pod says how many seconds (a decimal
	// number) it runs before KWOK marks it Succeeded; a pod without it runs
	// until it is deleted. A value that is not a number ends the pod at once
	// (KWOK logs why).
	RunSecondsAnnotation = "simulation.laxity.dev/run-seconds"
	// KWOKNodeLabel is the label Karpenter's KWOK provider puts on every
	// node it creates; KWOK manages exactly the nodes that carry it.
	KWOKNodeLabel = "kwok.x-k8s.io/node"
	// NodePoolLabel is the label Karpenter puts on a node: the name of its
	// NodePool, the node selector of a pod meant for that pool.
	NodePoolLabel = "karpenter.sh/nodepool"
	// DefaultNodeClass is the KWOKNodeClass Start creates, for NodePools to
	// refer to.
	DefaultNodeClass = "default"

	adminUser = "laxity-cluster-admin"
)

// The Karpenter CRDs the cluster installs, files of the binaries' crds/.
var karpenterCRDFiles = []string{
	"karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.kwok.sh_kwoknodeclasses.yaml",
	// Served by Karpenter behind its CapacityBuffer feature gate: the
	// object of laxity's capacityBuffer backend.
	"autoscaling.x-k8s.io_capacitybuffers.yaml",
}

// The binaries the cluster runs beyond envtest's.
var binaries = []string{"kube-scheduler", "kube-controller-manager", "kwok", "karpenter-kwok"}

// ErrMissingBinary says a binary of the cluster is not where it was looked
// for.
var ErrMissingBinary = errors.New("a binary of the local cluster is missing")

// ErrNoControlPlane says the kube-apiserver and etcd binaries are not where
// they were looked for.
var ErrNoControlPlane = errors.New("no kube-apiserver and etcd to start: set Options.ControlPlane or KUBEBUILDER_ASSETS to the directory `make envtest` builds")

// The versions hack/cluster-binaries.sh builds; keep in step with
// ENVTEST_K8S_VERSION, CLUSTER_KWOK_VERSION and CLUSTER_KARPENTER_VERSION
// of the Makefile.
const (
	KubeVersion      = "1.37.2"
	KWOKVersion      = "0.8.0"
	KarpenterVersion = "1.15.0"
)

//go:embed stages.yaml
var stagesTemplate string

// Options says how to start the cluster; the zero value is usable.
type Options struct {
	// NodeReadyDelay is how long after Karpenter creates a node KWOK makes it
	// Ready: the provisioning lead time. KWOK counts from the node's
	// creationTimestamp, so it is rounded to whole seconds. Zero means
	// ready at once.
	NodeReadyDelay time.Duration
	// Dir is where the run directory is made; empty means the system's
	// temporary directory.
	Dir string
	// Timeout bounds the start of all processes once the API server runs;
	// zero means two minutes.
	Timeout time.Duration
	// Binaries is the directory of the binaries beyond envtest's; empty
	// looks where FindBinaries does.
	Binaries string
	// ControlPlane is the directory of kube-apiserver and etcd; empty
	// means KUBEBUILDER_ASSETS.
	ControlPlane string
	// KarpenterEnv adds or overrides environment variables of Karpenter
	// (e.g. "BATCH_MAX_DURATION=2s").
	KarpenterEnv []string
}

// Cluster is a running local cluster.
type Cluster struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a client of Config with Scheme.
	Client client.Client
	// Scheme knows client-go's, apiextensions' and laxity's kinds; any
	// other kind (Karpenter's, SparkApplication) is read and written as
	// unstructured.
	Scheme *runtime.Scheme
	// Environment is the envtest environment of the API server and etcd.
	Environment *envtest.Environment
	// Kubeconfig is the path of a kubeconfig of an administrator
	// (system:masters), for a process that is handed the cluster.
	Kubeconfig string
	// Dir is the run directory: the kubeconfig, KWOK's configuration and
	// one log per process (<name>.log).
	Dir string

	procs []*process
}

// Start starts the cluster and returns once every process is healthy and
// the default KWOKNodeClass exists. On failure it stops whatever it started
// and its error names the run directory.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.NodeReadyDelay < 0 {
		return nil, fmt.Errorf("NodeReadyDelay %v is negative", opts.NodeReadyDelay)
	}
	bins, err := FindBinaries(opts.Binaries)
	if err != nil {
		return nil, err
	}
	assets := opts.ControlPlane
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if !controlplane.HasBinaries(assets) {
		return nil, ErrNoControlPlane
	}
	crds, err := allCRDs(filepath.Join(bins, "crds"))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(opts.Dir, "laxity-cluster-")
	if err != nil {
		return nil, fmt.Errorf("making the run directory: %w", err)
	}
	c := &Cluster{Dir: dir}
	if err := c.startControlPlane(assets, crds); err != nil {
		return nil, fmt.Errorf("%w (run directory %s)", err, dir)
	}
	if err := c.start(ctx, bins, opts); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("starting the local cluster (logs in %s): %w", dir, err)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, bins string, opts Options) error {
	kubeconfig, err := c.writeKubeconfig(c.Dir, adminUser)
	if err != nil {
		return err
	}
	c.Kubeconfig = kubeconfig
	kwokConfig := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(kwokConfig, []byte(stages(opts.NodeReadyDelay)), 0o600); err != nil {
		return err
	}
	// KWOK also reads ~/.kwok/kwok.yaml when it exists: an empty home of its
	// own keeps a developer's configuration out.
	kwokHome := filepath.Join(c.Dir, "kwok-home")
	if err := os.Mkdir(kwokHome, 0o700); err != nil {
		return err
	}

	type component struct {
		name, health string
		args, env    []string
	}
	var components []component
	for _, name := range []string{"kube-scheduler", "kube-controller-manager"} {
		p, err := freePort()
		if err != nil {
			return err
		}
		args := []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			// envtest's API server sets no request-header CA: looking for
			// it only logs errors.
			"--authentication-skip-lookup=true",
			"--authorization-kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(p),
			"--cert-dir=" + filepath.Join(c.Dir, name+"-certs"),
			// Level 2 logs every scheduling and controller decision, what a
			// failed run is read for.
			"--v=2",
		}
		if name == "kube-controller-manager" {
			args = append(args,
				// What Deployments, Jobs and namespaces need, and the node
				// lifecycle controller: the API server taints every new node
				// not-ready (TaintNodesByCondition) and only that controller
				// lifts the taint once the node is Ready, as kube-scheduler
				// reads taints, not conditions.
				"--controllers="+strings.Join([]string{
					"deployment-controller", "replicaset-controller", "job-controller",
					"garbage-collector-controller", "namespace-controller",
					"pod-garbage-collector-controller", "serviceaccount-controller",
					"serviceaccount-token-controller", "node-lifecycle-controller",
				}, ","),
				// A node still booting (for the whole provisioning lead
				// time) is not unhealthy; KWOK's node leases are the
				// heartbeats afterwards.
				"--node-startup-grace-period="+max(time.Hour, 2*opts.NodeReadyDelay).String(),
				// The key envtest's API server verifies service account
				// tokens with (--service-account-key-file).
				"--service-account-private-key-file="+filepath.Join(c.Environment.ControlPlane.APIServer.CertDir, "sa-signer.key"),
			)
		}
		components = append(components, component{name: name, args: args, health: fmt.Sprintf("https://127.0.0.1:%d/healthz", p)})
	}
	kwokPort, err := freePort()
	if err != nil {
		return err
	}
	components = append(components, component{
		name: "kwok",
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + kwokConfig,
			"--manage-all-nodes=false",
			"--manage-nodes-with-label-selector=" + KWOKNodeLabel,
			"--server-address=" + fmt.Sprintf("127.0.0.1:%d", kwokPort),
			// Pod IPs are only written into pod status; a /16 has room for
			// the pods of a large run.
			"--cidr=10.0.0.1/16",
			// Leases are the node heartbeats the node lifecycle controller
			// reads, one write per node every 10 seconds.
			"--node-lease-duration-seconds=40",
		},
		env:    []string{"HOME=" + kwokHome},
		health: fmt.Sprintf("http://127.0.0.1:%d/healthz", kwokPort),
	})
	metricsPort, err := freePort()
	if err != nil {
		return err
	}
	probePort, err := freePort()
	if err != nil {
		return err
	}
	// Karpenter v1.15 reads its settings from these variables (its
	// pkg/operator/options); it serves no webhooks and reads no cluster
	// name or system namespace.
	karpenterEnv := append([]string{
		"KUBECONFIG=" + kubeconfig,
		// One replica against a private control plane: nothing to elect.
		"DISABLE_LEADER_ELECTION=true",
		// NodePools with spec.replicas (static capacity) and
		// CapacityBuffers are alpha.
		"FEATURE_GATES=StaticCapacity=true,CapacityBuffer=true",
		"METRICS_PORT=" + strconv.Itoa(metricsPort),
		// Both bind every interface (":port"); only the probe is read,
		// on the loopback address.
		"HEALTH_PROBE_PORT=" + strconv.Itoa(probePort),
		"LOG_LEVEL=debug",
	}, opts.KarpenterEnv...)
	components = append(components, component{
		name:   "karpenter",
		env:    karpenterEnv,
		health: fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort),
	})

	// Start them all, then wait: they come up in parallel.
	for _, comp := range components {
		bin := comp.name
		if bin == "karpenter" {
			bin = "karpenter-kwok"
		}
		p, err := startProcess(c.Dir, comp.name, filepath.Join(bins, bin), comp.args, comp.env)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, comp := range components {
		if err := c.procs[i].waitHealthy(waitCtx, comp.health); err != nil {
			return err
		}
	}
	nodeClass := &unstructured.Unstructured{}
	nodeClass.SetAPIVersion("karpenter.kwok.sh/v1alpha1")
	nodeClass.SetKind("KWOKNodeClass")
	nodeClass.SetName(DefaultNodeClass)
	if err := c.Client.Create(ctx, nodeClass); err != nil {
		return fmt.Errorf("creating the KWOKNodeClass %s: %w", DefaultNodeClass, err)
	}
	return nil
}

// stages is KWOK's configuration: the Stages of stages.yaml with nodes
// Ready nodeReady after their creation.
func stages(nodeReady time.Duration) string {
	return strings.NewReplacer(
		"__NODE_READY_SECONDS__", strconv.FormatInt(int64(nodeReady.Round(time.Second)/time.Second), 10),
		"__RUN_SECONDS_ANNOTATION__", RunSecondsAnnotation,
	).Replace(stagesTemplate)
}

// Stop stops every process Start started, then the API server and etcd. It
// keeps the run directory (see RemoveDir). A nil Cluster has nothing to
// stop.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	// Karpenter and KWOK first: they act on the API server until they end.
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(15 * time.Second)
	}
	c.procs = nil
	if c.Environment == nil {
		return nil
	}
	return c.Environment.Stop()
}

// RemoveDir removes the run directory, for a run whose logs nobody needs.
func (c *Cluster) RemoveDir() error {
	if c == nil || c.Dir == "" {
		return nil
	}
	return os.RemoveAll(c.Dir)
}

// ResidentMemory is the resident memory in bytes of each process Start
// started (by component name), read from /proc; the API server and etcd
// are envtest's and not among them.
func (c *Cluster) ResidentMemory() (map[string]int64, error) {
	out := map[string]int64{}
	for _, p := range c.procs {
		rss, err := p.residentBytes()
		if err != nil {
			return nil, fmt.Errorf("reading the memory of %s: %w", p.name, err)
		}
		out[p.name] = rss
	}
	return out, nil
}

// startControlPlane starts etcd and kube-apiserver from assets with crds.
func (c *Cluster) startControlPlane(assets string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	scheme, err := controlplane.NewScheme()
	if err != nil {
		return err
	}
	// The cluster lives as long as its run: waiting for every write to
	// reach the disk would only slow the components down.
	etcd := &envtest.Etcd{}
	etcd.Configure().Set("unsafe-no-fsync", "true")
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, Scheme: scheme}
	env.ControlPlane.Etcd = etcd
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return err
	}
	c.Config, c.Client, c.Scheme, c.Environment = cfg, cl, scheme, env
	return nil
}

// writeKubeconfig writes a kubeconfig for user, a member of
// system:masters, into dir and returns its path.
func (c *Cluster) writeKubeconfig(dir, user string) (string, error) {
	return controlplane.WriteKubeconfig(c.Environment, dir, user)
}

// BinariesKey names a build of the binaries, as hack/cluster-binaries.sh
// does: the directory under bin/cluster and under the build cache.
func BinariesKey() string {
	return fmt.Sprintf("kube-v%s_kwok-v%s_karpenter-v%s_%s-%s", KubeVersion, KWOKVersion, KarpenterVersion, goruntime.GOOS, goruntime.GOARCH)
}

const buildHint = "run `make cluster-binaries` once (it builds them from Go modules, about 8 minutes on 2 cores)"

// FindBinaries is the directory of the cluster's binaries (kube-scheduler,
// kube-controller-manager, kwok, karpenter-kwok and Karpenter's CRDs under
// crds/): explicit when given, else BinariesEnv when set, else the first
// complete one of bin/cluster/<BinariesKey> under the working directory and
// the per-user build cache hack/cluster-binaries.sh fills. Its error names
// what is missing where, and how to build it.
func FindBinaries(explicit string) (string, error) {
	switch {
	case explicit != "":
		return checkBinaries(explicit, "")
	case os.Getenv(BinariesEnv) != "":
		return checkBinaries(os.Getenv(BinariesEnv), BinariesEnv+"=")
	}
	candidates := []string{filepath.Join("bin", "cluster", BinariesKey())}
	if cache := controlplane.BuildCache(CacheEnv, "cluster"); cache != "" {
		candidates = append(candidates, filepath.Join(cache, BinariesKey()))
	}
	for _, dir := range candidates {
		if found, err := checkBinaries(dir, ""); err == nil {
			return found, nil
		}
	}
	return "", fmt.Errorf("%w: kube-scheduler, kube-controller-manager, kwok and karpenter-kwok are in none of %s; %s, or set %s to a directory holding them",
		ErrMissingBinary, strings.Join(candidates, ", "), buildHint, BinariesEnv)
}

// checkBinaries checks that every binary and CRD is in dir (named as
// source+dir in errors) and returns its absolute path.
func checkBinaries(dir, source string) (string, error) {
	for _, b := range binaries {
		if !controlplane.Executable(filepath.Join(dir, b)) {
			return "", fmt.Errorf("%w: %s is not an executable in %s%s; %s", ErrMissingBinary, b, source, dir, buildHint)
		}
	}
	for _, f := range karpenterCRDFiles {
		if _, err := os.Stat(filepath.Join(dir, "crds", f)); err != nil {
			return "", fmt.Errorf("%w: Karpenter's CRD %s is not in %s; %s", ErrMissingBinary, f, filepath.Join(dir, "crds"), buildHint)
		}
	}
	return filepath.Abs(dir)
}

// allCRDs are laxity's CRDs, the SparkApplication CRD and those of the
// Karpenter the cluster runs (files of dir).
func allCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := thirdparty.CRDs(thirdparty.SparkApplications)
	if err != nil {
		return nil, err
	}
	laxity, err := controlplane.LaxityCRDs()
	if err != nil {
		return nil, err
	}
	crds = append(crds, laxity...)
	for _, f := range karpenterCRDFiles {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("reading Karpenter's CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return nil, fmt.Errorf("decoding Karpenter's CRD %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Dump writes the cluster's Nodes, NodeClaims, NodePools, CapacityBuffers,
// Pods and Events as YAML into <Dir>/state-<name>.yaml and returns the path,
// for a failed spec to leave what it saw next to the logs.
func (c *Cluster) Dump(ctx context.Context, name string) (string, error) {
	var out []byte
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "NodeList"},
		NodeClaimKind.GroupVersion().WithKind(NodeClaimKind.Kind + "List"),
		NodePoolKind.GroupVersion().WithKind(NodePoolKind.Kind + "List"),
		{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Kind: "CapacityBufferList"},
		{Version: "v1", Kind: "PodList"},
		{Version: "v1", Kind: "EventList"},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := c.Client.List(ctx, list); err != nil {
			out = append(out, fmt.Sprintf("# listing %s: %v\n---\n", gvk.Kind, err)...)
			continue
		}
		for i := range list.Items {
			data, err := yaml.Marshal(list.Items[i].Object)
			if err != nil {
				return "", err
			}
			out = append(out, data...)
			out = append(out, "---\n"...)
		}
	}
	path := filepath.Join(c.Dir, "state-"+name+".yaml")
	return path, os.WriteFile(path, out, 0o600)
}
