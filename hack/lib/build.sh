# Shared by the scripts that build test binaries from Go modules
# (envtest-binaries.sh, cluster-binaries.sh). Source it after setting
# LOG_PREFIX; it defines functions only.

log() { echo "${LOG_PREFIX}: $*" >&2; }

# with_progress runs a long build, saying every 30 seconds that it goes on
# and, at the end, how long it took.
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
	log "built ${what} in $(((SECONDS - started) / 60))m$(((SECONDS - started) % 60))s"
}

# kube_module makes dir a throwaway Go module named name that can depend on
# k8s.io/kubernetes at kube_version, and changes into it. k8s.io/kubernetes
# requires its staging modules at v0.0.0 and replaces them with local
# directories, which does not apply to a dependency: every one of them is
# pinned to the matching published version (0.<minor>.<patch>) instead.
kube_module() {
	local dir="$1" name="$2" kube_version="$3"
	mkdir -p "${dir}"
	cd "${dir}"
	go mod init "${name}" >/dev/null 2>&1
	local gomod staged
	gomod="$(go mod download -json "k8s.io/kubernetes@v${kube_version}" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')"
	staged="$(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "${gomod}")"
	if [[ -z "${staged}" ]]; then
		log "found no staging modules in k8s.io/kubernetes@v${kube_version}'s go.mod"
		return 1
	fi
	local args=() m
	for m in ${staged}; do args+=("-replace=${m}=${m}@v0.${kube_version#1.}"); done
	go mod edit "${args[@]}"
}

# install_file moves a built file into the cache atomically, so an
# interrupted build never leaves half a binary that looks cached.
install_file() {
	local from="$1" to="$2"
	mkdir -p "$(dirname "${to}")"
	cp "${from}" "$(dirname "${to}")/.$(basename "${to}").tmp"
	mv "$(dirname "${to}")/.$(basename "${to}").tmp" "${to}"
}
