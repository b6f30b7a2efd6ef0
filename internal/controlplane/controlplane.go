// Package controlplane holds what every local kube-apiserver and etcd of
// laxity shares — the test suites' (test/testenv), the demo's and the local
// cluster's (internal/localcluster): finding the binaries and their build
// cache, laxity's scheme and CRDs, and an administrator's kubeconfig.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
	"github.com/laxity-dev/laxity/config/crd"
)

// Executable reports whether path is an executable file.
func Executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// HasBinaries reports whether dir holds kube-apiserver and etcd.
func HasBinaries(dir string) bool {
	return Executable(filepath.Join(dir, "kube-apiserver")) && Executable(filepath.Join(dir, "etcd"))
}

// BuildCache is the per-user cache a hack/ build script fills for kind
// ("envtest", "cluster"): the directory env names when set, else the user's
// cache directory's laxity/<kind>; empty when neither is known.
func BuildCache(env, kind string) string {
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "laxity", kind)
	}
	return ""
}

// NewScheme knows client-go's kinds, CustomResourceDefinitions and
// laxity's kinds.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, laxityv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// LaxityCRDs decodes laxity's own CRDs.
func LaxityCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, data := range crd.All() {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			return nil, fmt.Errorf("decoding laxity's CRDs: %w", err)
		}
		crds = append(crds, c)
	}
	return crds, nil
}

// WriteKubeconfig writes a kubeconfig for user, a member of system:masters,
// of env's API server into dir and returns its path.
func WriteKubeconfig(env *envtest.Environment, dir, user string) (string, error) {
	admin, err := env.ControlPlane.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding user %s to the API server: %w", user, err)
	}
	data, err := admin.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}
