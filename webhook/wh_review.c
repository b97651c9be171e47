/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AdmissionReview and ConversionReview envelopes. The API server treats any deviation in a
 * response (another envelope version, a uid that is not echoed, a patch from a validating
 * webhook, a patchType without a patch) as a failed call and applies failurePolicy, so every
 * response is built here, in one place, by the rules of reference/webhook-and-certs.md §1.
 */
#include "webhook/wh_review.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/caps.h"
#include "co/digest.h"
#include "co/error.h"
#include "co/json.h"

void wh_decision_init(wh_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->allowed = 1;
}

void wh_decision_dispose(wh_decision *d)
{
    if (!d) {
        return;
    }
    free(d->reason);
    free(d->message);
    json_object_put(d->causes);
    json_object_put(d->warnings);
    json_object_put(d->audit);
    json_object_put(d->patch);
    wh_decision_init(d);
}

void wh_decision_deny(wh_decision *d, int code, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = co_xvasprintf(fmt, ap);
    va_end(ap);
    if (d->allowed) {
        d->allowed = 0;
        d->code = code;
        d->reason = co_xstrdup(reason);
        d->message = msg;
        return;
    }
    char *joined = co_xasprintf("%s; %s", d->message ? d->message : "", msg);
    free(msg);
    free(d->message);
    d->message = joined;
}

void wh_decision_cause(wh_decision *d, const char *reason, const char *field, const char *message)
{
    if (!d->causes) {
        d->causes = json_object_new_array();
    }
    struct json_object *c = json_object_new_object();
    json_object_object_add(c, "reason", json_object_new_string(reason));
    json_object_object_add(c, "message", json_object_new_string(message));
    if (field && *field) {
        json_object_object_add(c, "field", json_object_new_string(field));
    }
    json_object_array_add(d->causes, c);
}

void wh_decision_warn(wh_decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = co_xvasprintf(fmt, ap);
    va_end(ap);
    if (!d->warnings) {
        d->warnings = json_object_new_array();
    }
    size_t n = json_object_array_length(d->warnings);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(json_object_get_string(json_object_array_get_idx(d->warnings, i)), msg)) {
            free(msg);
            return;
        }
    }
    json_object_array_add(d->warnings, json_object_new_string(msg));
    free(msg);
}

void wh_decision_audit(wh_decision *d, const char *key, const char *value)
{
    if (!d->audit) {
        d->audit = json_object_new_object();
    }
    json_object_object_add(d->audit, key, json_object_new_string(value));
}

void wh_decision_set_patch(wh_decision *d, struct json_object *ops)
{
    json_object_put(d->patch);
    d->patch = NULL;
    if (ops && json_object_is_type(ops, json_type_array) && json_object_array_length(ops) > 0) {
        d->patch = ops;
    } else {
        json_object_put(ops);
    }
}

const char *wh_json_str(struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) ||
        !json_object_is_type(v, json_type_string)) {
        return NULL;
    }
    return json_object_get_string(v);
}

static struct json_object *member_of_type(struct json_object *obj, const char *key, json_type t)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object) ||
        !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, t)) {
        return NULL;
    }
    return v;
}

struct json_object *wh_json_object(struct json_object *obj, const char *key)
{
    return member_of_type(obj, key, json_type_object);
}

struct json_object *wh_json_array(struct json_object *obj, const char *key)
{
    return member_of_type(obj, key, json_type_array);
}

int wh_review_parse_json(struct json_object **out,
                         const char *body,
                         size_t len,
                         const char *const *const *skip)
{
    if (len == 0) {
        return co_error_set(CO_EINVALID, "request body is empty");
    }
    /* Strict JSON (UTF-8 checked, nesting capped); the route's cap was enforced on the way in. */
    struct json_object *obj = NULL;
    int rc = co_json_parse_skip(&obj, body, len, len, skip);
    if (rc < 0) {
        return co_error_wrap("request body is not valid JSON");
    }
    if (!json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        return co_error_set(CO_EINVALID, "request body must be a JSON object");
    }
    *out = obj;
    return 0;
}

/* A string member that must be present: distinguishes absent, wrong type and empty. */
static int
required_str(const char **out, struct json_object *obj, const char *key, const char *path)
{
    struct json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
        co_error_set(CO_EINVALID, "%s: Required value", path);
        return CO_EINVALID;
    }
    if (!json_object_is_type(v, json_type_string)) {
        co_error_set(CO_EINVALID, "%s: Invalid value: must be a string", path);
        return CO_EINVALID;
    }
    if (json_object_get_string_len(v) == 0) {
        co_error_set(CO_EINVALID, "%s: Required value: must not be empty", path);
        return CO_EINVALID;
    }
    *out = json_object_get_string(v);
    return 0;
}

