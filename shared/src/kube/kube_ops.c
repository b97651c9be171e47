/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Operations on objects of any kind, as json-c trees: get, list (one page, each item, all),
 * create, update, patch in its four flavours, server-side apply and delete. Each builds a
 * path through discovery, adds the query parameters and runs the request pipeline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "kube_int.h"

#define DEFAULT_PAGE 500

/* Appends "?key=value" or "&key=value" (value escaped). */
static int add_query(co_buf *path, const char *key, const char *value)
{
    int rc;
    if ((rc = co_buf_putc(path, strchr(co_buf_cstr(path), '?') ? '&' : '?')) < 0 ||
        (rc = co_buf_puts(path, key)) < 0 || (rc = co_buf_putc(path, '=')) < 0) {
        return rc;
    }
    return co_kube__escape(path, value);
}

static int add_write_query(co_buf *path, const co_kube_write_options *opts, int apply)
{
    int rc = 0;
    if (!opts) {
        return 0;
    }
    if (opts->dry_run && (rc = add_query(path, "dryRun", "All")) < 0) {
        return rc;
    }
    if (opts->field_manager && opts->field_manager[0] &&
        (rc = add_query(path, "fieldManager", opts->field_manager)) < 0) {
        return rc;
    }
    if (apply && opts->force && (rc = add_query(path, "force", "true")) < 0) {
        return rc;
    }
    return 0;
}

/* Serialises @p obj (through a private copy: json-c caches the text inside the object, and
 * the caller's object may be shared). Slashes stay unescaped: server-side apply bodies are
 * read as YAML, which has no "\/" escape. */
static int serialise(co_buf *out, const struct json_object *obj)
{
    struct json_object *copy = NULL;
    if (json_object_deep_copy((struct json_object *)obj, &copy, NULL) != 0) {
        return co_error_set(CO_ERROR, "cannot copy the object");
    }
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        copy, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    int rc = co_buf_put(out, text, len);
    json_object_put(copy);
    return rc;
}

/* Gives a listed item the type of its list. The API server leaves apiVersion and kind out of the
 * items of a built-in type's list (a watch event's object has them); an object without them
 * reads as one of no known kind, which the readiness rules call current whatever its status
 * says. An empty or non-string type counts as none. A metadata-only list's items are
 * PartialObjectMetadata, as its watch events are. */
static void
give_type(struct json_object *item, const co_kube_ref *ref, const co_kube_list_options *opts)
{
    if (!json_object_is_type(item, json_type_object)) {
        return;
    }
    bool meta = opts && opts->metadata_only;
    const char *av = co_json_str(item, "apiVersion", NULL);
    const char *kind = co_json_str(item, "kind", NULL);
    if (!av || !*av) {
        json_object_object_add(item, "apiVersion",
                               json_object_new_string(meta ? "meta.k8s.io/v1" : ref->api_version));
    }
    if (!kind || !*kind) {
        json_object_object_add(item, "kind",
                               json_object_new_string(meta ? "PartialObjectMetadata" : ref->kind));
    }
}

/* The items of a list page, handed to the caller's callback as the page is parsed. */
typedef struct page_items {
    co_kube_item_cb cb;
    void *payload;
    const co_kube_ref *ref;
    const co_kube_list_options *opts;
    int stopped; /* the callback's nonzero result */
} page_items;

static int page_item(struct json_object *item, void *payload)
{
    page_items *pi = payload;
    give_type(item, pi->ref, pi->opts);
    int rc = pi->cb(item, pi->payload);
    if (rc != 0) {
        pi->stopped = rc;
    }
    return rc;
}

/* Runs one request with a JSON answer. With @p each, the answer is a list page: its items go to
 * each->cb one by one as they are parsed, and *out receives the rest. */
