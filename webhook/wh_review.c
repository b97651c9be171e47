/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AdmissionReview and ConversionReview envelopes. The API server treats any deviation in a
 * response (another envelope version, a uid that is not echoed, a patch from a validating
 * webhook, a patchType without a patch) as a failed call and applies failurePolicy, so every
 * response is built here, in one place (docs/webhook-and-certs.md, "Wire rules").
 */
#include "webhook/wh_review.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/digest.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "co/json/json.h"

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

/* Takes @p msg (malloc'd) as a denial. */
static void deny_take(wh_decision *d, int code, const char *reason, char *msg)
{
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

void wh_decision_deny(wh_decision *d, int code, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = co_xvasprintf(fmt, ap);
    va_end(ap);
    deny_take(d, code, reason, msg);
}

void wh_decision_deny_text(wh_decision *d, int code, const char *reason, const char *text)
{
    deny_take(d, code, reason, co_xstrdup(text));
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

void wh_decision_warn_text(wh_decision *d, const char *text)
{
    if (!d->warnings) {
        d->warnings = json_object_new_array();
    }
    size_t n = json_object_array_length(d->warnings);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(json_object_get_string(json_object_array_get_idx(d->warnings, i)), text)) {
            return;
        }
    }
    json_object_array_add(d->warnings, json_object_new_string(text));
}

