/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Component model: enum names, decoding a JSON object of either version into the C structs
 * (after a type check driven by the schema, so a struct never holds a half-read field), the way
 * back to JSON, and the effective values the controller works with.
 */
#include "co/json/json.h"
#include "co/api/component.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/error.h"
#include "co/json/jdoc.h"
#include "component_int.h"

/* ---------------------------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------------------------- */

static const char *const adoption_names[] = {NULL, "Never", "IfUnowned", "Always"};
static const char *const update_names[] = {NULL, "Recreate", "Replace", "SsaMerge", "SsaOverride"};
static const char *const delete_names[] = {NULL, "Delete", "Orphan", "OrphanOnApply",
                                           "OrphanOnDelete"};
/* the values spec.deletePolicy takes: the others belong to the object annotation */
#define SPEC_DELETE_NAMES 3
static const char *const missing_ns_names[] = {NULL, "DoNotCreate", "Create"};
static const char *const suspend_mode_names[] = {NULL, "Pause", "ScaleDown"};

static const char *enum_name(const char *const *names, size_t n, int v)
{
    return v > 0 && (size_t)v < n ? names[v] : NULL;
}

static int enum_parse(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 1; s && i < n; i++) {
        if (strcmp(names[i], s) == 0) {
            return (int)i;
        }
    }
    return 0;
}

const char *co_adoption_policy_name(co_adoption_policy p)
{
    return enum_name(adoption_names, CO_ARRAY_SIZE(adoption_names), (int)p);
}

const char *co_update_policy_name(co_update_policy p)
{
    return enum_name(update_names, CO_ARRAY_SIZE(update_names), (int)p);
}

const char *co_delete_policy_name(co_delete_policy p)
{
    return enum_name(delete_names, CO_ARRAY_SIZE(delete_names), (int)p);
}

const char *co_missing_namespaces_policy_name(co_missing_namespaces_policy p)
{
    return enum_name(missing_ns_names, CO_ARRAY_SIZE(missing_ns_names), (int)p);
}

co_adoption_policy co_adoption_policy_parse(const char *s)
{
    return (co_adoption_policy)enum_parse(adoption_names, CO_ARRAY_SIZE(adoption_names), s);
}

co_update_policy co_update_policy_parse(const char *s)
{
    return (co_update_policy)enum_parse(update_names, CO_ARRAY_SIZE(update_names), s);
}

co_delete_policy co_delete_policy_parse(const char *s)
{
    return (co_delete_policy)enum_parse(delete_names, SPEC_DELETE_NAMES, s);
}

co_missing_namespaces_policy co_missing_namespaces_policy_parse(const char *s)
{
    return (co_missing_namespaces_policy)enum_parse(missing_ns_names,
                                                    CO_ARRAY_SIZE(missing_ns_names), s);
}

const char *co_suspend_mode_name(co_suspend_mode m)
{
    return enum_name(suspend_mode_names, CO_ARRAY_SIZE(suspend_mode_names), (int)m);
}

co_suspend_mode co_suspend_mode_parse(const char *s)
{
    return (co_suspend_mode)enum_parse(suspend_mode_names, CO_ARRAY_SIZE(suspend_mode_names), s);
}

bool co_component_is_service_account_name(const char *s)
{
    return s && s[0] && co_name__is_dns_subdomain(s);
}

const char *co_api_version_string(co_api_version version)
{
    switch (version) {
    case CO_API_V1ALPHA1:
        return CO_COMPONENT_V1ALPHA1;
    case CO_API_V1BETA1:
        return CO_COMPONENT_V1BETA1;
    case CO_API_UNKNOWN:
    default:
        return NULL;
    }
}

/* The version named by @p kind and @p api. */
static co_api_version version_of(const char *kind, const char *api)
{
    if (!kind || !api || strcmp(kind, CO_COMPONENT_KIND) != 0) {
        return CO_API_UNKNOWN;
    }
    if (strcmp(api, CO_COMPONENT_V1ALPHA1) == 0) {
        return CO_API_V1ALPHA1;
    }
    if (strcmp(api, CO_COMPONENT_V1BETA1) == 0) {
        return CO_API_V1BETA1;
    }
    return CO_API_UNKNOWN;
}

co_api_version co_component_version(const struct json_object *obj)
{
    return version_of(co_json_str(obj, "kind", NULL), co_json_str(obj, "apiVersion", NULL));
}

co_api_version co_component_version_jv(const co_jv *obj)
{
    return version_of(co_jv_str(obj, "kind"), co_jv_str(obj, "apiVersion"));
}

/* ---------------------------------------------------------------------------------------------
 * Decoding (types were checked before any of this runs)
 * ------------------------------------------------------------------------------------------- */

static char *dup_str(const json_object *obj, const char *key)
{
    return co_xstrdup(co_json_str(obj, key, NULL));
}

static co_opt_bool get_opt_bool(const json_object *obj, const char *key)
{
    json_object *v = co_json__member(obj, key);
    if (!v || !json_object_is_type(v, json_type_boolean)) {
        return CO_OPT_UNSET;
    }
    return json_object_get_boolean(v) ? CO_OPT_TRUE : CO_OPT_FALSE;
}

static int get_bool(const json_object *obj, const char *key)
{
    json_object *v = co_json__member(obj, key);
    return v && json_object_get_boolean(v);
}

static int64_t get_int(const json_object *obj, const char *key, int64_t dflt)
{
    json_object *v = co_json__member(obj, key);
    return v ? json_object_get_int64(v) : dflt;
}

static void read_duration(co_duration_field *d, const json_object *obj, const char *key)
{
    d->text = dup_str(obj, key);
    d->ns = 0;
    if (d->text) {
        int64_t ns = 0;
        if (co_schema__duration(d->text, &ns) && ns > 0) {
            d->ns = ns;
        }
    }
}

static void read_ref(co_object_ref *r, const json_object *obj)
{
    r->ns = dup_str(obj, "namespace");
    r->name = dup_str(obj, "name");
}

