#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Reports how well the differential cases cover the template engine: the number of cases
# (a `template-each` or `data-each` line is one case, as both runners count them) and every
# function of the engine's tables (builtins, sprig, runtime) that no case calls by name.
#
#   tests/oracle/gotemplate/coverage.sh          prints "cases N" and "uncovered NAME" lines
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cases=("$here"/cases/*.txt)

awk '
/^### / { if (name != "") total += (each ? each : 1); name = $0; each = 0; sect = ""; next }
/^--- / { sect = $2; next }
sect == "template-each" || sect == "data-each" { each++ }
END { if (name != "") total += (each ? each : 1); print "cases " total }
' "${cases[@]}"

grep -ho 'TPL_FUNC("[A-Za-z_0-9]*"' "$root"/shared/src/render/template/{builtins,sprig_*,runtime}.c |
    sed 's/TPL_FUNC("//; s/"$//' | sort -u |
    while read -r fn; do
        # methods (capitalised) are reached through values, not by name
        case $fn in [A-Z]*) continue ;; esac
        if ! grep -qE "(^|[^A-Za-z0-9_.\$])$fn([^A-Za-z0-9_]|\$)" "${cases[@]}"; then
            echo "uncovered $fn"
        fi
    done
