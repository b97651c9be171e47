/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission and conversion decisions. Validation runs the API model's full field validation
 * first (the message is the Kubernetes-style error list, one cause per field), then evaluates
 * every applying ComponentPolicy against the object as the mutating webhook would leave it
 * (built-in and policy defaults applied), with the cluster-wide dependency graph for the cycle
 * and missing-target rules: Deny rejects, Warn becomes an AdmissionReview warning, Audit an
 * audit annotation. An admitted Component's new edges go into the graph tentatively, under the
 * same lock as the check, so a concurrent request cannot close a cycle through them.
 * Mutation is a JSON Patch from the object as received to its defaulted copy, with the
 * ComponentPolicy exemption record set from the requester (co/policy.h).
 */
#include "webhook/wh_admission.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/api/blueprint.h"
#include "co/api/component.h"
#include "co/api/depgraph.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "co/api/field_error.h"
#include "co/json/json.h"
#include "co/util/log.h"
#include "co/api/policy.h"

/* Most groups of the requesting user considered for exemptions. */
#define MAX_GROUPS 256

/* metav1.CauseType for each kind of field error. */
static const char *cause_type(co_field_error_type t)
{
    switch (t) {
    case CO_FIELD_REQUIRED:
        return "FieldValueRequired";
    case CO_FIELD_UNSUPPORTED:
        return "FieldValueNotSupported";
    case CO_FIELD_FORBIDDEN:
        return "FieldValueForbidden";
    case CO_FIELD_DUPLICATE:
        return "FieldValueDuplicate";
    case CO_FIELD_TOO_MANY:
        return "FieldValueTooMany";
    case CO_FIELD_TOO_LONG:
        return "FieldValueTooLong";
    case CO_FIELD_NOT_FOUND:
        return "FieldValueNotFound";
    case CO_FIELD_INVALID:
    default:
        return "FieldValueInvalid";
    }
}

/* Denies with the rendered error list and one cause per error. */
static int deny_field_errors(wh_decision *d, const co_field_errors *errs)
{
    co_buf msg = CO_BUF_INIT(SIZE_MAX);
    int rc = co_field_errors_format(&msg, errs);
    if (rc < 0) {
        return rc;
    }
    wh_decision_deny_text(d, 403, "Forbidden", co_buf_cstr(&msg));
    co_buf_dispose(&msg);
    for (size_t i = 0; i < errs->len; i++) {
        co_buf one = CO_BUF_INIT(SIZE_MAX);
        rc = co_field_error_format(&one, &errs->items[i]);
        if (rc < 0) {
            return rc;
        }
        /* The cause message is the error without its field path, as the API server does. */
        const char *text = co_buf_cstr(&one);
        size_t flen = strlen(errs->items[i].field);
        if (!strncmp(text, errs->items[i].field, flen) && !strncmp(text + flen, ": ", 2)) {
            text += flen + 2;
        }
        wh_decision_cause(d, cause_type(errs->items[i].type), errs->items[i].field, text);
        co_buf_dispose(&one);
    }
    return 0;
}

/* An UPDATE that leaves spec alone (metadata, finalizers) needs no judgement. */
static int spec_unchanged(const wh_admission_request *req)
{
    if (strcmp(req->operation, "UPDATE") || !req->old_object) {
        return 0;
    }
    const co_jv *a = co_jv_get(req->object, "spec");
    const co_jv *b = co_jv_get(req->old_object, "spec");
    if (!a || !b) {
        return !a == !b;
    }
    /* types compared strictly (1 and 1.0 differ), as json_object_equal() did */
    return co_jv_equal(a, b);
}

static int being_deleted(const co_jv *obj)
{
    return !co_jv_unset(co_jv_get(co_jv_get(obj, "metadata"), "deletionTimestamp"));
}

/* The policy request of an admission: namespace, its labels, user and groups. */
typedef struct who {
    const char *groups[MAX_GROUPS];
    co_policy_request req;
} who;