static void read_secret_key(co_secret_key_ref *r, const json_object *obj)
{
    r->name = dup_str(obj, "name");
    r->key = dup_str(obj, "key");
}

static void read_map(co_string_map *m, const json_object *obj)
{
    memset(m, 0, sizeof(*m));
    if (!obj) {
        return;
    }
    size_t n = (size_t)json_object_object_length((json_object *)obj);
    m->keys = co_xcalloc(n ? n : 1, sizeof(char *));
    m->values = co_xcalloc(n ? n : 1, sizeof(char *));
    json_object_object_foreach ((json_object *)obj, key, val) {
        if (json_object_is_type(val, json_type_string)) {
            m->keys[m->len] = co_xstrdup(key);
            m->values[m->len] = co_xstrdup(json_object_get_string(val));
            m->len++;
        }
    }
}

static void free_map(co_string_map *m)
{
    for (size_t i = 0; i < m->len; i++) {
        free(m->keys[i]);
        free(m->values[i]);
    }
    free(m->keys);
    free(m->values);
}

/* Array at key, with its length; nothing when absent. Null items were reported by the type
 * check only in full validation, so they are skipped here. */
static size_t array_at(json_object **arr, const json_object *obj, const char *key)
{
    *arr = co_json__member(obj, key);
    return *arr ? json_object_array_length(*arr) : 0;
}

/* Item i of an array; NULL for null items (the full validation reports those). */
static json_object *item_at(json_object *arr, size_t i)
{
    json_object *item = json_object_array_get_idx(arr, i);
    return item && !json_object_is_type(item, json_type_null) ? item : NULL;
}

static void read_source(co_source_ref *src, const json_object *ref)
{
    memset(src, 0, sizeof(*src));
    for (int k = 1; k < CO_SOURCE_KIND_COUNT; k++) {
        json_object *v = co_json__member(ref, co_source_kind_name((co_source_kind)k));
        if (!v) {
            continue;
        }
        src->nkinds++;
        if (src->kind != CO_SOURCE_NONE) {
            continue;
        }
        src->kind = (co_source_kind)k;
        if (k == CO_SOURCE_HTTP_REPOSITORY) {
            src->http.url = dup_str(v, "url");
            src->http.digest_header = dup_str(v, "digestHeader");
            src->http.revision_header = dup_str(v, "revisionHeader");
        } else if (k == CO_SOURCE_GIT) {
            co_git_source *g = &src->git;
            json_object *ref_obj = co_json__member(v, "ref");
            g->url = dup_str(v, "url");
            g->branch = dup_str(ref_obj, "branch");
            g->tag = dup_str(ref_obj, "tag");
            g->semver = dup_str(ref_obj, "semver");
            g->commit = dup_str(ref_obj, "commit");
            g->ref_kind = g->branch   ? CO_GIT_REF_BRANCH
                          : g->tag    ? CO_GIT_REF_TAG
                          : g->semver ? CO_GIT_REF_SEMVER
                          : g->commit ? CO_GIT_REF_COMMIT
                                      : CO_GIT_REF_NONE;
            g->secret_name = dup_str(co_json__member(v, "secretRef"), "name");
            read_duration(&g->interval, v, "interval");
        } else {
            read_ref(&src->flux, v);
        }
    }
}

static void read_spec(co_component_spec *s, const json_object *spec)
{
    json_object *arr;
    size_t n;
    s->ns = dup_str(spec, "namespace");
    s->name = dup_str(spec, "name");
    json_object *kc = co_json__member(spec, "kubeConfig");
    if (kc) {
        s->has_kube_config = 1;
        read_secret_key(&s->kube_config, co_json__member(kc, "secretRef"));
    }
    s->service_account_name = dup_str(spec, "serviceAccountName");
    s->suspend = get_bool(spec, "suspend");
    read_duration(&s->requeue_interval, spec, "requeueInterval");
    read_duration(&s->retry_interval, spec, "retryInterval");
    read_duration(&s->timeout, spec, "timeout");
    read_duration(&s->reapply_interval, spec, "reapplyInterval");
    s->adoption_policy = co_adoption_policy_parse(co_json_str(spec, "adoptionPolicy", NULL));
    s->update_policy = co_update_policy_parse(co_json_str(spec, "updatePolicy", NULL));
    s->delete_policy = co_delete_policy_parse(co_json_str(spec, "deletePolicy", NULL));
    s->missing_namespaces_policy =
        co_missing_namespaces_policy_parse(co_json_str(spec, "missingNamespacesPolicy", NULL));

    n = array_at(&arr, spec, "additionalManagedTypes");
    s->additional_managed_types = co_xcalloc(n ? n : 1, sizeof(co_type_info));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        co_type_info *t = &s->additional_managed_types[s->n_additional_managed_types++];
        t->group = dup_str(item, "group");
        t->kind = dup_str(item, "kind");
    }

    read_source(&s->source, co_json__member(spec, "sourceRef"));
    s->digest = dup_str(spec, "digest");
    s->revision = dup_str(spec, "revision");
    s->sticky = get_bool(spec, "sticky");
    s->path = dup_str(spec, "path");
    json_object *values = co_json__member(spec, "values");
    s->values = values ? json_object_get(values) : NULL;

    n = array_at(&arr, spec, "valuesFrom");
    s->values_from = co_xcalloc(n ? n : 1, sizeof(co_secret_key_ref));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        read_secret_key(&s->values_from[s->n_values_from++], item);
    }

    json_object *dec = co_json__member(spec, "decryption");
    if (dec) {
        s->has_decryption = 1;
        s->decryption_provider = dup_str(dec, "provider");
        s->decryption_secret_name = dup_str(co_json__member(dec, "secretRef"), "name");
    }

    json_object *pb = co_json__member(spec, "postBuild");
    s->has_post_build = pb != NULL;
    read_map(&s->substitute, co_json__member(pb, "substitute"));
    n = array_at(&arr, pb, "substituteFrom");
    s->substitute_from = co_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        s->substitute_from[s->n_substitute_from++] = dup_str(item, "name");
    }
    n = array_at(&arr, pb, "patches");
    s->patches = co_xcalloc(n ? n : 1, sizeof(co_kustomize_patch));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        co_kustomize_patch *p = &s->patches[s->n_patches++];
        json_object *t = co_json__member(item, "target");
        p->patch = dup_str(item, "patch");
        p->has_target = t != NULL;
        p->target.group = dup_str(t, "group");
        p->target.version = dup_str(t, "version");
        p->target.kind = dup_str(t, "kind");
        p->target.name = dup_str(t, "name");
        p->target.ns = dup_str(t, "namespace");
        p->target.label_selector = dup_str(t, "labelSelector");
        p->target.annotation_selector = dup_str(t, "annotationSelector");
    }
    n = array_at(&arr, pb, "images");
    s->images = co_xcalloc(n ? n : 1, sizeof(co_kustomize_image));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        co_kustomize_image *im = &s->images[s->n_images++];
        im->name = dup_str(item, "name");
        im->new_name = dup_str(item, "newName");
        im->new_tag = dup_str(item, "newTag");
        im->digest = dup_str(item, "digest");
    }

    n = array_at(&arr, spec, "dependencies");
    s->dependencies = co_xcalloc(n ? n : 1, sizeof(co_object_ref));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        read_ref(&s->dependencies[s->n_dependencies++], item);
    }

    s->enabled = get_opt_bool(spec, "enabled");
    s->managed = get_opt_bool(spec, "managed");
    read_duration(&s->grace_period, spec, "gracePeriod");
    s->suspend_mode = co_suspend_mode_parse(co_json_str(spec, "suspendMode", NULL));
    n = array_at(&arr, spec, "prerequisites");
    s->prerequisites = co_xcalloc(n ? n : 1, sizeof(co_prerequisite));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        co_prerequisite *pr = &s->prerequisites[s->n_prerequisites++];
        pr->api_version = dup_str(item, "apiVersion");
        pr->kind = dup_str(item, "kind");
        pr->ns = dup_str(item, "namespace");
        pr->name = dup_str(item, "name");
        pr->condition_type = dup_str(item, "conditionType");
    }
}

