/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apply engine against a live cluster (see ctl_apply.h): create/update/delete mechanics of
 * docs/behaviour.md, "Create, update and delete", adoption through ctl_inventory, orphaning
 * ("Delete policies and orphaning"), steps 5–8 of "Apply pass" and the waves of "Component
 * deletion", the "Deletion guard" and the CRD/APIService finalizer ("Finalizers"). The control
 * flow mirrors the Go framework's Apply/Delete closely, item phase by item phase, so that an
 * inventory written by either implementation is continued by the other.
 */
#include "controller/ctl_apply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_event.h"
#include "co/util/strmap.h"
#include "co/util/time.h"
#include "co/api/drift.h"
#include "co/api/lifecycle.h"
#include "controller/ctl_depcache.h"
#include "controller/ctl_health.h"
#include "controller/ctl_inventory.h"

typedef struct engine {
    const ctl_apply_opts *o;
    co_kube_client *c;
    ctl_defaults d;
    char *hashed;
    bool create_namespaces;
    int64_t now;
    ctl_apply_stats st;
    /* objects read ahead by prefetch(), by live_key(); each is handed out once */
    co_strmap live;
    /* the groups (group_key()) prefetch() listed in full; values unused */
    co_strmap listed;
    /* the groups prefetch() read from the API server's watch cache (possibly behind); values
     * unused */
    co_strmap cached;
    /* the objects in live that came from the dependents cache (live_key(); values unused):
     * possibly behind too, and without managedFields */
    co_strmap cached_keys;
    /* the guard that stopped the pass (ctl_apply_opts.blocked), or NULL */
    char *blocked;
} engine;

static int engine_init(engine *e, const ctl_apply_opts *o)
{
    memset(e, 0, sizeof(*e));
    e->o = o;
    if (!o || !o->target || !o->owner_id || !o->namespace) {
        return co_error_set(CO_EINVALID, "apply: target, owner_id and namespace are required");
    }
    e->c = o->target;
    e->d.adoption = o->adoption_policy ? o->adoption_policy : CO_COMPONENT_DEFAULT_ADOPTION;
    e->d.update = o->update_policy ? o->update_policy : CO_COMPONENT_DEFAULT_UPDATE;
    e->d.delete_policy = o->delete_policy ? o->delete_policy : CO_COMPONENT_DEFAULT_DELETE;
    e->d.reapply_ns =
        o->reapply_interval_ns > 0 ? o->reapply_interval_ns : CO_COMPONENT_DEFAULT_REAPPLY_NS;
    e->create_namespaces =
        (o->missing_namespaces_policy
             ? o->missing_namespaces_policy
             : CO_COMPONENT_DEFAULT_MISSING_NAMESPACES) == CO_MISSING_NAMESPACES_CREATE;
    e->d.namespace = o->namespace;
    e->d.component_digest = o->component_digest ? o->component_digest : "";
    e->hashed = ctl_hash_owner_id(o->owner_id);
    e->now = co_time_now();
    return 0;
}

static void engine_dispose(engine *e)
{
    size_t iter = 0;
    const char *k = NULL;
    void *v = NULL;
    while (co_strmap_next(&e->live, &iter, &k, &v)) {
        json_object_put(v);
    }
    co_strmap_dispose(&e->live);
    co_strmap_dispose(&e->listed);
    co_strmap_dispose(&e->cached);
    co_strmap_dispose(&e->cached_keys);
    if (e->o && e->o->stats) {
        e->o->stats->reads += e->st.reads;
        e->o->stats->creates += e->st.creates;
        e->o->stats->updates += e->st.updates;
        e->o->stats->deletes += e->st.deletes;
        e->o->stats->cached += e->st.cached;
    }
    free(e->hashed);
    free(e->blocked);
}

/* ---- small helpers -------------------------------------------------------------------------- */

/* Whether the pass must make no further change (ctl_apply_opts.proceed). */
static bool halted(const engine *e)
{
    return e->o->proceed && !atomic_load(e->o->proceed);
}

static bool being_deleted(const struct json_object *obj)
{
    return co_json_get(obj, "metadata", "deletionTimestamp", NULL) != NULL;
}

static bool owned_by_us(const engine *e, const struct json_object *obj)
{
    const char *owner = co_json_meta_label(obj, CTL_LABEL_OWNER_ID);
    return !strcmp(owner ? owner : "", e->hashed);
}

static void
set_meta_string(struct json_object *obj, const char *field, const char *key, const char *value)
{
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    struct json_object *map = co_json_get(meta, field, NULL);
    if (!map || !json_object_is_type(map, json_type_object)) {
        map = json_object_new_object();
        json_object_object_add(meta, field, map);
    }
    json_object_object_add(map, key, json_object_new_string(value));
}

static bool has_finalizer(const struct json_object *obj, const char *f)
{
    struct json_object *a = co_json_get(obj, "metadata", "finalizers", NULL);
    size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(a, i));
        if (s && !strcmp(s, f)) {
            return true;
        }
    }
    return false;
}

static void add_finalizer(struct json_object *obj, const char *f)
{
    if (has_finalizer(obj, f)) {
        return;
    }
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    struct json_object *a = co_json_get(meta, "finalizers", NULL);
    if (!a || !json_object_is_type(a, json_type_array)) {
        a = json_object_new_array();
        json_object_object_add(meta, "finalizers", a);
    }
    json_object_array_add(a, json_object_new_string(f));
}

static void emit(engine *e,
                 const struct json_object *involved,
                 const char *type,
                 const char *reason,
                 const char *msg)
{
    if (e->o->events && involved) {
        co_kube_event(e->o->events, involved, type, reason, "%s", msg);
    }
}

/* The key of an object among those read ahead: the inventory's identity (group, kind,
 * namespace, name). */
static char *live_key(const char *group, const char *kind, const char *ns, const char *name)
{
    return co_xasprintf("%s\n%s\n%s\n%s", group, kind, ns ? ns : "", name);
}

/* GET of one object, unless prefetch() read it; *out NULL when it does not exist or its kind is
 * not served. */
static int read_object(engine *e,
                       struct json_object **out,
                       const char *group,
                       const char *version,
                       const char *kind,
                       const char *ns,
                       const char *name)
{
    char *lk = live_key(group, kind, ns, name);
    struct json_object *ahead = co_strmap_remove(&e->live, lk);
    free(lk);
    if (ahead) {
        *out = ahead;
        return 0;
    }
    char *av = ctl_api_version(group, version);
    co_kube_ref ref = {av, kind, ns && *ns ? ns : NULL, name};
    e->st.reads++;
    int rc = co_kube_get(out, e->c, &ref, NULL);
    free(av);
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        *out = NULL;
        co_error_clear();
        return 0;
    }
    return rc;
}

/* Key of the LIST group of items sharing a type and namespace (prefetch()). */
static char *group_key(const ctl_item *it)
{
    return co_xasprintf("%s\n%s\n%s\n%s", it->group, it->version, it->kind, it->namespace);
}

/* Reads the live object of @p it. An object read ahead from the watch cache may be behind the
 * API server: it is handed out only when @p cached is given (then set to whether it came from
 * there), else it is read again. */
static int read_item(engine *e, struct json_object **out, const ctl_item *it, bool *cached)
{
    if (cached) {
        *cached = false;
    }
    char *lk = live_key(it->group, it->kind, it->namespace, it->name);
    char *gk = group_key(it);
    bool ahead = co_strmap_get(&e->live, lk) != NULL;
    bool from_cache = ahead && (co_strmap_get(&e->cached, gk) != NULL ||
                                co_strmap_get(&e->cached_keys, lk) != NULL);
    /* an object this controller deleted (it carries our owner label) that a full LIST of
     * its group did not return is gone: waiting for thousands of deletions costs one LIST,
     * not one GET each */
    bool gone = it->phase == CTL_PHASE_DELETING && !ahead && co_strmap_get(&e->listed, gk) != NULL;
    free(gk);
    free(lk);
    if (gone) {
        *out = NULL;
        return 0;
    }
    int rc = read_object(e, out, it->group, it->version, it->kind, it->namespace, it->name);
    if (rc == 0 && from_cache) {
        if (cached) {
            *cached = true;
        } else {
            /* the entry read ahead is used up: this reads the object itself */
            json_object_put(*out);
            *out = NULL;
            rc = read_object(e, out, it->group, it->version, it->kind, it->namespace, it->name);
        }
    }
    return rc;
}

/* ---- reading ahead -------------------------------------------------------------------------- */

typedef struct fetch_group {
    const ctl_item *first; /* group, version, kind and namespace of the group */
    size_t n;
    bool consistent; /* read from etcd, not from the API server's watch cache */
} fetch_group;

/* Whether an item in phase @p ph is only created, updated or judged by this pass: of such items
 * a live object read from the watch cache serves to judge readiness (apply_one()). */
static bool applying(ctl_phase ph)
{
    return ph == CTL_PHASE_SCHEDULED_FOR_APPLICATION || ph == CTL_PHASE_CREATING ||
           ph == CTL_PHASE_UPDATING || ph == CTL_PHASE_READY;
}

/* Reads the objects of a group of inventory items with one LIST by our owner label. A
 * consistent LIST makes the API server read every object of the type and namespace from etcd
 * to filter them by label, which grows with everyone's objects there (a thousand Components'
 * ConfigMaps in one namespace: a second a LIST); resourceVersion "0" is answered from its watch
 * cache, in memory, but may be a moment behind. Only a consistent LIST tells that an object it
 * does not return is gone. */
static void fetch_group_list(engine *e, const fetch_group *g)
{
    const ctl_item *it = g->first;
    char *av = ctl_api_version(it->group, it->version);
    char *selector = co_xasprintf("%s=%s", CTL_LABEL_OWNER_ID, e->hashed);
    co_kube_ref ref = {av, it->kind, *it->namespace ? it->namespace : NULL, NULL};
    co_kube_list_options lo = {0};
    lo.label_selector = selector;
    struct json_object *list = NULL;
    e->st.reads++;
    int rc;
    if (g->consistent) {
        rc = co_kube_list_all(&list, e->c, &ref, &lo);
    } else {
        /* no limit: with one the API server would go to etcd anyway; managed fields are
         * needed only by writes, which read the object again */
        lo.resource_version = "0";
        lo.skip_managed_fields = 1;
        rc = co_kube_list(&list, e->c, &ref, &lo);
    }
    if (rc < 0) {
        /* no list permission, say: the objects are read one by one */
        co_error_clear();
    } else {
        char *gk = group_key(it);
        co_strmap_put(g->consistent ? &e->listed : &e->cached, gk, e);
        free(gk);
    }
    struct json_object *items = co_json_get(list, "items", NULL);
    size_t n =
        items && json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *obj = json_object_array_get_idx(items, i);
        const char *name = co_json_str(obj, "metadata", "name", NULL);
        if (!name) {
            continue;
        }
        char *lk = live_key(it->group, it->kind, it->namespace, name);
        json_object_put(co_strmap_put(&e->live, lk, json_object_get(obj)));
        co_strmap_remove(&e->cached_keys, lk);
        free(lk);
    }
    json_object_put(list);
    free(selector);
    free(av);
}

/* Takes the object of an item the apply pass will read from the dependents cache (ctl_depcache.h)
 * when the cache shows it as this pass's inventory last wrote it (our digest) and not being
 * deleted: a Component whose objects are unchanged is judged without reading them. Anything
 * else is read live, so the cache never decides a write. */
