/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference index and the metadata-only Secret watch (see ctl_refwatch.h and
 * docs/refwatch.md). The index is two maps under one lock: referenced object -> Components, and
 * Component -> its references (to undo them when it changes). The watch is one informer per
 * watched namespace, or one for all; a starter thread brings it up once the index holds a
 * reference, so that a cluster whose Components reference no Secret sees no request of it.
 */
#include "controller/ctl_refwatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/strmap.h"
#include "co/util/thread.h"

#define REF_KIND         "Secret"
#define DEFAULT_RETRY_NS (30 * CO_SECOND)
/* how long the starter waits for the first list of a Secret informer, in steps of a second */
#define SYNC_WAIT_MS 120000L

/* ---- the reference index ------------------------------------------------------------------- */

struct ctl_refindex {
    pthread_mutex_t mu;
    co_strmap by_ref;  /* "Secret/ns/name" -> co_kube_keys * of Components, sorted */
    co_strmap by_comp; /* "ns/name" -> co_kube_keys * of references */
};

ctl_refindex *ctl_refindex_new(void)
{
    ctl_refindex *idx = co_xcalloc(1, sizeof(*idx));
    pthread_mutex_init(&idx->mu, NULL);
    idx->by_ref = (co_strmap)CO_STRMAP_INIT;
    idx->by_comp = (co_strmap)CO_STRMAP_INIT;
    return idx;
}

static void keys_free(co_kube_keys *k)
{
    if (k) {
        co_kube_keys_dispose(k);
        free(k);
    }
}

static void map_free(co_strmap *map)
{
    const char *key = NULL;
    void *value = NULL;
    for (size_t it = 0; co_strmap_next(map, &it, &key, &value);) {
        keys_free(value);
    }
    co_strmap_dispose(map);
}

void ctl_refindex_free(ctl_refindex *idx)
{
    if (!idx) {
        return;
    }
    map_free(&idx->by_ref);
    map_free(&idx->by_comp);
    pthread_mutex_destroy(&idx->mu);
    free(idx);
}

static void add_ref(co_kube_keys *out, const char *ns, struct json_object *name)
{
    const char *n =
        name && json_object_is_type(name, json_type_string) ? json_object_get_string(name) : NULL;
    if (n && *n) {
        char *k = co_xasprintf("%s/%s/%s", REF_KIND, ns, n);
        co_kube_keys_add(out, k);
        free(k);
    }
}

void ctl_refindex_refs_of(co_kube_keys *out, const struct json_object *component)
{
    const char *ns = co_json_meta_namespace(component);
    struct json_object *spec = co_json_get(component, "spec", NULL);
    if (!ns || !*ns || !spec) {
        return;
    }
    struct json_object *vf = co_json_get(spec, "valuesFrom", NULL);
    size_t n = vf && json_object_is_type(vf, json_type_array) ? json_object_array_length(vf) : 0;
    for (size_t i = 0; i < n; i++) {
        add_ref(out, ns, co_json_get(json_object_array_get_idx(vf, i), "name", NULL));
    }
    add_ref(out, ns, co_json_get(spec, "kubeConfig", "secretRef", "name", NULL));
    add_ref(out, ns, co_json_get(spec, "decryption", "secretRef", "name", NULL));
    struct json_object *sf = co_json_get(spec, "postBuild", "substituteFrom", NULL);
    n = sf && json_object_is_type(sf, json_type_array) ? json_object_array_length(sf) : 0;
    for (size_t i = 0; i < n; i++) {
        add_ref(out, ns, co_json_get(json_object_array_get_idx(sf, i), "name", NULL));
    }
}

/* Removes @p key from a sorted-free key list; says whether the list is empty afterwards. */
static bool keys_drop(co_kube_keys *k, const char *key)
{
    for (size_t i = 0; i < k->len; i++) {
        if (strcmp(k->items[i], key) == 0) {
            free(k->items[i]);
            memmove(&k->items[i], &k->items[i + 1], (k->len - i - 1) * sizeof(char *));
            k->len--;
            break;
        }
    }
    return k->len == 0;
}

