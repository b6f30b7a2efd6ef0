package localcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// These tests start nothing: they check what Start says before it would.

// fakeBinaries makes dir hold every binary (empty scripts) and, when crds,
// Karpenter's CRD files.
func fakeBinaries(t *testing.T, dir string, crds bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range karpenterCRDFiles {
		if !crds {
			break
		}
		if err := os.WriteFile(filepath.Join(dir, "crds", f), []byte("kind: CustomResourceDefinition\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindBinaries(t *testing.T) {
	work, cache, explicit := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(work)
	t.Setenv(BinariesEnv, "")
	t.Setenv(CacheEnv, cache)

	_, err := FindBinaries("")
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "make cluster-binaries") ||
		!strings.Contains(err.Error(), filepath.Join("bin", "cluster", BinariesKey())) || !strings.Contains(err.Error(), cache) {
		t.Fatalf("FindBinaries with nothing built: %v, want ErrMissingBinary naming both places and make cluster-binaries", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error is not one line: %q", err)
	}

	fakeBinaries(t, filepath.Join(cache, BinariesKey()), true)
	if dir, err := FindBinaries(""); err != nil || dir != filepath.Join(cache, BinariesKey()) {
		t.Errorf("FindBinaries with the cache filled = %q, %v; want the cache's directory", dir, err)
	}
	fakeBinaries(t, filepath.Join(work, "bin", "cluster", BinariesKey()), true)
	if dir, err := FindBinaries(""); err != nil || dir != filepath.Join(work, "bin", "cluster", BinariesKey()) {
		t.Errorf("FindBinaries with bin/cluster filled = %q, %v; want bin/cluster first", dir, err)
	}

	// A directory given explicitly, or by the variable, is the only one
	// looked at, and its error names it.
	fakeBinaries(t, explicit, false)
	if _, err := FindBinaries(explicit); !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), karpenterCRDFiles[0]) {
		t.Errorf("FindBinaries(%s) without the CRDs: %v, want ErrMissingBinary naming %s", explicit, err, karpenterCRDFiles[0])
	}
	t.Setenv(BinariesEnv, t.TempDir())
	if _, err := FindBinaries(""); !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), BinariesEnv+"=") || !strings.Contains(err.Error(), "kube-scheduler is not an executable") {
		t.Errorf("FindBinaries with %s empty: %v, want ErrMissingBinary naming the variable and kube-scheduler", BinariesEnv, err)
	}
}

func TestStartNamesTheMissingBinary(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"kube-scheduler", "kwok"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Start(context.Background(), Options{Binaries: dir})
	if !errors.Is(err, ErrMissingBinary) {
		t.Fatalf("Start with binaries missing: %v, want ErrMissingBinary", err)
	}
	if !strings.Contains(err.Error(), "kube-controller-manager is not an executable") || !strings.Contains(err.Error(), "make cluster-binaries") {
		t.Errorf("the error does not name kube-controller-manager and how to build it: %v", err)
	}
}

func TestStartWithoutTheControlPlane(t *testing.T) {
	dir := t.TempDir()
	fakeBinaries(t, dir, true)
	if _, err := Start(context.Background(), Options{Binaries: dir, ControlPlane: t.TempDir()}); !errors.Is(err, ErrNoControlPlane) {
		t.Fatalf("Start without kube-apiserver and etcd: %v, want ErrNoControlPlane", err)
	}
}

func TestStartNamesAMissingCRD(t *testing.T) {
	dir := t.TempDir()
	for _, b := range binaries {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(BinariesEnv, dir)
	_, err := Start(context.Background(), Options{})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), karpenterCRDFiles[0]) {
		t.Fatalf("Start without Karpenter's CRDs: %v, want ErrMissingBinary naming %s", err, karpenterCRDFiles[0])
	}
}

func TestStartRefusesANegativeDelay(t *testing.T) {
	if _, err := Start(context.Background(), Options{NodeReadyDelay: -time.Second}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("Start with a negative NodeReadyDelay: %v, want an error saying so", err)
	}
}

// The stages are YAML documents of KWOK's Stage kind, with the lead time
// and the run-time annotation filled in.
func TestStages(t *testing.T) {
	out := stages(12400 * time.Millisecond)
	if strings.Contains(out, "__") {
		t.Fatalf("a placeholder is left in the stages:\n%s", out)
	}
	names := map[string]map[string]any{}
	for doc := range strings.SplitSeq(out, "\n---\n") {
		var stage map[string]any
		if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
			t.Fatalf("a stage is not YAML: %v\n%s", err, doc)
		}
		if stage["kind"] != "Stage" || stage["apiVersion"] != "kwok.x-k8s.io/v1alpha1" {
			t.Fatalf("not a KWOK Stage: %v", stage)
		}
		meta, _ := stage["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		names[name] = stage
	}
	for _, want := range []string{"node-boot", "node-initialize", "pod-ready", "pod-complete", "pod-delete"} {
		if names[want] == nil {
			t.Errorf("no stage %s among %v", want, names)
		}
	}
	if !strings.Contains(out, "fromdateiso8601 + 12 |") {
		t.Errorf("the node-initialize delay is not the lead time rounded to 12 seconds:\n%s", out)
	}
	if !strings.Contains(out, `.metadata.annotations["`+RunSecondsAnnotation+`"]`) {
		t.Errorf("the pod-complete stage does not read %s", RunSecondsAnnotation)
	}
}
