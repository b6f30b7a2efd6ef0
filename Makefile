# laxity — build, generate, test. Tools are pinned and installed into bin/ on
# demand; `make test` needs nothing but Go, and python3 for the reference
# Spark job's tests (examples/spark; the standard library only, no Spark).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
export PATH := $(LOCALBIN):$(PATH)

CONTROLLER_TOOLS_VERSION ?= v0.23.0
HELM_VERSION ?= v3.22.0
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
ENVTEST_K8S_VERSION ?= 1.37.2
ENVTEST_ETCD_VERSION ?= 3.7.0
# The local cluster of internal/localcluster (make e2e-cluster, make demo-cluster) beyond envtest's control plane.
CLUSTER_KWOK_VERSION ?= 0.8.0
CLUSTER_KARPENTER_VERSION ?= 1.15.0
# promtool, for the chart's alert tests: Prometheus 3.16.0's Go module.
PROMETHEUS_VERSION ?= v0.316.0

CLUSTER_BINARIES := KUBE_VERSION=$(ENVTEST_K8S_VERSION) KWOK_VERSION=$(CLUSTER_KWOK_VERSION) KARPENTER_VERSION=$(CLUSTER_KARPENTER_VERSION) hack/cluster-binaries.sh

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

GO_TEST_FLAGS ?= -race -count=1 -timeout 60m
# Passed to the packages whose tests import Ginkgo only: other test binaries
# reject --ginkgo.* flags.
GINKGO_TEST_FLAGS ?= --ginkgo.randomize-all

