/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for Blueprint and BlueprintVersion (co/api/blueprint.h): arbitrary bytes are
 * parsed as JSON and fed to validation of both kinds, parsing, the digest and the immutability
 * check. Besides "no crash, no leak" it aborts when one of these fails:
 *  - an object that validates also parses, and a parsed Blueprint's digest is that of its files;
 *  - a BlueprintVersion that validates is named <spec.blueprint>--<spec.digest>, and its digest
 *    is that of its files;
 *  - an object compared with itself is never a change of spec.
 * The first input byte picks the kind filled in when the JSON has none, so that mutations reach
 * the spec code.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/blueprint.h"
#include "co/api/field_error.h"
#include "co/json/json.h"
#include "co/util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_blueprint(const json_object *obj)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int bad = co_blueprint_validate(&errs, obj, 0) < 0;
    co_field_errors_dispose(&errs);
    co_blueprint *b = NULL;
    int rc = co_blueprint_parse(&b, obj);
    if (!bad && rc < 0) {
        abort(); /* valid, yet refused */
    }
    if (rc == 0) {
        char want[CO_SHA256_HEX_LEN + 1];
        if (co_blueprint_digest(want, co_json_get(obj, "spec", "files", NULL)) < 0 ||
            strcmp(want, b->digest) != 0) {
            abort();
        }
        co_blueprint_free(b);
    }
    co_error_clear();
}

static void check_version(const json_object *obj)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int bad = co_blueprint_version_validate(&errs, obj, 0) < 0;
    co_field_errors_dispose(&errs);
    co_blueprint_version *v = NULL;
    int rc = co_blueprint_version_parse(&v, obj);
    if (!bad && rc < 0) {
        abort();
    }
    if (rc == 0) {
        char *name = co_blueprint_version_name(v->blueprint, v->digest);
        char want[CO_SHA256_HEX_LEN + 1];
        if (strcmp(name, v->name) != 0 ||
            co_blueprint_digest(want, co_json_get(obj, "spec", "files", NULL)) < 0 ||
            strcmp(want, v->digest) != 0) {
            abort();
        }
        free(name);
        co_blueprint_version_free(v);
    }
    errs = (co_field_errors)CO_FIELD_ERRORS_INIT;
    if (co_blueprint_version_validate_update(&errs, obj, obj) != 0) {
        abort();
    }
    co_field_errors_dispose(&errs);
    co_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    int pick = data[0] & 1;
    json_object *obj = NULL;
    if (co_json_parse(&obj, (const char *)data + 1, size - 1) < 0) {
        co_error_clear();
        return 0;
    }
    if (json_object_is_type(obj, json_type_object) && !co_json_get(obj, "kind", NULL)) {
        json_object_object_add(obj, "apiVersion", json_object_new_string(CO_BLUEPRINT_API_VERSION));
        json_object_object_add(
            obj, "kind",
            json_object_new_string(pick ? CO_BLUEPRINT_VERSION_KIND : CO_BLUEPRINT_KIND));
    }
    char digest[CO_SHA256_HEX_LEN + 1];
    if (co_blueprint_digest(digest, co_json_get(obj, "spec", "files", NULL)) < 0) {
        co_error_clear();
    }
    check_blueprint(obj);
    check_version(obj);
    (void)co_blueprint_type_of(obj);
    json_object_put(obj);
    return 0;
}
