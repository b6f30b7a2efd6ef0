#!/usr/bin/env bash
# Builds the processes of the local cluster (internal/localcluster) that envtest
# does not bring: kube-scheduler and kube-controller-manager from
# k8s.io/kubernetes, the KWOK controller (fake kubelets), and Karpenter with
# its KWOK cloud provider. All come from Go modules because prebuilt archives
# and images cannot be downloaded everywhere laxity is developed. They are kept
# in a per-user cache keyed by version, so every clone and CI run on the
# machine reuses them, and linked into bin/cluster/<key>/. Karpenter's CRDs
# (NodePool, NodeClaim, KWOKNodeClass, and the CapacityBuffer it serves behind
# a feature gate) are copied from its module into the same directory, under
# crds/, so the cluster installs the schemas of the Karpenter it runs. Running
# it again is a no-op once everything is there; a CRD added to the list below
# is copied into an existing cache without rebuilding anything.
#
# The first build takes about 7½ minutes on 2 cores.
#
# Usage: hack/cluster-binaries.sh [BIN_DIR]   (prints the binaries' directory)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.37.2}"
KWOK_VERSION="${KWOK_VERSION:-0.8.0}"
KARPENTER_VERSION="${KARPENTER_VERSION:-1.15.0}"
# Karpenter's go.mod asks for a newer Go than the machine may have; the
# toolchain is fetched through the module proxy for that one build only.
KARPENTER_GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN:-go1.27.3}"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin_dir="${1:-${repo_root}/bin}"
key="kube-v${KUBE_VERSION}_kwok-v${KWOK_VERSION}_karpenter-v${KARPENTER_VERSION}_$(go env GOOS)-$(go env GOARCH)"
cache_dir="${LAXITY_CLUSTER_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/laxity/cluster}/${key}"
link_dir="${bin_dir}/cluster/${key}"

binaries=(kube-scheduler kube-controller-manager kwok karpenter-kwok)
crds=(karpenter.sh_nodepools.yaml karpenter.sh_nodeclaims.yaml karpenter.kwok.sh_kwoknodeclasses.yaml autoscaling.x-k8s.io_capacitybuffers.yaml)

LOG_PREFIX=cluster-binaries
# shellcheck source=hack/lib/build.sh
source "${repo_root}/hack/lib/build.sh"

# build_kube resolves kube-scheduler and kube-controller-manager in one
# throwaway module, so the second build reuses the first one's packages.
build_kube() {
	local work="$1"
	kube_module "${work}/kube" laxity.invalid/cluster-kube "${KUBE_VERSION}"
	go get -tool "k8s.io/kubernetes/cmd/kube-scheduler@v${KUBE_VERSION}" "k8s.io/kubernetes/cmd/kube-controller-manager@v${KUBE_VERSION}"
}

build_kube_cmd() {
	local work="$1" cmd="$2"
	cd "${work}/kube"
	CGO_ENABLED=0 go build -trimpath -o "${work}/out/${cmd}" "k8s.io/kubernetes/cmd/${cmd}"
}

build_kwok() {
	local work="$1"
	mkdir -p "${work}/gobin-kwok"
	CGO_ENABLED=0 GOBIN="${work}/gobin-kwok" go install -trimpath "sigs.k8s.io/kwok/cmd/kwok@v${KWOK_VERSION}"
	mv "${work}/gobin-kwok/kwok" "${work}/out/kwok"
}

# build_karpenter builds Karpenter's KWOK provider, whose command is also
# named kwok: it is installed as karpenter-kwok.
build_karpenter() {
	local work="$1"
	mkdir -p "${work}/gobin-karpenter"
	CGO_ENABLED=0 GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN}" GOBIN="${work}/gobin-karpenter" \
		go install -trimpath "sigs.k8s.io/karpenter/kwok@v${KARPENTER_VERSION}"
	mv "${work}/gobin-karpenter/kwok" "${work}/out/karpenter-kwok"
}

# copy_crds copies Karpenter's CRDs out of its module. The module cache is
# read-only, and a later `go clean -modcache` would take them away.
copy_crds() {
	local work="$1" dir
	dir="$(GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN}" go mod download -json "sigs.k8s.io/karpenter@v${KARPENTER_VERSION}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
	if [[ -z "${dir}" ]]; then
		log "could not download sigs.k8s.io/karpenter@v${KARPENTER_VERSION}"
		return 1
	fi
	mkdir -p "${work}/out/crds"
	local f src
	for f in "${crds[@]}"; do
		src=""
		for candidate in "${dir}/pkg/apis/crds/${f}" "${dir}/kwok/apis/crds/${f}"; do
			if [[ -f "${candidate}" ]]; then src="${candidate}"; fi
		done
		if [[ -z "${src}" ]]; then
			log "found no ${f} in sigs.k8s.io/karpenter@v${KARPENTER_VERSION}"
			return 1
		fi
		cp "${src}" "${work}/out/crds/${f}"
		chmod u+w "${work}/out/crds/${f}"
	done
}

crds_missing() {
	local f
	for f in "${crds[@]}"; do [[ -f "${cache_dir}/crds/${f}" ]] || return 0; done
	return 1
}

missing() {
	local b
	for b in "${binaries[@]}"; do [[ -x "${cache_dir}/${b}" ]] || return 0; done
	crds_missing
}

if missing; then
	work="$(mktemp -d)"
	trap 'rm -rf "${work}"' EXIT
	mkdir -p "${work}/out"
	export GOFLAGS="${GOFLAGS:-} -mod=mod"
	if crds_missing; then
		log "copying Karpenter v${KARPENTER_VERSION}'s CRDs"
		copy_crds "${work}"
		for f in "${crds[@]}"; do install_file "${work}/out/crds/${f}" "${cache_dir}/crds/${f}"; done
	fi
	if [[ ! -x "${cache_dir}/kwok" ]]; then
		log "building kwok v${KWOK_VERSION} from source (once per machine)"
		with_progress "kwok" build_kwok "${work}"
		install_file "${work}/out/kwok" "${cache_dir}/kwok"
	fi
	if [[ ! -x "${cache_dir}/karpenter-kwok" ]]; then
		log "building Karpenter v${KARPENTER_VERSION} with its KWOK provider from source (once per machine; fetches Go ${KARPENTER_GOTOOLCHAIN#go} through the module proxy)"
		with_progress "karpenter-kwok" build_karpenter "${work}"
		install_file "${work}/out/karpenter-kwok" "${cache_dir}/karpenter-kwok"
	fi
	if [[ ! -x "${cache_dir}/kube-scheduler" || ! -x "${cache_dir}/kube-controller-manager" ]]; then
		log "resolving k8s.io/kubernetes v${KUBE_VERSION}"
		(build_kube "${work}")
		for cmd in kube-scheduler kube-controller-manager; do
			if [[ ! -x "${cache_dir}/${cmd}" ]]; then
				log "building ${cmd} v${KUBE_VERSION} from source (once per machine)"
				with_progress "${cmd}" build_kube_cmd "${work}" "${cmd}"
				install_file "${work}/out/${cmd}" "${cache_dir}/${cmd}"
			fi
		done
	fi
	log "cached in ${cache_dir}"
fi

mkdir -p "${link_dir}"
for b in "${binaries[@]}"; do
	ln -sfn "${cache_dir}/${b}" "${link_dir}/${b}"
done
ln -sfn "${cache_dir}/crds" "${link_dir}/crds"
echo "${link_dir}"