static int call_json_cancellable(struct json_object **out,
                                 co_kube_client *client,
                                 const char *method,
                                 const char *path,
                                 const char *content_type,
                                 const co_buf *body,
                                 int idempotent,
                                 const co_kube_list_options *cancel,
                                 page_items *each)
{
    co_kube_response resp;
    co_kube_response_init(&resp, CO_MAX_API_RESPONSE);
    co_kube_call call = {
        .method = method,
        .path = path,
        .content_type = content_type,
        .body = body ? co_buf_cstr(body) : NULL,
        .body_len = body ? body->len : 0,
        .idempotent = idempotent,
        .accept = cancel && cancel->metadata_only ? CO_KUBE__ACCEPT_METADATA_LIST : NULL,
        .cancelled = cancel ? cancel->cancelled : NULL,
        .cancel_payload = cancel ? cancel->cancel_payload : NULL,
    };
    int rc = co_kube__do(client, &call, &resp);
    if (rc == 0 && out) {
        const char *const *const *skip =
            cancel && cancel->skip_managed_fields ? co_kube__skip_list_managed_fields : NULL;
        if (each) {
            rc = co_json_parse_each(out, co_buf_cstr(&resp.body), resp.body.len, resp.body.len,
                                    skip, "items", page_item, each);
        } else {
            rc = co_kube__parse_json_skip(out, co_buf_cstr(&resp.body), resp.body.len, skip);
        }
        if (rc < 0 && !(each && each->stopped)) {
            rc = co_error_wrap("%s %s: answer", method, path);
        }
    }
    co_kube_response_dispose(&resp);
    return rc;
}

static int call_json(struct json_object **out,
                     co_kube_client *client,
                     const char *method,
                     const char *path,
                     const char *content_type,
                     const co_buf *body,
                     int idempotent)
{
    return call_json_cancellable(out, client, method, path, content_type, body, idempotent, NULL,
                                 NULL);
}

int co_kube_ref_of(co_kube_ref *out, const struct json_object *obj)
{
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        co_error_set(CO_EINVALID, "the object is not a JSON object");
        return CO_EINVALID;
    }
    const char *api_version = co_json_str(obj, "apiVersion", NULL);
    const char *kind = co_json_str(obj, "kind", NULL);
    if (!api_version || !api_version[0]) {
        co_error_set(CO_EINVALID, "apiVersion is missing");
        return CO_EINVALID;
    }
    if (!kind || !kind[0]) {
        co_error_set(CO_EINVALID, "kind is missing");
        return CO_EINVALID;
    }
    const char *name = co_json_meta_name(obj);
    const char *ns = co_json_meta_namespace(obj);
    out->api_version = api_version;
    out->kind = kind;
    out->name = name && name[0] ? name : NULL;
    out->namespace = ns && ns[0] ? ns : NULL;
    return 0;
}

static int need_name(const co_kube_ref *ref, const char *op)
{
    if (!ref->name || !ref->name[0]) {
        co_error_set(CO_EINVALID, "%s %s %s: metadata.name is missing", op,
                     ref->api_version ? ref->api_version : "", ref->kind ? ref->kind : "");
        return CO_EINVALID;
    }
    return 0;
}

/* --- reading ------------------------------------------------------------------------------ */

int co_kube_get(struct json_object **out,
                co_kube_client *client,
                const co_kube_ref *ref,
                const co_kube_get_options *opts)
{
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    int rc;
    if ((rc = need_name(ref, "get")) < 0 ||
        (rc = co_kube__path(&path, client, ref, opts ? opts->subresource : NULL, 0)) < 0) {
        goto done;
    }
    if (opts && opts->resource_version &&
        (rc = add_query(&path, "resourceVersion", opts->resource_version)) < 0) {
        goto done;
    }
    rc = call_json(out, client, "GET", co_buf_cstr(&path), NULL, NULL, 1);
done:
    co_buf_dispose(&path);
    return rc;
}