/* @p inventory: the status's inventory in either form (co_component_inventory_get()). */
static void read_status(co_component_status *st, const json_object *status, json_object *inventory)
{
    json_object *arr;
    size_t n;
    st->observed_generation = get_int(status, "observedGeneration", -1);
    st->applied_generation = get_int(status, "appliedGeneration", 0);
    st->last_observed_at = dup_str(status, "lastObservedAt");
    st->last_applied_at = dup_str(status, "lastAppliedAt");
    st->processing_digest = dup_str(status, "processingDigest");
    st->processing_since = dup_str(status, "processingSince");
    st->last_processing_digest = dup_str(status, "lastProcessingDigest");
    st->revision = get_int(status, "revision", 0);
    n = array_at(&arr, status, "conditions");
    st->conditions = co_xcalloc(n ? n : 1, sizeof(co_condition));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(arr, i);
        if (!item) {
            continue;
        }
        co_condition *c = &st->conditions[st->n_conditions++];
        c->type = dup_str(item, "type");
        c->status = dup_str(item, "status");
        c->last_transition_time = dup_str(item, "lastTransitionTime");
        c->reason = dup_str(item, "reason");
        c->message = dup_str(item, "message");
    }
    st->state = dup_str(status, "state");
    n = inventory ? json_object_array_length(inventory) : 0;
    st->inventory = co_xcalloc(n ? n : 1, sizeof(co_inventory_item));
    for (size_t i = 0; i < n; i++) {
        json_object *item = item_at(inventory, i);
        if (!item) {
            continue;
        }
        co_inventory_item *it = &st->inventory[st->n_inventory++];
        json_object *mt;
        size_t nmt;
        it->group = dup_str(item, "group");
        it->version = dup_str(item, "version");
        it->kind = dup_str(item, "kind");
        it->ns = dup_str(item, "namespace");
        it->name = dup_str(item, "name");
        it->adoption_policy = dup_str(item, "adoptionPolicy");
        it->reconcile_policy = dup_str(item, "reconcilePolicy");
        it->update_policy = dup_str(item, "updatePolicy");
        it->delete_policy = dup_str(item, "deletePolicy");
        it->apply_order = get_int(item, "applyOrder", 0);
        it->delete_order = get_int(item, "deleteOrder", 0);
        nmt = array_at(&mt, item, "managedTypes");
        it->managed_types = co_xcalloc(nmt ? nmt : 1, sizeof(co_type_version_info));
        for (size_t j = 0; j < nmt; j++) {
            json_object *t = item_at(mt, j);
            if (!t) {
                continue;
            }
            co_type_version_info *tv = &it->managed_types[it->n_managed_types++];
            tv->group = dup_str(t, "group");
            tv->version = dup_str(t, "version");
            tv->kind = dup_str(t, "kind");
        }
        it->digest = dup_str(item, "digest");
        it->phase = dup_str(item, "phase");
        it->status = dup_str(item, "status");
        it->last_applied_at = dup_str(item, "lastAppliedAt");
        it->mode = dup_str(item, "mode");
        it->drift = dup_str(item, "drift");
    }
    json_object *sr = co_json__member(status, "sourceRef");
    if (sr) {
        json_object *a = co_json__member(sr, "artifact");
        st->has_source_ref = 1;
        st->artifact_url = dup_str(a, "url");
        st->artifact_digest = dup_str(a, "digest");
        st->artifact_revision = dup_str(a, "revision");
        st->source_digest = dup_str(sr, "digest");
    }
    st->last_attempted_digest = dup_str(status, "lastAttemptedDigest");
    st->last_attempted_revision = dup_str(status, "lastAttemptedRevision");
    st->last_applied_digest = dup_str(status, "lastAppliedDigest");
    st->last_applied_revision = dup_str(status, "lastAppliedRevision");
    st->unready_since = dup_str(status, "unreadySince");
    json_object *lo = co_json__member(status, "lastOperation");
    st->last_operation = dup_str(lo, "operation");
    st->last_operation_time = dup_str(lo, "lastUpdateTime");
}