# Image built by docker-build: tagged with the chart's appVersion, the tag
# the chart runs by default.
CHART_APP_VERSION := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/laxity/Chart.yaml)
IMG ?= laxity:$(CHART_APP_VERSION)
CONTAINER_TOOL ?= docker

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CustomResourceDefinitions (also as JSON, which laxity plan embeds) and the manager's ClusterRole, and copy both into the chart.
	$(CONTROLLER_GEN) crd paths="./api/..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/crdjson config/crd/bases config/crd/json
	$(CONTROLLER_GEN) rbac:roleName=laxity-manager paths="./controllers/..." output:rbac:artifacts:config=config/rbac
	mkdir -p charts/laxity/files/crds
	rm -f charts/laxity/files/crds/*.yaml
	cp config/crd/bases/*.yaml charts/laxity/files/crds/
	cp config/rbac/role.yaml charts/laxity/files/manager-role.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: manifests generate ## Regenerate and fail on any diff; check purity, layering, chart CRD and RBAC drift and the chart's values table.
	git --no-pager diff --exit-code -- api config charts
	@new="$$(git ls-files --others --exclude-standard -- 'api/*zz_generated*' config/crd config/rbac/role.yaml charts/laxity/files)"; \
	if [[ -n "$$new" ]]; then echo "Generated files are not committed:"; echo "$$new"; exit 1; fi
	hack/verify-purity.sh
	hack/verify-layering.sh
	diff -r config/crd/bases charts/laxity/files/crds
	diff config/rbac/role.yaml charts/laxity/files/manager-role.yaml
	go run ./hack/chartdoc -check charts/laxity

# The environment hack/test.sh runs in: the envtest control plane, the pinned
# tools and the command that builds the local cluster's binaries.
TEST_ENV = KUBEBUILDER_ASSETS="$$(KUBE_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) hack/envtest-binaries.sh $(LOCALBIN))" \
	HELM="$(HELM)" KUSTOMIZE="$(KUSTOMIZE)" CLUSTER_BINARIES="$(CLUSTER_BINARIES) $(LOCALBIN)" \
	KUBE_VERSION=$(ENVTEST_K8S_VERSION) PROMETHEUS_VERSION=$(PROMETHEUS_VERSION) \
	GO_TEST_FLAGS="$(GO_TEST_FLAGS)" GINKGO_TEST_FLAGS="$(GINKGO_TEST_FLAGS)"

.PHONY: envtest
envtest: ## Build the envtest control plane (kube-apiserver, etcd) from Go modules, once per machine.
	@KUBE_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) hack/envtest-binaries.sh $(LOCALBIN) >/dev/null

.PHONY: cluster-binaries
cluster-binaries: ## Build the local cluster's kube-scheduler, kube-controller-manager, KWOK and Karpenter (KWOK provider) from Go modules, once per machine.
	@$(CLUSTER_BINARIES) $(LOCALBIN) >/dev/null

.PHONY: test
test: envtest $(HELM) $(KUSTOMIZE) ## Run the tests but the two slow suites: unit, property, fuzz seeds, the reference Spark job's Python tests, the chart's alert rules (promtool) and envtest suites (with the chart and kustomize manifests), with -race where goroutines run, and the experiments' claims tests (hack/test.sh). `make test-all` adds the local-cluster and e2e suites.
	$(TEST_ENV) SKIP_CLUSTER=1 SKIP_E2E=1 hack/test.sh

.PHONY: test-all
test-all: envtest $(HELM) $(KUSTOMIZE) ## Run every test: those of `make test`, with the local-cluster suite beside them (`make e2e-cluster`, building its binaries on first use) and then the e2e suite (`make test-e2e`).
	$(TEST_ENV) hack/test.sh

.PHONY: test-python
test-python: ## Run the reference Spark job's tests (examples/spark) with python3's unittest: parameters, input slices, idempotent results, the merge algebra and the SQL decomposition against SQLite; no Spark needed.
	cd examples/spark && python3 -m unittest discover -s tests -t .

.PHONY: e2e-cluster
e2e-cluster: envtest cluster-binaries ## Run the local-cluster suite: kube-scheduler, kube-controller-manager, KWOK and Karpenter against envtest's control plane, and laxity on it with the scale, placeholder and capacityBuffer pool backends.
	KUBEBUILDER_ASSETS="$$(KUBE_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) hack/envtest-binaries.sh $(LOCALBIN))" \
	LAXITY_CLUSTER_BINARIES="$$($(CLUSTER_BINARIES) $(LOCALBIN))" \
		go test -tags cluster ./test/cluster/... -count=1 -timeout 30m -v $(GINKGO_TEST_FLAGS)

.PHONY: test-e2e
test-e2e: envtest ## Run only the e2e suite: the built laxity binary against a local kube-apiserver and etcd.
	KUBEBUILDER_ASSETS="$$(KUBE_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) hack/envtest-binaries.sh $(LOCALBIN))" \
		go test $(GO_TEST_FLAGS) -tags e2e ./test/e2e/... $(GINKGO_TEST_FLAGS)

.PHONY: bench
bench: ## Run the planner benchmarks (the 13-query sample at 1x, 2x, 4x rate, and at 4x in arrival units of 950 and 1,900 tuples; 1,000 to 10,000 generated queries; day and week windows; the peak heap of 30-day windows; the work-bound check on a year; the sample at 4x in units of 950 with every query a join of two inputs), the baseline comparison, the whole laxity plan process on the sample at 4x, also in those finer units and, in units of 950, with steps side by side, and cutting a day of a join into 500 batches.
	go test -run '^$$' -bench . -benchmem -cpu 1 -timeout 30m ./internal/planner/...
	go test -run '^$$' -bench 'CompareTPCH|PlanProcess' -benchmem -cpu 1 ./internal/cli/...
	go test -run '^$$' -bench 'JoinedSlice' -benchmem -cpu 1 ./internal/source/

##@ Build

.PHONY: build
build: ## Build the laxity binary into bin/: the full CLI, with demo and experiments.
	go build -o $(LOCALBIN)/laxity .

.PHONY: build-manager
build-manager: ## Build the manager image's laxity into bin/laxity-manager: manager, plan and version only (the lean build tag), stripped.
	CGO_ENABLED=0 go build -tags lean -trimpath -ldflags '-s -w' -o $(LOCALBIN)/laxity-manager .

.PHONY: docker-build
docker-build: ## Build the container image IMG (default laxity:<the chart's appVersion>; needs a container engine).
	$(CONTAINER_TOOL) build -t $(IMG) --build-arg VERSION="$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" --build-arg REVISION="$$(git rev-parse HEAD 2>/dev/null)" .

.PHONY: demo
demo: envtest build ## Run the sample workload end to end: a local control plane, the manager, a simulated node pool and Spark (the first run builds the control plane, about 15 minutes).
	$(LOCALBIN)/laxity demo $(DEMO_FLAGS)

.PHONY: demo-cluster
demo-cluster: envtest cluster-binaries build ## Run the three-query sample on the local cluster (Karpenter, KWOK, kube-scheduler), compressed 10 times in time (about 4.5 minutes; the first run builds the binaries).
	LAXITY_CLUSTER_BINARIES="$$($(CLUSTER_BINARIES) $(LOCALBIN))" $(LOCALBIN)/laxity demo --cluster karpenter $(DEMO_FLAGS)

.PHONY: experiments
experiments: ## Run the planner experiments against the published numbers into docs/experiments.md.
	go run . experiments -o docs/experiments.md

.PHONY: plan-sample
plan-sample: ## Plan the sample workload and print the plan.
	go run . plan -f config/samples/tpch.yaml

##@ Chart

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the Helm chart with its values schema, with and without its optional parts.
	$(HELM) lint --strict charts/laxity
	$(HELM) lint --strict charts/laxity --set metrics.tls.secretName=laxity-metrics-tls,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true --set 'watchNamespaces={team-a,team-b}'

.PHONY: test-alerts
test-alerts: $(HELM) ## Check the chart's alerts with promtool (built from its Go module once per machine): `promtool check rules` and the rule unit tests in test/alerts.
	HELM="$(HELM)" KUBE_VERSION=$(ENVTEST_K8S_VERSION) PROMETHEUS_VERSION=$(PROMETHEUS_VERSION) hack/test-alerts.sh $(LOCALBIN)

.PHONY: chart-docs
chart-docs: ## Write the values table of charts/laxity/README.md from the comments in values.yaml.
	go run ./hack/chartdoc charts/laxity

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(HELM): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $@

$(KUSTOMIZE): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $@

$(GOLANGCI_LINT): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@
