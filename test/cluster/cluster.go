// Package cluster starts and stops a local Kubernetes cluster for
// end-to-end tests, made of real control-plane processes and fake nodes:
//
//   - etcd and kube-apiserver, started by envtest through test/testenv (from
//     KUBEBUILDER_ASSETS, as every envtest suite of laxity), with Karpenter's
//     CRDs;
//   - kube-scheduler, which places pods on nodes;
//   - kube-controller-manager with the controllers a workload needs
//     (Deployments, ReplicaSets, Jobs, garbage collection, namespaces,
//     service accounts, node lifecycle);
//   - KWOK, which plays the kubelet of every node Karpenter creates: a node
//     becomes Ready NodeReadyDelay after it was created (the provisioning
//     lead time), a pod runs as soon as it is bound, and a pod annotated
//     with RunSecondsAnnotation succeeds that long after it started;
//   - Karpenter with its KWOK cloud provider, which turns NodePools into
//     NodeClaims and Node objects.
//
// The binaries beyond envtest's are built by hack/cluster-binaries.sh (`make
// cluster-binaries`), which prints the directory to set as BinariesEnv.
// Each Start makes a run directory holding the kubeconfig, KWOK's
// configuration and one log per process; errors name it.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "embed" // the KWOK stages

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/test/testenv"
)

const (
	// BinariesEnv names the environment variable holding the directory
	// hack/cluster-binaries.sh prints: kube-scheduler,
	// kube-controller-manager, kwok, karpenter-kwok and crds/.
	BinariesEnv = "LAXITY_CLUSTER_BINARIES"
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
var karpenterCRDFiles = []string{"karpenter.sh_nodepools.yaml", "karpenter.sh_nodeclaims.yaml", "karpenter.kwok.sh_kwoknodeclasses.yaml"}

// The binaries the cluster runs beyond envtest's.
var binaries = []string{"kube-scheduler", "kube-controller-manager", "kwok", "karpenter-kwok"}

// ErrMissingBinary says a binary of the cluster is not where BinariesEnv
// points.
var ErrMissingBinary = errors.New("a binary of the local cluster is missing")

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
	// TestEnv is passed to testenv.Start, e.g. to install the
	// SparkApplication CRD too.
	TestEnv []testenv.Option
	// KarpenterEnv adds or overrides environment variables of Karpenter
	// (e.g. "BATCH_MAX_DURATION=2s").
	KarpenterEnv []string
}

// Cluster is a running local cluster.
type Cluster struct {
	// Env is the control plane: Config, Client, Scheme, Environment.
	*testenv.Env
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
	bins, err := locate()
	if err != nil {
		return nil, err
	}
	crds, err := karpenterCRDs(filepath.Join(bins, "crds"))
	if err != nil {
		return nil, err
	}
	if opts.NodeReadyDelay < 0 {
		return nil, fmt.Errorf("NodeReadyDelay %v is negative", opts.NodeReadyDelay)
	}
	dir, err := os.MkdirTemp(opts.Dir, "laxity-cluster-")
	if err != nil {
		return nil, fmt.Errorf("making the run directory: %w", err)
	}
	env, err := testenv.Start(append([]testenv.Option{testenv.WithCRDs(crds...)}, opts.TestEnv...)...)
	if err != nil {
		return nil, fmt.Errorf("%w (run directory %s)", err, dir)
	}
	c := &Cluster{Env: env, Dir: dir}
	if err := c.start(ctx, bins, opts); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("starting the local cluster (logs in %s): %w", dir, err)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, bins string, opts Options) error {
	kubeconfig, err := c.WriteKubeconfig(c.Dir, adminUser)
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
		// NodePools with spec.replicas (static capacity) are alpha.
		"FEATURE_GATES=StaticCapacity=true",
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
	return c.Env.Stop()
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

// locate finds the directory of the cluster's binaries and checks that
// every one is there.
func locate() (string, error) {
	dir := os.Getenv(BinariesEnv)
	const build = "run `make cluster-binaries` and set " + BinariesEnv + " to the directory it prints (`make e2e-cluster` does both)"
	if dir == "" {
		return "", fmt.Errorf("%w: %s is not set; %s", ErrMissingBinary, BinariesEnv, build)
	}
	for _, b := range binaries {
		info, err := os.Stat(filepath.Join(dir, b))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%w: %s is not an executable in %s=%s; %s", ErrMissingBinary, b, BinariesEnv, dir, build)
		}
	}
	for _, f := range karpenterCRDFiles {
		if _, err := os.Stat(filepath.Join(dir, "crds", f)); err != nil {
			return "", fmt.Errorf("%w: Karpenter's CRD %s is not in %s; %s", ErrMissingBinary, f, filepath.Join(dir, "crds"), build)
		}
	}
	return dir, nil
}

// karpenterCRDs decodes the CRDs of the Karpenter the cluster runs.
func karpenterCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
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

// Dump writes the cluster's Nodes, NodeClaims, NodePools, Pods and Events
// as YAML into <Dir>/state-<name>.yaml and returns the path, for a failed
// spec to leave what it saw next to the logs.
func (c *Cluster) Dump(ctx context.Context, name string) (string, error) {
	var out []byte
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "NodeList"},
		NodeClaimKind.GroupVersion().WithKind(NodeClaimKind.Kind + "List"),
		NodePoolKind.GroupVersion().WithKind(NodePoolKind.Kind + "List"),
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
