#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Citations of design documents: the checker tests/support/doc_refs.py passes on this tree
# (comments and strings cite docs/ by file and section title, and every title cited is a
# heading of that file), and catches, in small trees made here, each kind of citation of a
# document outside the repository and each dead reference into docs/, naming file and line.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/support/tap.sh"
CHECK="$ROOT/tests/support/doc_refs.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/co-docrefs-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

tap_check "the tree cites only docs/, and only sections that exist" "$CHECK" "$ROOT"

# put TREE PATH LINE...: writes a file of the tree.
put() {
    local tree=$1 path=$2
    shift 2
    mkdir -p "$(dirname "$TMP/$tree/$path")"
    printf '%s\n' "$@" >"$TMP/$tree/$path"
}

# clean TREE: a small tree whose citations are all good, in every form the checker reads: a
# title wrapped across comment lines, several titles, parentheses, a C string, the
# conformance lane's data directory, a C member named md, a link to a file of the repository.
clean() {
    local t=$1
    put "$t" docs/behaviour.md '# Component behaviour' '' '## Apply waves' '' '## Helm hooks' \
        '```' '## not a heading' '```' '## Serving `v1beta1`'
    put "$t" README.md '# readme'
    put "$t" shared/src/render/a.c '/*' ' * Waves (docs/behaviour.md, "Apply' ' * waves").' ' */' \
        'static int f(struct s x) { return x.md; }'
    put "$t" shared/include/co/render/a.h '/** See docs/behaviour.md, "Apply waves", "Helm hooks"' \
        ' * and "Serving v1beta1". */'
    put "$t" webhook/wh_x.c 'const char *m = "docs/behaviour.md, \"Helm hooks\"";'
    put "$t" shared/README.md 'the waves (docs/behaviour.md ("Apply waves")); README.md'
    put "$t" tests/support/env.sh '# make test-conformance reads ../shared/fixtures'
}

clean ok
tap_check "a tree with good citations passes" "$CHECK" "$TMP/ok"

# caught NAME PATTERN PATH LINE...: a clean tree plus one file; the checker must fail and its
# report must match PATTERN (file:line and the reason).
caught() {
    local name=$1 pattern=$2 path=$3
    shift 3
    clean "$name"
    put "$name" "$path" "$@"
    tap_check_fails "caught: $name" "$pattern" "$CHECK" "$TMP/$name"
}

caught numbered-section \
    '^shared/src/util/x\.c:2: cites a numbered section' \
    shared/src/util/x.c '/*' ' * The steps of reference §3.1. */'
caught document-outside \
    '^webhook/wh_y\.h:1: cites DESIGN\.md, which is not a file of the repository$' \
    webhook/wh_y.h '/** The webhook routes (DESIGN.md, routes). */'
caught old-reference-path \
    '^certs/c\.c:3: cites reference/webhook-and-certs\.md, which is not a file of the repository$' \
    certs/c.c '#include <x.h>' '' '/* by the rules of reference/webhook-and-certs.md */'
caught bare-document-name \
    '^tests/support/t\.sh:1: cites behaviour\.md, which is not a file of the repository$' \
    tests/support/t.sh '# weight 5 goes to -96 (behaviour.md, "Helm hooks")'
caught shared-beside-the-checkout \
    '^tests/support/u\.h:2: cites \.\./shared/notes, outside the repository$' \
    tests/support/u.h '/*' ' * as ../shared/notes says */'
caught dead-section \
    '^shared/src/api/p\.c:2: docs/behaviour\.md has no section "Apply wave"$' \
    shared/src/api/p.c '/*' ' * Ordering (docs/behaviour.md, "Apply wave"). */'
caught dead-wrapped-section \
    '^shared/include/co/api/q\.h:1: docs/behaviour\.md has no section "Helm hook mapping"$' \
    shared/include/co/api/q.h '/** Hooks (docs/behaviour.md, "Helm' ' * hook mapping"). */'
caught dead-second-section \
    '^shared/src/render/b\.c:1: docs/behaviour\.md has no section "Waves"$' \
    shared/src/render/b.c '/* docs/behaviour.md, "Apply waves" and "Waves" */'
caught heading-inside-a-fence \
    '^shared/src/render/c\.c:1: docs/behaviour\.md has no section "not a heading"$' \
    shared/src/render/c.c '/* docs/behaviour.md, "not a heading" */'
caught dead-section-in-a-string \
    '^webhook/wh_z\.c:1: docs/behaviour\.md has no section "Nowhere"$' \
    webhook/wh_z.c 'const char *m = "see docs/behaviour.md, \"Nowhere\"";'
caught missing-document \
    '^controller/ctl_x\.h:1: cites docs/design\.md, which does not exist$' \
    controller/ctl_x.h '/** The design (docs/design.md, "Apply waves"). */'

# --skip leaves a directory out, and only that one.
clean skipped
put skipped controller/ctl_y.c '/* reference §3.4 */'
tap_check "--skip leaves the directory out" "$CHECK" --skip controller "$TMP/skipped"
tap_check_fails "without --skip the directory is checked" '^controller/ctl_y\.c:1: ' \
    "$CHECK" "$TMP/skipped"

tap_done
