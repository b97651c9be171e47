#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The Dockerfile, checked without a container engine: the build stage installs the -dev package
# of every pkg-config module the Makefile links; the runtime stage installs exactly the Debian
# packages that provide the shared libraries the daemons need (read with readelf and ldd from
# this machine's build, mapped to packages with dpkg -S), runs as a numeric non-root user and
# puts the daemons where deploy/ starts them. Both base images are pinned by digest, from one
# dated Debian build.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../support/tap.sh
. "$ROOT/tests/support/tap.sh"

DF=$ROOT/Dockerfile
# Binaries: the test build, which `make test` has just linked from this tree with the same
# libraries and --as-needed as a release build (its sanitizer runtimes are ignored below). A
# build/release left over from an older tree would hide a library added since.
BINDIR=$ROOT/build/test
if [ ! -x "$BINDIR/component-controller" ] || [ ! -x "$BINDIR/component-webhook" ]; then
    tap_fail "test_dockerfile__daemons_built" "no daemons in build/test"
    tap_done
    exit
fi

# stage_packages N: the packages of `apt-get install` in stage N (0-based) of the Dockerfile.
stage_packages() {
    awk -v want="$1" '
        /^FROM / { stage++ }
        stage - 1 == want { print }
    ' "$DF" | sed -e 's/#.*//' | tr '\\\n' '  ' |
        grep -oE 'apt-get install [^&]*' | tr ' ' '\n' |
        grep -vE '^(apt-get|install|-y|--no-install-recommends|DEBIAN_FRONTEND=.*|)$' | sort -u
}

nstages=$(grep -c '^FROM ' "$DF")
tap_eq "test_dockerfile__two_stages" "2" "$nstages"
# debian:SUITE-YYYYMMDD[-slim]@sha256:<index digest>
digest_re='@sha256:[0-9a-f]{64}'
tap_check "test_dockerfile__build_stage_is_debian_pinned_by_digest" \
    grep -qE "^FROM debian:[a-z]+-[0-9]{8}$digest_re AS build\$" "$DF"
tap_check "test_dockerfile__runtime_stage_is_debian_slim_pinned_by_digest" \
    sh -c "grep '^FROM ' '$DF' | tail -n 1 | grep -qE '^FROM debian:[a-z]+-[0-9]{8}-slim$digest_re\$'"
# one Debian suite and build date in both stages: the runtime libraries are those linked
tap_eq "test_dockerfile__stages_share_one_debian_build" "1" \
    "$(sed -nE 's/^FROM debian:([a-z]+-[0-9]{8}).*/\1/p' "$DF" | sort -u | wc -l)"
tap_eq "test_dockerfile__digests_differ" "2" \
    "$(grep -oE "^FROM [^ ]*$digest_re" "$DF" | sed 's/.*@//' | sort -u | wc -l)"
last_user=$(awk '/^USER /{u=$2} END{print u}' "$DF")
uid=${last_user%%:*}
if [[ $uid =~ ^[0-9]+$ ]] && [ "$uid" -gt 0 ]; then
    tap_ok "test_dockerfile__runs_as_numeric_non_root_user"
else
    tap_fail "test_dockerfile__runs_as_numeric_non_root_user" "USER is '$last_user'"
fi
# The user deploy/ runs as (runAsUser) is the image's.
tap_eq "test_dockerfile__deploy_uses_the_image_user" "$uid" \
    "$(grep -h 'runAsUser:' "$ROOT"/deploy/base/*.yaml | awk '{print $2}' | sort -u)"
for d in component-controller component-webhook; do
    tap_check "test_dockerfile__copies_${d//-/_}_to_usr_local_bin" \
        grep -qE "^COPY --from=build .*/build/release/$d( |$)" "$DF"
    tap_check "test_dockerfile__deploy_starts_${d//-/_}_there" \
        grep -q "command: \[/usr/local/bin/$d\]" -r "$ROOT/deploy/base"
done

# --- build stage: a -dev package for every pkg-config module ----------------------------------

build_pkgs=$(stage_packages 0)
modules=$(sed -n 's/^PKGS := //p' "$ROOT/Makefile")
pcs=()
for m in $modules; do
    pcs+=("$(pkg-config --variable=pcfiledir "$m" 2>/dev/null)/$m.pc")
done
# "package[:arch]: path" lines, one dpkg call
owners=$(dpkg -S "${pcs[@]}" 2>/dev/null)
missing=""
for pc in "${pcs[@]}"; do
    owner=$(awk -v f="$pc" '{o=$1; sub(/:.*/, "", o); if ($2 == f) print o}' <<<"$owners" | head -n 1)
    if [ -z "$owner" ]; then
        missing="$missing $(basename "$pc")(no package)"
    elif ! grep -qx "$owner" <<<"$build_pkgs"; then
        missing="$missing $owner"
    fi
done
tap_eq "test_dockerfile__build_stage_has_every_dev_package" "" "$missing"