static const co_schema string_map_schema = {.type = CO_SCHEMA_STRING_MAP};
static const co_schema string_schema = {.type = CO_SCHEMA_STRING};
static const co_schema string_list_schema = {.type = CO_SCHEMA_ARRAY, .items = &string_schema};

/* metadata is not described by our schema (the API server owns it); check what we read. */
void co_component__check_metadata_jv(co_field_errors *errs, const co_jv *meta)
{
    static const char *const strings[] = {"namespace", "name", "uid", "resourceVersion",
                                          "deletionTimestamp"};
    if (!meta) {
        return;
    }
    for (size_t i = 0; i < CO_ARRAY_SIZE(strings); i++) {
        const co_jv *v = co_jv__field(meta, strings[i]);
        if (v && v->type != CO_JV_STRING) {
            char *p = co_schema__join("metadata", strings[i]);
            co_field_errors_add_jv(errs, CO_FIELD_INVALID, p, v, "must be of type string");
            free(p);
        }
    }
    const co_jv *gen = co_jv__field(meta, "generation");
    if (gen && !(gen->type == CO_JV_NUMBER && !(gen->flags & CO_JV_DOUBLE))) {
        co_field_errors_add_jv(errs, CO_FIELD_INVALID, "metadata.generation", gen,
                               "must be of type integer");
    }
    co_schema__check_jv(errs, co_jv__field(meta, "labels"), &string_map_schema, "metadata.labels",
                        CO_SCHEMA_TYPES_ONLY);
    co_schema__check_jv(errs, co_jv__field(meta, "annotations"), &string_map_schema,
                        "metadata.annotations", CO_SCHEMA_TYPES_ONLY);
    co_schema__check_jv(errs, co_jv__field(meta, "finalizers"), &string_list_schema,
                        "metadata.finalizers", CO_SCHEMA_TYPES_ONLY);
}

void co_component__check_metadata(co_field_errors *errs, const struct json_object *meta)
{
    if (!meta) {
        return;
    }
    co_jdoc *doc = co_jdoc_of_json(meta);
    co_component__check_metadata_jv(errs, co_jdoc_root(doc));
    co_jdoc_free(doc);
}

static int invalid_from(co_field_errors *errs, const char *what)
{
    co_buf msg = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
    int rc = co_field_errors_format(&msg, errs);
    co_error_set(CO_EINVALID, "%s: %s", what, rc == 0 ? co_buf_cstr(&msg) : "(too many errors)");
    co_buf_dispose(&msg);
    return CO_EINVALID;
}

/* The type check of co_component_parse() for status only: the rest of a validated object
 * was checked, more strictly, by co_component_validate(). */
static void check_status_types(co_field_errors *errs, const json_object *alpha)
{
    const co_schema *root = co_component__schema(CO_API_V1ALPHA1);
    for (const co_schema *f = root->fields; f->name; f++) {
        if (strcmp(f->name, "status") == 0) {
            co_schema__check(errs, co_json__member(alpha, "status"), f, "status",
                             CO_SCHEMA_TYPES_ONLY);
            return;
        }
    }
}

static int parse(co_component **out, const struct json_object *obj, int validated)
{
    co_api_version version = co_component_version(obj);
    json_object *alpha = NULL;
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    co_component *c = NULL;
    int rc = 0;

    if (version == CO_API_UNKNOWN) {
        return co_error_set(CO_EINVALID, "not a %s or %s %s", CO_COMPONENT_V1ALPHA1,
                            CO_COMPONENT_V1BETA1, CO_COMPONENT_KIND);
    }
    if (version == CO_API_V1ALPHA1) {
        /* read in place: the copy a same-version conversion makes is not needed */
        alpha = json_object_get((json_object *)obj);
    } else if ((rc = co_component_convert(&alpha, obj, CO_COMPONENT_V1ALPHA1)) < 0) {
        goto done;
    }
    json_object *meta = co_json__member(alpha, "metadata");
    if (validated) {
        check_status_types(&errs, alpha);
    } else {
        co_schema__check(&errs, alpha, co_component__schema(CO_API_V1ALPHA1), "",
                         CO_SCHEMA_TYPES_ONLY);
        co_component__check_metadata(&errs, meta);
    }
    if (!co_field_errors_empty(&errs)) {
        rc = invalid_from(&errs, "malformed Component");
        goto done;
    }

    json_object *status = co_json__member(alpha, "status");
    json_object *inventory = NULL;
    if ((rc = co_component_inventory_get(&inventory, status)) < 0) {
        goto done;
    }
    c = co_xcalloc(1, sizeof(*c));
    c->version = version;
    c->ns = dup_str(meta, "namespace");
    c->name = dup_str(meta, "name");
    c->uid = dup_str(meta, "uid");
    c->resource_version = dup_str(meta, "resourceVersion");
    c->generation = get_int(meta, "generation", 0);
    c->deletion_timestamp = dup_str(meta, "deletionTimestamp");
    read_map(&c->labels, co_json__member(meta, "labels"));
    read_map(&c->annotations, co_json__member(meta, "annotations"));
    json_object *fin;
    size_t nfin = array_at(&fin, meta, "finalizers");
    c->finalizers = co_xcalloc(nfin ? nfin : 1, sizeof(char *));
    for (size_t i = 0; i < nfin; i++) {
        json_object *f = json_object_array_get_idx(fin, i);
        if (f && json_object_is_type(f, json_type_string)) {
            c->finalizers[c->n_finalizers++] = co_xstrdup(json_object_get_string(f));
        }
    }
    read_spec(&c->spec, co_json__member(alpha, "spec"));
    c->has_status = status != NULL;
    read_status(&c->status, status, inventory);
    json_object_put(inventory);
    *out = c;

done:
    co_field_errors_dispose(&errs);
    json_object_put(alpha);
    return rc;
}

