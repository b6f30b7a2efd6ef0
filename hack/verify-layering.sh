#!/usr/bin/env bash
# Fails if an offline tool depends on the reconcilers, or if the
# ElasticSchedule controller or the offline run makes a pass decision of its
# own instead of calling internal/pass. laxity plan, laxity
# experiments and the offline executor translate API objects through
# internal/spec and never pull in controllers (its metrics registration, its
# package-level caches, controller-runtime's manager). Only the commands that
# run the manager (laxity manager, laxity demo) may import controllers.
#
# Usage: hack/verify-layering.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

module="$(go list -m)"
offline=(./internal/spec ./internal/experiments ./internal/offlinerun ./internal/manifest ./internal/source/...)
forbidden="^${module}/(controllers|internal/demo)$"

status=0
deps="$(go list -deps "${offline[@]}")"
if offenders="$(grep -E "${forbidden}" <<<"${deps}")"; then
	echo "verify-layering: ${offline[*]} must not depend on the reconcilers, but depend on:" >&2
	sed 's/^/  /' <<<"${offenders}" >&2
	status=1
fi

# In internal/cli only the manager command may import the reconcilers (the
# demo command reaches them through internal/demo).
for f in internal/cli/*.go; do
	case "$(basename "${f}")" in manager.go | *_test.go) continue ;; esac
	if grep -q "\"${module}/controllers\"" "${f}"; then
		echo "verify-layering: ${f} imports ${module}/controllers; translate API objects with internal/spec" >&2
		status=1
	fi
done

# The decisions of a pass are made once, in internal/pass, for the operator
# and the offline run alike: neither calls the pieces they are made of.
decisions='dispatch\.(Decide|UnsafeAt|LateAt|NodesLost|Exhausted|BehindSchedule|ExpectedReady|Holding|Coming|Stuck|StuckRecheck|NextRequestChange)\(|replan\.(Compare|RateAt|NodesNow)\('
if own="$(grep -nE "${decisions}" controllers/*.go internal/offlinerun/*.go | grep -v '_test\.go:')"; then
	echo "verify-layering: a pass decision made outside internal/pass; call pass.Judge, pass.Search or pass.Act instead:" >&2
	sed 's/^/  /' <<<"${own}" >&2
	status=1
fi

if [[ ${status} -eq 0 ]]; then
	echo "verify-layering: the offline tools do not depend on the reconcilers; the operator and the offline run share internal/pass"
fi
exit "${status}"
