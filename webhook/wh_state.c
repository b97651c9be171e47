/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's cluster state. The graph lives in co_depgraph; beside it we keep the confirmed
 * dependencies of every Component (as the watch last delivered them), so that an expiring
 * tentative entry can be rolled back to exactly what the cluster holds. Tentative entries are
 * few and short-lived, so a plain array scanned on every graph-locked admission is enough.
 */
#include "webhook/wh_state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/error.h"

typedef struct pending {
    char *key;
    uint64_t expires_ms;
} pending;

struct wh_state {
    pthread_rwlock_t policies_lock;
    co_policy_set *policies;
    pthread_rwlock_t namespaces_lock;
    struct json_object *namespaces; /* name -> labels object */
    pthread_mutex_t graph_lock;
    co_depgraph *graph;
    struct json_object *confirmed; /* key -> array of dependency keys, from the watch */
    pending *pending;
    size_t npending;
    size_t cap;
    long ttl_ms;
    uint64_t (*now_ms)(void);
};

static uint64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void wh_state_new(wh_state **out, long pending_ttl_ms)
{
    wh_state *s = co_xcalloc(1, sizeof(*s));
    pthread_rwlock_init(&s->policies_lock, NULL);
    pthread_rwlock_init(&s->namespaces_lock, NULL);
    pthread_mutex_init(&s->graph_lock, NULL);
    s->policies = co_policy_set_new();
    s->graph = co_depgraph_new();
    s->namespaces = json_object_new_object();
    s->confirmed = json_object_new_object();
    s->ttl_ms = pending_ttl_ms;
    s->now_ms = monotonic_ms;
    *out = s;
}

void wh_state_free(wh_state *s)
{
    if (!s) {
        return;
    }
    for (size_t i = 0; i < s->npending; i++) {
        free(s->pending[i].key);
    }
    free(s->pending);
    co_policy_set_free(s->policies);
    co_depgraph_free(s->graph);
    json_object_put(s->namespaces);
    json_object_put(s->confirmed);
    pthread_rwlock_destroy(&s->policies_lock);
    pthread_rwlock_destroy(&s->namespaces_lock);
    pthread_mutex_destroy(&s->graph_lock);
    free(s);
}

void wh_state_set_clock(wh_state *s, uint64_t (*now_ms)(void))
{
    pthread_mutex_lock(&s->graph_lock);
    s->now_ms = now_ms ? now_ms : monotonic_ms;
    pthread_mutex_unlock(&s->graph_lock);
}

/* --- graph (graph lock held) ------------------------------------------------------------------ */

static void drop_pending(wh_state *s, const char *key)
{
    for (size_t i = 0; i < s->npending; i++) {
        if (!strcmp(s->pending[i].key, key)) {
            free(s->pending[i].key);
            s->pending[i] = s->pending[--s->npending];
            return;
        }
    }
}

/* Puts @p key back to what the watch last said about it. */
static void restore(wh_state *s, const char *key)
{
    struct json_object *deps = NULL;
    if (!json_object_object_get_ex(s->confirmed, key, &deps)) {
        co_depgraph_remove(s->graph, key);
        return;
    }
    size_t n = json_object_array_length(deps);
    const char **items = co_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        items[i] = json_object_get_string(json_object_array_get_idx(deps, i));
    }
    /* The keys were accepted when they were confirmed, so this cannot fail. */
    int rc = co_depgraph_set(s->graph, key, items, n);
    CO_ASSERT(rc == 0);
    free(items);
}

static void expire(wh_state *s)
{
    uint64_t now = s->now_ms();
    for (size_t i = 0; i < s->npending;) {
        if (s->pending[i].expires_ms <= now) {
            char *key = s->pending[i].key;
            s->pending[i] = s->pending[--s->npending];
            restore(s, key);
            free(key);
        } else {
            i++;
        }
    }
}

void wh_state_component_put(wh_state *s, const struct json_object *obj)
{
    co_depgraph_list deps = {0};
    char *key = NULL;
    if (co_depgraph_object_deps(&deps, &key, obj, NULL) < 0) {
        return;
    }
    struct json_object *arr = json_object_new_array_ext((int)(deps.len ? deps.len : 1));
    for (size_t i = 0; i < deps.len; i++) {
        json_object_array_add(arr, json_object_new_string(deps.items[i]));
    }
    pthread_mutex_lock(&s->graph_lock);
    if (co_depgraph_set(s->graph, key, (const char *const *)deps.items, deps.len) == 0) {
        json_object_object_add(s->confirmed, key, arr);
        arr = NULL;
    }
    drop_pending(s, key);
    pthread_mutex_unlock(&s->graph_lock);
    json_object_put(arr);
    co_depgraph_list_dispose(&deps);
    free(key);
}