int co_component_parse(co_component **out, const struct json_object *obj)
{
    return parse(out, obj, 0);
}

int co_component_parse_validated(co_component **out, const struct json_object *obj)
{
    return parse(out, obj, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Freeing
 * ------------------------------------------------------------------------------------------- */

static void free_source(co_source_ref *s)
{
    free(s->flux.ns);
    free(s->flux.name);
    free(s->http.url);
    free(s->http.digest_header);
    free(s->http.revision_header);
    free(s->git.url);
    free(s->git.branch);
    free(s->git.tag);
    free(s->git.semver);
    free(s->git.commit);
    free(s->git.secret_name);
    free(s->git.interval.text);
}

static void free_spec(co_component_spec *s)
{
    free(s->ns);
    free(s->name);
    free(s->kube_config.name);
    free(s->kube_config.key);
    free(s->service_account_name);
    free(s->requeue_interval.text);
    free(s->retry_interval.text);
    free(s->timeout.text);
    free(s->reapply_interval.text);
    for (size_t i = 0; i < s->n_additional_managed_types; i++) {
        free(s->additional_managed_types[i].group);
        free(s->additional_managed_types[i].kind);
    }
    free(s->additional_managed_types);
    free_source(&s->source);
    free(s->digest);
    free(s->revision);
    free(s->path);
    json_object_put(s->values);
    for (size_t i = 0; i < s->n_values_from; i++) {
        free(s->values_from[i].name);
        free(s->values_from[i].key);
    }
    free(s->values_from);
    free(s->decryption_provider);
    free(s->decryption_secret_name);
    free_map(&s->substitute);
    for (size_t i = 0; i < s->n_substitute_from; i++) {
        free(s->substitute_from[i]);
    }
    free(s->substitute_from);
    for (size_t i = 0; i < s->n_patches; i++) {
        co_kustomize_patch *p = &s->patches[i];
        free(p->patch);
        free(p->target.group);
        free(p->target.version);
        free(p->target.kind);
        free(p->target.name);
        free(p->target.ns);
        free(p->target.label_selector);
        free(p->target.annotation_selector);
    }
    free(s->patches);
    for (size_t i = 0; i < s->n_images; i++) {
        free(s->images[i].name);
        free(s->images[i].new_name);
        free(s->images[i].new_tag);
        free(s->images[i].digest);
    }
    free(s->images);
    for (size_t i = 0; i < s->n_dependencies; i++) {
        free(s->dependencies[i].ns);
        free(s->dependencies[i].name);
    }
    free(s->dependencies);
    free(s->grace_period.text);
    for (size_t i = 0; i < s->n_prerequisites; i++) {
        co_prerequisite *pr = &s->prerequisites[i];
        free(pr->api_version);
        free(pr->kind);
        free(pr->ns);
        free(pr->name);
        free(pr->condition_type);
    }
    free(s->prerequisites);
}

static void free_status(co_component_status *st)
{
    free(st->last_observed_at);
    free(st->last_applied_at);
    free(st->processing_digest);
    free(st->processing_since);
    free(st->last_processing_digest);
    for (size_t i = 0; i < st->n_conditions; i++) {
        co_condition *c = &st->conditions[i];
        free(c->type);
        free(c->status);
        free(c->last_transition_time);
        free(c->reason);
        free(c->message);
    }
    free(st->conditions);
    free(st->state);
    for (size_t i = 0; i < st->n_inventory; i++) {
        co_inventory_item *it = &st->inventory[i];
        free(it->group);
        free(it->version);
        free(it->kind);
        free(it->ns);
        free(it->name);
        free(it->adoption_policy);
        free(it->reconcile_policy);
        free(it->update_policy);
        free(it->delete_policy);
        for (size_t j = 0; j < it->n_managed_types; j++) {
            free(it->managed_types[j].group);
            free(it->managed_types[j].version);
            free(it->managed_types[j].kind);
        }
        free(it->managed_types);
        free(it->digest);
        free(it->phase);
        free(it->status);
        free(it->last_applied_at);
        free(it->mode);
        free(it->drift);
    }
    free(st->inventory);
    free(st->artifact_url);
    free(st->artifact_digest);
    free(st->artifact_revision);
    free(st->source_digest);
    free(st->last_attempted_digest);
    free(st->last_attempted_revision);
    free(st->last_applied_digest);
    free(st->last_applied_revision);
    free(st->unready_since);
    free(st->last_operation);
    free(st->last_operation_time);
}

void co_component_free(co_component *c)
{
    if (!c) {
        return;
    }
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->resource_version);
    free(c->deletion_timestamp);
    free_map(&c->labels);
    free_map(&c->annotations);
    for (size_t i = 0; i < c->n_finalizers; i++) {
        free(c->finalizers[i]);
    }
    free(c->finalizers);
    free_spec(&c->spec);
    free_status(&c->status);
    free(c);
}

/* ---------------------------------------------------------------------------------------------
 * Encoding
 * ------------------------------------------------------------------------------------------- */

static void put_str(json_object *o, const char *key, const char *v)
{
    if (v) {
        json_object_object_add(o, key, json_object_new_string(v));
    }
}

static void put_true(json_object *o, const char *key, int v)
{
    if (v) {
        json_object_object_add(o, key, json_object_new_boolean(1));
    }
}

static void put_opt_bool(json_object *o, const char *key, co_opt_bool v)
{
    if (v != CO_OPT_UNSET) {
        json_object_object_add(o, key, json_object_new_boolean(v == CO_OPT_TRUE));
    }
}

static void put_nonzero(json_object *o, const char *key, int64_t v)
{
    if (v) {
        json_object_object_add(o, key, json_object_new_int64(v));
    }
}

static void put_obj(json_object *o, const char *key, json_object *v)
{
    if (v && json_object_object_length(v) > 0) {
        json_object_object_add(o, key, v);
    } else {
        json_object_put(v);
    }
}

static void put_arr(json_object *o, const char *key, json_object *v)
{
    if (json_object_array_length(v) > 0) {
        json_object_object_add(o, key, v);
    } else {
        json_object_put(v);
    }
}

static json_object *map_json(const co_string_map *m)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; i < m->len; i++) {
        json_object_object_add(o, m->keys[i], json_object_new_string(m->values[i]));
    }
    return o;
}

