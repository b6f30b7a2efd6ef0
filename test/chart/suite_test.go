/*
Copyright 2026 The laxity Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package chart tests the two ways laxity is installed: the Helm chart in
// charts/laxity and the kustomize manifests in config/. Both are rendered
// with the pinned helm and kustomize, every object is created in a real
// kube-apiserver started by envtest, and each installation is checked against
// what the manager needs and accepts, and against the other.
package chart

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/test/testenv"
)

var (
	repoRoot  string
	chartDir  string
	helm      string
	kustomize string
	// helmHome keeps helm's cache, config and data apart from the user's, so
	// that no installed plugin or repository changes what helm does.
	helmHome   string
	testEnv    *testenv.Env
	restConfig *rest.Config
	// kubeVersion is the envtest API server's version, the Makefile's
	// ENVTEST_K8S_VERSION, which helm template renders for (--kube-version):
	// the chart's kubeVersion is checked against it, and neither a helm nor
	// a kube-apiserver built from source knows its own Kubernetes version.
	kubeVersion string
)

func TestChart(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	// make does not pass Ginkgo flags to every package, so randomise here.
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "Helm chart and kustomize manifests suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	var err error
	repoRoot, err = filepath.Abs(filepath.Join("..", ".."))
	Expect(err).NotTo(HaveOccurred())
	chartDir = filepath.Join(repoRoot, "charts", "laxity")
	helm = pinnedTool("HELM", "helm-v3.22.0")
	kustomize = pinnedTool("KUSTOMIZE", "kustomize-v5.8.2")
	helmHome = GinkgoT().TempDir()

	// The systems the manager's rules name, so that the API server can say
	// which of their resources are namespaced; and the Prometheus
	// Operator's CRDs, so that it validates the monitoring objects.
	testEnv, err = testenv.Start(testenv.WithThirdPartyCRDs(testenv.SparkApplications, testenv.MachineDeployments, testenv.NodePools, testenv.CapacityBuffers))
	Expect(err).NotTo(HaveOccurred())
	restConfig = testEnv.Config
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	Expect(err).NotTo(HaveOccurred())
	pinned := regexp.MustCompile(`(?m)^ENVTEST_K8S_VERSION \?= (\S+)$`).FindSubmatch(makefile)
	Expect(pinned).NotTo(BeNil(), "the Makefile pins ENVTEST_K8S_VERSION")
	kubeVersion = string(pinned[1])
	_, err = envtest.InstallCRDs(restConfig, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(repoRoot, "test", "chart", "testdata", "crds")},
		ErrorIfPathMissing: true,
		MaxTime:            testenv.SlowControlPlane,
	})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	Expect(testEnv.Stop()).To(Succeed())
})

// pinnedTool is the binary the environment variable names (make test sets
// it), else the version the Makefile pins into bin/.
func pinnedTool(envVar, pinned string) string {
	if path := os.Getenv(envVar); path != "" {
		return path
	}
	path := filepath.Join(repoRoot, "bin", pinned)
	if _, err := os.Stat(path); err != nil {
		Fail(fmt.Sprintf("%s is not set and %s is missing: run `make test`, which installs it", envVar, path))
	}
	return path
}

// run runs a tool in the repository root and returns its standard output; on
// failure the error carries both outputs.
func run(tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(tool, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(tool), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// helmTemplate renders the chart as the release name in namespace, for the
// envtest API server's version, with extra helm flags such as --set or
// --values.
func helmTemplate(name, namespace string, flags ...string) rendered {
	GinkgoHelper()
	out, err := run(helm, append([]string{"template", name, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}, flags...)...)
	Expect(err).NotTo(HaveOccurred())
	objs, err := decodeDocuments(out)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// helmTemplateError renders the chart expecting helm to refuse, and returns
// what helm said.
func helmTemplateError(flags ...string) string {
	GinkgoHelper()
	_, err := run(helm, append([]string{"template", "refused", chartDir, "--namespace", "refused", "--kube-version", kubeVersion}, flags...)...)
	Expect(err).To(HaveOccurred(), "helm template %q succeeded", flags)
	return err.Error()
}

// kustomizeBuild builds the kustomization in dir, relative to the repository
// root.
func kustomizeBuild(dir string) rendered {
	GinkgoHelper()
	out, err := run(kustomize, "build", dir)
	Expect(err).NotTo(HaveOccurred())
	objs, err := decodeDocuments(out)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// readDocuments decodes a multi-document YAML file of the repository.
func readDocuments(path string) rendered {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	objs, err := decodeDocuments(data)
	Expect(err).NotTo(HaveOccurred(), "decoding %s", path)
	return objs
}

// readYAML decodes one YAML file of the repository into out, rejecting
// fields out does not have when strict.
func readYAML(path string, out any, strict bool) {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	if strict {
		Expect(yaml.UnmarshalStrict(data, out)).To(Succeed(), "decoding %s", path)
	} else {
		Expect(yaml.Unmarshal(data, out)).To(Succeed(), "decoding %s", path)
	}
}

// decodeDocuments decodes every non-empty document of a multi-document YAML
// stream; a document that is not a Kubernetes object is an error.
func decodeDocuments(data []byte) (rendered, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs rendered
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d: %w", i, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("document %d is not a Kubernetes object (no apiVersion, kind or name):\n%s", i, doc)
		}
		objs = append(objs, obj)
	}
}

// plainNamespace is a namespace without Pod Security labels, for the
// namespaces the manager watches.
func plainNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// restrictedNamespace is a namespace whose pods must meet the "restricted"
// Pod Security Standard, and which warns about workloads that would not.
func restrictedNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
}

// createAll creates the objects in the envtest API server, Namespaces first,
// rejecting unknown and duplicate fields, and returns the warnings the server
// sent back (Pod Security violations of workloads among them). Each object
// other than a Namespace is first sent with a server-side dry run, as
// `kubectl apply --dry-run=server` sends a new object, which must pass too.
func createAll(ctx context.Context, objs ...client.Object) []string {
	GinkgoHelper()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(restConfig)
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	// Namespaces first, picked out before creating anything: creating a
	// typed object clears its kind.
	var namespaces, others []client.Object
	for _, obj := range objs {
		if obj.GetObjectKind().GroupVersionKind().GroupKind() == namespaceKind {
			namespaces = append(namespaces, obj)
		} else {
			others = append(others, obj)
		}
	}
	for _, obj := range namespaces {
		Expect(c.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed(),
			"creating Namespace %s", obj.GetName())
	}
	for _, obj := range others {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		dry, ok := obj.DeepCopyObject().(client.Object)
		Expect(ok).To(BeTrue())
		Expect(c.Create(ctx, dry, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed(),
			"applying %s %s with a server-side dry run", kind, client.ObjectKeyFromObject(obj))
		Expect(c.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed(),
			"creating %s %s", kind, client.ObjectKeyFromObject(obj))
	}
	return warnings.all()
}

// warningRecorder keeps the warning headers of API responses.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.messages)
}