/* lock held */
static void remove_locked(ctl_refindex *idx, const char *component)
{
    co_kube_keys *refs = co_strmap_remove(&idx->by_comp, component);
    for (size_t i = 0; refs && i < refs->len; i++) {
        co_kube_keys *comps = co_strmap_get(&idx->by_ref, refs->items[i]);
        if (comps && keys_drop(comps, component)) {
            keys_free(co_strmap_remove(&idx->by_ref, refs->items[i]));
        }
    }
    keys_free(refs);
}

void ctl_refindex_set(ctl_refindex *idx, const char *component, const co_kube_keys *refs)
{
    pthread_mutex_lock(&idx->mu);
    remove_locked(idx, component);
    if (refs->len > 0) {
        co_kube_keys *mine = co_xcalloc(1, sizeof(*mine));
        for (size_t i = 0; i < refs->len; i++) {
            co_kube_keys_add(mine, refs->items[i]);
            co_kube_keys *comps = co_strmap_get(&idx->by_ref, refs->items[i]);
            if (!comps) {
                comps = co_xcalloc(1, sizeof(*comps));
                co_strmap_put(&idx->by_ref, refs->items[i], comps);
            }
            co_kube_keys_add(comps, component);
        }
        co_strmap_put(&idx->by_comp, component, mine);
    }
    pthread_mutex_unlock(&idx->mu);
}

void ctl_refindex_remove(ctl_refindex *idx, const char *component)
{
    pthread_mutex_lock(&idx->mu);
    remove_locked(idx, component);
    pthread_mutex_unlock(&idx->mu);
}