static json_object *ref_json(const co_object_ref *r)
{
    json_object *o = json_object_new_object();
    put_str(o, "namespace", r->ns);
    put_str(o, "name", r->name);
    return o;
}

static json_object *secret_key_json(const co_secret_key_ref *r)
{
    json_object *o = json_object_new_object();
    put_str(o, "name", r->name);
    put_str(o, "key", r->key);
    return o;
}

static json_object *name_json(const char *name)
{
    json_object *o = json_object_new_object();
    put_str(o, "name", name);
    return o;
}

static json_object *source_json(const co_source_ref *s)
{
    json_object *o = json_object_new_object();
    json_object *v;
    switch (s->kind) {
    case CO_SOURCE_HTTP_REPOSITORY:
        v = json_object_new_object();
        put_str(v, "url", s->http.url);
        put_str(v, "digestHeader", s->http.digest_header);
        put_str(v, "revisionHeader", s->http.revision_header);
        break;
    case CO_SOURCE_GIT: {
        json_object *ref = json_object_new_object();
        v = json_object_new_object();
        put_str(v, "url", s->git.url);
        put_str(ref, "branch", s->git.branch);
        put_str(ref, "tag", s->git.tag);
        put_str(ref, "semver", s->git.semver);
        put_str(ref, "commit", s->git.commit);
        json_object_object_add(v, "ref", ref);
        if (s->git.secret_name) {
            json_object_object_add(v, "secretRef", name_json(s->git.secret_name));
        }
        put_str(v, "interval", s->git.interval.text);
        break;
    }
    case CO_SOURCE_FLUX_GIT_REPOSITORY:
    case CO_SOURCE_FLUX_OCI_REPOSITORY:
    case CO_SOURCE_FLUX_BUCKET:
    case CO_SOURCE_FLUX_HELM_CHART:
    case CO_SOURCE_BLUEPRINT:
        v = ref_json(&s->flux);
        break;
    case CO_SOURCE_NONE:
    default:
        return o;
    }
    json_object_object_add(o, co_source_kind_name(s->kind), v);
    return o;
}

static json_object *spec_json(const co_component_spec *s)
{
    json_object *o = json_object_new_object();
    json_object *a;
    put_str(o, "namespace", s->ns);
    put_str(o, "name", s->name);
    if (s->has_kube_config) {
        json_object *kc = json_object_new_object();
        json_object_object_add(kc, "secretRef", secret_key_json(&s->kube_config));
        json_object_object_add(o, "kubeConfig", kc);
    }
    put_str(o, "serviceAccountName", s->service_account_name);
    put_true(o, "suspend", s->suspend);
    put_str(o, "requeueInterval", s->requeue_interval.text);
    put_str(o, "retryInterval", s->retry_interval.text);
    put_str(o, "timeout", s->timeout.text);
    put_str(o, "reapplyInterval", s->reapply_interval.text);
    put_str(o, "adoptionPolicy", co_adoption_policy_name(s->adoption_policy));
    put_str(o, "updatePolicy", co_update_policy_name(s->update_policy));
    put_str(o, "deletePolicy", co_delete_policy_name(s->delete_policy));
    put_str(o, "missingNamespacesPolicy",
            co_missing_namespaces_policy_name(s->missing_namespaces_policy));
    a = json_object_new_array();
    for (size_t i = 0; i < s->n_additional_managed_types; i++) {
        json_object *t = json_object_new_object();
        put_str(t, "group", s->additional_managed_types[i].group);
        put_str(t, "kind", s->additional_managed_types[i].kind);
        json_object_array_add(a, t);
    }
    put_arr(o, "additionalManagedTypes", a);
    json_object_object_add(o, "sourceRef", source_json(&s->source));
    put_str(o, "digest", s->digest);
    put_str(o, "revision", s->revision);
    put_true(o, "sticky", s->sticky);
    put_str(o, "path", s->path);
    if (s->values) {
        json_object_object_add(o, "values", json_object_get(s->values));
    }
    a = json_object_new_array();
    for (size_t i = 0; i < s->n_values_from; i++) {
        json_object_array_add(a, secret_key_json(&s->values_from[i]));
    }
    put_arr(o, "valuesFrom", a);
    if (s->has_decryption) {
        json_object *d = json_object_new_object();
        put_str(d, "provider", s->decryption_provider);
        json_object_object_add(d, "secretRef", name_json(s->decryption_secret_name));
        json_object_object_add(o, "decryption", d);
    }
    if (s->has_post_build) {
        json_object *pb = json_object_new_object();
        put_obj(pb, "substitute", map_json(&s->substitute));
        a = json_object_new_array();
        for (size_t i = 0; i < s->n_substitute_from; i++) {
            json_object_array_add(a, name_json(s->substitute_from[i]));
        }
        put_arr(pb, "substituteFrom", a);
        a = json_object_new_array();
        for (size_t i = 0; i < s->n_patches; i++) {
            const co_kustomize_patch *p = &s->patches[i];
            json_object *po = json_object_new_object();
            put_str(po, "patch", p->patch);
            if (p->has_target) {
                json_object *t = json_object_new_object();
                put_str(t, "group", p->target.group);
                put_str(t, "version", p->target.version);
                put_str(t, "kind", p->target.kind);
                put_str(t, "name", p->target.name);
                put_str(t, "namespace", p->target.ns);
                put_str(t, "labelSelector", p->target.label_selector);
                put_str(t, "annotationSelector", p->target.annotation_selector);
                json_object_object_add(po, "target", t);
            }
            json_object_array_add(a, po);
        }
        put_arr(pb, "patches", a);
        a = json_object_new_array();
        for (size_t i = 0; i < s->n_images; i++) {
            json_object *im = json_object_new_object();
            put_str(im, "name", s->images[i].name);
            put_str(im, "newName", s->images[i].new_name);
            put_str(im, "newTag", s->images[i].new_tag);
            put_str(im, "digest", s->images[i].digest);
            json_object_array_add(a, im);
        }
        put_arr(pb, "images", a);
        json_object_object_add(o, "postBuild", pb);
    }
    a = json_object_new_array();
    for (size_t i = 0; i < s->n_dependencies; i++) {
        json_object_array_add(a, ref_json(&s->dependencies[i]));
    }
    put_arr(o, "dependencies", a);
    put_opt_bool(o, "enabled", s->enabled);
    put_opt_bool(o, "managed", s->managed);
    put_str(o, "gracePeriod", s->grace_period.text);
    put_str(o, "suspendMode", co_suspend_mode_name(s->suspend_mode));
    a = json_object_new_array();
    for (size_t i = 0; i < s->n_prerequisites; i++) {
        const co_prerequisite *pr = &s->prerequisites[i];
        json_object *po = json_object_new_object();
        put_str(po, "apiVersion", pr->api_version);
        put_str(po, "kind", pr->kind);
        put_str(po, "namespace", pr->ns);
        put_str(po, "name", pr->name);
        put_str(po, "conditionType", pr->condition_type);
        json_object_array_add(a, po);
    }
    put_arr(o, "prerequisites", a);
    return o;
}

