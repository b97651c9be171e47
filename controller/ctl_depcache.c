/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dependents cache (see ctl_depcache.h): informers per type, started lazily under a lock,
 * read without one (informer reads are thread-safe and the table only grows until freed).
 */
#include "controller/ctl_depcache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_informer.h"
#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/time.h"
#include "controller/ctl_inventory.h"

/* How long a type whose permission check failed (other than by a refusal) is read live before
 * it is checked again. */
#define PROBE_RETRY_NS (30 * CO_SECOND)

/* Stored texts longer than this are kept deflated (co_kube_informer_options.compress_over): a
 * trimmed ConfigMap is about 500 bytes, most of it keys, owner marks and digests. */
#define DEFLATE_OVER 256

typedef enum type_state {
    TYPE_WATCHED,  /* the informer runs (served once it has synced) */
    TYPE_REFUSED,  /* the controller may not list it: never cached */
    TYPE_DEFERRED, /* the permission check failed otherwise: tried again later */
} type_state;

typedef struct dep_type {
    char *key; /* "group/version/kind" */
    type_state state;
    int64_t retry_at; /* TYPE_DEFERRED: monotonic ns of the next probe */
    co_kube_informer *inf;
} dep_type;

struct ctl_depcache {
    co_kube_client *client;
    char *cluster_id;
    ctl_depcache_hooks hooks;
    pthread_mutex_t mu;
    dep_type types[CTL_DEPCACHE_MAX_TYPES];
    size_t ntypes;
};

/* Built-in kinds the cache may hold: every cluster serves them, and none carries secrets. Not
 * const: an entry is its informer's transform payload. */
typedef struct cacheable_type {
    const char *group, *version, *kind;
} cacheable_type;

static cacheable_type cacheable[] = {
    {"", "v1", "ConfigMap"},
    {"", "v1", "Service"},
    {"", "v1", "ServiceAccount"},
    {"", "v1", "PersistentVolumeClaim"},
    {"apps", "v1", "Deployment"},
    {"apps", "v1", "StatefulSet"},
    {"apps", "v1", "DaemonSet"},
    {"batch", "v1", "Job"},
    {"rbac.authorization.k8s.io", "v1", "Role"},
    {"rbac.authorization.k8s.io", "v1", "RoleBinding"},
    {"rbac.authorization.k8s.io", "v1", "ClusterRole"},
    {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"},
    {"networking.k8s.io", "v1", "Ingress"},
    {"networking.k8s.io", "v1", "NetworkPolicy"},
};

/* The entry of cacheable[] of a type, or NULL when the type is not cacheable. */
static cacheable_type *cacheable_entry(const char *group, const char *version, const char *kind)
{
    for (size_t i = 0; i < sizeof(cacheable) / sizeof(cacheable[0]); i++) {
        if (!strcmp(cacheable[i].group, group) && !strcmp(cacheable[i].version, version) &&
            !strcmp(cacheable[i].kind, kind)) {
            return &cacheable[i];
        }
    }
    return NULL;
}

/* ---- triggers ------------------------------------------------------------------------------ */

/* The Component a dependent belongs to, from its owner annotation "<cluster>/<ns>/<name>",
 * when that names this cluster and agrees with the owner label (a copied annotation names no
 * one). @return a private "<ns>" with *name pointing into the annotation, or NULL. */
static char *owner_of(const ctl_depcache *d, const struct json_object *obj, const char **name)
{
    const char *owner = co_json_meta_annotation(obj, CTL_ANN_OWNER_ID);
    const char *label = co_json_meta_label(obj, CTL_LABEL_OWNER_ID);
    size_t cl = strlen(d->cluster_id);
    if (!owner || !label || strncmp(owner, d->cluster_id, cl) != 0 || owner[cl] != '/') {
        return NULL;
    }
    const char *ns = owner + cl + 1;
    const char *slash = strchr(ns, '/');
    if (!slash || slash == ns || !slash[1] || strchr(slash + 1, '/')) {
        return NULL;
    }
    char *hashed = ctl_hash_owner_id(owner);
    bool same = strcmp(hashed, label) == 0;
    free(hashed);
    if (!same) {
        return NULL;
    }
    *name = slash + 1;
    return co_xstrndup(ns, (size_t)(slash - ns));
}

static void report(ctl_depcache *d, const struct json_object *obj)
{
    const char *name = NULL;
    char *ns = d->hooks.changed ? owner_of(d, obj, &name) : NULL;
    if (ns) {
        d->hooks.changed(d->hooks.ctx, ns, name);
    }
    free(ns);
}

/* Only the dependents of Components this controller manages are kept: a cluster-wide watch by
 * owner label also sees other clusters' and other controllers' objects, which it would hold in
 * memory for nothing. */
static bool admit(const struct json_object *obj, void *payload)
{
    const ctl_depcache *d = payload;
    const char *name = NULL;
    char *ns = owner_of(d, obj, &name);
    bool ok = ns && (!d->hooks.manages || d->hooks.manages(d->hooks.ctx, ns, name));
    free(ns);
    return ok;
}

static bool member_differs(const struct json_object *a,
                           const struct json_object *b,
                           const char *k1,
                           const char *k2)
{
    struct json_object *x = co_json_get(a, k1, k2, NULL);
    struct json_object *y = co_json_get(b, k1, k2, NULL);
    return !co_json_equal(x, y);
}

/* A change that can alter the owner's verdict: readiness (status, generation), deletion, or
 * the marks the apply engine compares (digest annotation, owner label). Our own creates are
 * adds and queue nothing. */
static void
on_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    ctl_depcache *d = payload;
    if (member_differs(old_obj, new_obj, "status", NULL) ||
        member_differs(old_obj, new_obj, "metadata", "generation") ||
        member_differs(old_obj, new_obj, "metadata", "deletionTimestamp") ||
        !co_json_equal(co_json_get(old_obj, "metadata", "annotations", CTL_ANN_DIGEST, NULL),
                       co_json_get(new_obj, "metadata", "annotations", CTL_ANN_DIGEST, NULL)) ||
        !co_json_equal(co_json_get(old_obj, "metadata", "labels", CTL_LABEL_OWNER_ID, NULL),
                       co_json_get(new_obj, "metadata", "labels", CTL_LABEL_OWNER_ID, NULL))) {
        report(d, new_obj);
        report(d, old_obj); /* the label moved: the former owner learns too (deduplicated) */
    }
}