void wh_state_component_delete(wh_state *s, const struct json_object *obj)
{
    co_depgraph_list deps = {0};
    char *key = NULL;
    if (co_depgraph_object_deps(&deps, &key, obj, NULL) < 0) {
        return;
    }
    pthread_mutex_lock(&s->graph_lock);
    co_depgraph_remove(s->graph, key);
    json_object_object_del(s->confirmed, key);
    drop_pending(s, key);
    pthread_mutex_unlock(&s->graph_lock);
    co_depgraph_list_dispose(&deps);
    free(key);
}

int wh_state_policy_put(wh_state *s, const struct json_object *obj)
{
    const char *name = co_json_meta_name(obj);
    if (!name) {
        return co_error_set(CO_EINVALID, "ComponentPolicy without metadata.name");
    }
    pthread_rwlock_wrlock(&s->policies_lock);
    int rc = co_policy_set_put(s->policies, obj);
    if (rc < 0) {
        co_policy_set_remove(s->policies, name);
    }
    pthread_rwlock_unlock(&s->policies_lock);
    return rc;
}

void wh_state_policy_delete(wh_state *s, const char *name)
{
    pthread_rwlock_wrlock(&s->policies_lock);
    co_policy_set_remove(s->policies, name);
    pthread_rwlock_unlock(&s->policies_lock);
}

void wh_state_namespace_put(wh_state *s, const struct json_object *obj)
{
    const char *name = co_json_meta_name(obj);
    if (!name) {
        return;
    }
    struct json_object *meta = NULL, *labels = NULL, *copy = NULL;
    if (json_object_object_get_ex(obj, "metadata", &meta) &&
        json_object_object_get_ex(meta, "labels", &labels) &&
        json_object_is_type(labels, json_type_object)) {
        json_object_deep_copy(labels, &copy, NULL);
    }
    if (!copy) {
        copy = json_object_new_object();
    }
    pthread_rwlock_wrlock(&s->namespaces_lock);
    json_object_object_add(s->namespaces, name, copy);
    pthread_rwlock_unlock(&s->namespaces_lock);
}

void wh_state_namespace_delete(wh_state *s, const char *name)
{
    pthread_rwlock_wrlock(&s->namespaces_lock);
    json_object_object_del(s->namespaces, name);
    pthread_rwlock_unlock(&s->namespaces_lock);
}

void wh_state_sizes(wh_state *s,
                    size_t *components,
                    size_t *policies,
                    size_t *namespaces,
                    size_t *npending)
{
    pthread_rwlock_rdlock(&s->policies_lock);
    *policies = co_policy_set_size(s->policies);
    pthread_rwlock_unlock(&s->policies_lock);
    pthread_rwlock_rdlock(&s->namespaces_lock);
    *namespaces = (size_t)json_object_object_length(s->namespaces);
    pthread_rwlock_unlock(&s->namespaces_lock);
    pthread_mutex_lock(&s->graph_lock);
    *components = co_depgraph_size(s->graph);
    *npending = s->npending;
    pthread_mutex_unlock(&s->graph_lock);
}

/* --- views ---------------------------------------------------------------------------------- */

void wh_state_enter(wh_state_view *v, wh_state *s, int with_graph)
{
    pthread_rwlock_rdlock(&s->policies_lock);
    pthread_rwlock_rdlock(&s->namespaces_lock);
    v->state = s;
    v->policies = s->policies;
    v->graph = NULL;
    if (with_graph) {
        wh_state_take_graph(v);
    }
}

void wh_state_take_graph(wh_state_view *v)
{
    wh_state *s = v->state;
    if (!v->graph) {
        pthread_mutex_lock(&s->graph_lock);
        expire(s);
        v->graph = s->graph;
    }
}

void wh_state_leave(wh_state_view *v)
{
    wh_state *s = v->state;
    if (v->graph) {
        pthread_mutex_unlock(&s->graph_lock);
    }
    pthread_rwlock_unlock(&s->namespaces_lock);
    pthread_rwlock_unlock(&s->policies_lock);
    v->state = NULL;
    v->policies = NULL;
    v->graph = NULL;
}

const struct json_object *wh_state_namespace_labels(wh_state_view *v, const char *ns)
{
    struct json_object *labels = NULL;
    if (!ns || !json_object_object_get_ex(v->state->namespaces, ns, &labels)) {
        return NULL;
    }
    return labels;
}

int wh_state_pending_set(wh_state_view *v, const char *key, const char *const *deps, size_t ndeps)
{
    wh_state *s = v->state;
    CO_ASSERT(v->graph != NULL);
    int rc = co_depgraph_set(s->graph, key, deps, ndeps);
    if (rc < 0) {
        return rc;
    }
    uint64_t expires = s->now_ms() + (uint64_t)(s->ttl_ms > 0 ? s->ttl_ms : 0);
    for (size_t i = 0; i < s->npending; i++) {
        if (!strcmp(s->pending[i].key, key)) {
            s->pending[i].expires_ms = expires;
            return 0;
        }
    }
    if (s->npending == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->pending = co_xreallocarray(s->pending, s->cap, sizeof(*s->pending));
    }
    s->pending[s->npending].key = co_xstrdup(key);
    s->pending[s->npending].expires_ms = expires;
    s->npending++;
    return 0;
}
