#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The project's shell scripts: every one parses, and none that sets pipefail pipes into a
# grep that stops reading early (-q). grep -q exits at its first match; a writer that still
# has lines to write then dies of SIGPIPE, and pipefail turns the match into a failure. bash's
# own printf writes line by line, so `printf '%s' "$out" | grep -q` fails now and then on a
# busy machine. Write `grep -q PATTERN <<<"$out"`, or `CMD | grep PATTERN >/dev/null`.
set -uo pipefail
ROOT=${CO_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/support/tap.sh"

if ! list=$(git -C "$ROOT" ls-files -- '*.sh' .ci/run 2>/dev/null); then
    # not a git checkout (an unpacked archive): every script outside the build tree
    list=$(cd "$ROOT" && find . -name '*.sh' -not -path './build/*' | sed 's|^\./||')
fi
mapfile -t scripts <<<"$list"
if [ "${#scripts[@]}" -lt 10 ]; then
    tap_fail "the scripts are found" "only ${#scripts[@]}: ${scripts[*]}"
fi

# a pipe into grep with -q among its first flags
EARLY_GREP='\|[[:space:]]*grep[[:space:]]+-[A-Za-z]*q'
bad_syntax=""
early_grep=""
for s in "${scripts[@]}"; do
    f=$ROOT/$s
    bash -n "$f" 2>/dev/null || bad_syntax="$bad_syntax $s"
    grep -q pipefail "$f" || continue
    [ "$s" = tests/unit/test_scripts.sh ] && continue # it shows the pattern on purpose
    # `bash -c "..."` and `sh -c "..."` run in a shell of their own, without pipefail.
    hits=$(grep -nE "$EARLY_GREP" "$f" | grep -vE '\b(ba)?sh -c "')
    [ -z "$hits" ] || early_grep="${early_grep:+$early_grep$'\n'}$s: $hits"
done
tap_eq "every script parses" "" "$bad_syntax"
tap_eq "no script with pipefail pipes into grep -q" "" "$early_grep"

# The check itself: it finds the pattern it guards against, and passes its two remedies.
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
printf 'set -o pipefail\nprintf "%%s" "$x" | grep -qE "a"\n' >"$probe"
tap_eq "the check sees a pipe into grep -q" 1 \
    "$(grep -cE "$EARLY_GREP" "$probe")"
printf 'set -o pipefail\ngrep -qE "a" <<<"$x"\nk get x | grep -E a >/dev/null\n' >"$probe"
tap_eq "the check passes the remedies" 0 \
    "$(grep -cE "$EARLY_GREP" "$probe")"
# and the failure it prevents is real: a writer with lines left dies once grep -q has gone
lines=$(seq 1 100000)
(printf '%s\n' "$lines" | grep -q '^1$') 2>/dev/null
tap_eq "a pipe into grep -q fails under pipefail when the writer has more to say" 141 "$?"
grep -q '^1$' <<<"$lines"
tap_eq "a here-string into grep -q does not" 0 "$?"

tap_done