void wh_decision_warn(wh_decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = co_xvasprintf(fmt, ap);
    va_end(ap);
    wh_decision_warn_text(d, msg);
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

int wh_review_parse(co_jdoc **out, const char *body, size_t len, const char *const *const *skip)
{
    if (len == 0) {
        return co_error_set(CO_EINVALID, "request body is empty");
    }
    /* Strict JSON (UTF-8 checked, nesting capped); the route's cap was enforced on the way in. */
    co_jdoc *doc = NULL;
    int rc = co_jdoc_parse(&doc, body, len, len, skip);
    if (rc < 0) {
        return co_error_wrap("request body is not valid JSON");
    }
    if (!co_jv_is(co_jdoc_root(doc), CO_JV_OBJECT)) {
        co_jdoc_free(doc);
        return co_error_set(CO_EINVALID, "request body must be a JSON object");
    }
    *out = doc;
    return 0;
}

/* A string member that must be present: distinguishes absent, wrong type and empty. */
static int required_str(const char **out, const co_jv *obj, const char *key, const char *path)
{
    const co_jv *v = co_jv_get(obj, key);
    if (co_jv_unset(v)) {
        co_error_set(CO_EINVALID, "%s: Required value", path);
        return CO_EINVALID;
    }
    if (v->type != CO_JV_STRING) {
        co_error_set(CO_EINVALID, "%s: Invalid value: must be a string", path);
        return CO_EINVALID;
    }
    if (v->len == 0) {
        co_error_set(CO_EINVALID, "%s: Required value: must not be empty", path);
        return CO_EINVALID;
    }
    *out = v->as.s;
    return 0;
}

static const char *opt_str(const co_jv *obj, const char *key)
{
    const char *s = co_jv_str(obj, key);
    return s ? s : "";
}

/* Member @p key of @p obj when it is of type @p t, else NULL. */
static const co_jv *jv_member(const co_jv *obj, const char *key, co_jv_type t)
{
    const co_jv *v = co_jv_get(obj, key);
    return co_jv_is(v, t) ? v : NULL;
}

/* apiVersion, kind, request and request.uid: the parts every review must have. */
static int check_envelope(const char **api_version_out,
                          const co_jv **req_out,
                          const char **uid_out,
                          const co_jv *review,
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
    const co_jv *req = co_jv_get(review, "request");
    if (co_jv_unset(req)) {
        return co_error_set(CO_EINVALID, "request: Required value");
    }
    if (req->type != CO_JV_OBJECT) {
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
                                const co_jv *review)
{
    const char *api_version = NULL, *uid = NULL;
    const co_jv *req = NULL;
    int rc = check_envelope(&api_version, &req, &uid, review, WH_ADMISSION_V1, WH_ADMISSION_V1BETA1,
                            "AdmissionReview");
    if (rc < 0) {
        return rc;
    }
    wh_admission_request r = {0};
    r.uid = uid;
    r.operation = opt_str(req, "operation");
    r.sub_resource = opt_str(req, "subResource");
    r.namespace_ = opt_str(req, "namespace");
    r.name = opt_str(req, "name");
    const co_jv *gvk = jv_member(req, "kind", CO_JV_OBJECT);
    r.kind_group = opt_str(gvk, "group");
    r.kind_version = opt_str(gvk, "version");
    r.kind = opt_str(gvk, "kind");
    const co_jv *dry = co_jv_get(req, "dryRun");
    r.dry_run = co_jv_is(dry, CO_JV_BOOL) && (dry->flags & CO_JV_TRUE);
    r.object = jv_member(req, "object", CO_JV_OBJECT);
    r.old_object = jv_member(req, "oldObject", CO_JV_OBJECT);
    r.user_info = jv_member(req, "userInfo", CO_JV_OBJECT);
    *out = r;
    *api_version_out = api_version;
    return 0;
}

int wh_review_conversion_request(wh_conversion_request *out,
                                 const char **api_version_out,
                                 const co_jv *review)
{
    const char *api_version = NULL, *uid = NULL;
    const co_jv *req = NULL;
    int rc = check_envelope(&api_version, &req, &uid, review, WH_CONVERSION_V1,
                            WH_CONVERSION_V1BETA1, "ConversionReview");
    if (rc < 0) {
        return rc;
    }
    wh_conversion_request r = {0};
    r.uid = uid;
    r.desired_api_version = co_jv_str(req, "desiredAPIVersion");
    const co_jv *objs = co_jv_get(req, "objects");
    if (!co_jv_unset(objs)) {
        if (objs->type == CO_JV_ARRAY) {
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

/*
 * The admission response is written straight into a buffer instead of being built as a json-c
 * tree and serialised: it is answered for every request, and the tree cost more than the
 * rest of the answer. The bytes are exactly those json-c 0.16 writes with
 * JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, as every other response here:
 * no whitespace, members in insertion order, and in strings '"', '\\', '\b', '\f', '\n',
 * '\r', '\t' as two-character escapes, other bytes below 0x20 as \u00xx (lower-case hex),
 * and every other byte (non-ASCII and '/' included) as it is.
 */
static void put(co_buf *b, const char *s, size_t n)
{
    /* the answer is written in some fifty small pieces into room reserved up front */
    if (b->ptr && n < b->cap - b->len && b->len + n <= b->max) {
        memcpy(b->ptr + b->len, s, n);
        b->len += n;
        b->ptr[b->len] = '\0';
        return;
    }
    CO_ASSERT(co_buf_put(b, s, n) == 0);
}

#define PUT_LIT(b, lit) put((b), (lit), sizeof(lit) - 1)

/* The first byte from @p i on that put_string() escapes ('"', '\\', below 0x20), or @p len. With
 * SSE2, sixteen at a time: a signed comparison below 0x20 also marks the bytes >= 0x80, which
 * are written as they are, so their own sign bits are taken out of the mask again. */
static size_t next_escape(const char *s, size_t i, size_t len)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    for (; len - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i stop =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                         _mm_cmplt_epi8(v, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(stop) & ~(unsigned)_mm_movemask_epi8(v);
        if (mask) {
            return i + (size_t)__builtin_ctz(mask);
        }
    }
#endif
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\') {
            break;
        }
    }
    return i;
}

static void put_string(co_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0;
    put(b, "\"", 1);
    for (size_t i = 0; (i = next_escape(s, i, len)) < len; i++) {
        unsigned char c = (unsigned char)s[i];
        put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"':
            PUT_LIT(b, "\\\"");
            break;
        case '\\':
            PUT_LIT(b, "\\\\");
            break;
        case '\b':
            PUT_LIT(b, "\\b");
            break;
        case '\f':
            PUT_LIT(b, "\\f");
            break;
        case '\n':
            PUT_LIT(b, "\\n");
            break;
        case '\r':
            PUT_LIT(b, "\\r");
            break;
        case '\t':
            PUT_LIT(b, "\\t");
            break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf]};
            put(b, u, sizeof(u));
            break;
        }
        }
    }
    put(b, s + run, len - run);
    put(b, "\"", 1);
}

static void put_cstr(co_buf *b, const char *s)
{
    put_string(b, s, strlen(s));
}

/* A member name and its colon; @p first is cleared after the first member of an object. */
static void put_key(co_buf *b, int *first, const char *key)
{
    if (!*first) {
        put(b, ",", 1);
    }
    *first = 0;
    put_cstr(b, key);
    put(b, ":", 1);
}