bool ctl_refindex_referenced(ctl_refindex *idx, const char *ref)
{
    pthread_mutex_lock(&idx->mu);
    bool found = co_strmap_get(&idx->by_ref, ref) != NULL;
    pthread_mutex_unlock(&idx->mu);
    return found;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void ctl_refindex_referrers(co_kube_keys *out, ctl_refindex *idx, const char *ref)
{
    size_t from = out->len;
    pthread_mutex_lock(&idx->mu);
    co_kube_keys *comps = co_strmap_get(&idx->by_ref, ref);
    for (size_t i = 0; comps && i < comps->len; i++) {
        co_kube_keys_add(out, comps->items[i]);
    }
    pthread_mutex_unlock(&idx->mu);
    if (out->len > from) {
        qsort(&out->items[from], out->len - from, sizeof(char *), by_text);
    }
}

size_t ctl_refindex_len(ctl_refindex *idx)
{
    pthread_mutex_lock(&idx->mu);
    size_t n = co_strmap_len(&idx->by_ref);
    pthread_mutex_unlock(&idx->mu);
    return n;
}

/* ---- the watch ----------------------------------------------------------------------------- */

struct ctl_refwatch {
    co_kube_client *client;
    char **namespaces;
    size_t nnamespaces;
    ctl_refwatch_enqueue_fn enqueue;
    void *ctx;
    int64_t retry_ns;
    ctl_refindex *index;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool armed;    /* a reference exists: the starter may go on (mu) */
    bool stopping; /* (mu) */
    bool thread_on;
    pthread_t thread;
    /* written by the starter before `watching` is set, read by others only after it is */
    co_kube_informer **inf;
    size_t ninf;
    atomic_bool watching;
    atomic_bool refused;
    atomic_bool stopped;
    atomic_ulong changes, requeues;
};

int ctl_refwatch_new(ctl_refwatch **out, const ctl_refwatch_options *opts)
{
    if (!opts || !opts->client || !opts->enqueue) {
        return co_error_set(CO_EINVALID, "the reference watch needs a client and a queue");
    }
    ctl_refwatch *rw = co_xcalloc(1, sizeof(*rw));
    rw->client = opts->client;
    rw->nnamespaces = opts->nnamespaces;
    rw->namespaces = co_xcalloc(opts->nnamespaces + 1, sizeof(char *));
    for (size_t i = 0; i < opts->nnamespaces; i++) {
        rw->namespaces[i] = co_xstrdup(opts->namespaces[i]);
    }
    rw->enqueue = opts->enqueue;
    rw->ctx = opts->ctx;
    rw->retry_ns = opts->retry_ns > 0 ? opts->retry_ns : DEFAULT_RETRY_NS;
    rw->index = ctl_refindex_new();
    pthread_mutex_init(&rw->mu, NULL);
    co_cond_init_monotonic(&rw->cv);
    *out = rw;
    return 0;
}

static char *component_key(const struct json_object *component)
{
    const char *ns = co_json_meta_namespace(component);
    const char *name = co_json_meta_name(component);
    return ns && *ns && name && *name ? co_xasprintf("%s/%s", ns, name) : NULL;
}

void ctl_refwatch_component_set(ctl_refwatch *rw, const struct json_object *component)
{
    char *key = component_key(component);
    if (!key) {
        return;
    }
    co_kube_keys refs = {0};
    ctl_refindex_refs_of(&refs, component);
    ctl_refindex_set(rw->index, key, &refs);
    if (refs.len > 0) {
        pthread_mutex_lock(&rw->mu);
        if (!rw->armed) {
            rw->armed = true;
            pthread_cond_broadcast(&rw->cv);
        }
        pthread_mutex_unlock(&rw->mu);
    }
    co_kube_keys_dispose(&refs);
    free(key);
}

void ctl_refwatch_component_remove(ctl_refwatch *rw, const struct json_object *component)
{
    char *key = component_key(component);
    if (key) {
        ctl_refindex_remove(rw->index, key);
        free(key);
    }
}

/* "Secret/<ns>/<name>" of a Secret's metadata, or NULL. */
static char *ref_key(const struct json_object *obj)
{
    const char *ns = co_json_meta_namespace(obj);
    const char *name = co_json_meta_name(obj);
    return ns && name ? co_xasprintf("%s/%s/%s", REF_KIND, ns, name) : NULL;
}

/* Only referenced Secrets enter a store: the store is the last resourceVersion of each, which
 * tells a change from a relist that found the Secret as it was. */
static bool admit(const struct json_object *obj, void *payload)
{
    ctl_refwatch *rw = payload;
    char *key = ref_key(obj);
    bool ok = key && ctl_refindex_referenced(rw->index, key);
    free(key);
    return ok;
}

/* What is stored of a Secret: its name, namespace, uid and resourceVersion. Annotations go too:
 * one written by `kubectl apply` holds the whole object, data included. The metadata is trimmed
 * in place (the informer holds it). */
static void trim(struct json_object *obj, void *payload)
{
    (void)payload;
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    if (!meta || !json_object_is_type(meta, json_type_object)) {
        return;
    }
    co_kube_keys drop = {0};
    json_object_object_foreach (meta, k, v) {
        (void)v;
        if (strcmp(k, "name") != 0 && strcmp(k, "namespace") != 0 && strcmp(k, "uid") != 0 &&
            strcmp(k, "resourceVersion") != 0) {
            co_kube_keys_add(&drop, k);
        }
    }
    for (size_t i = 0; i < drop.len; i++) {
        json_object_object_del(meta, drop.items[i]);
    }
    co_kube_keys_dispose(&drop);
}

static void requeue_referrers(ctl_refwatch *rw, const struct json_object *obj)
{
    char *key = ref_key(obj);
    if (!key) {
        return;
    }
    co_kube_keys comps = {0};
    ctl_refindex_referrers(&comps, rw->index, key);
    if (comps.len > 0) {
        atomic_fetch_add(&rw->changes, 1);
    }
    for (size_t i = 0; i < comps.len; i++) {
        rw->enqueue(rw->ctx, comps.items[i]);
        atomic_fetch_add(&rw->requeues, 1);
    }
    co_kube_keys_dispose(&comps);
    free(key);
}

/* The informer whose thread runs a handler: its first list is the state the Components were
 * reconciled against at start (they are all queued then), not a change. */
static bool first_list(ctl_refwatch *rw, const struct json_object *obj)
{
    const char *ns = co_json_meta_namespace(obj);
    for (size_t i = 0; i < rw->ninf; i++) {
        if (rw->nnamespaces == 0 || (ns && strcmp(rw->namespaces[i], ns) == 0)) {
            return !co_kube_informer_has_synced(rw->inf[i]);
        }
    }
    return false;
}

/* A referenced Secret created, or changed while it was not stored (first referenced since it
 * was last seen), or found by a relist after a 410 Gone. */
static void on_add(const struct json_object *obj, void *payload)
{
    ctl_refwatch *rw = payload;
    if (!first_list(rw, obj)) {
        requeue_referrers(rw, obj);
    }
}

/* The informer hands over updates only when the resourceVersion moved. */
static void
on_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    (void)old_obj;
    requeue_referrers(payload, new_obj);
}