static int list_path(co_buf *path,
                     co_kube_client *client,
                     const co_kube_ref *ref,
                     const co_kube_list_options *opts,
                     long limit,
                     const char *cont)
{
    co_kube_ref coll = *ref;
    coll.name = NULL;
    int rc;
    if ((rc = co_kube__path(path, client, &coll, NULL, 0)) < 0) {
        return rc;
    }
    if (opts && opts->label_selector && opts->label_selector[0] &&
        (rc = add_query(path, "labelSelector", opts->label_selector)) < 0) {
        return rc;
    }
    if (opts && opts->field_selector && opts->field_selector[0] &&
        (rc = add_query(path, "fieldSelector", opts->field_selector)) < 0) {
        return rc;
    }
    if (limit > 0) {
        char num[32];
        snprintf(num, sizeof(num), "%ld", limit);
        if ((rc = add_query(path, "limit", num)) < 0) {
            return rc;
        }
    }
    if (cont && cont[0] && (rc = add_query(path, "continue", cont)) < 0) {
        return rc;
    }
    /* a continue token carries its own snapshot; resourceVersion would be refused with it */
    if (!(cont && cont[0]) && opts && opts->resource_version) {
        if ((rc = add_query(path, "resourceVersion", opts->resource_version)) < 0) {
            return rc;
        }
        if (opts->resource_version_match &&
            (rc = add_query(path, "resourceVersionMatch", opts->resource_version_match)) < 0) {
            return rc;
        }
    }
    return 0;
}

int co_kube_list(struct json_object **out,
                 co_kube_client *client,
                 const co_kube_ref *ref,
                 const co_kube_list_options *opts)
{
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    int rc = list_path(&path, client, ref, opts, opts ? opts->limit : 0,
                       opts ? opts->continue_token : NULL);
    if (rc == 0) {
        rc = call_json_cancellable(out, client, "GET", co_buf_cstr(&path), NULL, NULL, 1, opts,
                                   NULL);
    }
    struct json_object *items = rc == 0 ? co_json_get(*out, "items", NULL) : NULL;
    size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
    for (size_t i = 0; i < n; i++) {
        give_type(json_object_array_get_idx(items, i), ref, opts);
    }
    co_buf_dispose(&path);
    return rc;
}

static struct json_object *items_of(struct json_object *list, const char *path)
{
    struct json_object *items = NULL;
    if (!json_object_object_get_ex(list, "items", &items) || !items) {
        return NULL; /* an empty list may come as "items": null */
    }
    if (!json_object_is_type(items, json_type_array)) {
        co_error_set(CO_EINVALID, "GET %s: items is not a list", path);
        return NULL;
    }
    return items;
}

int co_kube_list_each(char **rv_out,
                      co_kube_client *client,
                      const co_kube_ref *ref,
                      const co_kube_list_options *opts,
                      co_kube_item_cb cb,
                      void *payload)
{
    long limit = opts && opts->limit > 0 ? opts->limit : DEFAULT_PAGE;
    char *cont = opts && opts->continue_token ? co_xstrdup(opts->continue_token) : NULL;
    char *rv = NULL;
    struct json_object *page = NULL;
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    int rc = 0;
    for (;;) {
        co_buf_reset(&path);
        page_items each = {cb, payload, ref, opts, 0};
        if ((rc = list_path(&path, client, ref, opts, limit, cont)) == 0) {
            rc = call_json_cancellable(&page, client, "GET", co_buf_cstr(&path), NULL, NULL, 1,
                                       opts, &each);
        }
        if (each.stopped) {
            rc = each.stopped < 0 ? each.stopped : 0;
            goto done;
        }
        if (rc < 0) {
            goto done;
        }
        /* the items went to the callback; what is left of "items" is null or not a list */
        co_error_clear();
        if (!items_of(page, co_buf_cstr(&path)) && co_error_last_code() < 0) {
            rc = co_error_last_code();
            goto done;
        }
        const char *page_rv = co_json_str(page, "metadata", "resourceVersion", NULL);
        free(rv);
        rv = co_xstrdup(page_rv ? page_rv : "");
        const char *next = co_json_str(page, "metadata", "continue", NULL);
        free(cont);
        cont = next && next[0] ? co_xstrdup(next) : NULL;
        json_object_put(page);
        page = NULL;
        if (!cont) {
            break;
        }
    }
    if (rv_out) {
        *rv_out = rv;
        rv = NULL;
    }
done:
    json_object_put(page);
    co_buf_dispose(&path);
    free(cont);
    free(rv);
    return rc;
}