static void on_delete(const struct json_object *obj, void *payload)
{
    report(payload, obj);
}

/* ---- types --------------------------------------------------------------------------------- */

/* Whether the controller's identity may @p verb @p resource of @p group cluster-wide: a
 * SelfSubjectAccessReview, which every authenticated identity may create, so that a controller
 * without the right never makes a request it is refused. */
static int
may(ctl_depcache *d, bool *out, const char *group, const char *resource, const char *verb)
{
    struct json_object *ssar = json_object_new_object();
    struct json_object *spec = json_object_new_object();
    struct json_object *attrs = json_object_new_object();
    json_object_object_add(ssar, "apiVersion", json_object_new_string("authorization.k8s.io/v1"));
    json_object_object_add(ssar, "kind", json_object_new_string("SelfSubjectAccessReview"));
    json_object_object_add(attrs, "verb", json_object_new_string(verb));
    json_object_object_add(attrs, "group", json_object_new_string(group));
    json_object_object_add(attrs, "resource", json_object_new_string(resource));
    json_object_object_add(spec, "resourceAttributes", attrs);
    json_object_object_add(ssar, "spec", spec);
    struct json_object *res = NULL;
    int rc = co_kube_create(&res, d->client, ssar, NULL);
    json_object_put(ssar);
    if (rc == 0) {
        struct json_object *allowed = co_json_get(res, "status", "allowed", NULL);
        *out = allowed && json_object_is_type(allowed, json_type_boolean) &&
               json_object_get_boolean(allowed);
    }
    json_object_put(res);
    return rc;
}