static const char *opt_str(struct json_object *obj, const char *key)
{
    const char *s = wh_json_str(obj, key);
    return s ? s : "";
}

/* apiVersion, kind, request and request.uid: the parts every review must have. */
static int check_envelope(const char **api_version_out,
                          struct json_object **req_out,
                          const char **uid_out,
                          struct json_object *review,
                          const char *v1,
                          const char *v1beta1,
                          const char *want_kind)
{
    const char *api_version = NULL, *kind = NULL, *uid = NULL;
    int rc = required_str(&api_version, review, "apiVersion", "apiVersion");
    if (rc < 0) {
        return rc;
    }
    if (strcmp(api_version, v1) && strcmp(api_version, v1beta1)) {
        return co_error_set(CO_EINVALID,
                            "apiVersion: Unsupported value: \"%.64s\": supported values: \"%s\", "
                            "\"%s\"",
                            api_version, v1, v1beta1);
    }
    if ((rc = required_str(&kind, review, "kind", "kind")) < 0) {
        return rc;
    }
    if (strcmp(kind, want_kind)) {
        return co_error_set(CO_EINVALID,
                            "kind: Unsupported value: \"%.64s\": supported values: \"%s\"", kind,
                            want_kind);
    }
    struct json_object *req = NULL;
    if (!json_object_object_get_ex(review, "request", &req) ||
        json_object_is_type(req, json_type_null)) {
        return co_error_set(CO_EINVALID, "request: Required value");
    }
    if (!json_object_is_type(req, json_type_object)) {
        return co_error_set(CO_EINVALID, "request: Invalid value: must be an object");
    }
    if ((rc = required_str(&uid, req, "uid", "request.uid")) < 0) {
        return rc;
    }
    *api_version_out = api_version;
    *req_out = req;
    *uid_out = uid;
    return 0;
}

int wh_review_admission_request(wh_admission_request *out,
                                const char **api_version_out,
                                struct json_object *review)
{
    const char *api_version = NULL, *uid = NULL;
    struct json_object *req = NULL;
    int rc = check_envelope(&api_version, &req, &uid, review, WH_ADMISSION_V1, WH_ADMISSION_V1BETA1,
                            "AdmissionReview");
    if (rc < 0) {
        return rc;
    }
    wh_admission_request r = {0};
    r.raw = req;
    r.uid = uid;
    r.operation = opt_str(req, "operation");
    r.sub_resource = opt_str(req, "subResource");
    r.namespace_ = opt_str(req, "namespace");
    r.name = opt_str(req, "name");
    struct json_object *gvk = wh_json_object(req, "kind");
    r.kind_group = opt_str(gvk, "group");
    r.kind_version = opt_str(gvk, "version");
    r.kind = opt_str(gvk, "kind");
    struct json_object *dry = NULL;
    r.dry_run = json_object_object_get_ex(req, "dryRun", &dry) &&
                json_object_is_type(dry, json_type_boolean) && json_object_get_boolean(dry);
    r.object = wh_json_object(req, "object");
    r.old_object = wh_json_object(req, "oldObject");
    r.user_info = wh_json_object(req, "userInfo");
    *out = r;
    *api_version_out = api_version;
    return 0;
}

int wh_review_conversion_request(wh_conversion_request *out,
                                 const char **api_version_out,
                                 struct json_object *review)
{
    const char *api_version = NULL, *uid = NULL;
    struct json_object *req = NULL;
    int rc = check_envelope(&api_version, &req, &uid, review, WH_CONVERSION_V1,
                            WH_CONVERSION_V1BETA1, "ConversionReview");
    if (rc < 0) {
        return rc;
    }
    wh_conversion_request r = {0};
    r.raw = req;
    r.uid = uid;
    r.desired_api_version = wh_json_str(req, "desiredAPIVersion");
    struct json_object *objs = NULL;
    if (json_object_object_get_ex(req, "objects", &objs) &&
        !json_object_is_type(objs, json_type_null)) {
        if (json_object_is_type(objs, json_type_array)) {
            r.objects = objs;
        } else {
            r.objects_invalid = 1;
        }
    }
    *out = r;
    *api_version_out = api_version;
    return 0;
}

