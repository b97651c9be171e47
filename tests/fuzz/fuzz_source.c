/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for what the source layer reads from users and from the cluster: a
 * Component's `spec.sourceRef` and Flux source objects (JSON); the string encoding their digests
 * use is fuzzed with the JSON encoder (fuzz_json). Invariants beyond "no crash, no leak":
 * - a parsed sourceRef has one known kind with its required fields set, a git variant passes
 *   co_git_validate() and has an interval within 1s..168h (or none);
 * - a Flux object with an artifact passes the requeue filter against a Component that has not
 *   attempted it, and its source digest is 64 lowercase hex digits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/source/git.h"
#include "co/json/json.h"
#include "co/source/source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_hex64(const char *s)
{
    if (!s || strlen(s) != 64) {
        return 0;
    }
    for (size_t i = 0; i < 64; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

static void check_ref(const struct json_object *obj)
{
    co_source_spec r;
    if (co_source_spec_parse(&r, obj) < 0) {
        if (!co_error_last() || strncmp(co_error_last(), "sourceRef", 9) != 0) {
            abort(); /* every parse error names the field */
        }
        return;
    }
    switch (r.kind) {
    case CO_SOURCE_HTTP_REPOSITORY:
        if (!r.url || !*r.url) {
            abort();
        }
        break;
    case CO_SOURCE_GIT: {
        co_git_ref g = r.git;
        if (!r.url || co_git_validate(r.url, &g) < 0) {
            abort();
        }
        if (r.interval_ms != 0 && (r.interval_ms < 1000 || r.interval_ms > 168L * 3600000)) {
            abort();
        }
        break;
    }
    case CO_SOURCE_FLUX_GIT_REPOSITORY:
    case CO_SOURCE_FLUX_OCI_REPOSITORY:
    case CO_SOURCE_FLUX_BUCKET:
    case CO_SOURCE_FLUX_HELM_CHART: {
        char *key = co_source_index_key(&r, "ns");
        if (!r.name || !*r.name || !key || !co_source_flux_kind(r.kind)) {
            abort();
        }
        free(key);
        break;
    }
    default:
        abort();
    }
}

static void check_flux_object(const struct json_object *obj)
{
    const char *digest = NULL, *revision = NULL;
    if (co_source_flux_has_artifact(obj, &digest, &revision)) {
        if (!digest || !*digest || !revision || !*revision) {
            abort();
        }
        /* a Component that never attempted anything is always re-queued */
        struct json_object *fresh = json_object_new_object();
        if (!co_source_should_requeue(obj, fresh)) {
            abort();
        }
        json_object_put(fresh);
    }
    (void)co_source_should_requeue(obj, obj);
    char *sd = NULL;
    if (co_source_flux_digest(&sd, obj, "u", digest ? digest : "d", revision ? revision : "r") ==
        0) {
        if (!is_hex64(sd)) {
            abort();
        }
        free(sd);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *obj = NULL;
    if (co_json_parse(&obj, (const char *)data, size) < 0) {
        return 0;
    }
    check_ref(obj);
    check_flux_object(obj);
    json_object_put(obj);
    return 0;
}