static int collect_item(struct json_object *item, void *payload)
{
    json_object_array_add(payload, json_object_get(item));
    return 0;
}

int co_kube_list_all(struct json_object **out,
                     co_kube_client *client,
                     const co_kube_ref *ref,
                     const co_kube_list_options *opts)
{
    struct json_object *items = json_object_new_array();
    char *rv = NULL;
    int rc = co_kube_list_each(&rv, client, ref, opts, collect_item, items);
    if (rc < 0) {
        json_object_put(items);
        return rc;
    }
    struct json_object *list = json_object_new_object();
    json_object_object_add(list, "apiVersion", json_object_new_string(ref->api_version));
    char *kind = co_xasprintf("%sList", ref->kind);
    json_object_object_add(list, "kind", json_object_new_string(kind));
    free(kind);
    struct json_object *meta = json_object_new_object();
    json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
    json_object_object_add(list, "metadata", meta);
    json_object_object_add(list, "items", items);
    free(rv);
    *out = list;
    return 0;
}

/* --- writing ------------------------------------------------------------------------------ */

int co_kube_create(struct json_object **out,
                   co_kube_client *client,
                   const struct json_object *obj,
                   const co_kube_write_options *opts)
{
    co_kube_ref ref = {0};
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    co_buf body = CO_BUF_INIT(CO_MAX_API_REQUEST);
    int rc;
    if (co_kube_ref_of(&ref, obj) < 0) {
        return co_error_wrap("create");
    }
    const char *sub = opts ? opts->subresource : NULL;
    ref.name = sub ? ref.name : NULL;
    if ((rc = co_kube__path(&path, client, &ref, sub, 1)) < 0 ||
        (rc = add_write_query(&path, opts, 0)) < 0 || (rc = serialise(&body, obj)) < 0) {
        goto done;
    }
    rc = call_json(out, client, "POST", co_buf_cstr(&path), "application/json", &body, 0);
done:
    co_buf_dispose(&path);
    co_buf_dispose(&body);
    return rc;
}

int co_kube_update(struct json_object **out,
                   co_kube_client *client,
                   const struct json_object *obj,
                   const co_kube_write_options *opts)
{
    co_kube_ref ref = {0};
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    co_buf body = CO_BUF_INIT(CO_MAX_API_REQUEST);
    int rc;
    if (co_kube_ref_of(&ref, obj) < 0) {
        return co_error_wrap("update");
    }
    if ((rc = need_name(&ref, "update")) < 0 ||
        (rc = co_kube__path(&path, client, &ref, opts ? opts->subresource : NULL, 1)) < 0 ||
        (rc = add_write_query(&path, opts, 0)) < 0 || (rc = serialise(&body, obj)) < 0) {
        goto done;
    }
    rc = call_json(out, client, "PUT", co_buf_cstr(&path), "application/json", &body, 1);
done:
    co_buf_dispose(&path);
    co_buf_dispose(&body);
    return rc;
}

int co_kube_update_status(struct json_object **out,
                          co_kube_client *client,
                          const struct json_object *obj,
                          const co_kube_write_options *opts)
{
    co_kube_write_options o = {0};
    if (opts) {
        o = *opts;
    }
    o.subresource = "status";
    return co_kube_update(out, client, obj, &o);
}

static const char *patch_content_type(co_kube_patch_type type)
{
    switch (type) {
    case CO_KUBE_PATCH_JSON:
        return "application/json-patch+json";
    case CO_KUBE_PATCH_MERGE:
        return "application/merge-patch+json";
    case CO_KUBE_PATCH_STRATEGIC:
        return "application/strategic-merge-patch+json";
    case CO_KUBE_PATCH_APPLY:
        return "application/apply-patch+yaml";
    default:
        return NULL;
    }
}

