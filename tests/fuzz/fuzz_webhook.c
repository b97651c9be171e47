/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target over the webhook's request handler (wh_http_handle with the real admission
 * and conversion handlers over a populated wh_state). Input layout: byte 0 picks the route
 * (or, from 0xF0 up, feeds the body to the state the way a watch would), byte 1 the content
 * type and method, the rest is the body. Besides the sanitizers, every answer is checked
 * against the protocol: a known status, a JSON body, and for HTTP 200 a review response that
 * echoes a non-empty uid. The body is also parsed with and without the members the route's
 * handlers never read: both parses must fail alike (code and message) or give the same tree
 * once those members are deleted from the full one.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/log.h"
#include "webhook/wh_admission.h"
#include "webhook/wh_http.h"
#include "webhook/wh_state.h"

static wh_state *state;

static const char *const paths[] = {
    "/validate/v1alpha1/components",
    "/validate/v1beta1/components",
    "/mutate/v1alpha1/components",
    "/mutate/v1beta1/components",
    "/convert",
    "/validate/v1alpha1/componentpolicies",
    "/validate/v1alpha1/components/",
    "/healthz",
};
static const char *const content_types[] = {"application/json", "application/json; charset=utf-8",
                                            "text/plain", NULL};

static void feed(const char *text)
{
    struct json_object *obj = json_tokener_parse(text);
    if (!obj) {
        return;
    }
    wh_state_component_put(state, obj);
    if (wh_state_policy_put(state, obj) < 0) {
        /* refused policies are simply absent */
    }
    wh_state_namespace_put(state, obj);
    json_object_put(obj);
}

static void reset_state(void)
{
    wh_state_free(state);
    /* Tentative entries expire at once, so that admitted inputs do not pile up. */
    wh_state_new(&state, 0);
    feed("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"Component\",\"metadata\":{"
         "\"name\":\"a\",\"namespace\":\"ns\"},\"spec\":{\"dependencies\":[{\"name\":\"b\"}]}}");
    feed("{\"apiVersion\":\"core.cs.sap.com/v1alpha1\",\"kind\":\"ComponentPolicy\",\"metadata\":"
         "{\"name\":\"p\"},\"spec\":{\"namespaceSelector\":{\"matchLabels\":{\"t\":\"x\"}},"
         "\"rules\":{\"sourceKinds\":{\"action\":\"Warn\",\"allowed\":[\"git\"]},"
         "\"intervals\":{\"action\":\"Audit\",\"minRequeueInterval\":\"1m\"}},"
         "\"defaults\":{\"deletePolicy\":\"Orphan\"}}}");
    feed("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns\","
         "\"labels\":{\"t\":\"x\"}}}");
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    co_log_setup("fuzz", CO_LOG_ERROR, CO_LOG_FORMAT_TEXT);
    reset_state();
    return 0;
}

static void check(const wh_http_response *r)
{
    int known = r->status == 200 || r->status == 400 || r->status == 404 || r->status == 405 ||
                r->status == 413 || r->status == 415;
    if (!known || !r->body || !r->content_type) {
        __builtin_trap();
    }
    struct json_object *body = json_tokener_parse(r->body);
    if (!body || !json_object_is_type(body, json_type_object)) {
        __builtin_trap();
    }
    if (r->status == 200) {
        struct json_object *resp = NULL, *uid = NULL;
        if (!json_object_object_get_ex(body, "response", &resp) ||
            !json_object_object_get_ex(resp, "uid", &uid) ||
            !json_object_is_type(uid, json_type_string) || json_object_get_string_len(uid) == 0) {
            __builtin_trap();
        }
    }
    json_object_put(body);
}

/* Deletes the member at @p keys from @p root when every value on the way is an object. */
static void delete_at(struct json_object *root, const char *const *keys)
{
    struct json_object *o = root;
    size_t i = 0;
    for (; keys[i + 1]; i++) {
        if (!json_object_is_type(o, json_type_object) ||
            !json_object_object_get_ex(o, keys[i], &o)) {
            return;
        }
    }
    if (json_object_is_type(o, json_type_object)) {
        json_object_object_del(o, keys[i]);
    }
}

static void check_skip(wh_route route, const char *body, size_t len)
{
    const char *const *const *skip = route != WH_ROUTE_NONE ? wh_admission_unread(route) : NULL;
    if (!skip) {
        return;
    }
    struct json_object *full = NULL, *pruned = NULL;
    co_error_clear();
    int rf = co_json_parse_max(&full, body, len, len);
    char *mf = strdup(co_error_last());
    co_error_clear();
    int rp = co_json_parse_skip(&pruned, body, len, len, skip);
    if (rf != rp || strcmp(mf, co_error_last()) != 0) {
        __builtin_trap();
    }
    free(mf);
    if (rf == 0) {
        for (size_t i = 0; skip[i]; i++) {
            delete_at(full, skip[i]);
        }
        if (!co_json_equal(full, pruned)) {
            __builtin_trap();
        }
    }
    json_object_put(full);
    json_object_put(pruned);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    if (data[0] >= 0xF0) {
        char *text = malloc(size - 1);
        memcpy(text, data + 2, size - 2);
        text[size - 2] = '\0';
        feed(text);
        free(text);
        size_t comps, pols, nss, pend;
        wh_state_sizes(state, &comps, &pols, &nss, &pend);
        if (comps + pols + nss > 2000) {
            reset_state();
        }
        return 0;
    }
    wh_handlers h = wh_admission_handlers(state);
    wh_http_request req = {
        (data[1] & 0x80) ? "GET" : "POST",
        paths[data[0] % (sizeof(paths) / sizeof(paths[0]))],
        content_types[data[1] % 4],
        (const char *)data + 2,
        size - 2,
    };
    wh_http_response r;
    wh_http_handle(&r, &h, &req);
    check(&r);
    wh_http_response_dispose(&r);
    check_skip(wh_route_lookup(req.path), req.body, req.body_len);
    return 0;
}