static bool from_cache(engine *e, const ctl_item *it)
{
    struct json_object *obj = NULL;
    if (!e->o->cache || !*it->digest || it->phase == CTL_PHASE_DELETING ||
        it->phase == CTL_PHASE_SCHEDULED_FOR_DELETION ||
        ctl_depcache_get(&obj, e->o->cache, it->group, it->version, it->kind, it->namespace,
                         it->name, e->hashed) < 0) {
        co_error_clear();
        return false;
    }
    const char *digest = co_json_meta_annotation(obj, CTL_ANN_DIGEST);
    if (!digest || strcmp(digest, it->digest) != 0 || being_deleted(obj)) {
        json_object_put(obj);
        return false;
    }
    char *lk = live_key(it->group, it->kind, it->namespace, it->name);
    json_object_put(co_strmap_put(&e->live, lk, obj));
    co_strmap_put(&e->cached_keys, lk, e);
    free(lk);
    e->st.cached++;
    return true;
}

/* Reads ahead, with one LIST per type and namespace, the live objects of the items this pass
 * will read when several share a type and namespace: a Component with ten ConfigMaps costs one
 * request instead of ten. Objects without our owner label are not listed and are read one by
 * one as before. Items never written (they are created first, see apply_one()) are left out.
 * A group whose items are all being applied is read from the watch cache; one with an item
 * being completed or deleted, and every group of a Component's deletion, consistently. */
static void prefetch(engine *e, const ctl_inventory *inv, bool component_deletion)
{
    if (halted(e)) {
        return; /* nothing will be read */
    }
    co_strmap groups = CO_STRMAP_INIT;
    for (size_t i = 0; i < inv->len; i++) {
        const ctl_item *it = &inv->items[i];
        if (!component_deletion && it->last_applied_at == 0 &&
            it->phase == CTL_PHASE_SCHEDULED_FOR_APPLICATION) {
            /* watched from the first object of its type on: served on the next pass */
            (void)ctl_depcache_serves(e->o->cache, it->group, it->version, it->kind);
            continue;
        }
        if (!component_deletion && from_cache(e, it)) {
            continue;
        }
        char *gk = group_key(it);
        fetch_group *g = co_strmap_get(&groups, gk);
        if (!g) {
            g = co_xcalloc(1, sizeof(*g));
            g->first = it;
            co_strmap_put(&groups, gk, g);
        }
        g->n++;
        g->consistent = g->consistent || component_deletion || !applying(it->phase);
        free(gk);
    }
    size_t iter = 0;
    const char *k = NULL;
    void *v = NULL;
    while (co_strmap_next(&groups, &iter, &k, &v)) {
        fetch_group *g = v;
        if (g->n >= 2) {
            fetch_group_list(e, g);
        }
        free(g);
    }
    co_strmap_dispose(&groups);
}

/* ---- usage of managed types ----------------------------------------------------------------- */

/* Lists @p api_version @p kind (all namespaces), limit 1, only foreign objects when
 * @p only_foreign. */
static int
any_instance(engine *e, bool *out, const char *api_version, const char *kind, bool only_foreign)
{
    char *sel = only_foreign ? co_xasprintf("%s!=%s", CTL_LABEL_OWNER_ID, e->hashed) : NULL;
    co_kube_ref ref = {api_version, kind, NULL, NULL};
    co_kube_list_options lo = {0};
    lo.label_selector = sel;
    lo.limit = 1;
    struct json_object *list = NULL;
    e->st.reads++;
    int rc = co_kube_list(&list, e->c, &ref, &lo);
    free(sel);
    if (rc == CO_ENOMATCH || rc == CO_ENOTFOUND) {
        co_error_clear();
        *out = false;
        return 0;
    }
    if (rc < 0) {
        return rc;
    }
    struct json_object *items = co_json_get(list, "items", NULL);
    *out =
        items && json_object_is_type(items, json_type_array) && json_object_array_length(items) > 0;
    json_object_put(list);
    return 0;
}

static int crd_used(engine *e, bool *out, const struct json_object *crd, bool only_foreign)
{
    struct json_object *versions = co_json_get(crd, "spec", "versions", NULL);
    const char *group = NULL, *kind = NULL;
    struct json_object *g = co_json_get(crd, "spec", "group", NULL);
    struct json_object *k = co_json_get(crd, "spec", "names", "kind", NULL);
    group = g ? json_object_get_string(g) : NULL;
    kind = k ? json_object_get_string(k) : NULL;
    *out = false;
    if (!group || !kind || !versions || !json_object_is_type(versions, json_type_array)) {
        return 0;
    }
    const char *version = NULL;
    for (size_t i = 0; !version && i < json_object_array_length(versions); i++) {
        struct json_object *v = json_object_array_get_idx(versions, i);
        struct json_object *served = co_json_get(v, "served", NULL);
        if (served && json_object_get_boolean(served)) {
            version = json_object_get_string(co_json_get(v, "name", NULL));
        }
    }
    if (!version) {
        return 0;
    }
    char *av = ctl_api_version(group, version);
    int rc = any_instance(e, out, av, kind, only_foreign);
    free(av);
    return rc;
}

/* Calls @p cb for every top-level resource kind of @p api_version (discovery). */
typedef int (*kind_cb)(engine *e, const char *api_version, const char *kind, void *payload);

static int each_kind(engine *e, const char *group, const char *version, kind_cb cb, void *payload)
{
    char *path =
        *group ? co_xasprintf("/apis/%s/%s", group, version) : co_xasprintf("/api/%s", version);
    struct json_object *doc = NULL;
    e->st.reads++;
    int rc = co_kube_request_json(&doc, e->c, "GET", path, NULL);
    free(path);
    if (rc == CO_ENOTFOUND) {
        co_error_clear();
        return 0;
    }
    if (rc < 0) {
        return rc;
    }
    char *av = ctl_api_version(group, version);
    struct json_object *res = co_json_get(doc, "resources", NULL);
    size_t n = res && json_object_is_type(res, json_type_array) ? json_object_array_length(res) : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct json_object *r = json_object_array_get_idx(res, i);
        struct json_object *name = co_json_get(r, "name", NULL);
        struct json_object *kind = co_json_get(r, "kind", NULL);
        if (!name || !kind || strchr(json_object_get_string(name), '/')) {
            continue; /* subresources */
        }
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) {
            struct json_object *r2 = json_object_array_get_idx(res, j);
            struct json_object *n2 = co_json_get(r2, "name", NULL);
            struct json_object *k2 = co_json_get(r2, "kind", NULL);
            dup = n2 && k2 && !strchr(json_object_get_string(n2), '/') &&
                  !strcmp(json_object_get_string(k2), json_object_get_string(kind));
        }
        if (!dup) {
            rc = cb(e, av, json_object_get_string(kind), payload);
        }
    }
    free(av);
    json_object_put(doc);
    return rc;
}

typedef struct usage {
    bool only_foreign;
    bool used;
    const char *kind_pattern; /* NULL: every kind */
} usage;

static int usage_cb(engine *e, const char *api_version, const char *kind, void *payload)
{
    usage *u = payload;
    if (u->used ||
        (u->kind_pattern && strcmp(u->kind_pattern, "*") && strcmp(u->kind_pattern, kind))) {
        return 0;
    }
    return any_instance(e, &u->used, api_version, kind, u->only_foreign);
}

/* Whether the APIService reports condition Available True. */
static bool apiservice_available(const struct json_object *svc)
{
    struct json_object *conds = co_json_get(svc, "status", "conditions", NULL);
    size_t n =
        conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        struct json_object *t = co_json_get(c, "type", NULL);
        struct json_object *st = co_json_get(c, "status", NULL);
        if (t && st && !strcmp(json_object_get_string(t), "Available")) {
            return !strcmp(json_object_get_string(st), "True");
        }
    }
    return false;
}

static int apiservice_used(engine *e, bool *out, const struct json_object *svc, bool only_foreign)
{
    struct json_object *g = co_json_get(svc, "spec", "group", NULL);
    struct json_object *v = co_json_get(svc, "spec", "version", NULL);
    *out = false;
    if (!g || !v) {
        return 0;
    }
    usage u = {only_foreign, false, NULL};
    int rc = each_kind(e, json_object_get_string(g), json_object_get_string(v), usage_cb, &u);
    if (rc == CO_EUNAVAILABLE && !apiservice_available(svc)) {
        /* the aggregator answers 503 for a Service-backed API without a working backend: no
         * instance can be reached (nor created) through it, as when its discovery says 404 */
        co_error_clear();
        return 0;
    }
    *out = u.used;
    return rc;
}

/* Additional managed type: every served preferred group/version whose group matches. */
/* Whether instances of the additional managed type @p group / @p kind exist. */
static int type_used(engine *e, bool *out, const char *group, const char *kind)
{
    usage u = {true, false, kind};
    int rc = 0;
    *out = false;
    if (ctl_group_matches(group, "")) {
        if ((rc = each_kind(e, "", "v1", usage_cb, &u)) < 0) {
            return rc;
        }
    }
    struct json_object *groups = NULL;
    e->st.reads++;
    if ((rc = co_kube_request_json(&groups, e->c, "GET", "/apis", NULL)) < 0) {
        return rc;
    }
    struct json_object *list = co_json_get(groups, "groups", NULL);
    size_t n =
        list && json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
    for (size_t i = 0; rc == 0 && !u.used && i < n; i++) {
        struct json_object *grp = json_object_array_get_idx(list, i);
        struct json_object *name = co_json_get(grp, "name", NULL);
        struct json_object *pv = co_json_get(grp, "preferredVersion", "version", NULL);
        if (name && pv && ctl_group_matches(group, json_object_get_string(name))) {
            rc = each_kind(e, json_object_get_string(name), json_object_get_string(pv), usage_cb,
                           &u);
        }
    }
    json_object_put(groups);
    *out = u.used;
    return rc;
}

/* ---- finalizer removal ---------------------------------------------------------------------- */

/* Removes our finalizer from the CRD or APIService @p it names (merge patch with the
 * resourceVersion, three tries on conflicts). */
static int remove_type_finalizer(engine *e,
                                 const char *group,
                                 const char *version,
                                 const char *kind,
                                 const char *name)
{
    int rc = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        struct json_object *live = NULL;
        if ((rc = read_object(e, &live, group, version, kind, NULL, name)) < 0 || !live) {
            return rc;
        }
        if (!has_finalizer(live, CTL_FINALIZER)) {
            json_object_put(live);
            return 0;
        }
        struct json_object *fins = json_object_new_array();
        struct json_object *cur = co_json_get(live, "metadata", "finalizers", NULL);
        for (size_t i = 0; i < json_object_array_length(cur); i++) {
            const char *f = json_object_get_string(json_object_array_get_idx(cur, i));
            if (f && strcmp(f, CTL_FINALIZER) != 0) {
                json_object_array_add(fins, json_object_new_string(f));
            }
        }
        struct json_object *patch = json_object_new_object();
        struct json_object *meta = json_object_new_object();
        json_object_object_add(meta, "finalizers", fins);
        const char *rv = co_json_str(live, "metadata", "resourceVersion", NULL);
        json_object_object_add(meta, "resourceVersion", json_object_new_string(rv ? rv : ""));
        json_object_object_add(patch, "metadata", meta);
        char *av = ctl_api_version(group, version);
        co_kube_ref ref = {av, kind, NULL, name};
        co_kube_write_options wo = {0};
        wo.field_manager = CTL_FIELD_MANAGER;
        e->st.updates++;
        rc = co_kube_patch(NULL, e->c, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
        free(av);
        json_object_put(patch);
        json_object_put(live);
        if (rc == CO_ENOTFOUND) {
            co_error_clear();
            return 0;
        }
        if (rc != CO_ECONFLICT) {
            return rc;
        }
    }
    return rc;
}