static json_object *status_json(const co_component_status *st)
{
    json_object *o = json_object_new_object();
    json_object *a;
    json_object_object_add(o, "observedGeneration", json_object_new_int64(st->observed_generation));
    put_nonzero(o, "appliedGeneration", st->applied_generation);
    put_str(o, "lastObservedAt", st->last_observed_at);
    put_str(o, "lastAppliedAt", st->last_applied_at);
    put_str(o, "processingDigest", st->processing_digest);
    put_str(o, "processingSince", st->processing_since);
    put_str(o, "lastProcessingDigest", st->last_processing_digest);
    put_nonzero(o, "revision", st->revision);
    a = json_object_new_array();
    for (size_t i = 0; i < st->n_conditions; i++) {
        const co_condition *c = &st->conditions[i];
        json_object *co = json_object_new_object();
        put_str(co, "type", c->type);
        put_str(co, "status", c->status);
        put_str(co, "lastTransitionTime", c->last_transition_time);
        put_str(co, "reason", c->reason);
        put_str(co, "message", c->message);
        json_object_array_add(a, co);
    }
    put_arr(o, "conditions", a);
    put_str(o, "state", st->state);
    a = json_object_new_array();
    for (size_t i = 0; i < st->n_inventory; i++) {
        const co_inventory_item *it = &st->inventory[i];
        json_object *io = json_object_new_object();
        put_str(io, "group", it->group);
        put_str(io, "version", it->version);
        put_str(io, "kind", it->kind);
        put_str(io, "namespace", it->ns);
        put_str(io, "name", it->name);
        put_str(io, "adoptionPolicy", it->adoption_policy);
        put_str(io, "reconcilePolicy", it->reconcile_policy);
        put_str(io, "updatePolicy", it->update_policy);
        put_str(io, "deletePolicy", it->delete_policy);
        json_object_object_add(io, "applyOrder", json_object_new_int64(it->apply_order));
        json_object_object_add(io, "deleteOrder", json_object_new_int64(it->delete_order));
        json_object *mt = json_object_new_array();
        for (size_t j = 0; j < it->n_managed_types; j++) {
            json_object *t = json_object_new_object();
            put_str(t, "group", it->managed_types[j].group);
            put_str(t, "version", it->managed_types[j].version);
            put_str(t, "kind", it->managed_types[j].kind);
            json_object_array_add(mt, t);
        }
        put_arr(io, "managedTypes", mt);
        put_str(io, "digest", it->digest);
        put_str(io, "phase", it->phase);
        put_str(io, "status", it->status);
        put_str(io, "lastAppliedAt", it->last_applied_at);
        put_str(io, "mode", it->mode);
        put_str(io, "drift", it->drift);
        json_object_array_add(a, io);
    }
    put_arr(o, "inventory", a);
    if (st->has_source_ref) {
        json_object *sr = json_object_new_object();
        json_object *art = json_object_new_object();
        put_str(art, "url", st->artifact_url);
        put_str(art, "digest", st->artifact_digest);
        put_str(art, "revision", st->artifact_revision);
        put_obj(sr, "artifact", art);
        put_str(sr, "digest", st->source_digest);
        json_object_object_add(o, "sourceRef", sr);
    }
    put_str(o, "lastAttemptedDigest", st->last_attempted_digest);
    put_str(o, "lastAttemptedRevision", st->last_attempted_revision);
    put_str(o, "lastAppliedDigest", st->last_applied_digest);
    put_str(o, "lastAppliedRevision", st->last_applied_revision);
    put_str(o, "unreadySince", st->unready_since);
    if (st->last_operation || st->last_operation_time) {
        json_object *lo = json_object_new_object();
        put_str(lo, "operation", st->last_operation);
        put_str(lo, "lastUpdateTime", st->last_operation_time);
        json_object_object_add(o, "lastOperation", lo);
    }
    return o;
}