/* Whether the type is served and the controller may list and watch it cluster-wide. */
static type_state probe(ctl_depcache *d, const char *api_version, const char *kind)
{
    co_kube_mapping mp;
    int rc = co_kube_client_mapping(&mp, d->client, api_version, kind);
    if (rc < 0) {
        bool absent = rc == CO_ENOMATCH || rc == CO_ENOTFOUND;
        co_error_clear();
        return absent ? TYPE_REFUSED : TYPE_DEFERRED;
    }
    bool list = false, watch = false;
    rc = may(d, &list, mp.group, mp.resource, "list");
    if (rc == 0 && list) {
        rc = may(d, &watch, mp.group, mp.resource, "watch");
    }
    type_state st = rc < 0 ? TYPE_DEFERRED : list && watch ? TYPE_WATCHED : TYPE_REFUSED;
    if (st == TYPE_REFUSED) {
        co_log(CO_LOG_INFO, "dependents of this type are read live, not cached", "type", kind,
               "apiVersion", api_version, "reason",
               "the controller's identity may not list and watch them cluster-wide", NULL);
    }
    co_kube_mapping_dispose(&mp);
    co_error_clear();
    return st;
}

/* A value no longer than its fingerprint is kept as it is: replacing it would cost memory, not
 * save it (most values of a ConfigMap are short). */
#define FINGERPRINT_LEN (sizeof(CTL_DEPCACHE_FINGERPRINT) - 1 + CO_SHA256_HEX_LEN)

static void fingerprint_map(struct json_object *map)
{
    if (!map || !json_object_is_type(map, json_type_object)) {
        return;
    }
    json_object_object_foreach (map, k, v) {
        if (json_object_is_type(v, json_type_string) &&
            (size_t)json_object_get_string_len(v) > FINGERPRINT_LEN) {
            char hex[CO_SHA256_HEX_LEN + 1];
            co_sha256_hex(hex, json_object_get_string(v), (size_t)json_object_get_string_len(v));
            char *fp = co_xasprintf("%s%s", CTL_DEPCACHE_FINGERPRINT, hex);
            json_object_object_add(map, k, json_object_new_string(fp));
            free(fp);
        }
    }
}

static void fingerprint(struct json_object *configmap)
{
    fingerprint_map(co_json_get(configmap, "data", NULL));
    fingerprint_map(co_json_get(configmap, "binaryData", NULL));
}

/* What the cache keeps of an object: what the apply engine judges (metadata, the spec fields
 * readiness reads, status), without the bulk it never reads: each value of a ConfigMap's data
 * (up to 1 MiB) longer than a fingerprint is kept as its fingerprint, for drift detection
 * (docs/drift.md, "Comparison"); a workload's pod and volume claim templates and kubectl's copy
 * of the last applied manifest are left out. */
void ctl_depcache_trim(struct json_object *obj, const char *kind)
{
    struct json_object *spec = co_json_get(obj, "spec", NULL);
    if (!strcmp(kind, "ConfigMap")) {
        fingerprint(obj);
    } else if (spec && json_object_is_type(spec, json_type_object)) {
        json_object_object_del(spec, "template");
        json_object_object_del(spec, "volumeClaimTemplates");
    }
    struct json_object *ann = co_json_get(obj, "metadata", "annotations", NULL);
    if (ann && json_object_is_type(ann, json_type_object)) {
        json_object_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
    }
}

/* Payload: the type's entry of cacheable[] (listed items carry no kind of their own). */
static void trim(struct json_object *obj, void *payload)
{
    ctl_depcache_trim(obj, ((const cacheable_type *)payload)->kind);
}

static co_kube_informer *start(ctl_depcache *d, const char *api_version, cacheable_type *type)
{
    const char *kind = type->kind;
    co_kube_informer_options io = {0};
    io.api_version = api_version;
    io.kind = kind;
    io.label_selector = CTL_LABEL_OWNER_ID;
    io.strip_managed_fields = 1;
    io.transform = trim;
    io.transform_payload = type;
    io.admit = admit;
    io.admit_payload = d;
    io.compress_over = DEFLATE_OVER;
    co_kube_handlers h = {0};
    h.on_update = on_update;
    h.on_delete = on_delete;
    h.payload = d;
    co_kube_informer *inf = NULL;
    if (co_kube_informer_new(&inf, d->client, &io) < 0 ||
        co_kube_informer_add_handlers(inf, &h) < 0 || co_kube_informer_start(inf) < 0) {
        co_log(CO_LOG_WARN, "cannot watch dependents", "type", kind, "error", co_error_last(),
               NULL);
        co_error_clear();
        co_kube_informer_free(inf);
        return NULL;
    }
    return inf;
}