# --- runtime stage: exactly the libraries the daemons link ------------------------------------

runtime_pkgs=$(stage_packages 1)
declare -A lib_path=()
for b in "$BINDIR/component-controller" "$BINDIR/component-webhook"; do
    for lib in $(readelf -d "$b" | awk '/\(NEEDED\)/ {gsub(/[][]/, "", $5); print $5}'); do
        case $lib in libasan.* | libubsan.* | libstdc++.* | libgcc_s.*) continue ;; esac
        lib_path[$lib]=$(ldd "$b" | awk -v l="$lib" '$1 == l {print $3; exit}')
    done
done
# A sanitizer build (build/test) keeps the sanitizer's allocator and drops a malloc library the
# release link names (--as-needed), so the libraries named by -l in the daemons' link rules count
# too.
for l in $(sed -n '/^build\/\$(1)\/component-/,/^$/p' "$ROOT/Makefile" |
    grep -oE -- '-l[A-Za-z0-9_]+' | sed 's/^-l//' | sort -u); do
    case $l in pthread | m) continue ;; esac
    lib_path[lib$l]=$(readlink -f "$(gcc -print-file-name="lib$l.so")")
done
# Each library under its path, the resolved path and both usrmerge spellings; one dpkg call.
cands=()
for lib in "${!lib_path[@]}"; do
    p=${lib_path[$lib]}
    [ -n "$p" ] && cands+=("$p" "$(readlink -f "$p")" "${p#/usr}" "/usr$p")
done
owners=$(dpkg -S "${cands[@]}" 2>/dev/null)
needed_pkgs=""
unknown=""
for lib in "${!lib_path[@]}"; do
    p=${lib_path[$lib]}
    o=$(awk -v a="$p" -v b="$(readlink -f "$p")" -v c="${p#/usr}" -v d="/usr$p" \
        '{o=$1; sub(/:.*/, "", o); if ($2 == a || $2 == b || $2 == c || $2 == d) print o}' \
        <<<"$owners" | head -n 1)
    if [ -z "$p" ] || [ -z "$o" ]; then
        unknown="$unknown $lib"
    else
        needed_pkgs="$needed_pkgs $o"
    fi
done
needed_pkgs=$(tr ' ' '\n' <<<"$needed_pkgs" | grep -v '^$' | sort -u)
tap_eq "test_dockerfile__every_linked_library_has_a_package" "" "$unknown"
tap_check "test_dockerfile__daemons_link_some_libraries" grep -qx 'libjson-c5' <<<"$needed_pkgs"
# libc6 is in every Debian image.
absent=$(comm -23 <(grep -vx libc6 <<<"$needed_pkgs") <(printf '%s\n' "$runtime_pkgs"))
tap_eq "test_dockerfile__runtime_installs_every_needed_library" "" "$absent"
extra=$(comm -13 <(printf '%s\n' "$needed_pkgs") <(grep '^lib' <<<"$runtime_pkgs"))
tap_eq "test_dockerfile__runtime_installs_no_unneeded_library" "" "$extra"
tap_check "test_dockerfile__runtime_has_ca_certificates" grep -qx ca-certificates <<<"$runtime_pkgs"
# the template date functions read zones from the system tzdata, as Go does
tap_check "test_dockerfile__runtime_has_tzdata" grep -qx tzdata <<<"$runtime_pkgs"
if grep -q '^libgpgme' <<<"$needed_pkgs"; then
    # gpgme runs gpg for SOPS PGP keys, and gpg hands every secret-key operation (the import
    # of a decryption Secret's keys included) to gpg-agent: without it no key imports
    tap_check "test_dockerfile__runtime_has_gnupg_for_gpgme" \
        sh -c "printf '%s\n' '$runtime_pkgs' | grep -qx gpg && printf '%s\n' '$runtime_pkgs' | grep -qx gpg-agent"
fi
# Every key set has a GnuPG home of its own under $TMPDIR; a GNUPGHOME in the image would be a
# shared one for anything that missed it (its agent sockets included).
if grep -qE '^ENV .*GNUPGHOME' "$DF"; then
    tap_fail "test_dockerfile__no_shared_gnupg_home" "$(grep -E '^ENV .*GNUPGHOME' "$DF")"
else
    tap_ok "test_dockerfile__no_shared_gnupg_home"
fi
# The same package names exist in this machine's Debian release.
# (one apt-cache call; `apt-cache policy` lists a "Candidate" for every known package)
known=$(apt-cache policy $runtime_pkgs $build_pkgs 2>/dev/null | awk '/^[^ ]/ {p=$1} /Candidate: [^(]/ {sub(":$", "", p); print p}' | sort -u)
unknown_pkg=$(comm -23 <(printf '%s\n' $runtime_pkgs $build_pkgs | sort -u) <(printf '%s\n' "$known"))
tap_eq "test_dockerfile__packages_exist_in_debian" "" "$unknown_pkg"

tap_done