static void fill_request(who *w, wh_state_view *v, const wh_admission_request *req)
{
    memset(w, 0, sizeof(*w));
    w->req.ns = *req->namespace_ ? req->namespace_ : NULL;
    w->req.namespace_labels = wh_state_namespace_labels(v, w->req.ns);
    w->req.username = co_jv_str(req->user_info, "username");
    if (!w->req.username) {
        /* An anonymous review still has a user for exemption purposes: the empty one. */
        w->req.username = "";
    }
    const co_jv *groups = co_jv_get(req->user_info, "groups");
    if (co_jv_is(groups, CO_JV_ARRAY)) {
        CO_JV_EACH (g, groups) {
            if (w->req.ngroups == MAX_GROUPS) {
                break;
            }
            if (g->type == CO_JV_STRING) {
                w->groups[w->req.ngroups++] = g->as.s;
            }
        }
    }
    w->req.groups = w->groups;
    w->req.graph = v->graph;
}

/* Audit annotation key for a rule: short, and a valid name once the server prefixes it. */
static char *audit_key(co_policy_rule rule)
{
    return co_xasprintf("policy.%s", co_policy_rule_name(rule));
}

static int apply_violations(wh_decision *d, const co_policy_result *res)
{
    for (size_t i = 0; i < res->len; i++) {
        const co_policy_violation *pv = &res->items[i];
        co_buf msg = CO_BUF_INIT(SIZE_MAX);
        int rc = co_policy_violation_format(&msg, pv);
        if (rc < 0) {
            return rc;
        }
        switch (pv->action) {
        case CO_POLICY_DENY:
            wh_decision_deny_text(d, 403, "Forbidden", co_buf_cstr(&msg));
            break;
        case CO_POLICY_WARN:
            wh_decision_warn_text(d, co_buf_cstr(&msg));
            break;
        case CO_POLICY_AUDIT: {
            char *key = audit_key(pv->rule);
            wh_decision_audit(d, key, co_buf_cstr(&msg));
            free(key);
            break;
        }
        case CO_POLICY_NONE:
            break;
        }
        co_buf_dispose(&msg);
    }
    return 0;
}

/* Whether any policy contributes a default. */
static int has_defaults(const co_component_defaults *d)
{
    return d->requeue_interval || d->retry_interval || d->timeout || d->reapply_interval ||
           d->adoption_policy || d->update_policy || d->delete_policy ||
           d->missing_namespaces_policy || d->service_account_name || d->enabled || d->managed ||
           d->grace_period || d->suspend_mode;
}

/* Merges the applying policies' defaults; conflicts become warnings. Dispose @p pd. */
static int merge_defaults(co_policy_defaults *pd,
                          wh_decision *d,
                          const co_policy_set *set,
                          const co_policy_request *preq)
{
    int rc = co_policy_defaults_merge(pd, set, preq);
    if (rc < 0) {
        return rc;
    }
    for (size_t i = 0; i < pd->nwarnings; i++) {
        wh_decision_warn_text(d, pd->warnings[i]);
    }
    return 0;
}

/*
 * The Component the policies judge: as the mutating webhook leaves it. Built-in defaults need
 * no copy (the API model's effective-value accessors apply them), so the object is parsed as
 * it is unless a policy contributes defaults.
 */
static int judged_component(co_component **out,
                            wh_decision *d,
                            const struct json_object *obj,
                            const co_policy_set *set,
                            const co_policy_request *preq)
{
    co_policy_defaults pd;
    int rc = merge_defaults(&pd, d, set, preq);
    if (rc < 0) {
        return rc;
    }
    if (!has_defaults(&pd.defaults)) {
        /* the object validate_component() has just validated */
        co_policy_defaults_dispose(&pd);
        return co_component_parse_validated(out, obj);
    }
    struct json_object *defaulted = NULL;
    rc = co_component_default(&defaulted, obj, preq->ns, &pd.defaults);
    co_policy_defaults_dispose(&pd);
    if (rc == 0) {
        rc = co_component_parse(out, defaulted);
    }
    json_object_put(defaulted);
    return rc;
}

/*
 * The edges an admitted Component adds, as a graph key and its dependencies; key stays NULL
 * when there is none yet (generateName: nobody can depend on it, nothing to remember).
 */
typedef struct edges {
    co_depgraph_list deps;
    char *key;
} edges;

static void edges_of(edges *e, const co_jv *obj, const char *ns)
{
    memset(e, 0, sizeof(*e));
    if (co_depgraph_object_deps_jv(&e->deps, &e->key, obj, ns) < 0) {
        co_error_clear();
        e->key = NULL;
    }
}