static void on_delete(const struct json_object *obj, void *payload)
{
    requeue_referrers(payload, obj);
}

/* Whether the controller may list and watch Secrets in @p ns (NULL: all namespaces). */
static int may_watch(ctl_refwatch *rw, bool *out, const char *ns)
{
    static const char *const verbs[] = {"list", "watch"};
    *out = true;
    for (size_t i = 0; i < 2 && *out; i++) {
        struct json_object *ssar = json_object_new_object();
        struct json_object *spec = json_object_new_object();
        struct json_object *attrs = json_object_new_object();
        json_object_object_add(ssar, "apiVersion",
                               json_object_new_string("authorization.k8s.io/v1"));
        json_object_object_add(ssar, "kind", json_object_new_string("SelfSubjectAccessReview"));
        json_object_object_add(attrs, "group", json_object_new_string(""));
        json_object_object_add(attrs, "resource", json_object_new_string("secrets"));
        json_object_object_add(attrs, "verb", json_object_new_string(verbs[i]));
        json_object_object_add(spec, "resourceAttributes", attrs);
        json_object_object_add(ssar, "spec", spec);
        if (ns) {
            json_object_object_add(attrs, "namespace", json_object_new_string(ns));
        }
        struct json_object *res = NULL;
        int rc = co_kube_create(&res, rw->client, ssar, NULL);
        json_object_put(ssar);
        if (rc < 0) {
            return rc;
        }
        struct json_object *allowed = co_json_get(res, "status", "allowed", NULL);
        *out = allowed && json_object_is_type(allowed, json_type_boolean) &&
               json_object_get_boolean(allowed);
        json_object_put(res);
    }
    return 0;
}

/* Waits up to @p ns or until stopped; says whether it was stopped. */
static bool pause_or_stop(ctl_refwatch *rw, int64_t ns)
{
    pthread_mutex_lock(&rw->mu);
    struct timespec ts = co_monotonic_deadline_ns(ns);
    while (!rw->stopping && pthread_cond_timedwait(&rw->cv, &rw->mu, &ts) == 0) {
    }
    bool stop = rw->stopping;
    pthread_mutex_unlock(&rw->mu);
    return stop;
}

