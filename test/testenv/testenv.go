// Package testenv starts the local control plane every envtest suite of
// laxity runs against: a kube-apiserver and etcd with laxity's
// CustomResourceDefinitions and the unmodified CRDs of the systems laxity
// drives, a scheme that knows all of their kinds, and a client.
//
// Both sets of CRDs are the ones compiled into the product (config/crd and
// config/thirdparty embed them), so every suite reads them one way and sees
// exactly the schemas `laxity manager` and `laxity demo` are given.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/laxity-dev/laxity/config/thirdparty"
	"github.com/laxity-dev/laxity/internal/controlplane"
)

// The third-party CRDs a suite may install (files of config/thirdparty).
const (
	// SparkApplications is spark-operator's SparkApplication.
	SparkApplications = thirdparty.SparkApplications
	// MachineDeployments is Cluster API's MachineDeployment, a target of
	// the scale backend.
	MachineDeployments = thirdparty.MachineDeployments
	// NodePools is Karpenter's NodePool, a target of the scale backend.
	NodePools = thirdparty.NodePools
	// CapacityBuffers is the CapacityBuffer of autoscaling.x-k8s.io, as
	// Karpenter serves it: the object of the capacityBuffer backend.
	CapacityBuffers = thirdparty.CapacityBuffers
)

// ErrNoControlPlane says the kube-apiserver and etcd binaries are missing.
var ErrNoControlPlane = errors.New("KUBEBUILDER_ASSETS does not name a directory holding kube-apiserver and etcd: run the tests with `make test`, which builds both and sets it (or set it to the output of hack/envtest-binaries.sh)")

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a client of Config with Scheme.
	Client client.Client
	// Scheme knows client-go's, apiextensions' and laxity's kinds; any
	// other kind is read and written as unstructured.
	Scheme *runtime.Scheme
	// Environment is the envtest environment, for what only it offers
	// (adding users for a kubeconfig, among others).
	Environment *envtest.Environment
}

// Option changes what Start starts.
type Option func(*settings)

type settings struct {
	withoutLaxity  bool
	thirdParty     []string
	crds           []*apiextensionsv1.CustomResourceDefinition
	apiServerFlags [][2]string
}

// WithThirdPartyCRDs installs the named third-party CRDs too
// (SparkApplications, MachineDeployments, NodePools, CapacityBuffers).
func WithThirdPartyCRDs(files ...string) Option {
	return func(s *settings) { s.thirdParty = append(s.thirdParty, files...) }
}

// WithCRDs installs the given CRDs too, for a suite that brings schemas
// of its own (the local cluster installs those of the Karpenter it runs).
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(s *settings) { s.crds = append(s.crds, crds...) }
}

// WithoutLaxityCRDs leaves laxity's own CRDs out, for a suite that judges
// only a third-party schema.
func WithoutLaxityCRDs() Option {
	return func(s *settings) { s.withoutLaxity = true }
}

// WithAPIServerFlag sets a kube-apiserver flag (name without the dashes).
func WithAPIServerFlag(name, value string) Option {
	return func(s *settings) { s.apiServerFlags = append(s.apiServerFlags, [2]string{name, value}) }
}

// NewScheme is the scheme of every suite: client-go's kinds, the
// apiextensions kinds (suites that change a CRD) and laxity's kinds.
func NewScheme() (*runtime.Scheme, error) { return controlplane.NewScheme() }

// SlowControlPlane is how long a suite waits for the control plane to start
// or stop and for its CRDs to be served. envtest's defaults (10–20 s) are
// too short on a two-core machine that runs every suite at once.
const SlowControlPlane = 2 * time.Minute

// Start starts a kube-apiserver and etcd from KUBEBUILDER_ASSETS with
// laxity's CRDs (unless WithoutLaxityCRDs) and the chosen third-party CRDs,
// and waits until every CRD is served.
func Start(opts ...Option) (*Env, error) {
	var s settings
	for _, opt := range opts {
		opt(&s)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if !controlplane.HasBinaries(assets) {
		return nil, ErrNoControlPlane
	}
	crds, err := CRDs(!s.withoutLaxity, s.thirdParty...)
	if err != nil {
		return nil, err
	}
	crds = append(crds, s.crds...)
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDs:                     crds,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: SlowControlPlane},
		Scheme:                   scheme,
		ControlPlaneStartTimeout: SlowControlPlane,
		ControlPlaneStopTimeout:  SlowControlPlane,
	}
	if len(s.apiServerFlags) > 0 {
		apiServer := &envtest.APIServer{}
		for _, flag := range s.apiServerFlags {
			apiServer.Configure().Set(flag[0], flag[1])
		}
		env.ControlPlane.APIServer = apiServer
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the envtest control plane from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, Environment: env}, nil
}

// Stop stops the control plane; a nil Env (Start failed) has nothing to
// stop.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	return e.Environment.Stop()
}

// CRDs decodes laxity's CRDs (when laxity is true) and the named
// third-party CRDs; an unknown file is an error naming it.
func CRDs(laxity bool, thirdPartyFiles ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	if laxity {
		var err error
		if crds, err = controlplane.LaxityCRDs(); err != nil {
			return nil, err
		}
	}
	if len(thirdPartyFiles) > 0 {
		others, err := thirdparty.CRDs(thirdPartyFiles...)
		if err != nil {
			return nil, fmt.Errorf("loading a third-party CRD of config/thirdparty: %w", err)
		}
		crds = append(crds, others...)
	}
	return crds, nil
}

// WriteKubeconfig writes a kubeconfig for user, a member of system:masters,
// into dir and returns its path, for a process that is handed the control
// plane (the laxity binary in the end-to-end suite).
func (e *Env) WriteKubeconfig(dir, user string) (string, error) {
	return controlplane.WriteKubeconfig(e.Environment, dir, user)
}