static void edges_dispose(edges *e)
{
    co_depgraph_list_dispose(&e->deps);
    free(e->key);
}

/*
 * Validation holds the graph lock only for what reads or writes the graph: policy evaluation
 * (the cycle and missing-dependency rules) and the tentative insert of the admitted edges,
 * one critical section so that a concurrent request cannot close a cycle through them. Field
 * validation, parsing and defaults run before it, concurrently with other requests.
 */
static int validate_component(wh_decision *d, wh_state *st, const wh_admission_request *req)
{
    const char *ns = *req->namespace_ ? req->namespace_ : NULL;
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_component_validate_jv(&errs, req->object, ns, 0) < 0) {
        int rc = deny_field_errors(d, &errs);
        co_field_errors_dispose(&errs);
        return rc;
    }
    co_field_errors_dispose(&errs);

    wh_state_view v;
    wh_state_enter(&v, st, 0);
    who w;
    fill_request(&w, &v, req);
    co_component *comp = NULL;
    co_policy_result res = {0};
    edges e = {{NULL, 0}, NULL};
    edges_of(&e, req->object, ns);
    int rc = 0;
    if (ns && !co_policy_set_applies(v.policies, &w.req)) {
        /* No policy to judge the Component by, so no need to parse it: the built-in rules
         * only need its place in the graph. */
        wh_state_take_graph(&v);
        w.req.graph = v.graph;
        rc = co_policy_evaluate_graph(&res, &w.req, e.key, (const char *const *)e.deps.items,
                                      e.deps.len);
    } else {
        /* the API model reads json-c trees */
        struct json_object *obj = co_jv_to_json(req->object);
        rc = judged_component(&comp, d, obj, v.policies, &w.req);
        json_object_put(obj);
        if (rc == 0) {
            wh_state_take_graph(&v);
            w.req.graph = v.graph;
            rc = co_policy_evaluate(&res, v.policies, comp, &w.req);
        }
    }
    if (rc == 0) {
        rc = apply_violations(d, &res);
    }
    if (rc == 0 && d->allowed && e.key && !req->dry_run) {
        /* not for dryRun: no trace */
        rc = wh_state_pending_set(&v, e.key, (const char *const *)e.deps.items, e.deps.len);
    }
    wh_state_leave(&v);
    edges_dispose(&e);
    co_policy_result_dispose(&res);
    co_component_free(comp);
    return rc;
}

/* The exemption record of @p obj (the annotation's node), NULL when it carries none. */
static const co_jv *record_node(const co_jv *obj)
{
    return co_jv_get(co_jv_get(co_jv_get(obj, "metadata"), "annotations"),
                     CO_POLICY_REQUESTER_ANNOTATION);
}

/* Whether the request sets, changes or removes the exemption record itself. */
static int record_touched(const wh_admission_request *req)
{
    const co_jv *now = record_node(req->object);
    const co_jv *before = req->old_object ? record_node(req->old_object) : NULL;
    if (!now || !before) {
        return !now != !before;
    }
    return !co_jv_equal(now, before);
}

