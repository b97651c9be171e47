/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the ConversionReview path: the input is the body of a POST to /convert,
 * answered by wh_http_handle() with the real conversion handler (v1alpha1 <-> v1beta1
 * Components, co_component_convert()). Invariants beyond "no crash, no leak, no hang":
 * - the answer is HTTP 200 or a 4xx, with a JSON object as body;
 * - a 200 is a ConversionReview of the request's envelope version that echoes its uid, with
 *   result.status Success, or Failure and a message;
 * - on Success there is one converted object per object sent, each in the desired version,
 *   with kind, metadata and status untouched, and converting it back to the version it came
 *   in gives the object that was sent (the conversion is lossless).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_http.h"
#include "webhook/wh_state.h"

static wh_state *state;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    co_log_setup("fuzz", CO_LOG_ERROR, CO_LOG_FORMAT_TEXT);
    wh_state_new(&state, 0);
    return 0;
}

static struct json_object *member(const struct json_object *o, const char *key)
{
    struct json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v)) {
        return NULL;
    }
    return v;
}

static const char *string_member(const struct json_object *o, const char *key)
{
    struct json_object *v = member(o, key);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int same_member(const struct json_object *a, const struct json_object *b, const char *key)
{
    struct json_object *x = member(a, key), *y = member(b, key);
    if (!x || !y) {
        return !x == !y;
    }
    return co_json_equal(x, y);
}

static void check_success(const wh_handlers *h,
                          const struct json_object *request,
                          const struct json_object *converted)
{
    const char *desired = string_member(request, "desiredAPIVersion");
    struct json_object *objects = member(request, "objects");
    size_t n =
        json_object_is_type(objects, json_type_array) ? json_object_array_length(objects) : 0;
    if (!desired || !json_object_is_type(converted, json_type_array) ||
        json_object_array_length(converted) != n) {
        __builtin_trap();
    }
    for (size_t i = 0; i < n; i++) {
        struct json_object *in = json_object_array_get_idx(objects, i);
        struct json_object *out = json_object_array_get_idx(converted, i);
        const char *version = string_member(out, "apiVersion");
        if (!version || strcmp(version, desired) != 0 || !same_member(in, out, "kind") ||
            !same_member(in, out, "metadata") || !same_member(in, out, "status")) {
            __builtin_trap();
        }
        const char *from = string_member(in, "apiVersion");
        struct json_object *back = NULL;
        co_error_clear();
        if (!from || h->convert(&back, h->ctx, out, from) < 0 || !co_json_equal(back, in)) {
            __builtin_trap(); /* what converted must convert back to what was sent */
        }
        json_object_put(back);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wh_handlers h = wh_admission_handlers(state);
    wh_http_request req = {"POST", "/convert", "application/json", (const char *)data, size};
    wh_http_response r;
    wh_http_handle(&r, &h, &req);
    if (r.status != 200 && (r.status < 400 || r.status > 499)) {
        __builtin_trap();
    }
    struct json_object *answer = NULL;
    if (!r.body || co_json_parse(&answer, r.body, r.body_len) < 0 ||
        !json_object_is_type(answer, json_type_object)) {
        __builtin_trap();
    }
    if (r.status == 200) {
        struct json_object *review = NULL;
        co_error_clear();
        if (co_json_parse_max(&review, (const char *)data, size, size) < 0) {
            __builtin_trap(); /* answered 200 to what is not JSON */
        }
        struct json_object *request = member(review, "request");
        struct json_object *response = member(answer, "response");
        const char *uid = string_member(request, "uid");
        const char *version = string_member(review, "apiVersion");
        const char *echoed = string_member(answer, "apiVersion");
        const char *kind = string_member(answer, "kind");
        const char *ruid = string_member(response, "uid");
        struct json_object *result = member(response, "result");
        const char *status = string_member(result, "status");
        if (!uid || !*uid || !ruid || strcmp(uid, ruid) != 0 || !version || !echoed ||
            strcmp(version, echoed) != 0 || !kind || strcmp(kind, "ConversionReview") != 0 ||
            !status) {
            __builtin_trap();
        }
        if (strcmp(status, "Success") == 0) {
            check_success(&h, request, member(response, "convertedObjects"));
        } else {
            const char *message = string_member(result, "message");
            if (strcmp(status, "Failure") != 0 || !message || !*message) {
                __builtin_trap();
            }
        }
        json_object_put(review);
    }
    json_object_put(answer);
    wh_http_response_dispose(&r);
    co_error_clear();
    return 0;
}
