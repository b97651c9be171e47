#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The layering of shared/ (shared/README.md, "Layers"): the checker tests/support/layers.py
# passes on this tree, states the order the README states, and catches each kind of violation
# in small trees made here, naming the file and line.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/support/tap.sh"
CHECK="$ROOT/tests/support/layers.py"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/co-layers-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

tap_check "the tree keeps its layers" "$CHECK" "$ROOT"

order=$("$CHECK" --order)
readme=$(sed -n 's/^Layer order, lowest first: \(.*\)\.$/\1/p' "$ROOT/shared/README.md" |
    sed 's/`//g; s/ → / /g')
tap_eq "shared/README.md states the checker's layer order" "$order" "$readme"

# put TREE PATH LINE...: writes a file of the tree.
put() {
    local tree=$1 path=$2
    shift 2
    mkdir -p "$(dirname "$TMP/$tree/$path")"
    printf '%s\n' "$@" >"$TMP/$tree/$path"
}

# clean TREE: a small tree that keeps every rule, including the allowed exceptions (a
# library-internal header used by a higher layer, a test including a private header).
clean() {
    local t=$1
    put "$t" shared/include/co/util/buf.h '#include <stddef.h>'
    put "$t" shared/src/util/buf.c '#include "co/util/buf.h"'
    put "$t" shared/include/co/json/json.h '#include "co/util/buf.h"'
    put "$t" shared/src/json/json_int.h '#include "co/json/json.h"'
    put "$t" shared/src/json/json_lib.h '#include "co/util/buf.h"'
    put "$t" shared/src/json/json.c '#include "co/json/json.h"' '#include "json_int.h"'
    put "$t" shared/include/co/render/template.h '#include "co/json/json.h"'
    put "$t" shared/src/render/template/tpl.h '#include "co/render/template.h"'
    put "$t" shared/src/render/template/exec.c '#include "tpl.h"'
    put "$t" shared/src/render/kustomize/resource.c '#include "shared/src/json/json_lib.h"' \
        '#include "co/render/template.h"'
    put "$t" controller/main.c '#include "co/render/template.h"' '#include <stdio.h>'
    put "$t" tests/unit/test_json.c '#include "shared/src/json/json_int.h"'
}

clean ok
tap_check "a tree that keeps the rules passes" "$CHECK" "$TMP/ok"

# violation NAME PATTERN PATH LINE...: a clean tree plus one file; the checker must fail and
# its report must match PATTERN (file:line and the reason).
violation() {
    local name=$1 pattern=$2 path=$3
    shift 3
    clean "$name"
    put "$name" "$path" "$@"
    tap_check_fails "caught: $name" "$pattern" "$CHECK" "$TMP/$name"
}

violation lower-source-includes-higher \
    '^shared/src/util/log\.c:2: layer util includes "co/json/json\.h" of the higher layer json$' \
    shared/src/util/log.c '#include "co/util/buf.h"' '#include "co/json/json.h"'
violation lower-header-includes-higher \
    '^shared/include/co/json/yaml\.h:1: layer json includes "co/render/template\.h" of the higher layer render$' \
    shared/include/co/json/yaml.h '#include "co/render/template.h"'
violation lower-includes-higher-lib \
    '^shared/src/util/glob\.c:1: layer util includes "shared/src/json/json_lib\.h" of the higher layer json$' \
    shared/src/util/glob.c '#include "shared/src/json/json_lib.h"'
violation private-header-of-another-module \
    '^shared/src/render/helm/render\.c:3: includes "shared/src/render/template/tpl\.h", a private header of shared/src/render/template/$' \
    shared/src/render/helm/render.c '#include <string.h>' '' '#include "shared/src/render/template/tpl.h"'
violation private-header-by-relative-path \
    '^shared/src/render/kustomize/hash\.c:1: includes "\.\./\.\./json/json_int\.h", a private header of shared/src/json/$' \
    shared/src/render/kustomize/hash.c '#include "../../json/json_int.h"'
violation library-internal-header-from-a-daemon \
    '^controller/ctl_x\.c:1: includes "shared/src/json/json_lib\.h", a library-internal header of shared/$' \
    controller/ctl_x.c '#include "shared/src/json/json_lib.h"'
violation public-header-includes-private \
    '^shared/include/co/json/jdoc\.h:1: public header includes "shared/src/json/json_lib\.h", which is not public$' \
    shared/include/co/json/jdoc.h '#include "shared/src/json/json_lib.h"'
violation file-outside-the-layers \
    '^shared/src/misc/x\.c:1: not in a layer of shared/' \
    shared/src/misc/x.c '#include "co/util/buf.h"'
violation header-that-does-not-exist \
    '^webhook/wh_x\.c:1: "co/buf\.h" does not exist$' \
    webhook/wh_x.c '#include "co/buf.h"'

tap_done