/* Sets the exemption record of @p obj to @p value (NULL removes it). */
static void set_record(struct json_object *obj, const char *value)
{
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    struct json_object *ann = co_json_get(meta, "annotations", NULL);
    if (!value) {
        if (json_object_is_type(ann, json_type_object)) {
            json_object_object_del(ann, CO_POLICY_REQUESTER_ANNOTATION);
        }
        return;
    }
    if (!json_object_is_type(meta, json_type_object)) {
        return; /* nothing to annotate: the API server refuses such an object anyway */
    }
    if (!json_object_is_type(ann, json_type_object)) {
        ann = json_object_new_object();
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(ann, CO_POLICY_REQUESTER_ANNOTATION, json_object_new_string(value));
}

/*
 * Two things, each only when the request asks for it, so that a write leaving spec and the
 * exemption record alone (labels, finalizers, whatever the controller writes) gets no patch and
 * never moves metadata.generation or the Component digest:
 * - defaults (built-in constants and ComponentPolicy defaults) when the spec is written, except
 *   on an object being deleted;
 * - the exemption record (co/policy.h) when the spec or the record itself is written: set from
 *   the authenticated requester, whatever the request says, so that nobody can claim another
 *   user's exemption, and removed when the requester is exempt by no policy.
 */
static int mutate_component(wh_decision *d, wh_state *st, const wh_admission_request *req)
{
    int spec_written = !spec_unchanged(req);
    int defaults = spec_written && !being_deleted(req->object);
    int record = spec_written || record_touched(req);
    if (!defaults && !record) {
        return 0;
    }
    wh_state_view v;
    wh_state_enter(&v, st, 0);
    who w;
    fill_request(&w, &v, req);
    /* defaults and the patch are computed on json-c trees */
    struct json_object *obj = co_jv_to_json(req->object);
    struct json_object *mutated = NULL;
    char *value = NULL;
    int rc = 0;
    if (record && co_policy_requester_record(&value, v.policies, &w.req) < 0) {
        /* recording nobody only makes the Component stricter */
        wh_decision_warn_text(d, co_error_last());
        co_error_clear();
        value = NULL;
    }
    if (defaults) {
        co_policy_defaults pd;
        rc = merge_defaults(&pd, d, v.policies, &w.req);
        if (rc == 0) {
            rc = co_component_default(&mutated, obj, w.req.ns, &pd.defaults);
            co_policy_defaults_dispose(&pd);
        }
    }
    wh_state_leave(&v);
    if (rc == CO_EINVALID) {
        /* Not something we can default (a v1beta1 object that does not convert, say): the
         * validating webhook explains; mutation leaves the spec as it is. */
        co_error_clear();
        rc = 0;
    }
    if (rc == 0) {
        if (!mutated) {
            mutated = co_json_copy(obj);
        }
        if (record) {
            set_record(mutated, value);
        }
        wh_decision_set_patch(d, co_json_patch_diff(obj, mutated));
    }
    free(value);
    json_object_put(mutated);
    json_object_put(obj);
    return rc;
}

static int validate_policy(wh_decision *d, const wh_admission_request *req)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = 0;
    struct json_object *obj = co_jv_to_json(req->object);
    if (co_policy_validate(&errs, obj, 0) < 0) {
        rc = deny_field_errors(d, &errs);
    }
    json_object_put(obj);
    co_field_errors_dispose(&errs);
    return rc;
}

/* Blueprints and their versions: the same checks at CREATE and UPDATE, and a version's spec
 * never changes (docs/blueprints.md). */
static int validate_blueprint(wh_decision *d, wh_route route, const wh_admission_request *req)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    int rc = 0;
    struct json_object *obj = co_jv_to_json(req->object);
    if (route == WH_ROUTE_VALIDATE_BLUEPRINT) {
        (void)co_blueprint_validate(&errs, obj, 0);
    } else {
        if (!strcmp(req->operation, "UPDATE") && req->old_object) {
            struct json_object *old = co_jv_to_json(req->old_object);
            (void)co_blueprint_version_validate_update(&errs, obj, old);
            json_object_put(old);
        }
        (void)co_blueprint_version_validate(&errs, obj, 0);
    }
    if (!co_field_errors_empty(&errs)) {
        rc = deny_field_errors(d, &errs);
    }
    json_object_put(obj);
    co_field_errors_dispose(&errs);
    return rc;
}

int wh_admission_admit(wh_decision *d, void *ctx, wh_route route, const wh_admission_request *req)
{
    wh_state *st = ctx;
    if (strcmp(req->operation, "CREATE") && strcmp(req->operation, "UPDATE")) {
        /* DELETE and CONNECT are not ours to judge (a refused DELETE could block the
         * teardown of a namespace). */
        return 0;
    }
    if (*req->sub_resource) {
        /* status and any other subresource belong to the controller. */
        return 0;
    }
    if (!req->object) {
        wh_decision_deny_text(d, 400, "BadRequest", "request.object: Required value");
        return 0;
    }
    if (route == WH_ROUTE_VALIDATE_POLICY) {
        return validate_policy(d, req);
    }
    if (route == WH_ROUTE_VALIDATE_BLUEPRINT || route == WH_ROUTE_VALIDATE_BLUEPRINT_VERSION) {
        /* an update of metadata alone (finalizers, labels) is never held up */
        return spec_unchanged(req) ? 0 : validate_blueprint(d, route, req);
    }
    if (wh_route_get(route)->kind == WH_KIND_MUTATE) {
        return mutate_component(d, st, req);
    }
    if (spec_unchanged(req) || being_deleted(req->object)) {
        return 0;
    }
    return validate_component(d, st, req);
}