static void put_int(co_buf *b, int v)
{
    char digits[16];
    size_t n = 0;
    unsigned u = v < 0 ? 0U - (unsigned)v : (unsigned)v;
    do {
        digits[sizeof(digits) - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) {
        digits[sizeof(digits) - 1 - n++] = '-';
    }
    put(b, digits + sizeof(digits) - n, n);
}

/* The decision's attachments: objects, arrays, strings, booleans and null written here, any
 * other value (a number) by json-c itself. */
static void put_value(co_buf *b, struct json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null:
        PUT_LIT(b, "null");
        break;
    case json_type_boolean:
        if (json_object_get_boolean(v)) {
            PUT_LIT(b, "true");
        } else {
            PUT_LIT(b, "false");
        }
        break;
    case json_type_string:
        put_string(b, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        break;
    case json_type_array: {
        size_t n = json_object_array_length(v);
        put(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i) {
                put(b, ",", 1);
            }
            put_value(b, json_object_array_get_idx(v, i));
        }
        put(b, "]", 1);
        break;
    }
    case json_type_object: {
        int first = 1;
        put(b, "{", 1);
        json_object_object_foreach (v, key, val) {
            put_key(b, &first, key);
            put_value(b, val);
        }
        put(b, "}", 1);
        break;
    }
    case json_type_int:
    case json_type_double:
    default: {
        size_t len = 0;
        const char *text = json_object_to_json_string_length(
            v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        put(b, text, len);
        break;
    }
    }
}

void wh_review_admission_response(char **out,
                                  size_t *len_out,
                                  const char *api_version,
                                  const char *uid,
                                  const wh_decision *d,
                                  int mutating)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    CO_ASSERT(co_buf_reserve(&b, 256 + (d->message ? strlen(d->message) : 0)) == 0);
    int first = 1, rfirst = 1;
    put(&b, "{", 1);
    put_key(&b, &first, "apiVersion");
    put_cstr(&b, api_version);
    put_key(&b, &first, "kind");
    PUT_LIT(&b, "\"AdmissionReview\"");
    put_key(&b, &first, "response");
    put(&b, "{", 1);
    put_key(&b, &rfirst, "uid");
    put_cstr(&b, uid);
    put_key(&b, &rfirst, "allowed");
    if (d->allowed) {
        PUT_LIT(&b, "true");
    } else {
        PUT_LIT(&b, "false");
    }
    if (!d->allowed) {
        /* The API server raises codes below 400 to 400 anyway; say what we mean. */
        int sfirst = 1;
        put_key(&b, &rfirst, "status");
        put(&b, "{", 1);
        put_key(&b, &sfirst, "metadata");
        PUT_LIT(&b, "{}");
        put_key(&b, &sfirst, "status");
        PUT_LIT(&b, "\"Failure\"");
        put_key(&b, &sfirst, "message");
        put_cstr(&b, d->message ? d->message : "");
        const char *reason = d->reason ? d->reason : "Forbidden";
        if (*reason) {
            put_key(&b, &sfirst, "reason");
            put_cstr(&b, reason);
        }
        if (d->causes) {
            put_key(&b, &sfirst, "details");
            PUT_LIT(&b, "{\"causes\":");
            put_value(&b, d->causes);
            put(&b, "}", 1);
        }
        put_key(&b, &sfirst, "code");
        put_int(&b, d->code >= 400 ? d->code : 403);
        put(&b, "}", 1);
    }
    if (mutating && d->allowed && d->patch && json_object_array_length(d->patch) > 0) {
        size_t plen = 0;
        const char *ptext = json_object_to_json_string_length(
            d->patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &plen);
        char *b64 = co_base64_encode(ptext, plen, CO_BASE64_STD);
        put_key(&b, &rfirst, "patchType");
        PUT_LIT(&b, "\"JSONPatch\"");
        put_key(&b, &rfirst, "patch");
        put_cstr(&b, b64);
        free(b64);
    }
    if (d->audit && json_object_object_length(d->audit) > 0) {
        put_key(&b, &rfirst, "auditAnnotations");
        put_value(&b, d->audit);
    }
    if (d->warnings && json_object_array_length(d->warnings) > 0) {
        put_key(&b, &rfirst, "warnings");
        put_value(&b, d->warnings);
    }
    PUT_LIT(&b, "}}");
    *out = co_buf_take(&b, len_out);
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
