package demo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/laxity-dev/laxity/config/thirdparty"
	"github.com/laxity-dev/laxity/internal/controlplane"
)

// The control plane `make envtest` (hack/envtest-binaries.sh) builds; keep
// in step with ENVTEST_K8S_VERSION and ENVTEST_ETCD_VERSION of the Makefile.
const (
	kubeVersion = "1.37.2"
	etcdVersion = "3.7.0"
)

// ErrNoControlPlane says the kube-apiserver and etcd binaries are missing.
var ErrNoControlPlane = errors.New("the local control plane is not built yet: run `make envtest` once (it builds kube-apiserver and etcd from Go modules, about 15 minutes), or set KUBEBUILDER_ASSETS to a directory holding both")

// assetsKey names a build of the control plane, as hack/envtest-binaries.sh
// does.
func assetsKey() string {
	return fmt.Sprintf("kube-apiserver-v%s_etcd-v%s_%s-%s", kubeVersion, etcdVersion, runtime.GOOS, runtime.GOARCH)
}

// findAssets is the directory holding kube-apiserver and etcd: explicit, or
// KUBEBUILDER_ASSETS, or the project's bin/k8s, or the per-user cache the
// build script fills.
func findAssets(explicit string) (string, error) {
	var candidates []string
	switch {
	case explicit != "":
		candidates = []string{explicit}
	case os.Getenv("KUBEBUILDER_ASSETS") != "":
		candidates = []string{os.Getenv("KUBEBUILDER_ASSETS")}
	default:
		candidates = append(candidates, filepath.Join("bin", "k8s", assetsKey()))
		if cache := controlplane.BuildCache("LAXITY_ENVTEST_CACHE", "envtest"); cache != "" {
			candidates = append(candidates, filepath.Join(cache, assetsKey()))
		}
	}
	for _, dir := range candidates {
		if controlplane.HasBinaries(dir) {
			return filepath.Abs(dir)
		}
	}
	return "", ErrNoControlPlane
}

// controlPlane is a kube-apiserver and etcd on loopback with laxity's CRDs
// and those of the systems it drives.
type controlPlane struct {
	env *envtest.Environment
	cfg *rest.Config
}

func startControlPlane(assets string) (*controlPlane, error) {
	crds, err := thirdparty.CRDs(thirdparty.SparkApplications, thirdparty.MachineDeployments, thirdparty.NodePools)
	if err != nil {
		return nil, err
	}
	laxity, err := controlplane.LaxityCRDs()
	if err != nil {
		return nil, err
	}
	crds = append(crds, laxity...)
	// The demo's data lives as long as the demo: waiting for every write to
	// reach the disk would only slow laxity's reactions down.
	etcd := &envtest.Etcd{}
	etcd.Configure().Set("unsafe-no-fsync", "true")
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds}
	env.ControlPlane.Etcd = etcd
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the local control plane from %s: %w", assets, err)
	}
	return &controlPlane{env: env, cfg: cfg}, nil
}

// kubeconfig writes a kubeconfig for an administrator of the control plane
// into dir and returns its path.
func (c *controlPlane) kubeconfig(dir string) (string, error) {
	return controlplane.WriteKubeconfig(c.env, dir, "laxity-demo")
}

func (c *controlPlane) stop() error { return c.env.Stop() }