int wh_admission_convert(struct json_object **out,
                         void *ctx,
                         struct json_object *obj,
                         const char *desired_api_version)
{
    (void)ctx;
    return co_component_convert(out, obj, desired_api_version);
}

/*
 * What the decisions above never read, so that the review is parsed without it (still checked
 * for syntax: malformed JSON there is refused as before). metadata.managedFields, the API
 * server's field ownership and often the larger part of metadata, is read by nothing; nor are
 * metadata.annotations outside the mutating Component routes, which after a client-side
 * `kubectl apply` hold the whole object again as escaped JSON (no rule or policy looks at
 * annotations, and the API server has checked their types before any webhook sees the object;
 * the mutating routes read the exemption record among them, in object and oldObject). Of
 * oldObject only spec is read (spec_unchanged()), and on the mutating routes its annotations,
 * so its status goes too; nor are the request's resource, requestKind, requestResource and
 * options, or the user's uid and extra (exemptions name users and groups). object.status is
 * read on the validating Component routes: co_component_parse() checks its types, and a
 * malformed status there is answered as an internal error, so it stays. The mutating routes
 * default a copy that keeps status as it was, which the patch therefore never touches, and
 * ComponentPolicy validation passes over status. Conversion judges nothing and leaves out
 * nothing: status is converted with the rest.
 */
static const char *const object_managed_fields[] = {"request", "object", "metadata",
                                                    "managedFields", NULL};
static const char *const old_managed_fields[] = {"request", "oldObject", "metadata",
                                                 "managedFields", NULL};
static const char *const object_annotations[] = {"request", "object", "metadata", "annotations",
                                                 NULL};
static const char *const old_annotations[] = {"request", "oldObject", "metadata", "annotations",
                                              NULL};
static const char *const object_status[] = {"request", "object", "status", NULL};
static const char *const old_status[] = {"request", "oldObject", "status", NULL};

/* Of the request itself: what the API server tells beyond kind, operation, names and user. */
static const char *const resource[] = {"request", "resource", NULL};
static const char *const request_kind[] = {"request", "requestKind", NULL};
static const char *const request_resource[] = {"request", "requestResource", NULL};
static const char *const options[] = {"request", "options", NULL};
static const char *const user_uid[] = {"request", "userInfo", "uid", NULL};
static const char *const user_extra[] = {"request", "userInfo", "extra", NULL};

/* Every route leaves out the same members; the validating Component routes keep object.status,
 * so their set is this one without its first list. */
static const char *const *const unread_others[] = {object_status,
                                                   object_managed_fields,
                                                   old_managed_fields,
                                                   object_annotations,
                                                   old_annotations,
                                                   old_status,
                                                   resource,
                                                   request_kind,
                                                   request_resource,
                                                   options,
                                                   user_uid,
                                                   user_extra,
                                                   NULL};
static const char *const *const *const unread_validating = unread_others + 1;
static const char *const *const unread_mutating[] = {object_status,
                                                     object_managed_fields,
                                                     old_managed_fields,
                                                     old_status,
                                                     resource,
                                                     request_kind,
                                                     request_resource,
                                                     options,
                                                     user_uid,
                                                     user_extra,
                                                     NULL};

const char *const *const *wh_admission_unread(wh_route route)
{
    switch (route) {
    case WH_ROUTE_VALIDATE_V1ALPHA1:
    case WH_ROUTE_VALIDATE_V1BETA1:
        return unread_validating;
    case WH_ROUTE_MUTATE_V1ALPHA1:
    case WH_ROUTE_MUTATE_V1BETA1:
        return unread_mutating;
    case WH_ROUTE_VALIDATE_POLICY:
    case WH_ROUTE_VALIDATE_BLUEPRINT:
    case WH_ROUTE_VALIDATE_BLUEPRINT_VERSION:
        return unread_others;
    case WH_ROUTE_CONVERT:
    case WH_ROUTE_NONE:
    case WH_ROUTE_COUNT:
    default:
        return NULL;
    }
}

wh_handlers wh_admission_handlers(wh_state *state)
{
    wh_handlers h = {wh_admission_admit, wh_admission_convert, state, wh_admission_unread};
    return h;
}
