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

package api

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	laxityv1alpha1 "github.com/laxity-dev/laxity/api/v1alpha1"
)

const (
	samplesDir = "../../config/samples"
	validDir   = "testdata/valid"
	invalidDir = "testdata/invalid"

	// minInvalidCases guards against the table silently shrinking.
	minInvalidCases = 30
)

// invalidCase is one file of testdata/invalid: a manifest the API server must
// reject, with the field its error must name. The files are the shared table
// of invalid manifests: their header is
//
//	# field: spec.x.y        (required) the field path the error must contain
//	# message: some words    (optional) a substring the error must contain
//	# offline: why            (optional) only laxity plan and the operator
//	                          reject it: no CEL rule can (such as the
//	                          intervals of a cron schedule), so the API
//	                          server must accept it
//
// followed by free comments and exactly one object.
type invalidCase struct {
	path    string
	field   string
	message string
	offline string
}

func readInvalidCase(path string) (invalidCase, error) {
	c := invalidCase{path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		key, value, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		switch {
		case first && key != "field":
			return c, fmt.Errorf("%s: the first line must be a `# field: spec.x.y` comment", path)
		case key == "field":
			c.field = strings.TrimSpace(value)
		case key == "message":
			c.message = strings.TrimSpace(value)
		case key == "offline":
			c.offline = strings.TrimSpace(value)
		}
	}
	if c.field == "" {
		return c, fmt.Errorf("%s: the `# field:` comment names no field", path)
	}
	return c, nil
}

// fileEntries makes one table entry per YAML file under dir; when there are
// none it makes a single entry that skips with the reason.
func fileEntries(dir, noneReason string) []TableEntry {
	files, err := yamlFiles(dir)
	if err != nil {
		return []TableEntry{Entry("listing "+dir, "", err)}
	}
	if len(files) == 0 {
		return []TableEntry{Entry(dir+" (empty)", "", errSkip(noneReason))}
	}
	entries := make([]TableEntry, 0, len(files))
	for _, f := range files {
		entries = append(entries, Entry(f, f, nil))
	}
	return entries
}

type errSkip string

func (e errSkip) Error() string { return string(e) }

// setupErr fails or skips an entry whose file could not be listed.
func setupErr(err error) {
	var skip errSkip
	if errors.As(err, &skip) {
		Skip(string(skip))
	}
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Manifests the API server accepts", func() {
	accepted := func(path string, listErr error) {
		setupErr(listErr)
		objs, err := readDocuments(path)
		Expect(err).NotTo(HaveOccurred())
		created := 0
		for _, obj := range objs {
			if obj.GroupVersionKind().Group != laxityv1alpha1.GroupVersion.Group {
				// Other kinds in a sample (namespaces, SparkApplications…)
				// are not this suite's business.
				GinkgoWriter.Printf("skipping %s %s in %s\n", obj.GetKind(), obj.GetName(), path)
				continue
			}
			obj.SetNamespace(dryRunNamespace)
			Expect(k8sClient.Create(ctx, obj, client.DryRunAll)).To(Succeed(),
				"%s %s in %s must be accepted", obj.GetKind(), obj.GetName(), path)
			created++
		}
		if created == 0 {
			Skip(path + " holds no laxity.dev object")
		}
	}

	DescribeTable("config/samples", accepted,
		fileEntries(samplesDir, "no samples under config/samples yet"))

	DescribeTable("testdata/valid", accepted,
		fileEntries(validDir, "testdata/valid must not be empty"))

	It("has its own valid fixtures", func() {
		files, err := yamlFiles(validDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).NotTo(BeEmpty())
	})
})

var _ = Describe("Manifests the API server rejects", func() {
	It("has a table of at least 30 invalid manifests", func() {
		files, err := yamlFiles(invalidDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(files)).To(BeNumerically(">=", minInvalidCases))
	})

	DescribeTable("testdata/invalid",
		func(path string, listErr error) {
			setupErr(listErr)
			c, err := readInvalidCase(path)
			Expect(err).NotTo(HaveOccurred())
			objs, err := readDocuments(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).To(HaveLen(1), "%s must hold exactly one object", path)
			obj := objs[0]
			Expect(obj.GroupVersionKind().Group).To(Equal(laxityv1alpha1.GroupVersion.Group))
			obj.SetNamespace(dryRunNamespace)

			err = k8sClient.Create(ctx, obj, client.DryRunAll)
			if c.offline != "" {
				// The operator refuses it at run time instead; a CEL rule
				// that starts rejecting it should move it out of offline.
				Expect(err).NotTo(HaveOccurred(), "%s is rejected offline only (%s)", path, c.offline)
				return
			}
			Expect(err).To(HaveOccurred(), "%s must be rejected", path)
			GinkgoWriter.Printf("%s: %v\n", path, err)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			Expect(err.Error()).To(ContainSubstring(c.field))
			if c.message != "" {
				Expect(err.Error()).To(ContainSubstring(c.message))
			}
			// The field is the reported path of one of the causes, not just
			// mentioned somewhere in the text.
			var fields []string
			var status apierrors.APIStatus
			Expect(errors.As(err, &status)).To(BeTrue())
			if details := status.Status().Details; details != nil {
				for _, cause := range details.Causes {
					// A rule on the whole object (such as the one on
					// metadata.name) is reported on the root, its message
					// naming the field.
					if (cause.Field == "" || cause.Field == "<nil>") && strings.Contains(cause.Message, ": "+c.field+" ") {
						fields = append(fields, c.field)
						continue
					}
					fields = append(fields, cause.Field)
				}
			}
			Expect(fields).To(ContainElement(c.field), "error: %v", err)
		},
		fileEntries(invalidDir, "testdata/invalid must not be empty"))
})
