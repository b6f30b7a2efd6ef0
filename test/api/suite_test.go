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

// Package api tests the laxity CustomResourceDefinitions (their OpenAPI
// schemas, CEL rules and defaults) against a real kube-apiserver started by
// envtest.
package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/laxity-dev/laxity/test/testenv"
)

var (
	testEnv   *testenv.Env
	k8sClient client.Client
	// namespace holds the objects the specs store; dryRunNamespace is where
	// manifests are only validated (dry-run), so that fixture names never
	// collide with stored objects.
	namespace       string
	dryRunNamespace string
	ctx             context.Context
	cancel          context.CancelFunc
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	// make does not pass Ginkgo flags, so randomise here.
	suiteConfig.RandomizeAllSpecs = true
	RunSpecs(t, "API validation suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())

	var err error
	testEnv, err = testenv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient = testEnv.Client

	for _, name := range []*string{&namespace, &dryRunNamespace} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "laxity-api-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		*name = ns.Name
	}
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// readDocuments decodes every non-empty YAML document of a (multi-document)
// file.
func readDocuments(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decoding a document of %s: %w", path, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// yamlFiles lists the .yaml and .yml files under dir, recursively, sorted. A
// missing dir has none.
func yamlFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && path == dir {
				return filepath.SkipAll
			}
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}
