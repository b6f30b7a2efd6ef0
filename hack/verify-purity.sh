#!/usr/bin/env bash
# Fails if the pure core (the planner, the cost model, the run-time dispatch
# decisions and re-planning, the plan pictures, the learner and the
# windows of recurring queries) depends on any Kubernetes package, directly
# or through a helper, or starts a goroutine outside its tests: it is
# deterministic and single-threaded, which is also why hack/test.sh runs its
# tests without the race detector.
# depguard in .golangci.yml sees only direct imports; `go list -deps` sees the
# whole transitive closure.
#
# Single-threaded packages beyond the pure core (the offline run, which
# carries out the operator's decisions on a simulated clock through the API
# types) may import Kubernetes' API types, but neither they nor any package
# of this module they depend on starts a goroutine: hack/test.sh runs their
# tests without the race detector too.
#
# Usage: hack/verify-purity.sh [--list | --list-single-threaded]
#   --list prints the pure core's package patterns and checks nothing;
#   --list-single-threaded prints those and the other single-threaded
#   packages' and checks nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

pure_dirs=(internal/planner internal/costmodel internal/baseline internal/dispatch internal/pass internal/replan internal/gantt internal/learn internal/recurrence internal/tenancy)
single_threaded_dirs=(internal/offlinerun)
k8s_re='^(sigs\.)?k8s\.io/'

pkgs=()
for d in "${pure_dirs[@]}"; do
	if [[ -d "${d}" ]]; then pkgs+=("./${d}/..."); fi
done
single=("${pkgs[@]}")
for d in "${single_threaded_dirs[@]}"; do
	if [[ -d "${d}" ]]; then single+=("./${d}/..."); fi
done
case "${1:-}" in
--list)
	printf '%s\n' "${pkgs[@]}"
	exit 0
	;;
--list-single-threaded)
	printf '%s\n' "${single[@]}"
	exit 0
	;;
esac
if [[ ${#pkgs[@]} -eq 0 ]]; then
	echo "verify-purity: none of ${pure_dirs[*]} exists; nothing to check"
	exit 0
fi

# A go statement in a non-test file of a single-threaded package or of a
# package of this module it depends on: a goroutine.
module="$(go list -m)"
# shellcheck disable=SC2016 # a Go template, not a shell expansion
spawners="$(go list -deps -f '{{if not .Standard}}{{.ImportPath}} {{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}} {{end}}{{end}}' "${single[@]}" |
	grep "^${module}[/ ]" | cut -d' ' -f2- | xargs grep -nE '^[[:space:]]*go[[:space:]]+(func[[:space:]]*\(|[A-Za-z_][A-Za-z0-9_.]*\()' || true)"
if [[ -n "${spawners}" ]]; then
	echo "verify-purity: the pure core and the single-threaded packages must not start goroutines, nor may what they use of this module (their tests run without -race):" >&2
	sed "s|^$(pwd)/|  |" <<<"${spawners}" >&2
	exit 1
fi

deps="$(go list -deps "${pkgs[@]}")"
offenders="$(grep -E "${k8s_re}" <<<"${deps}" || true)"
if [[ -z "${offenders}" ]]; then
	echo "verify-purity: ${pkgs[*]} depend on no Kubernetes package"
	exit 0
fi

{
	echo "verify-purity: ${pkgs[*]} must not depend on k8s.io or sigs.k8s.io packages, but depend on:"
	sed 's/^/  /' <<<"${offenders}"
	echo "pulled in by these imports:"
	# Each non-Kubernetes package in the closure that imports a Kubernetes one.
	go list -deps -f '{{$p := .ImportPath}}{{range .Imports}}{{$p}} -> {{.}}{{"\n"}}{{end}}' "${pkgs[@]}" |
		grep -Ev "${k8s_re}" | grep -E " -> ${k8s_re#^}" | sed 's/^/  /'
} >&2
exit 1