/* ---- create / update / delete --------------------------------------------------------------- */

/* A CRD or APIService written changes what the target serves: its discovery listing (templates'
 * .Capabilities) is read again on the next render. */
static void expire_types(engine *e, const char *group, const char *kind)
{
    if (ctl_is_crd(group, kind) || ctl_is_apiservice(group, kind)) {
        co_kube_client_expire_api_resources(e->c);
    }
}

/* Whether the object is written by server-side apply. Not APIServices, whatever their policy:
 * the kube-aggregator that serves them has no field manager before Kubernetes 1.21 and answers
 * an apply patch with a panic (kubernetes/kubernetes#89264), so they are created by POST and
 * updated by PUT as under policy Replace. */
static bool use_ssa(const ctl_obj *o)
{
    return (o->update == CO_UPDATE_SSA_MERGE || o->update == CO_UPDATE_SSA_OVERRIDE) &&
           !ctl_is_apiservice(o->group, o->kind);
}

/* The API server's refusal of a resourceVersion on create. */
#define RV_ON_CREATE "resourceVersion should not be set on objects to be created"

/* create_object(): the guard was refused, nothing was created. */
#define UNGUARDED 1

/* Whether create_object() fails rather than write over an object that exists meanwhile. */
static bool create_guarded(const ctl_obj *o)
{
    return !use_ssa(o) || !(!*o->group && !strcmp(o->kind, "Service"));
}

/* Creates the object; *written receives the API server's answer (owned), or NULL. With
 * @p guarded_only, a registry that refuses the guard against an existing object gets no second,
 * unguarded try: UNGUARDED is returned instead. */
static int create_object(engine *e,
                         const ctl_obj *o,
                         struct json_object *manifest,
                         bool guarded_only,
                         struct json_object **written)
{
    struct json_object *obj = co_json_copy(manifest);
    struct json_object *created = NULL;
    co_kube_write_options wo = {0};
    int rc;
    json_object_object_del(co_json_get(obj, "metadata", NULL), "managedFields");
    if (ctl_is_crd(o->group, o->kind) || ctl_is_apiservice(o->group, o->kind)) {
        add_finalizer(obj, CTL_FINALIZER);
    }
    wo.field_manager = CTL_FIELD_MANAGER;
    e->st.creates++;
    if (use_ssa(o)) {
        /* an impossible resourceVersion: an object that exists after all yields a conflict
         * instead of a silent merge. Not for Services: the Service registry of kube-apiserver
         * before 1.23 creates through its own path, which refuses any resourceVersion ("500
         * resourceVersion should not be set on objects to be created"); registries of
         * aggregated APIs may do the same, hence the second try without it. */
        bool guard = create_guarded(o);
        if (guard && co_json_set(obj, json_object_new_string("1"), "metadata", "resourceVersion",
                                 NULL) < 0) {
            json_object_put(obj);
            return CO_EINVALID;
        }
        rc = co_kube_apply(&created, e->c, obj, &wo);
        if (rc < 0 && guard && guarded_only && strstr(co_error_last(), RV_ON_CREATE) != NULL) {
            co_error_clear();
            json_object_put(obj);
            return UNGUARDED;
        }
        if (rc < 0 && guard && strstr(co_error_last(), RV_ON_CREATE) != NULL) {
            json_object_object_del(co_json_get(obj, "metadata", NULL), "resourceVersion");
            co_error_clear();
            e->st.creates++;
            rc = co_kube_apply(&created, e->c, obj, &wo);
        }
    } else {
        rc = co_kube_create(&created, e->c, obj, &wo);
    }
    if (rc == 0) {
        emit(e, created, "Normal", "Created", "Object successfully created");
        expire_types(e, o->group, o->kind);
        *written = created;
    } else {
        json_object_put(created);
    }
    json_object_put(obj);
    return rc;
}

/* The field-manager takeover (docs/behaviour.md, "Create, update and delete"): our entries (any
 * operation) and, for SsaOverride, the kubectl* entries are merged into one Apply entry of ours.
 * Returns the new list (new reference) when something changed, else NULL. */
static struct json_object *takeover(const struct json_object *mf, bool override)
{
    size_t n = mf && json_object_is_type(mf, json_type_array) ? json_object_array_length(mf) : 0;
    struct json_object *out = json_object_new_array();
    struct json_object *merged = NULL;
    size_t nmerged = 0;
    bool own_apply_only = true;
    for (size_t i = 0; i < n; i++) {
        struct json_object *en = json_object_array_get_idx(mf, i);
        struct json_object *mgr = co_json_get(en, "manager", NULL);
        struct json_object *sub = co_json_get(en, "subresource", NULL);
        struct json_object *op = co_json_get(en, "operation", NULL);
        const char *m = mgr ? json_object_get_string(mgr) : "";
        bool ours = !strcmp(m, CTL_FIELD_MANAGER);
        bool take = (!sub || !*json_object_get_string(sub)) &&
                    (ours || (override && !strncmp(m, "kubectl", 7)));
        if (!take) {
            json_object_array_add(out, co_json_copy(en));
            continue;
        }
        nmerged++;
        if (!ours || !op || strcmp(json_object_get_string(op), "Apply") != 0) {
            own_apply_only = false;
        }
        struct json_object *fields = co_json_get(en, "fieldsV1", NULL);
        if (!merged) {
            merged = json_object_new_object();
            json_object_object_add(merged, "manager", json_object_new_string(CTL_FIELD_MANAGER));
            json_object_object_add(merged, "operation", json_object_new_string("Apply"));
            struct json_object *av = co_json_get(en, "apiVersion", NULL);
            if (av) {
                json_object_object_add(merged, "apiVersion", co_json_copy(av));
            }
            struct json_object *tm = co_json_get(en, "time", NULL);
            if (tm) {
                json_object_object_add(merged, "time", co_json_copy(tm));
            }
            json_object_object_add(merged, "fieldsType", json_object_new_string("FieldsV1"));
            json_object_object_add(merged, "fieldsV1", json_object_new_object());
            json_object_array_add(out, merged);
        } else if (ours) {
            struct json_object *av = co_json_get(en, "apiVersion", NULL);
            if (av) {
                json_object_object_add(merged, "apiVersion", co_json_copy(av));
            }
        }
        if (fields && json_object_is_type(fields, json_type_object)) {
            co_json_merge(co_json_get(merged, "fieldsV1", NULL), fields);
        }
    }
    if (nmerged == 0 || (nmerged == 1 && own_apply_only)) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

static int ssa_update(engine *e,
                      const ctl_obj *o,
                      struct json_object *obj,
                      const struct json_object *live,
                      struct json_object **written)
{
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_FIELD_MANAGER;
    struct json_object *mf = takeover(co_json_get(live, "metadata", "managedFields", NULL),
                                      o->update == CO_UPDATE_SSA_OVERRIDE);
    int rc = 0;
    if (mf) {
        char *av = ctl_api_version(o->group, o->version);
        co_kube_ref ref = {av, o->kind, *o->namespace ? o->namespace : NULL, o->name};
        struct json_object *patch = json_object_new_array();
        struct json_object *op1 = json_object_new_object();
        json_object_object_add(op1, "op", json_object_new_string("replace"));
        json_object_object_add(op1, "path", json_object_new_string("/metadata/managedFields"));
        json_object_object_add(op1, "value", mf);
        json_object_array_add(patch, op1);
        struct json_object *op2 = json_object_new_object();
        json_object_object_add(op2, "op", json_object_new_string("replace"));
        json_object_object_add(op2, "path", json_object_new_string("/metadata/resourceVersion"));
        const char *rv = co_json_str(obj, "metadata", "resourceVersion", NULL);
        json_object_object_add(op2, "value", json_object_new_string(rv ? rv : ""));
        json_object_array_add(patch, op2);
        struct json_object *patched = NULL;
        e->st.updates++;
        rc = co_kube_patch(&patched, e->c, &ref, CO_KUBE_PATCH_JSON, patch, &wo);
        free(av);
        json_object_put(patch);
        if (rc < 0) {
            return rc;
        }
        const char *new_rv = co_json_str(patched, "metadata", "resourceVersion", NULL);
        if (new_rv) {
            rc = co_json_set(obj, json_object_new_string(new_rv), "metadata", "resourceVersion",
                             NULL);
        }
        json_object_put(patched);
        if (rc < 0) {
            return rc;
        }
    }
    wo.force = 1;
    e->st.updates++;
    return co_kube_apply(written, e->c, obj, &wo);
}

/* Updates the object per its policy; *written receives the API server's answer (owned), or
 * NULL. */
static int update_object(engine *e,
                         const ctl_obj *o,
                         struct json_object *manifest,
                         const struct json_object *live,
                         struct json_object **written)
{
    struct json_object *obj = co_json_copy(manifest);
    int rc;
    if (ctl_is_crd(o->group, o->kind) || ctl_is_apiservice(o->group, o->kind)) {
        add_finalizer(obj, CTL_FINALIZER);
    }
    /* an autoscaler's replicas stay its own (docs/drift.md, "Ignored fields") */
    co_drift_carry_ignored(obj, live, &o->ignore);
    const char *rv = co_json_str(obj, "metadata", "resourceVersion", NULL);
    if (!rv || !*rv) {
        const char *lrv = co_json_str(live, "metadata", "resourceVersion", NULL);
        if (lrv && co_json_set(obj, json_object_new_string(lrv), "metadata", "resourceVersion",
                               NULL) < 0) {
            json_object_put(obj);
            return CO_EINVALID;
        }
    }
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    json_object_object_del(meta, "managedFields");
    if (use_ssa(o)) {
        rc = ssa_update(e, o, obj, live, written);
    } else {
        struct json_object *fins = co_json_get(live, "metadata", "finalizers", NULL);
        size_t n =
            fins && json_object_is_type(fins, json_type_array) ? json_object_array_length(fins) : 0;
        for (size_t i = 0; i < n; i++) {
            const char *f = json_object_get_string(json_object_array_get_idx(fins, i));
            if (f) {
                add_finalizer(obj, f);
            }
        }
        co_kube_write_options wo = {0};
        wo.field_manager = CTL_FIELD_MANAGER;
        e->st.updates++;
        rc = co_kube_update(written, e->c, obj, &wo);
    }
    if (rc == 0) {
        emit(e, live, "Normal", "Updated", "Object successfully updated");
        expire_types(e, o->group, o->kind);
    } else if (e->o->events) {
        char *msg = co_xasprintf("Error updating object: %s", co_error_last());
        emit(e, live, "Warning", "UpdateError", msg);
        free(msg);
    }
    json_object_put(obj);
    return rc;
}

/* Deletes the object (@p live may be NULL). CRDs and APIServices lose our finalizer once no
 * instance remains. */
static int delete_object(engine *e,
                         const char *group,
                         const char *version,
                         const char *kind,
                         const char *ns,
                         const char *name,
                         const struct json_object *live)
{
    char *key = ctl_key_string(group, version, kind, ns, name);
    int rc = 0;
    if (live && !owned_by_us(e, live)) {
        rc = co_error_set(CO_ECONFLICT, "owner conflict; object %s has no or different owner", key);
        goto done;
    }
    char *av = ctl_api_version(group, version);
    co_kube_ref ref = {av, kind, ns && *ns ? ns : NULL, name};
    co_kube_delete_options dopts = CO_KUBE_DELETE_OPTIONS_INIT;
    dopts.propagation_policy = "Background";
    dopts.precondition_rv = co_json_str(live, "metadata", "resourceVersion", NULL);
    e->st.deletes++;
    rc = co_kube_delete(NULL, e->c, &ref, &dopts);
    free(av);
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        co_error_clear();
        rc = 0;
        goto done;
    }
    if (rc < 0) {
        goto done;
    }
    bool crd = ctl_is_crd(group, kind), svc = ctl_is_apiservice(group, kind);
    expire_types(e, group, kind);
    if (crd || svc) {
        struct json_object *cur = NULL;
        if ((rc = read_object(e, &cur, group, version, kind, NULL, name)) < 0 || !cur) {
            goto done;
        }
        bool used = false;
        rc = crd ? crd_used(e, &used, cur, false) : apiservice_used(e, &used, cur, false);
        json_object_put(cur);
        if (rc < 0) {
            goto done;
        }
        if (used) {
            rc = co_error_set(CO_ERROR, "error deleting %s %s, existing instances found",
                              crd ? "custom resource definition" : "api service", key);
            goto done;
        }
        rc = remove_type_finalizer(e, group, version, kind, name);
    }
done:
    if (live) {
        if (rc == 0) {
            emit(e, live, "Normal", "Deleted", "Object successfully deleted");
        } else if (e->o->events) {
            char *msg = co_xasprintf("Error deleting object: %s", co_error_last());
            emit(e, live, "Warning", "DeleteError", msg);
            free(msg);
        }
    }
    free(key);
    return rc;
}