int co_kube_patch(struct json_object **out,
                  co_kube_client *client,
                  const co_kube_ref *ref,
                  co_kube_patch_type type,
                  const struct json_object *patch,
                  const co_kube_write_options *opts)
{
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    co_buf body = CO_BUF_INIT(CO_MAX_API_REQUEST);
    const char *ct = patch_content_type(type);
    int apply = type == CO_KUBE_PATCH_APPLY;
    int rc;
    if (!ct) {
        return co_error_set(CO_EINVALID, "unknown patch type %d", (int)type);
    }
    if (!patch) {
        return co_error_set(CO_EINVALID, "the patch is missing");
    }
    if (type == CO_KUBE_PATCH_JSON ? !json_object_is_type(patch, json_type_array)
                                   : !json_object_is_type(patch, json_type_object)) {
        return co_error_set(CO_EINVALID, "a %s patch must be a JSON %s",
                            type == CO_KUBE_PATCH_JSON ? "JSON" : "merge or apply",
                            type == CO_KUBE_PATCH_JSON ? "array" : "object");
    }
    if (apply && (!opts || !opts->field_manager || !opts->field_manager[0])) {
        return co_error_set(CO_EINVALID, "server-side apply needs a field manager");
    }
    if ((rc = need_name(ref, "patch")) < 0 ||
        (rc = co_kube__path(&path, client, ref, opts ? opts->subresource : NULL, 1)) < 0 ||
        (rc = add_write_query(&path, opts, apply)) < 0 || (rc = serialise(&body, patch)) < 0) {
        goto done;
    }
    rc = call_json(out, client, "PATCH", co_buf_cstr(&path), ct, &body, apply);
done:
    co_buf_dispose(&path);
    co_buf_dispose(&body);
    return rc;
}

int co_kube_apply(struct json_object **out,
                  co_kube_client *client,
                  const struct json_object *obj,
                  const co_kube_write_options *opts)
{
    co_kube_ref ref = {0};
    int rc = co_kube_ref_of(&ref, obj);
    if (rc < 0) {
        return co_error_wrap("apply");
    }
    return co_kube_patch(out, client, &ref, CO_KUBE_PATCH_APPLY, obj, opts);
}

int co_kube_delete(struct json_object **out,
                   co_kube_client *client,
                   const co_kube_ref *ref,
                   const co_kube_delete_options *opts)
{
    co_kube_delete_options defaults = CO_KUBE_DELETE_OPTIONS_INIT;
    co_buf path = CO_BUF_INIT(CO_MAX_API_REQUEST);
    co_buf body = CO_BUF_INIT(CO_MAX_API_REQUEST);
    struct json_object *del = json_object_new_object();
    int rc;
    if (!opts) {
        opts = &defaults;
    }
    if ((rc = need_name(ref, "delete")) < 0 ||
        (rc = co_kube__path(&path, client, ref, NULL, 1)) < 0) {
        goto done;
    }
    json_object_object_add(del, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(del, "kind", json_object_new_string("DeleteOptions"));
    if (opts->propagation_policy) {
        json_object_object_add(del, "propagationPolicy",
                               json_object_new_string(opts->propagation_policy));
    }
    if (opts->precondition_uid || opts->precondition_rv) {
        struct json_object *pre = json_object_new_object();
        if (opts->precondition_uid) {
            json_object_object_add(pre, "uid", json_object_new_string(opts->precondition_uid));
        }
        if (opts->precondition_rv) {
            json_object_object_add(pre, "resourceVersion",
                                   json_object_new_string(opts->precondition_rv));
        }
        json_object_object_add(del, "preconditions", pre);
    }
    if (opts->dry_run) {
        struct json_object *arr = json_object_new_array();
        json_object_array_add(arr, json_object_new_string("All"));
        json_object_object_add(del, "dryRun", arr);
    }
    if (opts->grace_period_s >= 0) {
        json_object_object_add(del, "gracePeriodSeconds",
                               json_object_new_int64(opts->grace_period_s));
    }
    if ((rc = serialise(&body, del)) < 0) {
        goto done;
    }
    rc = call_json(out, client, "DELETE", co_buf_cstr(&path), "application/json", &body, 0);
done:
    json_object_put(del);
    co_buf_dispose(&path);
    co_buf_dispose(&body);
    return rc;
}
