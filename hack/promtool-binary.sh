#!/usr/bin/env bash
# Builds promtool, Prometheus's rule checker, from its Go module, once per
# machine and version, as envtest-binaries.sh does for the control plane:
# the binary is kept in a per-user cache keyed by version and linked into
# BIN_DIR. Running it again is a no-op once it is there.
#
# Usage: hack/promtool-binary.sh [BIN_DIR]   (prints the binary's path)
set -euo pipefail

# Prometheus tags its Go module v0.<major><minor>.<patch>: v0.316.0 is
# Prometheus 3.16.0. It needs Go 1.26.7 or later.
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${1:-${repo_root}/bin}"
key="promtool-${PROMETHEUS_VERSION}_$(go env GOOS)-$(go env GOARCH)"
cache_dir="${LAXITY_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/laxity/promtool}"

LOG_PREFIX=promtool
# shellcheck source=hack/lib/build.sh
source "${repo_root}/hack/lib/build.sh"

build_promtool() {
	local work="$1"
	GOBIN="${work}/out" CGO_ENABLED=0 go install -trimpath "github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}"
}

if [[ ! -x "${cache_dir}/${key}" ]]; then
	work="$(mktemp -d)"
	trap 'rm -rf "${work}"' EXIT
	log "building promtool ${PROMETHEUS_VERSION} from source (once per machine)"
	with_progress "promtool" build_promtool "${work}"
	install_file "${work}/out/promtool" "${cache_dir}/${key}"
	log "cached in ${cache_dir}"
fi

mkdir -p "${bin_dir}"
ln -sf "${cache_dir}/${key}" "${bin_dir}/promtool-${PROMETHEUS_VERSION}"
echo "${bin_dir}/promtool-${PROMETHEUS_VERSION}"