static int delete_item(engine *e, const ctl_item *it, const struct json_object *live)
{
    return delete_object(e, it->group, it->version, it->kind, it->namespace, it->name, live);
}

/* Orphaning: the item leaves the inventory; our finalizer leaves CRDs and APIServices we own. */
static int orphan_item(engine *e, ctl_item *it, const struct json_object *live)
{
    if (live && owned_by_us(e, live) &&
        (ctl_is_crd(it->group, it->kind) || ctl_is_apiservice(it->group, it->kind))) {
        int rc = remove_type_finalizer(e, it->group, it->version, it->kind, it->name);
        if (rc < 0) {
            return rc;
        }
    }
    it->phase = CTL_PHASE_NONE;
    return 0;
}

/* ---- callbacks for the inventory half ------------------------------------------------------- */

static int scope_cb(int *namespaced, const char *api_version, const char *kind, void *payload)
{
    engine *e = payload;
    co_kube_mapping m = {0};
    int rc = co_kube_client_mapping(&m, e->c, api_version, kind);
    if (rc < 0) {
        return rc;
    }
    *namespaced = m.namespaced ? 1 : 0;
    co_kube_mapping_dispose(&m);
    return 0;
}

static int claim_cb(char **owner_out, const ctl_obj *o, void *payload)
{
    const engine *e = payload;
    return e->o->claimed(e->o->claimed_ctx, owner_out, o->group, o->kind, o->namespace, o->name);
}

/* ---- deletion waves (docs/behaviour.md, "Deletion waves") ----------------------------------- */

static bool item_managed(const engine *e, const ctl_inventory *inv, const ctl_item *it)
{
    return ctl_is_managed_instance(e->o->additional_managed_types, e->o->n_additional_managed_types,
                                   inv, it->group, it->version, it->kind);
}

static int wrap_item(int rc, const char *what, const ctl_item *it)
{
    char *key = ctl_item_key(it);
    co_error_wrap("%s %s", what, key);
    free(key);
    return rc;
}

/* Handles an item in phase Deleting: *pending when it still exists. */
static int continue_deleting(engine *e, ctl_item *it, const struct json_object *live, int *pending)
{
    if (live && being_deleted(live)) {
        (*pending)++;
    } else if (!live || !owned_by_us(e, live)) {
        /* gone, or recreated by someone else and so not ours any more */
        it->phase = CTL_PHASE_NONE;
    } else {
        char *key = ctl_item_key(it);
        int rc = co_error_set(CO_ERROR,
                              "object %s was already deleted but has no deletion "
                              "timestamp",
                              key);
        free(key);
        return rc;
    }
    return 0;
}

/* Items whose adoption was refused at their first write leave the inventory: the objects
 * were never this Component's. */
static void drop_refused(ctl_inventory *inv)
{
    size_t k = 0;
    for (size_t i = 0; i < inv->len; i++) {
        if (inv->items[i].refused) {
            ctl_item_dispose(&inv->items[i]);
            continue;
        }
        inv->items[k++] = inv->items[i];
    }
    inv->len = k;
}

static void drop_gone(ctl_inventory *inv)
{
    size_t k = 0;
    for (size_t i = 0; i < inv->len; i++) {
        if (inv->items[i].phase == CTL_PHASE_NONE) {
            ctl_item_dispose(&inv->items[i]);
            continue;
        }
        inv->items[k++] = inv->items[i];
    }
    inv->len = k;
}

/* @p component_deletion selects docs/behaviour.md, "Component deletion" (every item, orphan on
 * Orphan/OrphanOnDelete) over "Apply pass", step 8 (obsolete items, orphan on
 * Orphan/OrphanOnApply). */
static int deletion_waves(engine *e, ctl_inventory *inv, bool component_deletion, int *pending_out)
{
    int pending = 0, managed_pending = 0, rc = 0;
    for (size_t k = 0; k < inv->len; k++) {
        ctl_item *it = &inv->items[k];
        if (halted(e)) {
            pending++; /* the rest waits for the next pass */
            break;
        }
        if (k == 0 || inv->items[k - 1].delete_order < it->delete_order) {
            managed_pending = 0;
            for (size_t j = k; j < inv->len && inv->items[j].delete_order == it->delete_order;
                 j++) {
                const ctl_item *x = &inv->items[j];
                bool candidate = component_deletion ||
                                 x->phase == CTL_PHASE_SCHEDULED_FOR_DELETION ||
                                 x->phase == CTL_PHASE_DELETING;
                if (candidate && x->phase != CTL_PHASE_NONE && item_managed(e, inv, x)) {
                    managed_pending++;
                }
            }
        }
        bool candidate = component_deletion ? it->phase != CTL_PHASE_NONE
                                            : it->phase == CTL_PHASE_SCHEDULED_FOR_DELETION ||
                                                  it->phase == CTL_PHASE_DELETING;
        if (candidate && it->mode != CO_MODE_MANAGED) {
            /* read-only and delete-only objects are never deleted on their way out
             * (docs/lifecycle.md, "Object modes") */
            it->phase = CTL_PHASE_NONE;
        } else if (candidate) {
            struct json_object *live = NULL;
            if ((rc = read_item(e, &live, it, NULL)) < 0) {
                return wrap_item(rc, "error reading object", it);
            }
            bool orphan = component_deletion ? it->delete_policy == CO_DELETE_ORPHAN ||
                                                   it->delete_policy == CO_DELETE_ORPHAN_ON_DELETE
                                             : it->delete_policy == CO_DELETE_ORPHAN ||
                                                   it->delete_policy == CO_DELETE_ORPHAN_ON_APPLY;
            if (it->phase == CTL_PHASE_DELETING) {
                rc = continue_deleting(e, it, live, &pending);
            } else {
                bool ns_used = false;
                if (ctl_is_namespace(it->group, it->kind)) {
                    for (size_t j = 0; j < inv->len && !ns_used; j++) {
                        ns_used = inv->items[j].phase != CTL_PHASE_NONE &&
                                  !strcmp(inv->items[j].namespace, it->name);
                    }
                }
                if (!ns_used && (managed_pending == 0 || item_managed(e, inv, it))) {
                    if (orphan || (live && !owned_by_us(e, live))) {
                        rc = orphan_item(e, it, live);
                    } else if ((rc = delete_item(e, it, live)) == 0) {
                        it->phase = CTL_PHASE_DELETING;
                        free(it->status);
                        it->status = co_xstrdup("Terminating");
                        pending++;
                    }
                    if (rc < 0) {
                        rc = wrap_item(rc, "error deleting object", it);
                    }
                } else {
                    pending++;
                }
            }
            json_object_put(live);
            if (rc < 0) {
                return rc;
            }
        }
        if ((k == inv->len - 1 || inv->items[k + 1].delete_order > it->delete_order) && pending) {
            break;
        }
    }
    drop_gone(inv);
    *pending_out = pending;
    return 0;
}

/* ---- apply ---------------------------------------------------------------------------------- */

/* Missing namespaces policy Create (docs/behaviour.md, "Apply pass", step 5): the namespace
 * @p ns of an object that could not be created because it is missing is created bare (never
 * tracked, labelled or deleted), unless the set defines it. Returns 1 when it was created (the
 * object's create is worth a second try), 0 when there was nothing to do. */
static int create_missing_namespace(engine *e, const ctl_objset *set, const char *ns)
{
    if (!e->create_namespaces || !*ns) {
        return 0;
    }
    for (size_t j = 0; j < set->len; j++) {
        if (ctl_is_namespace(set->objs[j].group, set->objs[j].kind) &&
            !strcmp(set->objs[j].name, ns)) {
            return 0;
        }
    }
    struct json_object *live = NULL;
    int rc = read_object(e, &live, "", "v1", "Namespace", NULL, ns);
    if (rc < 0) {
        return co_error_wrap("error reading namespace %s", ns);
    }
    if (live) {
        json_object_put(live);
        return 0;
    }
    struct json_object *obj = json_object_new_object();
    json_object_object_add(obj, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(obj, "kind", json_object_new_string("Namespace"));
    struct json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(ns));
    json_object_object_add(obj, "metadata", meta);
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_FIELD_MANAGER;
    e->st.creates++;
    rc = co_kube_create(NULL, e->c, obj, &wo);
    json_object_put(obj);
    if (rc == CO_EEXISTS) {
        co_error_clear();
        rc = 0;
    }
    if (rc < 0) {
        return co_error_wrap("error creating namespace %s", ns);
    }
    return 1;
}

static void set_status(ctl_item *it, const char *s)
{
    free(it->status);
    it->status = co_xstrdup(s);
}

/* Due purges (docs/behaviour.md, "Apply pass", step 6). *pending counts items still completing. */
static int finish_completions(engine *e, ctl_inventory *inv, int *pending)
{
    for (size_t i = 0; i < inv->len; i++) {
        ctl_item *it = &inv->items[i];
        if (it->phase != CTL_PHASE_SCHEDULED_FOR_COMPLETION && it->phase != CTL_PHASE_COMPLETING) {
            continue;
        }
        struct json_object *live = NULL;
        int rc = read_item(e, &live, it, NULL);
        if (rc < 0) {
            return wrap_item(rc, "error reading object", it);
        }
        if (it->phase == CTL_PHASE_SCHEDULED_FOR_COMPLETION) {
            rc = delete_item(e, it, live);
            if (rc == 0) {
                it->phase = CTL_PHASE_COMPLETING;
                set_status(it, "Terminating");
                (*pending)++;
            }
        } else if (!live) {
            it->phase = CTL_PHASE_COMPLETED;
            set_status(it, "");
        } else {
            (*pending)++;
        }
        json_object_put(live);
        if (rc < 0) {
            return wrap_item(rc, "error deleting object", it);
        }
    }
    return 0;
}

