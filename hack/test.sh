#!/usr/bin/env bash
# Runs every test, as `make test-all` does (`make test` leaves out the two
# slow suites, 1 and 4, with SKIP_CLUSTER=1 and SKIP_E2E=1):
#
#   1. the local-cluster suite (test/cluster: kube-scheduler,
#      kube-controller-manager, KWOK and Karpenter, with laxity and its demo on
#      them), whose binaries are built first if this machine lacks them, in
#      the background from the start until phase 3;
#   2. beside it, the packages without Ginkgo suites (unit, table, property
#      and fuzz-seed tests), the pure core's and the offline run's without
#      the race detector, and the reference Spark job's Python tests
#      (examples/spark, seconds, no Spark);
#   3. then, still beside it, the Ginkgo suites against envtest's
#      kube-apiserver and etcd: the controllers suite in three processes
#      (see below), the other suites with it, and beside them the
#      experiments' claims tests (internal/experiments) and the chart's
#      alerts with promtool (hack/test-alerts.sh, which builds promtool on a
#      machine's first run);
#   4. the e2e suite (the built binary), alone, because its demo runs on a
#      clock scaled 400 times and needs the machine to itself.
#
# The local cluster runs on the wall clock and mostly waits (for its nodes'
# lead time, for the steps of its two-minute windows), so it starts first and
# runs beside the rest; its output is kept apart and printed when it ends.
# Its deadlines are real seconds, so whatever runs beside it runs at a lower
# CPU priority (nice): the envtest suites, which wait on their API servers,
# a little lower; the tests that only compute (unit, property and fuzz
# tests, the experiments) lowest. On two cores they would otherwise delay
# every pod of the cluster's steps by seconds and make it miss deadlines
# that it meets with a second to spare when alone.
# The envtest suites mostly wait for their API servers, which is why they
# run side by side, with the experiments. The unit tests run before them,
# not with them: at the lowest priority beside them, a test that gives a
# search a few seconds of wall time would get none of it.
#
# Environment: KUBEBUILDER_ASSETS (kube-apiserver and etcd), HELM, KUSTOMIZE,
# KUBE_VERSION and PROMETHEUS_VERSION (for the alert tests),
# CLUSTER_BINARIES (the command that builds the local cluster's binaries and
# prints their directory), GO_TEST_FLAGS, GINKGO_TEST_FLAGS,
# CLUSTER_TEST_FLAGS; set SKIP_CLUSTER=1 to leave the local cluster out and
# SKIP_E2E=1 to leave the e2e suite out.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

: "${KUBEBUILDER_ASSETS:?the envtest control plane's directory (make envtest)}"
: "${CLUSTER_BINARIES:?the command that builds the local cluster's binaries}"
GO_TEST_FLAGS="${GO_TEST_FLAGS:--race -count=1 -timeout 60m}"
GINKGO_TEST_FLAGS="${GINKGO_TEST_FLAGS:---ginkgo.randomize-all}"
CLUSTER_TEST_FLAGS="${CLUSTER_TEST_FLAGS:--count=1 -timeout 40m}"
export KUBEBUILDER_ASSETS

# CPU priorities (nice increments) of what runs beside the local cluster.
waits=(nice -n 5)
computes=(nice -n 15)

started=${SECONDS}
timings=()
phase() { timings+=("$(printf '%-40s %4ds' "$1" $((SECONDS - $2)))"); }

# Packages split by whether their tests import Ginkgo: only those take
# --ginkgo.* flags.
pkgs="$(go list -f '{{.ImportPath}} {{.TestImports}} {{.XTestImports}}' ./...)"
ginkgo='github.com/onsi/ginkgo/v2[] ]'
plain="$(grep -v "${ginkgo}" <<<"${pkgs}" | cut -d' ' -f1 || true)"
suites="$(grep "${ginkgo}" <<<"${pkgs}" | cut -d' ' -f1 || true)"

# The pure core and the offline run start no goroutine (hack/verify-purity.sh
# checks), so the race detector has nothing to find there and would only
# slow their property tests and simulated windows ten times over; the rest
# runs with GO_TEST_FLAGS.
# shellcheck disable=SC2046 # one pattern per line
pure="$(go list $(hack/verify-purity.sh --list-single-threaded))"
# The experiments' claims tests carry out hundreds of simulated windows:
# they run in a go test of their own, so that the other packages' results
# do not wait for them.
experiments=github.com/laxity-dev/laxity/internal/experiments
plain="$(grep -vxF "${experiments}" <<<"${plain}" || true)"
impure="$(grep -vxF -f <(printf '%s\n' "${pure}") <<<"${plain}" || true)"
pure_plain="$(grep -xF -f <(printf '%s\n' "${pure}") <<<"${plain}" || true)"

