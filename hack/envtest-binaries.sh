#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver and etcd) from Go modules,
# because prebuilt envtest archives cannot be downloaded everywhere laxity is
# developed. Binaries are kept in a per-user cache keyed by version, so every
# clone and CI run on the machine reuses them; they are then linked into
# bin/k8s/<version>/. Running it again is a no-op once they are there.
#
# Usage: hack/envtest-binaries.sh [BIN_DIR]   (prints the assets directory)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.7.0}"
STAGING_VERSION="0.${KUBE_VERSION#1.}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${1:-${repo_root}/bin}"
key="kube-apiserver-v${KUBE_VERSION}_etcd-v${ETCD_VERSION}_$(go env GOOS)-$(go env GOARCH)"
cache_dir="${LAXITY_ENVTEST_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/laxity/envtest}/${key}"
assets_dir="${bin_dir}/k8s/${key}"

log() { echo "envtest: $*" >&2; }

# with_progress runs a long build, saying every 30 seconds that it goes on.
with_progress() {
	local what="$1"
	shift
	("$@") &
	local pid=$! started=${SECONDS}
	while kill -0 "${pid}" 2>/dev/null; do
		sleep 5
		if (((SECONDS - started) % 30 < 5)) && kill -0 "${pid}" 2>/dev/null; then
			log "still building ${what} ($(((SECONDS - started) / 60))m$(((SECONDS - started) % 60))s so far)"
		fi
	done
	wait "${pid}"
}

build_kube_apiserver() {
	local work="$1"
	mkdir -p "${work}/apiserver"
	cd "${work}/apiserver"
	go mod init laxity.invalid/envtest-apiserver >/dev/null 2>&1
	# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
	# with local directories, which does not apply to a dependency: pin every
	# one of them to the matching published version instead.
	local gomod
	gomod="$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
	local staged
	staged="$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "${gomod}")"
	if [[ -z "${staged}" ]]; then
		log "found no staging modules in k8s.io/kubernetes@v${KUBE_VERSION}'s go.mod"
		return 1
	fi
	local args=()
	for m in ${staged}; do args+=("-replace=${m}=${m}@v${STAGING_VERSION}"); done
	go mod edit "${args[@]}"
	go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v${KUBE_VERSION}"
	CGO_ENABLED=0 go build -trimpath -o "${work}/out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
}

build_etcd() {
	local work="$1"
	mkdir -p "${work}/etcd"
	cd "${work}/etcd"
	go mod init laxity.invalid/envtest-etcd >/dev/null 2>&1
	cat >main.go <<'GO'
// Command etcd is the etcd server, built from its Go module for envtest.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
	go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}"
	go mod tidy
	CGO_ENABLED=0 go build -trimpath -o "${work}/out/etcd" .
}

if [[ ! -x "${cache_dir}/kube-apiserver" || ! -x "${cache_dir}/etcd" ]]; then
	work="$(mktemp -d)"
	trap 'rm -rf "${work}"' EXIT
	mkdir -p "${work}/out"
	export GOFLAGS="${GOFLAGS:-} -mod=mod"
	log "building etcd v${ETCD_VERSION} from source (once per machine)"
	with_progress "etcd" build_etcd "${work}"
	log "building kube-apiserver v${KUBE_VERSION} from source (once per machine; 10-16 minutes on 2 cores)"
	with_progress "kube-apiserver" build_kube_apiserver "${work}"
	mkdir -p "${cache_dir}"
	# Install atomically so an interrupted build never leaves a half binary.
	for b in etcd kube-apiserver; do
		cp "${work}/out/${b}" "${cache_dir}/.${b}.tmp"
		mv "${cache_dir}/.${b}.tmp" "${cache_dir}/${b}"
	done
	log "cached in ${cache_dir}"
fi

mkdir -p "${assets_dir}"
for b in etcd kube-apiserver; do
	ln -sf "${cache_dir}/${b}" "${assets_dir}/${b}"
done
echo "${assets_dir}"