typedef struct wave_ctx {
    engine *e;
    ctl_inventory *inv;
    ctl_objset *set;
    ctl_item **items; /* item of each object */
} wave_ctx;

static bool obj_late(const ctl_obj *o)
{
    return ctl_is_apiservice(o->group, o->kind);
}

static bool obj_managed(const wave_ctx *w, const ctl_obj *o)
{
    return ctl_is_managed_instance(w->e->o->additional_managed_types,
                                   w->e->o->n_additional_managed_types, w->inv, o->group,
                                   o->version, o->kind);
}

/* The readiness of @p obj, a live object or the answer to a write of it: its item's status
 * text, and phase Ready when it is current and not being deleted. Returns whether it is ready. */
static int judge(engine *e, ctl_item *it, const struct json_object *obj, bool *ready)
{
    ctl_health h;
    const char *msg = NULL;
    int rc = ctl_health_compute(&h, &msg, obj, CTL_ANN_STATUS_HINT, e->now / 1000000000);
    if (rc < 0) {
        return wrap_item(rc, "error checking status of object", it);
    }
    *ready = !being_deleted(obj) && h == CTL_HEALTH_CURRENT;
    if (*ready) {
        it->phase = CTL_PHASE_READY;
    }
    set_status(it, ctl_health_name(h));
    return 0;
}

/* Creates the object of @p it, and its namespace first when that is missing (it is created
 * only when an object needs it: checking every namespace on every pass would cost a read
 * each). When its type is not served yet (a CRD or APIService of the same set) nothing is
 * written and the item waits. */
static int create_item(engine *e,
                       const ctl_objset *set,
                       const ctl_obj *o,
                       ctl_item *it,
                       bool guarded_only,
                       struct json_object **written)
{
    int rc = create_object(e, o, o->manifest, guarded_only, written);
    if (rc == CO_ENOTFOUND) {
        char *msg = co_xstrdup(co_error_last());
        int made = create_missing_namespace(e, set, o->namespace);
        if (made == 1) {
            co_error_clear();
            rc = create_object(e, o, o->manifest, guarded_only, written);
        } else if (made == 0) {
            co_error_set(rc, "%s", msg);
        } else {
            rc = made;
        }
        free(msg);
    }
    if (rc == CO_ENOMATCH) {
        co_error_clear();
        set_status(it, "InProgress");
        return 0;
    }
    if (rc < 0) {
        return wrap_item(rc, "error creating object", it);
    }
    if (rc == 0) {
        it->phase = CTL_PHASE_CREATING;
        set_status(it, "InProgress");
        it->last_applied_at = e->now;
    }
    return rc;
}

/* Whether a create that failed with @p rc surely created nothing: the API server refused it
 * (forbidden, invalid, too big, its namespace missing), as opposed to a failure that may have
 * come after the object was stored (a timeout, an unavailable server). */
static bool nothing_created(int rc)
{
    return rc == CO_EAUTH || rc == CO_EINVALID || rc == CO_ENOTFOUND || rc == CO_ETOOBIG;
}

/* Whether the live object @p live of @p it is to be updated: its digest differs from ours
 * (unless both are Once), or it was never applied, or the reapply interval passed; not for the
 * interval alone when @p kept_drift (a Warn object that drifted is left as it is: docs/drift.md,
 * "Policies"). */
static bool due_for_update(const engine *e,
                           const ctl_obj *o,
                           const ctl_item *it,
                           const struct json_object *live,
                           bool kept_drift)
{
    const char *live_digest = co_json_meta_annotation(live, CTL_ANN_DIGEST);
    if (!live_digest) {
        live_digest = "";
    }
    if (!strcmp(live_digest, CTL_DIGEST_ONCE) && !strcmp(it->digest, CTL_DIGEST_ONCE)) {
        return false;
    }
    return strcmp(live_digest, it->digest) != 0 || it->last_applied_at == 0 ||
           (!kept_drift && it->last_applied_at < e->now - o->reapply_ns);
}

/* ---- drift (docs/drift.md) ------------------------------------------------------------------ */

/* Whether @p live is what this inventory last applied to @p it, so that a difference from the
 * manifest is drift rather than a pending change. Once objects are never compared. */
static bool drift_comparable(const ctl_obj *o, const ctl_item *it, const struct json_object *live)
{
    const char *live_digest = co_json_meta_annotation(live, CTL_ANN_DIGEST);
    return o->drift != CO_DRIFT_IGNORE && it->last_applied_at != 0 && live_digest &&
           !strcmp(live_digest, it->digest) && strcmp(it->digest, CTL_DIGEST_ONCE) != 0 &&
           !being_deleted(live);
}

/* Whether @p it came from the dependents cache (ctl_depcache.h), which keeps a ConfigMap's values
 * as fingerprints and leaves a workload's templates out. */
static bool from_depcache(const engine *e, const ctl_item *it)
{
    char *lk = live_key(it->group, it->kind, it->namespace, it->name);
    bool in = co_strmap_get(&e->cached_keys, lk) != NULL;
    free(lk);
    return in;
}

/* Whether the manifest sets what the dependents cache leaves out of a workload. */
static bool sets_trimmed(const ctl_obj *o)
{
    return co_json_get(o->manifest, "spec", "template", NULL) ||
           co_json_get(o->manifest, "spec", "volumeClaimTemplates", NULL);
}

/* The fields of our field manager in @p live (every entry of ours outside subresources,
 * merged), or NULL when it lists none (owned by nobody we know of: not compared). */
static struct json_object *owned_fields(const struct json_object *live)
{
    struct json_object *mf = co_json_get(live, "metadata", "managedFields", NULL);
    size_t n = mf && json_object_is_type(mf, json_type_array) ? json_object_array_length(mf) : 0;
    struct json_object *out = NULL;
    for (size_t i = 0; i < n; i++) {
        struct json_object *en = json_object_array_get_idx(mf, i);
        const char *m = co_json_str(en, "manager", NULL);
        const char *sub = co_json_str(en, "subresource", NULL);
        struct json_object *f = co_json_get(en, "fieldsV1", NULL);
        if (!m || strcmp(m, CTL_FIELD_MANAGER) != 0 || (sub && *sub) || !f ||
            !json_object_is_type(f, json_type_object)) {
            continue;
        }
        if (!out) {
            out = json_object_new_object();
        }
        co_json_merge(out, f);
    }
    return out;
}

/* Compares the manifest of @p o with @p live (docs/drift.md, "Comparison"); *text names the
 * drifted fields ("/data/a, /spec/replicas"; free()), NULL when none. Field ownership counts
 * only for server-side apply, whose forced apply takes a field back; a manifest past the
 * comparison's bounds is not compared. */
static void compare_drift(const engine *e,
                          const ctl_obj *o,
                          const ctl_item *it,
                          const struct json_object *live,
                          bool cached,
                          char **text)
{
    *text = NULL;
    struct json_object *owned = use_ssa(o) ? owned_fields(live) : NULL;
    struct json_object *desired = o->manifest;
    struct json_object *fp = NULL;
    if (cached && from_depcache(e, it)) {
        /* compared as the cache keeps it: values as fingerprints, no templates ("Limits") */
        fp = co_json_copy(o->manifest);
        ctl_depcache_trim(fp, o->kind);
        desired = fp;
    }
    co_drift_result r;
    if (co_drift_compare(&r, desired, live, &o->ignore, owned) < 0) {
        co_error_clear();
    } else if (r.total > 0) {
        co_buf b = CO_BUF_INIT(CTL_DRIFT_TEXT_MAX);
        bool ok = true;
        for (size_t i = 0; i < r.nfields && ok; i++) {
            ok = co_buf_printf(&b, "%s%s", i ? ", " : "", r.fields[i]) == 0;
        }
        if (ok && r.total > r.nfields) {
            ok = co_buf_printf(&b, " (and %zu more)", r.total - r.nfields) == 0;
        }
        if (!ok) {
            /* past the cap (the buffer was emptied): the first field names the drift */
            co_error_clear();
            *text = co_xstrndup(r.fields[0], CTL_DRIFT_TEXT_MAX - 16);
        } else {
            *text = co_buf_take(&b, NULL);
        }
        co_buf_dispose(&b);
    }
    co_drift_result_dispose(&r);
    json_object_put(fp);
    json_object_put(owned);
}

/* ---- lifecycle controls (docs/lifecycle.md) ------------------------------------------------- */

/* Whether an object's readiness gates its wave: not for auxiliary and delete-only ones. */
static bool counts(const ctl_obj *o)
{
    return !o->auxiliary && o->mode != CO_MODE_DELETE_ONLY;
}

/* Deletes a delete-only object the adoption policy lets this Component take, whoever's label
 * it carries (ctl_adoption_check() decided that): with its resourceVersion as precondition. */
static int delete_adoptable(engine *e, const ctl_item *it, const struct json_object *live)
{
    if (owned_by_us(e, live)) {
        return delete_item(e, it, live);
    }
    char *av = ctl_api_version(it->group, it->version);
    co_kube_ref ref = {av, it->kind, *it->namespace ? it->namespace : NULL, it->name};
    co_kube_delete_options dopts = CO_KUBE_DELETE_OPTIONS_INIT;
    dopts.propagation_policy = "Background";
    dopts.precondition_rv = co_json_str(live, "metadata", "resourceVersion", NULL);
    e->st.deletes++;
    int rc = co_kube_delete(NULL, e->c, &ref, &dopts);
    free(av);
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        co_error_clear();
        rc = 0;
    }
    if (rc == 0) {
        emit(e, live, "Normal", "Deleted", "Object successfully deleted");
    } else if (e->o->events) {
        char *msg = co_xasprintf("Error deleting object: %s", co_error_last());
        emit(e, live, "Warning", "DeleteError", msg);
        free(msg);
    }
    return rc;
}

/* A read-only or delete-only object of a wave (docs/lifecycle.md, "Object modes"). Nothing is
 * written to a read-only one: it is judged like any other, a missing one is not ready (status
 * NotFound). A delete-only one is deleted when present and its adoption policy lets this
 * Component adopt it (an owner conflict otherwise); it is Ready with status NotFound once
 * gone, and never counts. Neither has a lastAppliedAt. */
static int observe_one(wave_ctx *w, size_t i, int *unready)
{
    engine *e = w->e;
    const ctl_obj *o = &w->set->objs[i];
    ctl_item *it = w->items[i];
    struct json_object *live = NULL;
    bool cached = false, ready = false;
    it->last_applied_at = 0;
    bool ro = o->mode == CO_MODE_READ_ONLY;
    int rc = read_item(e, &live, it, ro ? &cached : NULL);
    if (rc < 0) {
        return wrap_item(rc, "error reading object", it);
    }
    if (!live) {
        it->phase = ro ? CTL_PHASE_SCHEDULED_FOR_APPLICATION : CTL_PHASE_READY;
        set_status(it, ctl_health_name(CTL_HEALTH_NOT_FOUND));
    } else if (ro) {
        rc = judge(e, it, live, &ready);
        if (rc == 0 && !ready) {
            it->phase = CTL_PHASE_SCHEDULED_FOR_APPLICATION;
        }
    } else {
        /* being deleted already, or deleted now when it may be taken */
        if (!being_deleted(live) && ((rc = ctl_adoption_check(o, live, e->hashed)) < 0 ||
                                     (rc = delete_adoptable(e, it, live)) < 0)) {
            rc = wrap_item(rc, "error deleting object", it);
        } else {
            it->phase = CTL_PHASE_SCHEDULED_FOR_APPLICATION;
            set_status(it, ctl_health_name(CTL_HEALTH_TERMINATING));
        }
    }
    json_object_put(live);
    if (rc == 0 && ro && !ready && !o->auxiliary) {
        (*unready)++;
    }
    return rc;
}