static int start_informers(ctl_refwatch *rw, co_kube_informer **inf, size_t ninf)
{
    for (size_t i = 0; i < ninf; i++) {
        co_kube_informer_options io = {0};
        io.api_version = "v1";
        io.kind = REF_KIND;
        io.namespace = rw->nnamespaces ? rw->namespaces[i] : NULL;
        io.strip_managed_fields = 1;
        io.metadata_only = 1;
        io.admit = admit;
        io.admit_payload = rw;
        io.transform = trim;
        co_kube_handlers h = {on_add, on_update, on_delete, rw};
        int rc;
        if ((rc = co_kube_informer_new(&inf[i], rw->client, &io)) < 0 ||
            (rc = co_kube_informer_add_handlers(inf[i], &h)) < 0) {
            return rc;
        }
    }
    /* every handler may look at every informer (first_list): all exist before any runs */
    rw->inf = inf;
    rw->ninf = ninf;
    for (size_t i = 0; i < ninf; i++) {
        int rc = co_kube_informer_start(inf[i]);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static void *starter(void *arg)
{
    ctl_refwatch *rw = arg;
    pthread_mutex_lock(&rw->mu);
    while (!rw->stopping && !rw->armed) {
        pthread_cond_wait(&rw->cv, &rw->mu);
    }
    bool stop = rw->stopping;
    pthread_mutex_unlock(&rw->mu);
    size_t ninf = rw->nnamespaces ? rw->nnamespaces : 1;
    /* the permission check, again after a failure other than a refusal */
    while (!stop) {
        bool allowed = true;
        int rc = 0;
        for (size_t i = 0; i < ninf && allowed && rc == 0; i++) {
            rc = may_watch(rw, &allowed, rw->nnamespaces ? rw->namespaces[i] : NULL);
        }
        if (rc == 0 && !allowed) {
            atomic_store(&rw->refused, true);
            co_log(CO_LOG_WARN,
                   "the controller may not list and watch Secrets: Components are reconciled on "
                   "changes of the Secrets they reference at their requeue interval only",
                   NULL);
            return NULL;
        }
        if (rc == 0) {
            break;
        }
        co_log(CO_LOG_WARN, "cannot check the permission to watch Secrets; trying again", "error",
               co_error_last(), NULL);
        co_error_clear();
        stop = pause_or_stop(rw, rw->retry_ns);
    }
    if (stop) {
        return NULL;
    }
    co_kube_informer **inf = co_xcalloc(ninf, sizeof(co_kube_informer *));
    if (start_informers(rw, inf, ninf) < 0) {
        co_log(CO_LOG_WARN, "cannot watch Secrets", "error", co_error_last(), NULL);
        co_error_clear();
        if (!rw->inf) {
            for (size_t i = 0; i < ninf; i++) {
                co_kube_informer_free(inf[i]);
            }
            free(inf);
        }
        return NULL;
    }
    for (size_t i = 0; i < ninf; i++) {
        for (long waited = 0; waited < SYNC_WAIT_MS && !pause_or_stop(rw, 0); waited += 1000) {
            if (co_kube_informer_wait_synced(inf[i], 1000) == 0) {
                break;
            }
            co_error_clear();
        }
    }
    atomic_store(&rw->watching, true);
    co_log(CO_LOG_INFO, "Secrets referenced by Components are watched (metadata only)", NULL);
    return NULL;
}

int ctl_refwatch_start(ctl_refwatch *rw)
{
    pthread_mutex_lock(&rw->mu);
    int rc = 0;
    if (!rw->thread_on && !rw->stopping) {
        rw->thread_on = pthread_create(&rw->thread, NULL, starter, rw) == 0;
        if (!rw->thread_on) {
            rc = co_error_set(CO_ERROR, "cannot start the reference watch");
        }
    }
    pthread_mutex_unlock(&rw->mu);
    return rc;
}

bool ctl_refwatch_wait_watching(ctl_refwatch *rw, long timeout_ms)
{
    for (long waited = 0; waited <= timeout_ms; waited += 50) {
        if (atomic_load(&rw->watching)) {
            return true;
        }
        if (pause_or_stop(rw, 50 * CO_MILLISECOND)) {
            break;
        }
    }
    return atomic_load(&rw->watching);
}

void ctl_refwatch_stop(ctl_refwatch *rw)
{
    if (!rw || atomic_exchange(&rw->stopped, true)) {
        return;
    }
    pthread_mutex_lock(&rw->mu);
    rw->stopping = true;
    pthread_cond_broadcast(&rw->cv);
    bool joined = rw->thread_on;
    pthread_mutex_unlock(&rw->mu);
    if (joined) {
        pthread_join(rw->thread, NULL);
    }
    /* the starter is gone: nothing writes inf any more */
    for (size_t i = 0; i < rw->ninf; i++) {
        co_kube_informer_stop(rw->inf[i]);
    }
}

void ctl_refwatch_free(ctl_refwatch *rw)
{
    if (!rw) {
        return;
    }
    ctl_refwatch_stop(rw);
    for (size_t i = 0; i < rw->ninf; i++) {
        co_kube_informer_free(rw->inf[i]);
    }
    free(rw->inf);
    for (size_t i = 0; i < rw->nnamespaces; i++) {
        free(rw->namespaces[i]);
    }
    free(rw->namespaces);
    ctl_refindex_free(rw->index);
    pthread_mutex_destroy(&rw->mu);
    pthread_cond_destroy(&rw->cv);
    free(rw);
}

void ctl_refwatch_stats_get(ctl_refwatch_stats *out, ctl_refwatch *rw)
{
    *out = (ctl_refwatch_stats){0};
    out->watching = atomic_load(&rw->watching);
    out->refused = atomic_load(&rw->refused);
    out->referenced = ctl_refindex_len(rw->index);
    out->changes = atomic_load(&rw->changes);
    out->requeues = atomic_load(&rw->requeues);
    if (out->watching) {
        for (size_t i = 0; i < rw->ninf; i++) {
            out->stored += co_kube_informer_len(rw->inf[i]);
        }
    }
}