int co_component_status_to_json(struct json_object **out, const co_component_status *status)
{
    *out = status_json(status);
    return 0;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

bool co_source_ref_equal(const co_source_ref *a, const co_source_ref *b)
{
    if (a->kind != b->kind || a->nkinds != b->nkinds) {
        return false;
    }
    switch (a->kind) {
    case CO_SOURCE_HTTP_REPOSITORY:
        return same_str(a->http.url, b->http.url) &&
               same_str(a->http.digest_header, b->http.digest_header) &&
               same_str(a->http.revision_header, b->http.revision_header);
    case CO_SOURCE_GIT:
        return same_str(a->git.url, b->git.url) && a->git.ref_kind == b->git.ref_kind &&
               same_str(a->git.branch, b->git.branch) && same_str(a->git.tag, b->git.tag) &&
               same_str(a->git.semver, b->git.semver) && same_str(a->git.commit, b->git.commit) &&
               same_str(a->git.secret_name, b->git.secret_name) &&
               same_str(a->git.interval.text, b->git.interval.text);
    case CO_SOURCE_FLUX_GIT_REPOSITORY:
    case CO_SOURCE_FLUX_OCI_REPOSITORY:
    case CO_SOURCE_FLUX_BUCKET:
    case CO_SOURCE_FLUX_HELM_CHART:
    case CO_SOURCE_BLUEPRINT:
        return same_str(a->flux.ns, b->flux.ns) && same_str(a->flux.name, b->flux.name);
    case CO_SOURCE_NONE:
    default:
        return true;
    }
}

int co_component_to_json(struct json_object **out, const co_component *c)
{
    json_object *o = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string(CO_COMPONENT_V1ALPHA1));
    json_object_object_add(o, "kind", json_object_new_string(CO_COMPONENT_KIND));
    put_str(meta, "namespace", c->ns);
    put_str(meta, "name", c->name);
    put_str(meta, "uid", c->uid);
    put_str(meta, "resourceVersion", c->resource_version);
    put_nonzero(meta, "generation", c->generation);
    put_str(meta, "deletionTimestamp", c->deletion_timestamp);
    put_obj(meta, "labels", map_json(&c->labels));
    put_obj(meta, "annotations", map_json(&c->annotations));
    json_object *fin = json_object_new_array();
    for (size_t i = 0; i < c->n_finalizers; i++) {
        json_object_array_add(fin, json_object_new_string(c->finalizers[i]));
    }
    put_arr(meta, "finalizers", fin);
    json_object_object_add(o, "metadata", meta);
    json_object_object_add(o, "spec", spec_json(&c->spec));
    if (c->has_status) {
        json_object_object_add(o, "status", status_json(&c->status));
    }
    *out = o;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Effective values
 * ------------------------------------------------------------------------------------------- */

int64_t co_component_requeue_ns(const co_component *c)
{
    return c->spec.requeue_interval.ns > 0 ? c->spec.requeue_interval.ns
                                           : CO_COMPONENT_DEFAULT_REQUEUE_NS;
}

int64_t co_component_retry_ns(const co_component *c)
{
    return c->spec.retry_interval.ns > 0 ? c->spec.retry_interval.ns : co_component_requeue_ns(c);
}

int64_t co_component_timeout_ns(const co_component *c)
{
    return c->spec.timeout.ns > 0 ? c->spec.timeout.ns : co_component_requeue_ns(c);
}

int64_t co_component_reapply_ns(const co_component *c)
{
    return c->spec.reapply_interval.ns > 0 ? c->spec.reapply_interval.ns
                                           : CO_COMPONENT_DEFAULT_REAPPLY_NS;
}

int64_t co_component_grace_ns(const co_component *c)
{
    return c->spec.grace_period.ns > 0 ? c->spec.grace_period.ns : 0;
}

bool co_component_enabled(const co_component *c)
{
    return c->spec.enabled != CO_OPT_FALSE;
}

bool co_component_managed(const co_component *c)
{
    return c->spec.managed != CO_OPT_FALSE;
}

co_suspend_mode co_component_suspend_mode(const co_component *c)
{
    return c->spec.suspend_mode ? c->spec.suspend_mode : CO_SUSPEND_MODE_PAUSE;
}

co_adoption_policy co_component_adoption_policy(const co_component *c)
{
    return c->spec.adoption_policy ? c->spec.adoption_policy : CO_COMPONENT_DEFAULT_ADOPTION;
}

co_update_policy co_component_update_policy(const co_component *c)
{
    return c->spec.update_policy ? c->spec.update_policy : CO_COMPONENT_DEFAULT_UPDATE;
}

co_delete_policy co_component_delete_policy(const co_component *c)
{
    return c->spec.delete_policy ? c->spec.delete_policy : CO_COMPONENT_DEFAULT_DELETE;
}

co_missing_namespaces_policy co_component_missing_namespaces_policy(const co_component *c)
{
    return c->spec.missing_namespaces_policy ? c->spec.missing_namespaces_policy
                                             : CO_COMPONENT_DEFAULT_MISSING_NAMESPACES;
}

const char *co_component_target_namespace(const co_component *c)
{
    return c->spec.ns && c->spec.ns[0] ? c->spec.ns : c->ns;
}

const char *co_component_target_name(const co_component *c)
{
    return c->spec.name && c->spec.name[0] ? c->spec.name : c->name;
}

const char *co_component_ref_namespace(const co_component *c, const co_object_ref *ref)
{
    return ref->ns && ref->ns[0] ? ref->ns : c->ns;
}

const char *co_component_annotation(const co_component *c, const char *key)
{
    for (size_t i = 0; i < c->annotations.len; i++) {
        if (strcmp(c->annotations.keys[i], key) == 0) {
            return c->annotations.values[i];
        }
    }
    return NULL;
}

bool co_component_has_finalizer(const co_component *c, const char *name)
{
    for (size_t i = 0; i < c->n_finalizers; i++) {
        if (c->finalizers[i] && strcmp(c->finalizers[i], name) == 0) {
            return true;
        }
    }
    return false;
}