/* Reads the object a guard names with the Component's identity and checks its condition
 * (docs/lifecycle.md, "Guards"). When it does not hold, e->blocked says so. */
static int check_guard(engine *e, const ctl_obj *o, bool *met)
{
    const co_prerequisite *g = &o->guard;
    co_prerequisite at = *g;
    struct json_object *live = NULL;
    co_kube_mapping m = {0};
    int rc = co_kube_client_mapping(&m, e->c, g->api_version, g->kind);
    if (rc == 0) {
        if (!m.namespaced) {
            at.ns = NULL;
        }
        co_kube_mapping_dispose(&m);
        co_kube_ref ref = {g->api_version, g->kind, at.ns, g->name};
        e->st.reads++;
        rc = co_kube_get(&live, e->c, &ref, NULL);
    }
    if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
        co_error_clear();
        live = NULL;
        rc = 0;
    }
    char *what = co_prerequisite_describe(&at);
    if (rc < 0) {
        char *key = ctl_obj_key(o);
        co_error_wrap("error reading %s, the guard of object %s", what, key);
        free(key);
        free(what);
        return rc;
    }
    char *currently = NULL;
    ctl_condition_met(met, &currently, live, g->condition_type, CTL_ANN_STATUS_HINT,
                      e->now / 1000000000);
    if (!*met) {
        char *key = ctl_obj_key(o);
        free(e->blocked);
        e->blocked = co_xasprintf("guard of %s: waiting for condition \"%s\" of %s to become True "
                                  "(currently %s)",
                                  key, g->condition_type, what, currently ? currently : "unknown");
        free(key);
    }
    free(currently);
    free(what);
    json_object_put(live);
    return 0;
}

/* Workloads a ScaleDown suspension scales (docs/lifecycle.md, "Suspension that scales
 * down"). */
static bool scalable(const char *group, const char *kind)
{
    return (!strcmp(group, "apps") &&
            (!strcmp(kind, "Deployment") || !strcmp(kind, "StatefulSet")));
}

static bool suspendable(const char *group, const char *kind)
{
    return scalable(group, kind) || (!strcmp(group, "batch") && !strcmp(kind, "CronJob"));
}

