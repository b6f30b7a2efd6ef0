#!/usr/bin/env bash
# Checks the chart's alerts with promtool: renders the PrometheusRule with
# default values, turns it into a Prometheus rule file, runs `promtool check
# rules` on it and `promtool test rules` on the unit tests in test/alerts/,
# which cover each alert firing and staying quiet.
#
# Environment: HELM (the pinned helm; default bin/helm-<version> as the
# Makefile installs it), KUBE_VERSION (the Kubernetes version to render for),
# PROMETHEUS_VERSION (promtool's, see hack/promtool-binary.sh).
#
# Usage: hack/test-alerts.sh [BIN_DIR]
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${repo_root}"
bin_dir="${1:-${repo_root}/bin}"
: "${HELM:?the pinned helm (make test sets it)}"
KUBE_VERSION="${KUBE_VERSION:-1.37.2}"

promtool="$(hack/promtool-binary.sh "${bin_dir}")"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

"${HELM}" template laxity charts/laxity --namespace laxity-system --kube-version "${KUBE_VERSION}" \
	--set metrics.prometheusRule.enabled=true --show-only templates/prometheusrule.yaml |
	go run ./hack/promrules >"${work}/rules.yaml"
cp test/alerts/*_test.yaml "${work}/"

"${promtool}" check rules "${work}/rules.yaml"
"${promtool}" test rules "${work}"/*_test.yaml