cluster_log="$(mktemp "${TMPDIR:-/tmp}/laxity-cluster-suite.XXXXXX")"
cluster_pid=""
jobs_pids=()
logs=("${cluster_log}")
# Every background job gets a process group of its own (job control), so
# that the trap below stops it with everything it started: the local
# cluster's API server, scheduler, KWOK and Karpenter, a suite's envtest.
set -m
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
# Whatever ends the script stops what runs in the background.
stop_all() {
	local pid
	for pid in ${cluster_pid} "${jobs_pids[@]}"; do
		kill -- "-${pid}" 2>/dev/null || true
	done
	rm -f "${logs[@]}"
}
trap stop_all EXIT

t=${SECONDS}
# shellcheck disable=SC2086 # word splitting of the flags and packages
if [[ -n "${pure_plain}" ]]; then "${computes[@]}" go test ${GO_TEST_FLAGS/-race/} ${pure_plain}; fi
# shellcheck disable=SC2086
if [[ -n "${impure}" ]]; then "${computes[@]}" go test ${GO_TEST_FLAGS} ${impure}; fi
(cd examples/spark && "${computes[@]}" python3 -m unittest discover -s tests -t .)
phase "unit, property and fuzz-seed tests" "${t}"

# The controllers suite's stories call the reconcilers from the test's own
# goroutine, one pass after another on a fake clock: nothing runs beside
# them, so the race detector has nothing to find there and would only slow
# them twice over. Its specs that do run goroutines (an informer cache,
# stories run side by side, the in-process AWS, S3 and Kafka servers) are
# labelled concurrent and run with GO_TEST_FLAGS, as do the suite's plain Go
# tests; the rest runs without the race detector in two processes, each
# with its own envtest: the stories mostly wait for their API server, and
# the stories of shared batches, steps side by side, the differential
# check and kstatus take about as long as all the others. Every go test
# command below writes to a log of its own, printed when it ends.
controllers=github.com/laxity-dev/laxity/controllers
other_suites="$(grep -vxF "${controllers}" <<<"${suites}" || true)"
halves='stories_(shared|sidebyside|differential|kstatus)_test\.go'
t=${SECONDS}
jobs_logs=()
background() {
	local log
	log="$(mktemp "${TMPDIR:-/tmp}/laxity-suite.XXXXXX")"
	logs+=("${log}") # removed on exit
	"$@" >"${log}" 2>&1 &
	jobs_pids+=($!)
	jobs_logs+=("${log}")
}
# shellcheck disable=SC2086
if grep -qxF "${controllers}" <<<"${suites}"; then
	background "${waits[@]}" go test ${GO_TEST_FLAGS/-race/} -run '^TestControllers$' "${controllers}" ${GINKGO_TEST_FLAGS} --ginkgo.label-filter='!concurrent' --ginkgo.focus-file="${halves}"
	background "${waits[@]}" go test ${GO_TEST_FLAGS/-race/} -run '^TestControllers$' "${controllers}" ${GINKGO_TEST_FLAGS} --ginkgo.label-filter='!concurrent' --ginkgo.skip-file="${halves}"
	background "${waits[@]}" go test ${GO_TEST_FLAGS} "${controllers}" ${GINKGO_TEST_FLAGS} --ginkgo.label-filter=concurrent
fi
# shellcheck disable=SC2086
if [[ -n "${other_suites}" ]]; then background "${waits[@]}" go test ${GO_TEST_FLAGS} ${other_suites} ${GINKGO_TEST_FLAGS}; fi
# The experiments' goroutines are eachSeed's, one per seed, all reading the
# same workload, plan and learning state: one claims test, whose runs draw
# eight of them under the race detector (raceEnabled), is enough for it to
# find a write to what they share, and the rest runs without it, with four
# times the runs it takes under the race detector and still sooner.
# shellcheck disable=SC2086
background "${computes[@]}" go test ${GO_TEST_FLAGS/-race/} "${experiments}"
# shellcheck disable=SC2086
background "${computes[@]}" go test ${GO_TEST_FLAGS} -run '^TestTheVariableRateDefaultsClaimsHold$' "${experiments}"
background "${waits[@]}" hack/test-alerts.sh
suites_status=0
for i in "${!jobs_pids[@]}"; do
	wait "${jobs_pids[i]}" || suites_status=$?
	cat "${jobs_logs[i]}"
done
jobs_pids=()
phase "envtest suites and experiments" "${t}"

cluster_status=0
if [[ -n "${cluster_pid}" ]]; then
	wait "${cluster_pid}" || cluster_status=$?
	cluster_pid=""
	phase "local-cluster suite (beside the phases above)" "${cluster_started}"
	echo "--- local-cluster suite (test/cluster) ---"
	cat "${cluster_log}"
fi
if ((suites_status != 0 || cluster_status != 0)); then
	echo "FAIL: envtest suites exit ${suites_status}, local-cluster suite exit ${cluster_status}" >&2
	exit 1
fi

if [[ "${SKIP_E2E:-}" != 1 ]]; then
	t=${SECONDS}
	# shellcheck disable=SC2086
	go test ${GO_TEST_FLAGS} -tags e2e ./test/e2e/... ${GINKGO_TEST_FLAGS}
	phase "e2e suite" "${t}"
fi

phase "all" "${started}"
printf '%s\n' "${timings[@]}"
