#!/usr/bin/env bash
# Runs every test, as `make test` does, in three phases:
#
#   1. the packages without Ginkgo suites (unit, table, property and fuzz-seed
#      tests), the pure core's without the race detector, and the chart's
#      alerts with promtool (hack/test-alerts.sh);
#   2. the Ginkgo suites against envtest's kube-apiserver and etcd and,
#      at the same time, the local-cluster suite (test/cluster: kube-scheduler,
#      kube-controller-manager, KWOK and Karpenter, with laxity and its demo on
#      them), whose binaries are built first if this machine lacks them;
#   3. the e2e suite (the built binary), alone, because its demo runs on a
#      clock scaled 400 times and needs the machine to itself.
#
# Phase 2 runs the two side by side because the envtest suites mostly wait
# for their stories' passes (the controllers suite keeps less than one core
# busy for its 15 minutes), while the local cluster runs on the wall clock
# too. The local cluster's output is kept apart and printed when it ends.
#
# Environment: KUBEBUILDER_ASSETS (kube-apiserver and etcd), HELM, KUSTOMIZE,
# KUBE_VERSION and PROMETHEUS_VERSION (for the alert tests),
# CLUSTER_BINARIES (the command that builds the local cluster's binaries and
# prints their directory), GO_TEST_FLAGS, GINKGO_TEST_FLAGS,
# CLUSTER_TEST_FLAGS; set SKIP_CLUSTER=1 to leave the local cluster out.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

: "${KUBEBUILDER_ASSETS:?the envtest control plane's directory (make envtest)}"
: "${CLUSTER_BINARIES:?the command that builds the local cluster's binaries}"
GO_TEST_FLAGS="${GO_TEST_FLAGS:--race -count=1 -timeout 60m}"
GINKGO_TEST_FLAGS="${GINKGO_TEST_FLAGS:---ginkgo.randomize-all}"
CLUSTER_TEST_FLAGS="${CLUSTER_TEST_FLAGS:--count=1 -timeout 40m}"
export KUBEBUILDER_ASSETS

started=${SECONDS}
timings=()
phase() { timings+=("$(printf '%-40s %4ds' "$1" $((SECONDS - $2)))"); }

# Packages split by whether their tests import Ginkgo: only those take
# --ginkgo.* flags.
pkgs="$(go list -f '{{.ImportPath}} {{.TestImports}} {{.XTestImports}}' ./...)"
ginkgo='github.com/onsi/ginkgo/v2[] ]'
plain="$(grep -v "${ginkgo}" <<<"${pkgs}" | cut -d' ' -f1 || true)"
suites="$(grep "${ginkgo}" <<<"${pkgs}" | cut -d' ' -f1 || true)"

# The pure core starts no goroutine (hack/verify-purity.sh checks), so the
# race detector has nothing to find there and would only slow its property
# tests ten times over; the rest runs with GO_TEST_FLAGS.
# shellcheck disable=SC2046 # one pattern per line
pure="$(go list $(hack/verify-purity.sh --list))"
impure="$(grep -vxF -f <(printf '%s\n' "${pure}") <<<"${plain}" || true)"
pure_plain="$(grep -xF -f <(printf '%s\n' "${pure}") <<<"${plain}" || true)"

t=${SECONDS}
# shellcheck disable=SC2086 # word splitting of the flags and packages
if [[ -n "${pure_plain}" ]]; then go test ${GO_TEST_FLAGS/-race/} ${pure_plain}; fi
# shellcheck disable=SC2086
if [[ -n "${impure}" ]]; then go test ${GO_TEST_FLAGS} ${impure}; fi
hack/test-alerts.sh
phase "unit, property, fuzz-seed and alert tests" "${t}"

cluster_log="$(mktemp "${TMPDIR:-/tmp}/laxity-cluster-suite.XXXXXX")"
cluster_pid=""
if [[ "${SKIP_CLUSTER:-}" != 1 ]]; then
	(
		t=${SECONDS}
		binaries="$(eval "${CLUSTER_BINARIES}")"
		echo "local cluster binaries ready after $((SECONDS - t))s"
		# shellcheck disable=SC2086
		LAXITY_CLUSTER_BINARIES="${binaries}" go test -tags cluster ${CLUSTER_TEST_FLAGS} ./test/cluster/... ${GINKGO_TEST_FLAGS}
	) >"${cluster_log}" 2>&1 &
	cluster_pid=$!
	cluster_started=${SECONDS}
fi
# The local cluster is stopped with the script, whatever ends it.
trap '[[ -n "${cluster_pid}" ]] && kill -- "${cluster_pid}" 2>/dev/null; rm -f "${cluster_log}"' EXIT

t=${SECONDS}
suites_status=0
# shellcheck disable=SC2086
if [[ -n "${suites}" ]]; then go test ${GO_TEST_FLAGS} ${suites} ${GINKGO_TEST_FLAGS} || suites_status=$?; fi
phase "envtest suites" "${t}"

cluster_status=0
if [[ -n "${cluster_pid}" ]]; then
	wait "${cluster_pid}" || cluster_status=$?
	cluster_pid=""
	phase "local-cluster suite (beside the envtest suites)" "${cluster_started}"
	echo "--- local-cluster suite (test/cluster) ---"
	cat "${cluster_log}"
fi
if ((suites_status != 0 || cluster_status != 0)); then
	echo "FAIL: envtest suites exit ${suites_status}, local-cluster suite exit ${cluster_status}" >&2
	exit 1
fi

t=${SECONDS}
# shellcheck disable=SC2086
go test ${GO_TEST_FLAGS} -tags e2e ./test/e2e/... ${GINKGO_TEST_FLAGS}
phase "e2e suite" "${t}"

phase "all" "${started}"
printf '%s\n' "${timings[@]}"
