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

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${1:-${repo_root}/bin}"
key="kube-apiserver-v${KUBE_VERSION}_etcd-v${ETCD_VERSION}_$(go env GOOS)-$(go env GOARCH)"
cache_dir="${LAXITY_ENVTEST_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/laxity/envtest}/${key}"
assets_dir="${bin_dir}/k8s/${key}"

LOG_PREFIX=envtest
# shellcheck source=hack/lib/build.sh
source "${repo_root}/hack/lib/build.sh"

build_kube_apiserver() {
	local work="$1"
	kube_module "${work}/apiserver" laxity.invalid/envtest-apiserver "${KUBE_VERSION}"
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
	for b in etcd kube-apiserver; do
		install_file "${work}/out/${b}" "${cache_dir}/${b}"
	done
	log "cached in ${cache_dir}"
fi

mkdir -p "${assets_dir}"
for b in etcd kube-apiserver; do
	ln -sf "${cache_dir}/${b}" "${assets_dir}/${b}"
done
echo "${assets_dir}"