/* Merge-patches a workload with our field manager; the answer goes to *out. */
static int
patch_workload(engine *e, struct json_object **out, const ctl_item *it, struct json_object *patch)
{
    char *av = ctl_api_version(it->group, it->version);
    co_kube_ref ref = {av, it->kind, *it->namespace ? it->namespace : NULL, it->name};
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_FIELD_MANAGER;
    e->st.updates++;
    int rc = co_kube_patch(out, e->c, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
    free(av);
    json_object_put(patch);
    return rc;
}

/* A merge patch setting @p spec (taken) and the suspended-state annotation (@p state, NULL:
 * removed), at the resourceVersion of @p live. */
static struct json_object *
suspension_patch(const struct json_object *live, struct json_object *spec, const char *state)
{
    struct json_object *patch = json_object_new_object();
    struct json_object *meta = json_object_new_object();
    struct json_object *ann = json_object_new_object();
    json_object_object_add(ann, CTL_ANN_SUSPENDED_STATE,
                           state ? json_object_new_string(state) : NULL);
    json_object_object_add(meta, "annotations", ann);
    const char *rv = co_json_str(live, "metadata", "resourceVersion", NULL);
    if (rv) {
        json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
    }
    json_object_object_add(patch, "metadata", meta);
    json_object_object_add(patch, "spec", spec);
    return patch;
}

/* Resume: a workload of this Component that a ScaleDown suspension scaled down gets the value
 * recorded in its annotation back, and loses the annotation; *live becomes the answer. Objects
 * without the annotation are left alone (no request). */
static int resume_try(engine *e, const ctl_item *it, struct json_object **live)
{
    const char *state = co_json_meta_annotation(*live, CTL_ANN_SUSPENDED_STATE);
    if (!state || !suspendable(it->group, it->kind) || !owned_by_us(e, *live)) {
        return 0;
    }
    struct json_object *rec = NULL, *v = NULL;
    if (co_json_parse(&rec, state, strlen(state)) < 0 ||
        !json_object_is_type(rec, json_type_object)) {
        co_error_clear();
    }
    struct json_object *spec = json_object_new_object();
    if (scalable(it->group, it->kind)) {
        int64_t n = 1;
        if (json_object_object_get_ex(rec, "replicas", &v) &&
            json_object_is_type(v, json_type_int)) {
            n = json_object_get_int64(v);
        }
        json_object_object_add(spec, "replicas", json_object_new_int64(n));
    } else {
        bool sus = json_object_object_get_ex(rec, "suspend", &v) &&
                   json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
        json_object_object_add(spec, "suspend", json_object_new_boolean(sus));
    }
    json_object_put(rec);
    struct json_object *patched = NULL;
    int rc = patch_workload(e, &patched, it, suspension_patch(*live, spec, NULL));
    if (rc < 0) {
        return rc;
    }
    json_object_put(*live);
    *live = patched;
    return 0;
}

/* Conflicting writes of a workload's own controller (its status) are common while it scales:
 * the suspension's patches, made at the resourceVersion read, are tried this often on a fresh
 * read. */
#define SUSPENSION_TRIES 3

static int resume_one(engine *e, const ctl_item *it, struct json_object **live)
{
    int rc = resume_try(e, it, live);
    for (int i = 1; rc == CO_ECONFLICT && i < SUSPENSION_TRIES; i++) {
        co_error_clear();
        json_object_put(*live);
        *live = NULL;
        rc = read_object(e, live, it->group, it->version, it->kind, it->namespace, it->name);
        if (rc == 0 && *live) {
            rc = resume_try(e, it, live);
        }
    }
    return rc < 0 ? wrap_item(rc, "error resuming object", it) : 0;
}

/* One object of a wave (docs/behaviour.md, "Apply waves"). *unready is incremented unless the
 * object is ready (or auxiliary).
 *
 * A written object is judged by the API server's answer to the write, which is the object as
 * stored: reading it again would tell the same. An item this Component never wrote (scheduled
 * for application, no lastAppliedAt) is checked for adoption (docs/behaviour.md, "Adoption")
 * against the live object here, when it is first written, rather than when it entered the
 * inventory; where the create is guarded (it fails on an object that exists) it is tried first, and
 * only an object that exists is read. An item whose adoption or first create is refused leaves
 * the inventory. So a new object costs one request, and one that appeared
 * after the item was recorded (the inventory is persisted before anything is created) is checked
 * too. */
static int apply_one(wave_ctx *w, size_t i, int *unready)
{
    engine *e = w->e;
    ctl_obj *o = &w->set->objs[i];
    ctl_item *it = w->items[i];
    struct json_object *live = NULL, *written = NULL;
    char *drift = NULL;
    if (o->mode != CO_MODE_MANAGED) {
        return observe_one(w, i, unready);
    }
    set_meta_string(o->manifest, "labels", CTL_LABEL_OWNER_ID, e->hashed);
    set_meta_string(o->manifest, "annotations", CTL_ANN_OWNER_ID, e->o->owner_id);
    set_meta_string(o->manifest, "annotations", CTL_ANN_DIGEST, it->digest);
    bool first = it->last_applied_at == 0 && it->phase == CTL_PHASE_SCHEDULED_FOR_APPLICATION;
    bool ready = false;
    int rc = 0;
    if (first && create_guarded(o)) {
        rc = create_item(e, w->set, o, it, true, &written);
        if (rc == CO_ECONFLICT || rc == CO_EEXISTS || rc == UNGUARDED) {
            co_error_clear(); /* it exists: read it and check */
        } else if (rc < 0) {
            /* never created: the item leaves the inventory again, or a Component whose
             * identity may not create it could never be deleted (it may not read it either) */
            it->refused = nothing_created(rc);
            return rc;
        } else {
            goto judge;
        }
    }
    bool cached = false;
    if ((rc = read_item(e, &live, it, &cached)) < 0) {
        return wrap_item(rc, "error reading object", it);
    }
    /* drift of an object this pass would otherwise leave alone (docs/drift.md) */
    if (!first && live && drift_comparable(o, it, live)) {
        if (cached && o->drift == CO_DRIFT_WARN && from_depcache(e, it) && sets_trimmed(o)) {
            /* what the cache leaves out of a workload is compared live, for Warn objects only:
             * a Correct one is re-applied every reapply interval anyway */
            json_object_put(live);
            live = NULL;
            cached = false;
            if ((rc = read_item(e, &live, it, NULL)) < 0) {
                return wrap_item(rc, "error reading object", it);
            }
        }
        if (live && drift_comparable(o, it, live)) {
            compare_drift(e, o, it, live, cached, &drift);
        }
    }
    bool correct = drift && o->drift == CO_DRIFT_CORRECT;
    free(it->drift);
    it->drift = drift && o->drift == CO_DRIFT_WARN ? co_xstrdup(drift) : NULL;
    if (cached && (first || being_deleted(live) || correct ||
                   due_for_update(e, o, it, live, it->drift != NULL) ||
                   co_json_meta_annotation(live, CTL_ANN_SUSPENDED_STATE))) {
        /* an object from the watch cache only serves to judge readiness: adoption is decided
         * and a write (its resourceVersion a precondition) made on the object as it is now */
        json_object_put(live);
        live = NULL;
        if ((rc = read_item(e, &live, it, NULL)) < 0) {
            free(drift);
            return wrap_item(rc, "error reading object", it);
        }
    }
    if (first && (rc = ctl_adoption_check(o, live, e->hashed)) < 0) {
        it->refused = true;
        json_object_put(live);
        return rc;
    }
    if (live && !being_deleted(live) && (rc = resume_one(e, it, &live)) < 0) {
        free(drift);
        json_object_put(live);
        return rc;
    }
    if (!live) {
        rc = create_item(e, w->set, o, it, false, &written);
        it->refused = first && rc < 0 && nothing_created(rc);
    } else if (!being_deleted(live) &&
               (correct || due_for_update(e, o, it, live, it->drift != NULL))) {
        if (correct) {
            char *msg = co_xasprintf("Object drifted from its manifest (%s): re-applied", drift);
            emit(e, live, "Normal", "DriftCorrected", msg);
            free(msg);
        }
        if (o->update == CO_UPDATE_RECREATE) {
            /* recreated on a later pass */
            rc = delete_item(e, it, live);
        } else {
            rc = update_object(e, o, o->manifest, live, &written);
        }
        if (rc < 0) {
            rc = wrap_item(rc,
                           o->update == CO_UPDATE_RECREATE
                               ? "error deleting (while recreating) object"
                               : "error updating object",
                           it);
        } else {
            it->phase = CTL_PHASE_UPDATING;
            set_status(it, "InProgress");
            it->last_applied_at = e->now;
        }
    } else {
        rc = judge(e, it, live, &ready);
    }
judge:
    if (rc == 0 && written) {
        rc = judge(e, it, written, &ready);
    }
    free(drift);
    json_object_put(live);
    json_object_put(written);
    if (rc < 0) {
        return rc;
    }
    if (!ready && counts(o)) {
        (*unready)++;
    }
    return 0;
}

/* docs/behaviour.md, "Apply pass", step 7. *stop is set when the pass must end "not done" here. */
static int apply_waves(wave_ctx *w, int *unready_out, bool *stop)
{
    ctl_objset *set = w->set;
    int unready = 0, regular_pending = 0, late_pending = 0;
    *stop = false;
    for (size_t k = 0; k < set->len; k++) {
        ctl_obj *o = &set->objs[k];
        ctl_item *it = w->items[k];
        int order = o->apply_order;
        if (k == 0 || set->objs[k - 1].apply_order < order) {
            regular_pending = 0;
            late_pending = 0;
            for (size_t j = k; j < set->len && set->objs[j].apply_order == order; j++) {
                const ctl_item *x = w->items[j];
                const ctl_obj *xo = &set->objs[j];
                if (x->phase != CTL_PHASE_READY && x->phase != CTL_PHASE_COMPLETED && counts(xo)) {
                    if (obj_late(xo)) {
                        late_pending++;
                    } else if (!obj_managed(w, xo)) {
                        regular_pending++;
                    }
                }
            }
        }
        if (it->phase != CTL_PHASE_COMPLETED) {
            bool late = obj_late(o), managed = !late && obj_managed(w, o);
            bool regular = !late && !managed;
            if (halted(w->e)) {
                /* the rest waits for the next pass */
                *stop = true;
                break;
            }
            /* a guard that does not hold stops this object and every later one, auxiliary or
             * not (docs/lifecycle.md, "Guards") */
            bool met = true;
            if (o->guard.name) {
                int rc = check_guard(w->e, o, &met);
                if (rc < 0) {
                    return rc;
                }
            }
            if (!met) {
                *stop = true;
                break;
            }
            if (regular || (late && regular_pending == 0) ||
                (managed && regular_pending == 0 && late_pending == 0)) {
                int rc = apply_one(w, k, &unready);
                if (rc < 0) {
                    return rc;
                }
            } else if (counts(o)) {
                unready++;
            }
        }
        if (k == set->len - 1 || set->objs[k + 1].apply_order > order) {
            if (unready) {
                *stop = true;
                break;
            }
            int purged = 0;
            for (size_t j = 0; j <= k; j++) {
                const ctl_obj *xo = &set->objs[j];
                ctl_item *x = w->items[j];
                bool due = (k == set->len - 1 && xo->purge_order != CTL_NO_PURGE) ||
                           xo->purge_order <= order;
                if (due && x->phase != CTL_PHASE_COMPLETED) {
                    x->phase = CTL_PHASE_SCHEDULED_FOR_COMPLETION;
                    purged++;
                }
            }
            if (purged) {
                *stop = true;
                break;
            }
        }
    }
    *unready_out = unready;
    return 0;
}

static int
apply_pass(engine *e, struct json_object *inv_json, struct json_object *objects, bool *done)
{
    ctl_objset set = {NULL, 0};
    ctl_inventory inv = {NULL, 0, 0};
    ctl_item **items = NULL;
    int rc;
    size_t added = 0;
    *done = false;

    if ((rc = ctl_inventory_read(&inv, inv_json)) < 0) {
        return rc;
    }
    if ((rc = ctl_objset_prepare(&set, objects, &e->d, scope_cb, e)) < 0) {
        goto out;
    }
    /* the adoption check is apply_one()'s, at the first write */
    if ((rc = ctl_inventory_update(&added, &inv, &set, e->hashed, NULL,
                                   e->o->claimed ? claim_cb : NULL, e)) < 0) {
        goto out;
    }
    if (added) {
        /* the new keys are persisted before anything is created: a crash never leaves an
         * untracked object */
        if (!e->o->persist) {
            goto out;
        }
        ctl_inventory_write(&inv, inv_json);
        if ((rc = e->o->persist(e->o->persist_ctx, inv_json)) < 0) {
            goto out;
        }
    }
    ctl_objset_sort_for_apply(&set);
    prefetch(e, &inv, false);
    int pending = 0;
    if ((rc = finish_completions(e, &inv, &pending)) < 0 || pending) {
        goto out;
    }
    items = co_xcalloc(set.len ? set.len : 1, sizeof(ctl_item *));
    for (size_t i = 0; i < set.len; i++) {
        items[i] = ctl_inventory_find(&inv, &set.objs[i]);
        CO_ASSERT(items[i] != NULL);
    }
    wave_ctx w = {e, &inv, &set, items};
    int unready = 0;
    bool stop = false;
    if ((rc = apply_waves(&w, &unready, &stop)) < 0 || stop || unready) {
        goto out;
    }
    free(items); /* the deletion walk drops items: the pointers would dangle */
    items = NULL;
    if ((rc = deletion_waves(e, &inv, false, &pending)) < 0) {
        goto out;
    }
    *done = pending == 0;
out:
    free(items);
    drop_refused(&inv);
    ctl_inventory_write(&inv, inv_json);
    ctl_inventory_dispose(&inv);
    ctl_objset_dispose(&set);
    return rc;
}

/* Whether two inventory items are the same but for their drift record (docs/drift.md,
 * "Reporting"), which says what was found, not what was done. */
static bool same_item(struct json_object *a, struct json_object *b)
{
    if (!co_json_get(a, "drift", NULL) && !co_json_get(b, "drift", NULL)) {
        return co_json_equal(a, b);
    }
    struct json_object *x = co_json_copy(a), *y = co_json_copy(b);
    json_object_object_del(x, "drift");
    json_object_object_del(y, "drift");
    bool same = co_json_equal(x, y);
    json_object_put(x);
    json_object_put(y);
    return same;
}

static void report_change(const ctl_apply_opts *o,
                          const struct json_object *before,
                          const struct json_object *after)
{
    if (!o || !o->inventory_changed) {
        return;
    }
    bool arrays =
        json_object_is_type(before, json_type_array) && json_object_is_type(after, json_type_array);
    size_t n = arrays ? json_object_array_length(before) : 0;
    bool changed = !arrays || n != json_object_array_length(after);
    for (size_t i = 0; !changed && i < n; i++) {
        changed =
            !same_item(json_object_array_get_idx(before, i), json_object_array_get_idx(after, i));
    }
    *o->inventory_changed = arrays ? changed : !co_json_equal(before, after);
}

int ctl_apply(const ctl_apply_opts *o,
              struct json_object *inventory,
              struct json_object *objects,
              bool *done)
{
    engine e;
    struct json_object *before = co_json_copy(inventory);
    int rc = engine_init(&e, o);
    bool d = false;
    if (rc == 0) {
        if (!inventory || !json_object_is_type(inventory, json_type_array)) {
            rc = co_error_set(CO_EINVALID, "status.inventory: expected array");
        } else {
            rc = apply_pass(&e, inventory, objects, &d);
        }
    }
    report_change(o, before, inventory);
    if (o && o->blocked) {
        *o->blocked = rc == 0 ? e.blocked : NULL;
        if (rc == 0) {
            e.blocked = NULL;
        }
    }
    engine_dispose(&e);
    json_object_put(before);
    if (rc == 0) {
        *done = d;
    }
    return rc;
}

int ctl_apply_delete(const ctl_apply_opts *o, struct json_object *inventory, bool *done)
{
    engine e;
    struct json_object *before = co_json_copy(inventory);
    ctl_inventory inv = {NULL, 0, 0};
    int rc = engine_init(&e, o);
    int pending = 0;
    if (rc == 0 && (rc = ctl_inventory_read(&inv, inventory)) == 0) {
        prefetch(&e, &inv, true);
        rc = deletion_waves(&e, &inv, true, &pending);
        ctl_inventory_write(&inv, inventory);
    }
    if (rc == 0) {
        *done = inv.len == 0;
    }
    ctl_inventory_dispose(&inv);
    report_change(o, before, inventory);
    engine_dispose(&e);
    json_object_put(before);
    return rc;
}

int ctl_apply_deletion_allowed(const ctl_apply_opts *o,
                               struct json_object *inventory,
                               bool *allowed,
                               char **msg)
{
    engine e;
    ctl_inventory inv = {NULL, 0, 0};
    char *reason = NULL;
    int rc = engine_init(&e, o);
    if (rc < 0 || (rc = ctl_inventory_read(&inv, inventory)) < 0) {
        goto out;
    }
    for (size_t i = 0; !reason && i < o->n_additional_managed_types; i++) {
        bool used = false;
        const co_type_info *t = &o->additional_managed_types[i];
        const char *group = t->group ? t->group : "";
        const char *kind = t->kind ? t->kind : "";
        if ((rc = type_used(&e, &used, group, kind)) < 0) {
            co_error_wrap("error checking usage of type %s%s%s", kind, *group ? "." : "", group);
            goto out;
        }
        if (used) {
            reason = co_xasprintf("type %s%s%s is still in use (instances exist)", kind,
                                  *group ? "." : "", group);
        }
    }
    bool all_orphan = true;
    for (size_t i = 0; i < inv.len; i++) {
        all_orphan = all_orphan && (inv.items[i].delete_policy == CO_DELETE_ORPHAN ||
                                    inv.items[i].delete_policy == CO_DELETE_ORPHAN_ON_DELETE ||
                                    inv.items[i].mode != CO_MODE_MANAGED);
    }
    for (size_t i = 0; !reason && !all_orphan && i < inv.len; i++) {
        const ctl_item *it = &inv.items[i];
        bool crd = ctl_is_crd(it->group, it->kind), svc = ctl_is_apiservice(it->group, it->kind);
        if ((!crd && !svc) || it->mode != CO_MODE_MANAGED) {
            continue;
        }
        struct json_object *live = NULL;
        if ((rc = read_item(&e, &live, it, NULL)) < 0) {
            co_error_wrap("error retrieving %s %s", crd ? "crd" : "api service", it->name);
            goto out;
        }
        if (!live) {
            continue;
        }
        bool used = false;
        rc = crd ? crd_used(&e, &used, live, true) : apiservice_used(&e, &used, live, true);
        json_object_put(live);
        if (rc < 0) {
            co_error_wrap("error checking usage of %s %s", crd ? "crd" : "api service", it->name);
            goto out;
        }
        if (used) {
            reason = co_xasprintf("%s %s is still in use (instances exist)",
                                  crd ? "crd" : "api service", it->name);
        }
    }
out:
    ctl_inventory_dispose(&inv);
    engine_dispose(&e);
    if (rc < 0) {
        free(reason);
        return rc;
    }
    *allowed = reason == NULL;
    *msg = reason;
    return 0;
}

/* The workloads a suspension waits for: the first three named. */
typedef struct left {
    char *names;
    size_t n;
} left;

static void note_left(left *l, const ctl_item *it, int64_t running)
{
    if (l->n++ >= 3) {
        return;
    }
    char *key = ctl_item_key(it);
    char *one = running > 0 ? co_xasprintf("%s (%lld %s)", key, (long long)running,
                                           running == 1 ? "replica" : "replicas")
                            : co_xstrdup(key);
    char *next = co_xasprintf("%s%s%s", l->names ? l->names : "", l->names ? ", " : "", one);
    free(l->names);
    l->names = next;
    free(one);
    free(key);
}

/* One workload of a ScaleDown suspension: patched down unless it is; *running receives its
 * status.replicas (0 for a CronJob). *pending is set when the call had to stop before patching it.
 */
static int suspend_try(engine *e, const ctl_item *it, int64_t *running, bool *pending)
{
    struct json_object *live = NULL;
    int64_t n = 0;
    *running = 0;
    *pending = false;
    int rc = read_object(e, &live, it->group, it->version, it->kind, it->namespace, it->name);
    if (rc < 0) {
        return co_error_wrap("error reading object");
    }
    if (!live || being_deleted(live) || !owned_by_us(e, live)) {
        json_object_put(live);
        return 0;
    }
    bool scale = scalable(it->group, it->kind);
    const char *state = co_json_meta_annotation(live, CTL_ANN_SUSPENDED_STATE);
    bool down;
    if (scale) {
        down = co_json_get_int64(&n, live, "spec", "replicas", NULL) == 0 && n == 0;
    } else {
        struct json_object *sus = co_json_get(live, "spec", "suspend", NULL);
        down = sus && json_object_is_type(sus, json_type_boolean) && json_object_get_boolean(sus);
    }
    co_error_clear();
    if (!state || !down) {
        if (halted(e)) {
            *pending = true;
            json_object_put(live);
            return 0;
        }
        struct json_object *spec = json_object_new_object();
        char *rec = NULL;
        if (scale) {
            /* the API server defaults spec.replicas to 1 */
            if (co_json_get_int64(&n, live, "spec", "replicas", NULL) < 0) {
                co_error_clear();
                n = 1;
            }
            rec = co_xasprintf("{\"replicas\":%lld}", (long long)n);
            json_object_object_add(spec, "replicas", json_object_new_int64(0));
        } else {
            rec = co_xstrdup(down ? "{\"suspend\":true}" : "{\"suspend\":false}");
            json_object_object_add(spec, "suspend", json_object_new_boolean(1));
        }
        /* a workload scaled up again while suspended keeps what was recorded first */
        struct json_object *patched = NULL;
        rc = patch_workload(e, &patched, it, suspension_patch(live, spec, state ? state : rec));
        free(rec);
        if (rc < 0) {
            json_object_put(live);
            return rc;
        }
        json_object_put(live);
        live = patched;
    }
    if (scale && co_json_get_int64(&n, live, "status", "replicas", NULL) == 0) {
        *running = n;
    }
    co_error_clear();
    json_object_put(live);
    return 0;
}

static int suspend_one(engine *e, const ctl_item *it, int64_t *running, bool *pending)
{
    int rc = suspend_try(e, it, running, pending);
    for (int i = 1; rc == CO_ECONFLICT && i < SUSPENSION_TRIES; i++) {
        co_error_clear();
        rc = suspend_try(e, it, running, pending);
    }
    return rc < 0 ? wrap_item(rc, "error suspending object", it) : 0;
}

int ctl_apply_suspend(const ctl_apply_opts *o,
                      struct json_object *inventory,
                      ctl_suspension *phase,
                      char **message)
{
    engine e;
    ctl_inventory inv = {NULL, 0, 0};
    left pending = {NULL, 0}, running = {NULL, 0};
    int rc = engine_init(&e, o);
    if (rc == 0) {
        rc = ctl_inventory_read(&inv, inventory);
    }
    for (size_t i = 0; rc == 0 && i < inv.len; i++) {
        const ctl_item *it = &inv.items[i];
        if (it->mode != CO_MODE_MANAGED || !suspendable(it->group, it->kind) ||
            it->phase == CTL_PHASE_NONE || it->phase == CTL_PHASE_DELETING ||
            it->phase == CTL_PHASE_COMPLETED || it->phase == CTL_PHASE_COMPLETING) {
            continue;
        }
        int64_t n = 0;
        bool stopped = false;
        rc = suspend_one(&e, it, &n, &stopped);
        if (stopped) {
            note_left(&pending, it, 0);
        } else if (n > 0) {
            note_left(&running, it, n);
        }
    }
    if (rc == 0) {
        const left *l = pending.n ? &pending : &running;
        *phase = pending.n   ? CTL_SUSPENSION_PENDING
                 : running.n ? CTL_SUSPENSION_SUSPENDING
                             : CTL_SUSPENSION_SUSPENDED;
        if (!l->n) {
            *message = co_xstrdup("");
        } else {
            char more[48] = "";
            if (l->n > 3) {
                snprintf(more, sizeof(more), " and %zu more", l->n - 3);
            }
            *message = co_xasprintf("waiting for %s%s to %s", l->names, more,
                                    pending.n ? "be scaled down" : "scale down");
        }
    }
    free(pending.names);
    free(running.names);
    ctl_inventory_dispose(&inv);
    engine_dispose(&e);
    return rc;
}

bool ctl_apply_events_disabled(const co_component *component)
{
    const char *v = co_component_annotation(component, CTL_ANN_DISABLE_EVENTS);
    return v && !strcmp(v, "true");
}

static int engine_apply(void *ctx,
                        const ctl_apply_opts *o,
                        struct json_object *inventory,
                        struct json_object *objects,
                        bool *done)
{
    (void)ctx;
    return ctl_apply(o, inventory, objects, done);
}

static int engine_deletion_allowed(void *ctx,
                                   const ctl_apply_opts *o,
                                   struct json_object *inventory,
                                   bool *allowed,
                                   char **msg)
{
    (void)ctx;
    return ctl_apply_deletion_allowed(o, inventory, allowed, msg);
}

static int
engine_delete(void *ctx, const ctl_apply_opts *o, struct json_object *inventory, bool *done)
{
    (void)ctx;
    return ctl_apply_delete(o, inventory, done);
}

static int engine_suspend(void *ctx,
                          const ctl_apply_opts *o,
                          struct json_object *inventory,
                          ctl_suspension *phase,
                          char **message)
{
    (void)ctx;
    return ctl_apply_suspend(o, inventory, phase, message);
}

static int
engine_release(void *ctx, const ctl_apply_opts *o, struct json_object *inventory, bool *done);

ctl_apply_ops ctl_apply_engine_ops(void)
{
    ctl_apply_ops ops = {engine_apply, engine_deletion_allowed, engine_delete, NULL};
    ops.suspend = engine_suspend;
    ops.release = engine_release;
    return ops;
}

int ctl_apply_cluster_id(char **out, struct co_kube_client *local)
{
    co_kube_ref ref = {"v1", "Namespace", NULL, "kube-system"};
    struct json_object *ns = NULL;
    int rc = co_kube_get(&ns, local, &ref, NULL);
    if (rc < 0) {
        return co_error_wrap("reading namespace kube-system");
    }
    const char *uid = co_json_str(ns, "metadata", "uid", NULL);
    if (!uid || !*uid) {
        json_object_put(ns);
        return co_error_set(CO_EINVALID, "namespace kube-system has no uid");
    }
    *out = co_xstrdup(uid);
    json_object_put(ns);
    return 0;
}

/* ---- release (docs/lifecycle.md, "Unmanaged") ----------------------------------------------- */

/* The merge patch that takes our marks off @p live: the owner label, the owner and digest
 * annotations and, on a CRD or APIService, our finalizer; guarded by the resourceVersion read. */
static struct json_object *release_patch(const struct json_object *live)
{
    struct json_object *meta = json_object_new_object();
    struct json_object *labels = json_object_new_object();
    json_object_object_add(labels, CTL_LABEL_OWNER_ID, NULL);
    json_object_object_add(meta, "labels", labels);
    struct json_object *ann = json_object_new_object();
    json_object_object_add(ann, CTL_ANN_OWNER_ID, NULL);
    json_object_object_add(ann, CTL_ANN_DIGEST, NULL);
    json_object_object_add(meta, "annotations", ann);
    if (has_finalizer(live, CTL_FINALIZER)) {
        struct json_object *fins = json_object_new_array();
        struct json_object *cur = co_json_get(live, "metadata", "finalizers", NULL);
        for (size_t i = 0; i < json_object_array_length(cur); i++) {
            const char *f = json_object_get_string(json_object_array_get_idx(cur, i));
            if (f && strcmp(f, CTL_FINALIZER) != 0) {
                json_object_array_add(fins, json_object_new_string(f));
            }
        }
        json_object_object_add(meta, "finalizers", fins);
    }
    const char *rv = co_json_str(live, "metadata", "resourceVersion", NULL);
    json_object_object_add(meta, "resourceVersion", json_object_new_string(rv ? rv : ""));
    struct json_object *patch = json_object_new_object();
    json_object_object_add(patch, "metadata", meta);
    return patch;
}

/* Releases the object of @p it: it keeps everything but our marks. An object that is gone, or
 * that is no longer ours, needs nothing. The item leaves the inventory either way. */
static int release_item(engine *e, ctl_item *it)
{
    int rc = 0;
    char *lk = live_key(it->group, it->kind, it->namespace, it->name);
    char *gk = group_key(it);
    /* a consistent LIST by our owner label that did not return it: gone or not ours */
    bool unlisted = !co_strmap_get(&e->live, lk) && co_strmap_get(&e->listed, gk);
    free(gk);
    free(lk);
    for (int attempt = 0; !unlisted && attempt < 3; attempt++) {
        struct json_object *live = NULL;
        if ((rc = read_item(e, &live, it, NULL)) < 0) {
            return wrap_item(rc, "error reading object", it);
        }
        if (!live || !owned_by_us(e, live)) {
            json_object_put(live);
            break;
        }
        struct json_object *patch = release_patch(live);
        char *av = ctl_api_version(it->group, it->version);
        co_kube_ref ref = {av, it->kind, *it->namespace ? it->namespace : NULL, it->name};
        co_kube_write_options wo = {0};
        wo.field_manager = CTL_FIELD_MANAGER;
        e->st.updates++;
        rc = co_kube_patch(NULL, e->c, &ref, CO_KUBE_PATCH_MERGE, patch, &wo);
        json_object_put(patch);
        free(av);
        if (rc == 0) {
            emit(e, live, "Normal", "Released",
                 "Object released: its component no longer manages it");
        }
        json_object_put(live);
        if (rc == CO_ENOTFOUND || rc == CO_ENOMATCH) {
            co_error_clear();
            rc = 0;
        }
        if (rc != CO_ECONFLICT) {
            break;
        }
    }
    if (rc < 0) {
        return wrap_item(rc, "error releasing object", it);
    }
    it->phase = CTL_PHASE_NONE;
    return 0;
}

int ctl_apply_release(const ctl_apply_opts *o, struct json_object *inventory, bool *done)
{
    engine e;
    struct json_object *before = co_json_copy(inventory);
    ctl_inventory inv = {NULL, 0, 0};
    int rc = engine_init(&e, o);
    if (rc == 0 && (rc = ctl_inventory_read(&inv, inventory)) == 0) {
        prefetch(&e, &inv, true);
        for (size_t i = 0; i < inv.len && rc == 0 && !halted(&e); i++) {
            rc = release_item(&e, &inv.items[i]);
        }
        drop_gone(&inv);
        ctl_inventory_write(&inv, inventory);
    }
    if (rc == 0) {
        *done = inv.len == 0;
    }
    ctl_inventory_dispose(&inv);
    report_change(o, before, inventory);
    engine_dispose(&e);
    json_object_put(before);
    return rc;
}

static int
engine_release(void *ctx, const ctl_apply_opts *o, struct json_object *inventory, bool *done)
{
    (void)ctx;
    return ctl_apply_release(o, inventory, done);
}