/* Serialises @p obj (consumed) into a malloc'd string. */
static void render(char **out, size_t *len_out, struct json_object *obj)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    *out = co_xmemdup(text, len);
    *len_out = len;
    json_object_put(obj);
}

static struct json_object *envelope(const char *api_version, const char *kind)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string(api_version));
    json_object_object_add(o, "kind", json_object_new_string(kind));
    return o;
}

static struct json_object *
status_object(int code, const char *reason, const char *message, struct json_object *causes)
{
    struct json_object *st = json_object_new_object();
    json_object_object_add(st, "metadata", json_object_new_object());
    json_object_object_add(st, "status", json_object_new_string("Failure"));
    json_object_object_add(st, "message", json_object_new_string(message ? message : ""));
    if (reason && *reason) {
        json_object_object_add(st, "reason", json_object_new_string(reason));
    }
    if (causes) {
        struct json_object *details = json_object_new_object();
        json_object_object_add(details, "causes", json_object_get(causes));
        json_object_object_add(st, "details", details);
    }
    json_object_object_add(st, "code", json_object_new_int(code));
    return st;
}

void wh_review_admission_response(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  const wh_decision *d,
                                  int mutating)
{
    struct json_object *resp = json_object_new_object();
    json_object_object_add(resp, "uid", json_object_new_string(uid));
    json_object_object_add(resp, "allowed", json_object_new_boolean(d->allowed));
    if (!d->allowed) {
        /* The API server raises codes below 400 to 400 anyway; say what we mean. */
        int code = d->code >= 400 ? d->code : 403;
        json_object_object_add(
            resp, "status",
            status_object(code, d->reason ? d->reason : "Forbidden", d->message, d->causes));
    }
    if (mutating && d->allowed && d->patch && json_object_array_length(d->patch) > 0) {
        size_t plen = 0;
        const char *ptext = json_object_to_json_string_length(
            d->patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &plen);
        char *b64 = co_base64_encode(ptext, plen, CO_BASE64_STD);
        json_object_object_add(resp, "patchType", json_object_new_string("JSONPatch"));
        json_object_object_add(resp, "patch", json_object_new_string(b64));
        free(b64);
    }
    if (d->audit && json_object_object_length(d->audit) > 0) {
        json_object_object_add(resp, "auditAnnotations", json_object_get(d->audit));
    }
    if (d->warnings && json_object_array_length(d->warnings) > 0) {
        json_object_object_add(resp, "warnings", json_object_get(d->warnings));
    }
    struct json_object *review = envelope(api_version, "AdmissionReview");
    json_object_object_add(review, "response", resp);
    render(out, len_out, review);
}

void wh_review_status_body(char **out,
                           size_t *len_out,
                           int code,
                           const char *reason,
                           const char *message)
{
    struct json_object *st = envelope("v1", "Status");
    struct json_object *body = status_object(code, reason, message, NULL);
    json_object_object_foreach (body, key, val) {
        json_object_object_add(st, key, json_object_get(val));
    }
    json_object_put(body);
    render(out, len_out, st);
}

void wh_review_conversion_success(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  struct json_object *converted)
{
    struct json_object *resp = json_object_new_object();
    json_object_object_add(resp, "uid", json_object_new_string(uid));
    json_object_object_add(resp, "convertedObjects", json_object_get(converted));
    struct json_object *result = json_object_new_object();
    json_object_object_add(result, "metadata", json_object_new_object());
    json_object_object_add(result, "status", json_object_new_string("Success"));
    json_object_object_add(resp, "result", result);
    struct json_object *review = envelope(api_version, "ConversionReview");
    json_object_object_add(review, "response", resp);
    render(out, len_out, review);
}

void wh_review_conversion_failure(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  const char *message)
{
    struct json_object *resp = json_object_new_object();
    json_object_object_add(resp, "uid", json_object_new_string(uid));
    json_object_object_add(resp, "convertedObjects", json_object_new_array());
    struct json_object *result = json_object_new_object();
    json_object_object_add(result, "metadata", json_object_new_object());
    json_object_object_add(result, "status", json_object_new_string("Failure"));
    json_object_object_add(result, "message", json_object_new_string(message));
    json_object_object_add(resp, "result", result);
    struct json_object *review = envelope(api_version, "ConversionReview");
    json_object_object_add(review, "response", resp);
    render(out, len_out, review);
}