/* The informer of a type, started on first use; NULL when the type is not cached. */
static co_kube_informer *
informer_for(ctl_depcache *d, const char *group, const char *version, const char *kind)
{
    cacheable_type *type = d ? cacheable_entry(group, version, kind) : NULL;
    if (!type) {
        return NULL;
    }
    char *key = co_xasprintf("%s/%s/%s", group, version, kind);
    co_kube_informer *inf = NULL;
    pthread_mutex_lock(&d->mu);
    dep_type *t = NULL;
    for (size_t i = 0; i < d->ntypes; i++) {
        if (!strcmp(d->types[i].key, key)) {
            t = &d->types[i];
            break;
        }
    }
    if (!t && d->ntypes < CTL_DEPCACHE_MAX_TYPES) {
        t = &d->types[d->ntypes++];
        t->key = key;
        key = NULL;
        t->state = TYPE_DEFERRED;
    }
    if (t && t->state == TYPE_DEFERRED && co_time_monotonic() >= t->retry_at) {
        /* the probe and the start hold the lock: they run once per type (and once per
         * PROBE_RETRY_NS while the API server fails them) */
        char *av = ctl_api_version(group, version);
        t->state = probe(d, av, kind);
        if (t->state == TYPE_WATCHED && !(t->inf = start(d, av, type))) {
            t->state = TYPE_DEFERRED;
        }
        t->retry_at = co_time_monotonic() + PROBE_RETRY_NS;
        free(av);
    }
    if (t && t->state == TYPE_WATCHED) {
        inf = t->inf;
    }
    pthread_mutex_unlock(&d->mu);
    free(key);
    return inf;
}

/* ---- API ----------------------------------------------------------------------------------- */

int ctl_depcache_new(ctl_depcache **out,
                     struct co_kube_client *client,
                     const char *cluster_id,
                     const ctl_depcache_hooks *hooks)
{
    ctl_depcache *d = co_xcalloc(1, sizeof(*d));
    d->client = client;
    d->cluster_id = co_xstrdup(cluster_id ? cluster_id : "");
    if (hooks) {
        d->hooks = *hooks;
    }
    pthread_mutex_init(&d->mu, NULL);
    *out = d;
    return 0;
}

void ctl_depcache_free(ctl_depcache *d)
{
    if (!d) {
        return;
    }
    for (size_t i = 0; i < d->ntypes; i++) {
        co_kube_informer_free(d->types[i].inf);
        free(d->types[i].key);
    }
    pthread_mutex_destroy(&d->mu);
    free(d->cluster_id);
    free(d);
}

bool ctl_depcache_serves(ctl_depcache *d, const char *group, const char *version, const char *kind)
{
    co_kube_informer *inf = informer_for(d, group, version, kind);
    return inf && co_kube_informer_has_synced(inf);
}

int ctl_depcache_get(struct json_object **out,
                     ctl_depcache *d,
                     const char *group,
                     const char *version,
                     const char *kind,
                     const char *ns,
                     const char *name,
                     const char *hashed_owner)
{
    *out = NULL;
    co_kube_informer *inf = informer_for(d, group, version, kind);
    struct json_object *obj = NULL;
    if (!inf || !co_kube_informer_has_synced(inf) ||
        co_kube_informer_get(&obj, inf, ns && *ns ? ns : NULL, name) < 0) {
        co_error_clear();
        return CO_ENOTFOUND;
    }
    const char *label = co_json_meta_label(obj, CTL_LABEL_OWNER_ID);
    if (!label || !hashed_owner || strcmp(label, hashed_owner) != 0) {
        json_object_put(obj);
        return CO_ENOTFOUND;
    }
    *out = obj;
    return 0;
}

size_t ctl_depcache_types(ctl_depcache *d)
{
    pthread_mutex_lock(&d->mu);
    size_t n = 0;
    for (size_t i = 0; i < d->ntypes; i++) {
        n += d->types[i].state == TYPE_WATCHED;
    }
    pthread_mutex_unlock(&d->mu);
    return n;
}
