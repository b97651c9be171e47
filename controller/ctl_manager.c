/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager (see ctl_manager.h). Informer handlers only decide which keys to queue; all
 * work happens on the worker threads. The local client sends through a counting transport so
 * that requests per method (component_operator_runtime_requests_total) and status writes can
 * be reported. The dependency graph of the watched Components (co/api/depgraph.h) follows the
 * Component informers; dependants and cycles are looked up in it.
 */
#include "controller/ctl_manager.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/util/buf.h"
#include "co/util/caps.h"
#include "co/api/component.h"
#include "co/api/depgraph.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_event.h"
#include "co/kube/kube_informer.h"
#include "co/kube/kube_lease.h"
#include "co/kube/kube_transport.h"
#include "co/util/log.h"
#include "co/util/metrics.h"
#include "co/api/policy.h"
#include "co/util/time.h"
#include "controller/ctl_http.h"
#include "controller/ctl_notify.h"
#include "controller/ctl_queue.h"
#include "controller/ctl_state.h"
#include "controller/ctl_targets.h"

#define COMPONENT_API   "core.cs.sap.com/v1alpha1"
#define FLUX_API        "source.toolkit.fluxcd.io/v1"
#define CONTROLLER      "component"
#define EVENT_DEDUP_NS  ((int64_t)5 * 60 * 1000000000)
#define SYNC_TIMEOUT_MS 120000L
/* how often a controller started before the ComponentPolicy or Flux CRDs looks for them again */
#define CRD_PROBE_NS (30 * CO_SECOND)
#define MAX_WORKERS  1000

static const char *const FLUX_KINDS[][2] = {
    {"fluxGitRepository", "GitRepository"},
    {"fluxOciRepository", "OCIRepository"},
    {"fluxBucket", "Bucket"},
    {"fluxHelmChart", "HelmChart"},
};
#define NFLUX 4

static const char *const STATES[] = {CTL_STATE_READY,      CTL_STATE_PENDING,
                                     CTL_STATE_PROCESSING, CTL_STATE_DELETION_PENDING,
                                     CTL_STATE_DELETING,   CTL_STATE_ERROR};
#define NSTATES 6

/* ---- counting transport ------------------------------------------------------------------ */

typedef struct counting_transport {
    co_kube_transport base;
    co_kube_transport *inner;
    struct ctl_manager *m;
} counting_transport;

/* ---- events de-duplication --------------------------------------------------------------- */

typedef struct last_event {
    char *uid;
    char *text; /* type \n reason \n message */
    int64_t at;
    struct last_event *next;
} last_event;

struct ctl_manager {
    ctl_manager_options opts;
    char **namespaces;
    size_t nnamespaces;
    char *label_selector;
    char *leader_namespace;
    char *identity;
    char *default_sa;

    co_kube_config *cfg;
    co_kube_client *client;
    char *cluster_id;

    co_kube_informer **comp_inf; /* one per namespace, or one for all */
    size_t ncomp_inf;
    co_kube_informer *flux_inf[NFLUX]; /* Flux sources, per kind the cluster serves */
    co_kube_informer *policy_inf;      /* ComponentPolicies, when the CRD is served */
    pthread_mutex_t crd_mu;            /* guards flux_inf, policy_inf and the prober below */
    pthread_cond_t crd_cv;             /* wakes the prober when the manager stops */
    pthread_t crd_prober;              /* looks for the CRDs above when installed late */
    bool crd_prober_on;
    atomic_bool crd_stop;
    int64_t crd_probe_ns; /* the interval between looks */

    pthread_mutex_t graph_mu; /* guards graph */
    co_depgraph *graph;       /* dependencies of the watched Components */

    ctl_queue *queue;
    ctl_backoff *backoff;
    ctl_targets *targets;
    co_kube_recorder *recorder;
    ctl_notify *notify; /* --events-address, or NULL */
    co_kube_leader *leader;
    ctl_http *metrics_http, *probe_http;
    co_metrics *metrics;
    co_metric *m_reconcile_total, *m_reconcile_errors, *m_requests, *m_created_clients,
        *m_active_clients, *m_state, *m_dependents, *m_unready, *m_cr_total, *m_cr_errors,
        *m_cr_time, *m_cr_workers, *m_cr_active, *m_wq_depth, *m_wq_adds, *m_wq_retries,
        *m_wq_unfinished, *m_wq_longest, *m_rest_requests, *m_leader, *m_operations;
    char *rest_host; /* host:port of the API server, for rest_client_requests_total */
    co_series *wq_queue_duration, *wq_work_duration;

    ctl_env env;
    ctl_source_ops source;
    ctl_apply_ops apply;
    ctl_release_fn release; /* set before start, read-only afterwards */
    void *release_ctx;

    pthread_t *workers;
    size_t nworkers;
    pthread_mutex_t mu;
    atomic_bool leading;
    atomic_bool lost;
    atomic_bool synced;
    atomic_bool started;
    atomic_bool stopped;
    atomic_bool warned_dependants; /* a narrow search for dependants was logged */

    pthread_mutex_t ev_mu;
    last_event *events;

    atomic_ulong n_event_writes;
    atomic_ulong n_requests, n_writes, n_status_writes, n_reconciles, n_reconcile_errors,
        n_events_suppressed;
};

static int
counting_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    counting_transport *t = (counting_transport *)self;
    ctl_manager *m = t->m;
    atomic_fetch_add(&m->n_requests, 1);
    if (strcmp(req->method, "GET") != 0) {
        atomic_fetch_add(&m->n_writes, 1);
        const char *st = strstr(req->path, "/status");
        if (strcmp(req->method, "PUT") == 0 && strstr(req->path, "/components/") && st &&
            (st[7] == '\0' || st[7] == '?')) {
            atomic_fetch_add(&m->n_status_writes, 1);
        } else if (strstr(req->path, "/events")) {
            atomic_fetch_add(&m->n_event_writes, 1);
        }
    }
    if (m->m_requests) {
        const char *lv[] = {CONTROLLER, req->method};
        co_metric_inc(m->m_requests, lv);
    }
    int rc = t->inner->send(t->inner, req, resp);
    if (m->m_rest_requests) {
        /* client-go's rest_client_requests_total: "<error>" when no answer came */
        char code[16] = "<error>";
        if (resp->status > 0) {
            snprintf(code, sizeof(code), "%d", resp->status);
        }
        const char *lv[] = {code, m->rest_host ? m->rest_host : "", req->method};
        co_metric_inc(m->m_rest_requests, lv);
    }
    return rc;
}

static void counting_free(co_kube_transport *self)
{
    counting_transport *t = (counting_transport *)self;
    t->inner->free(t->inner);
    free(t);
}

/* ---- helpers ----------------------------------------------------------------------------- */

static const char *str_at(const struct json_object *obj, const char *key)
{
    struct json_object *v = NULL;
    if (!obj || !json_object_is_type(obj, json_type_object) ||
        !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string)) {
        return NULL;
    }
    return json_object_get_string(v);
}

static co_kube_informer *informer_for(ctl_manager *m, const char *ns)
{
    if (m->nnamespaces == 0) {
        return m->ncomp_inf ? m->comp_inf[0] : NULL;
    }
    for (size_t i = 0; i < m->nnamespaces; i++) {
        if (strcmp(m->namespaces[i], ns) == 0) {
            return m->comp_inf[i];
        }
    }
    return NULL;
}

void ctl_manager_enqueue(ctl_manager *m, const char *ns, const char *name)
{
    char *key = co_xasprintf("%s/%s", ns, name);
    ctl_queue_add(m->queue, key);
    free(key);
}

static void enqueue_key(ctl_manager *m, const char *key)
{
    ctl_queue_add(m->queue, key);
}

static void enqueue_obj(ctl_manager *m, const struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (key) {
        enqueue_key(m, key);
        free(key);
    }
}

/* Dependency keys "ns/name" of a Component object (namespace defaulted); none when the object
 * has no namespace or name. */
static void dependency_keys(co_depgraph_list *out, const struct json_object *obj)
{
    if (co_depgraph_object_deps(out, NULL, obj, NULL) < 0) {
        co_error_clear();
        *out = (co_depgraph_list){NULL, 0};
    }
}

/* Follows a Component's dependencies in the graph (a Component that is not one is left out). */
static void graph_set(ctl_manager *m, const struct json_object *obj)
{
    pthread_mutex_lock(&m->graph_mu);
    if (co_depgraph_set_object(m->graph, obj, NULL) < 0) {
        co_error_clear();
    }
    pthread_mutex_unlock(&m->graph_mu);
}

static void graph_remove(ctl_manager *m, const struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (key) {
        pthread_mutex_lock(&m->graph_mu);
        co_depgraph_remove(m->graph, key);
        pthread_mutex_unlock(&m->graph_mu);
        free(key);
    }
}

/* The watched Components that list @p key as a dependency. */
static void graph_dependents(ctl_manager *m, const char *key, co_depgraph_list *out)
{
    pthread_mutex_lock(&m->graph_mu);
    CO_ASSERT(co_depgraph_dependents(out, m->graph, key) == 0);
    pthread_mutex_unlock(&m->graph_mu);
}

/* "<Kind>/<ns>/<name>" of a Flux sourceRef, or NULL. */
static char *flux_source_key(const struct json_object *obj)
{
    struct json_object *sr = co_json_get(obj, "spec", "sourceRef", NULL);
    const char *ns = str_at(co_json_get(obj, "metadata", NULL), "namespace");
    for (size_t i = 0; i < NFLUX; i++) {
        struct json_object *v = co_json_get(sr, FLUX_KINDS[i][0], NULL);
        const char *n = str_at(v, "name");
        if (n) {
            const char *sns = str_at(v, "namespace");
            return co_xasprintf("%s/%s/%s", FLUX_KINDS[i][1], sns && *sns ? sns : ns ? ns : "", n);
        }
    }
    return NULL;
}

/* "group/kind/namespace/name" of an inventory item; the one key format of the inventory index. */
static char *inventory_key(const char *group, const char *kind, const char *ns, const char *name)
{
    return co_xasprintf("%s/%s/%s/%s", group ? group : "", kind ? kind : "", ns ? ns : "",
                        name ? name : "");
}

/* The objects a Component deploying into this cluster lists in its inventory, so that another
 * Component cannot adopt them (ctl_claim_fn). */
static int index_inventory(co_kube_keys *out, const struct json_object *obj, void *payload)
{
    (void)payload;
    if (co_json_get(obj, "spec", "kubeConfig", NULL)) {
        return 0;
    }
    struct json_object *inv = co_json_get(obj, "status", "inventory", NULL);
    size_t n = inv && json_object_is_type(inv, json_type_array) ? json_object_array_length(inv) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *it = json_object_array_get_idx(inv, i);
        char *k = inventory_key(str_at(it, "group"), str_at(it, "kind"), str_at(it, "namespace"),
                                str_at(it, "name"));
        co_kube_keys_add(out, k);
        free(k);
    }
    return 0;
}

static int index_source(co_kube_keys *out, const struct json_object *obj, void *payload)
{
    (void)payload;
    char *k = flux_source_key(obj);
    if (k) {
        co_kube_keys_add(out, k);
        free(k);
    }
    return 0;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_json(const struct json_object *a, const struct json_object *b)
{
    return (!a && !b) || (a && b && co_json_equal(a, b));
}

/* Every cached Component for which @p want holds (all of them when @p want is NULL). */
static void enqueue_components(ctl_manager *m, bool (*want)(const struct json_object *component))
{
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        struct json_object *all = NULL;
        if (co_kube_informer_list(&all, m->comp_inf[i], NULL) < 0) {
            co_error_clear();
            continue;
        }
        size_t n = json_object_array_length(all);
        for (size_t j = 0; j < n; j++) {
            struct json_object *c = json_object_array_get_idx(all, j);
            if (!want || want(c)) {
                enqueue_obj(m, c);
            }
        }
        json_object_put(all);
    }
}

static bool in_dependency_cycle(const struct json_object *component)
{
    return strcmp(ctl_state_reason(co_json_get(component, "status", NULL)),
                  CTL_REASON_DEPENDENCY_CYCLE) == 0;
}

/* Every cached Component in Error/DependencyCycle: a dependency change may have broken the
 * cycle they are on. */
static void enqueue_cycle_members(ctl_manager *m)
{
    enqueue_components(m, in_dependency_cycle);
}

static void enqueue_dependants(ctl_manager *m, const struct json_object *obj)
{
    char *key = co_kube_informer_key_of(obj);
    if (!key) {
        return;
    }
    co_depgraph_list keys = {NULL, 0};
    graph_dependents(m, key, &keys);
    for (size_t i = 0; i < keys.len; i++) {
        enqueue_key(m, keys.items[i]);
    }
    co_depgraph_list_dispose(&keys);
    free(key);
}

/* ---- Component handlers ------------------------------------------------------------------ */

/* The source of @p obj need not be followed any more (polling stops at once, not when the last
 * reconcile of the Component happens to run). */
static void release_obj(ctl_manager *m, const struct json_object *obj)
{
    struct json_object *meta = co_json_get(obj, "metadata", NULL);
    const char *ns = str_at(meta, "namespace");
    const char *name = str_at(meta, "name");
    if (m->release && ns && name) {
        m->release(m->release_ctx, ns, name);
    }
}

static void on_comp_add(const struct json_object *obj, void *payload)
{
    graph_set(payload, obj);
    enqueue_obj(payload, obj);
}

static void
on_comp_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    ctl_manager *m = payload;
    struct json_object *om = co_json_get(old_obj, "metadata", NULL);
    struct json_object *nm = co_json_get(new_obj, "metadata", NULL);
    int64_t og = 0, ng = 0;
    if (co_json_get_int64(&og, om, "generation", NULL) < 0) {
        og = -1;
    }
    if (co_json_get_int64(&ng, nm, "generation", NULL) < 0) {
        ng = -1;
    }
    /* the framework's predicate: generation or annotations changed (status writes do not
     * retrigger); deletion and finalizer changes come with a generation bump or matter to
     * the deletion flow */
    if (og != ng ||
        !same_json(co_json_get(om, "annotations", NULL), co_json_get(nm, "annotations", NULL)) ||
        !same_str(str_at(om, "deletionTimestamp"), str_at(nm, "deletionTimestamp")) ||
        !same_json(co_json_get(om, "finalizers", NULL), co_json_get(nm, "finalizers", NULL))) {
        enqueue_obj(m, new_obj);
    }
    if (!str_at(om, "deletionTimestamp") && str_at(nm, "deletionTimestamp")) {
        release_obj(m, new_obj); /* a Component being deleted never reads its source again */
    }
    /* dependants wait for this one to be Ready (and synced) */
    bool ready = ctl_state_component_ready(new_obj);
    struct json_object *os = co_json_get(old_obj, "status", NULL);
    struct json_object *ns = co_json_get(new_obj, "status", NULL);
    if (ready &&
        (!ctl_state_component_ready(old_obj) ||
         !same_str(str_at(os, "lastAttemptedDigest"), str_at(ns, "lastAttemptedDigest")) ||
         !same_str(str_at(os, "lastAttemptedRevision"), str_at(ns, "lastAttemptedRevision")))) {
        enqueue_dependants(m, new_obj);
    }
    if (!same_json(co_json_get(old_obj, "spec", "dependencies", NULL),
                   co_json_get(new_obj, "spec", "dependencies", NULL))) {
        graph_set(m, new_obj);
        enqueue_cycle_members(m);
    }
}

static void on_comp_delete(const struct json_object *obj, void *payload)
{
    ctl_manager *m = payload;
    release_obj(m, obj);
    graph_remove(m, obj);
    enqueue_obj(m, obj);
    /* its dependencies may be waiting for it to go (DeletionPending) */
    co_depgraph_list deps = {NULL, 0};
    dependency_keys(&deps, obj);
    for (size_t i = 0; i < deps.len; i++) {
        enqueue_key(m, deps.items[i]);
    }
    co_depgraph_list_dispose(&deps);
    enqueue_cycle_members(m);
}

/* ---- Flux source handlers (§5.2) --------------------------------------------------------- */

static bool flux_ready_artifact(const struct json_object *src, const char **dig, const char **rev)
{
    int64_t gen = 0;
    if (co_json_get_int64(&gen, src, "metadata", "generation", NULL) < 0) {
        gen = -1;
    }
    struct json_object *conds = co_json_get(src, "status", "conditions", NULL);
    size_t n =
        conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    bool ready = false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        int64_t og = -1;
        if (co_json_get_int64(&og, c, "observedGeneration", NULL) < 0) {
            og = -2;
        }
        if (same_str(str_at(c, "type"), "Ready") && same_str(str_at(c, "status"), "True") &&
            og == gen) {
            ready = true;
        }
    }
    struct json_object *a = co_json_get(src, "status", "artifact", NULL);
    *dig = str_at(a, "digest");
    *rev = str_at(a, "revision");
    return ready && *dig && **dig && *rev && **rev;
}

static void
on_flux_update(const struct json_object *old_obj, const struct json_object *new_obj, void *payload)
{
    (void)old_obj;
    ctl_manager *m = payload;
    const char *dig = NULL, *rev = NULL;
    if (!flux_ready_artifact(new_obj, &dig, &rev)) {
        return;
    }
    const char *kind = str_at(new_obj, "kind");
    struct json_object *meta = co_json_get(new_obj, "metadata", NULL);
    const char *sns = str_at(meta, "namespace");
    const char *sname = str_at(meta, "name");
    char *key = co_xasprintf("%s/%s/%s", kind ? kind : "", sns ? sns : "", sname ? sname : "");
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        struct json_object *list = NULL;
        if (co_kube_informer_by_index(&list, m->comp_inf[i], "source", key) < 0) {
            continue;
        }
        size_t n = json_object_array_length(list);
        for (size_t j = 0; j < n; j++) {
            struct json_object *c = json_object_array_get_idx(list, j);
            struct json_object *st = co_json_get(c, "status", NULL);
            if (ctl_state_component_ready(c) && same_str(str_at(st, "lastAttemptedDigest"), dig) &&
                same_str(str_at(st, "lastAttemptedRevision"), rev)) {
                continue;
            }
            enqueue_obj(m, c);
        }
        json_object_put(list);
    }
    free(key);
}

/* ---- cache ops for the reconciler -------------------------------------------------------- */

static int cache_get_component(void *ctx, const char *ns, const char *name, co_component **out)
{
    ctl_manager *m = ctx;
    co_kube_informer *inf = informer_for(m, ns);
    struct json_object *obj = NULL;
    int rc;
    if (inf) {
        rc = co_kube_informer_get(&obj, inf, ns, name);
    } else {
        /* not watched by this instance: read it directly */
        co_kube_ref ref = {COMPONENT_API, "Component", ns, name};
        rc = co_kube_get(&obj, m->client, &ref, NULL);
    }
    if (rc == 0) {
        rc = co_component_parse(out, obj);
    }
    json_object_put(obj);
    return rc;
}

static int cache_claimed_by(void *ctx,
                            const char *self,
                            const char *group,
                            const char *kind,
                            const char *ns,
                            const char *name,
                            char **owner_out)
{
    ctl_manager *m = ctx;
    char *key = inventory_key(group, kind, ns, name);
    int found = 0;
    for (size_t i = 0; i < m->ncomp_inf && !found; i++) {
        co_kube_keys keys = {0};
        if (co_kube_informer_index_keys(&keys, m->comp_inf[i], "inventory", key) == 0) {
            for (size_t k = 0; k < keys.len && !found; k++) {
                if (strcmp(keys.items[k], self) != 0) {
                    *owner_out = co_xstrdup(keys.items[k]);
                    found = 1;
                }
            }
        }
        co_kube_keys_dispose(&keys);
    }
    free(key);
    return found;
}

typedef struct dependants_scan {
    const char *key;
    co_kube_keys *out;
} dependants_scan;

static int scan_dependant(struct json_object *item, void *payload)
{
    dependants_scan *d = payload;
    co_depgraph_list deps = {NULL, 0};
    dependency_keys(&deps, item);
    for (size_t i = 0; i < deps.len; i++) {
        if (strcmp(deps.items[i], d->key) == 0) {
            char *k = co_kube_informer_key_of(item);
            if (k && strcmp(k, d->key) != 0) {
                co_kube_keys_add(d->out, k);
            }
            free(k);
            break;
        }
    }
    co_depgraph_list_dispose(&deps);
    return 0;
}

static int cache_dependants(void *ctx, const char *key, co_kube_keys *out)
{
    ctl_manager *m = ctx;
    co_depgraph_list keys = {NULL, 0};
    graph_dependents(m, key, &keys);
    for (size_t i = 0; i < keys.len; i++) {
        if (strcmp(keys.items[i], key) != 0) {
            co_kube_keys_add(out, keys.items[i]);
        }
    }
    co_depgraph_list_dispose(&keys);
    bool selective = m->label_selector && *m->label_selector;
    if (m->nnamespaces == 0 && !selective) {
        return 0;
    }
    /* The caches hold only the Components this instance watches, but a dependant may live in
     * another namespace or another shard: a dependency is never deleted under one. Deletions
     * are rare, so every Component is listed from the API server, page by page, rather than
     * cached cluster-wide. An error blocks the deletion (the reconciler retries). */
    co_kube_ref ref = {COMPONENT_API, "Component", NULL, NULL};
    co_kube_list_options lo = {0};
    lo.skip_managed_fields = 1;
    dependants_scan d = {key, out};
    int rc = co_kube_list_each(NULL, m->client, &ref, &lo, scan_dependant, &d);
    if (rc == CO_EAUTH && m->nnamespaces > 0) {
        /* Rights in the watched namespaces only (a watch of every namespace needs the list
         * above): those are searched whole, the others cannot be, which is said once. */
        if (!atomic_exchange(&m->warned_dependants, true)) {
            co_log(CO_LOG_WARN,
                   "cannot list Components in every namespace: dependants in namespaces "
                   "not watched do not hold back a deletion",
                   "error", co_error_last(), NULL);
        }
        co_error_clear();
        rc = 0;
        for (size_t i = 0; i < m->nnamespaces && selective && rc == 0; i++) {
            ref.namespace = m->namespaces[i];
            rc = co_kube_list_each(NULL, m->client, &ref, &lo, scan_dependant, &d);
        }
    }
    if (rc < 0) {
        return co_error_wrap("listing Components to find dependants");
    }
    return 0;
}

/* The dependencies of @p key: from the graph for a watched Component, else (a namespace this
 * instance does not watch) from the API server. CO_ENOTFOUND: no such Component. */
static int deps_of(ctl_manager *m, const char *key, co_depgraph_list *out)
{
    const char *slash = strchr(key, '/');
    char *ns = co_xstrndup(key, (size_t)(slash - key));
    int rc;
    if (informer_for(m, ns)) {
        pthread_mutex_lock(&m->graph_mu);
        rc = co_depgraph_deps(out, m->graph, key);
        pthread_mutex_unlock(&m->graph_mu);
    } else {
        struct json_object *obj = NULL;
        co_kube_ref ref = {COMPONENT_API, "Component", ns, slash + 1};
        rc = co_kube_get(&obj, m->client, &ref, NULL);
        if (rc == 0) {
            dependency_keys(out, obj);
        }
        json_object_put(obj);
    }
    free(ns);
    return rc;
}

/* Shortest cycle through @p key: the part of the graph reachable from it (Components in
 * namespaces this instance does not watch included) is copied and searched. */
static int cache_cycle_of(void *ctx, const char *key, char **path_out)
{
    ctl_manager *m = ctx;
    if (!strchr(key, '/')) {
        return CO_ENOTFOUND;
    }
    co_depgraph *reach = NULL;
    CO_ASSERT(co_depgraph_new(&reach) == 0);
    co_kube_keys todo = {0};
    co_kube_keys_add(&todo, key);
    for (size_t i = 0; i < todo.len && todo.len < 100000; i++) {
        const char *k = todo.items[i];
        co_depgraph_list deps = {NULL, 0};
        if (co_depgraph_contains(reach, k)) {
            continue;
        }
        if (deps_of(m, k, &deps) < 0) {
            /* absent or unreadable: on no cycle, and not looked up again */
            co_error_clear();
        }
        if (co_depgraph_set(reach, k, (const char *const *)deps.items, deps.len) < 0) {
            co_error_clear();
        }
        for (size_t j = 0; j < deps.len; j++) {
            if (!co_depgraph_contains(reach, deps.items[j])) {
                co_kube_keys_add(&todo, deps.items[j]);
            }
        }
        co_depgraph_list_dispose(&deps);
    }
    int rc = co_depgraph_cycle_of(path_out, reach, key);
    if (rc < 0) {
        co_error_clear();
    }
    co_kube_keys_dispose(&todo);
    co_depgraph_free(reach);
    return rc;
}

/* A ComponentPolicy appeared, changed its spec or went away: every cached Component is
 * evaluated again, so a new Deny rule takes effect (and a removed one releases) without waiting
 * for the requeue interval. Policies change rarely; the work queue de-duplicates. */
static void on_policy_add(const struct json_object *obj, void *payload)
{
    (void)obj;
    enqueue_components(payload, NULL);
}

static void on_policy_update(const struct json_object *old_obj,
                             const struct json_object *new_obj,
                             void *payload)
{
    if (!same_json(co_json_get(old_obj, "spec", NULL), co_json_get(new_obj, "spec", NULL))) {
        enqueue_components(payload, NULL);
    }
}

/* Creates and starts an informer of @p kind when the cluster serves it.
 * @param[out] out the informer, or NULL when the kind is not served (not an error) */
static int new_optional_informer(co_kube_informer **out,
                                 ctl_manager *m,
                                 const char *api_version,
                                 const char *kind,
                                 const co_kube_handlers *h)
{
    co_kube_mapping mp = {0};
    *out = NULL;
    if (co_kube_client_mapping(&mp, m->client, api_version, kind) < 0) {
        co_error_clear();
        return 0;
    }
    co_kube_mapping_dispose(&mp);
    co_kube_informer_options io = {0};
    io.api_version = api_version;
    io.kind = kind;
    io.strip_managed_fields = 1;
    co_kube_informer *inf = NULL;
    int rc;
    if ((rc = co_kube_informer_new(&inf, m->client, &io)) < 0 ||
        (rc = co_kube_informer_add_handlers(inf, h)) < 0 ||
        (rc = co_kube_informer_start(inf)) < 0) {
        co_kube_informer_free(inf);
        return rc;
    }
    *out = inf;
    return 0;
}

static int new_policy_informer(co_kube_informer **out, ctl_manager *m)
{
    co_kube_handlers h = {on_policy_add, on_policy_update, on_policy_add, m};
    return new_optional_informer(out, m, COMPONENT_API, "ComponentPolicy", &h);
}

/* Flux source events are filtered by on_flux_update() alone (§5.2: creations and deletions of
 * sources are ignored). */
static int new_flux_informer(co_kube_informer **out, ctl_manager *m, size_t kind)
{
    co_kube_handlers h = {NULL, on_flux_update, NULL, m};
    return new_optional_informer(out, m, FLUX_API, FLUX_KINDS[kind][1], &h);
}

/* Whether a CRD the manager watches when served is still unwatched (crd_mu held). */
static bool crd_missing(const ctl_manager *m)
{
    bool missing = !m->policy_inf;
    for (size_t i = 0; i < NFLUX; i++) {
        missing = missing || !m->flux_inf[i];
    }
    return missing;
}

/* Waits for the first list of @p inf in short steps, so that stopping the manager is never held
 * up for long. */
static bool await_synced(ctl_manager *m, co_kube_informer *inf)
{
    for (long waited = 0; waited < SYNC_TIMEOUT_MS && !atomic_load(&m->crd_stop); waited += 1000) {
        if (co_kube_informer_wait_synced(inf, 1000) == 0) {
            return true;
        }
        co_error_clear();
    }
    return co_kube_informer_has_synced(inf);
}

/* A Flux kind watched late: its sources may have published artifacts while nobody watched, so
 * each one is judged as if it had just been updated. */
static void flux_catch_up(ctl_manager *m, co_kube_informer *inf)
{
    struct json_object *all = NULL;
    if (co_kube_informer_list(&all, inf, NULL) < 0) {
        co_error_clear();
        return;
    }
    size_t n = json_object_array_length(all);
    for (size_t i = 0; i < n; i++) {
        on_flux_update(NULL, json_object_array_get_idx(all, i), m);
    }
    json_object_put(all);
}

/* Publishes @p inf into @p slot once it has synced (else drops it, to try again at the next
 * look) and says whether it did. */
static bool publish_informer(ctl_manager *m, co_kube_informer **slot, co_kube_informer *inf)
{
    if (!await_synced(m, inf)) {
        if (!atomic_load(&m->crd_stop)) {
            co_log(CO_LOG_WARN, "a late informer did not sync; trying again", "error",
                   co_error_last(), NULL);
        }
        co_error_clear();
        co_kube_informer_free(inf);
        return false;
    }
    pthread_mutex_lock(&m->crd_mu);
    *slot = inf; /* stopped and freed with the manager */
    pthread_mutex_unlock(&m->crd_mu);
    return !atomic_load(&m->crd_stop);
}

/* One look for every CRD that was not served at the last one. */
static void probe_crds(ctl_manager *m)
{
    pthread_mutex_lock(&m->crd_mu);
    bool want_policy = !m->policy_inf;
    bool want_flux[NFLUX];
    for (size_t i = 0; i < NFLUX; i++) {
        want_flux[i] = !m->flux_inf[i];
    }
    pthread_mutex_unlock(&m->crd_mu);
    co_kube_informer *inf = NULL;
    if (want_policy && new_policy_informer(&inf, m) < 0) {
        co_log(CO_LOG_WARN, "cannot watch ComponentPolicies", "error", co_error_last(), NULL);
        co_error_clear();
    } else if (inf && publish_informer(m, &m->policy_inf, inf)) {
        co_log(CO_LOG_INFO, "ComponentPolicy CRD found; policies are enforced", NULL);
        enqueue_components(m, NULL);
    }
    for (size_t i = 0; i < NFLUX && !atomic_load(&m->crd_stop); i++) {
        inf = NULL;
        if (want_flux[i] && new_flux_informer(&inf, m, i) < 0) {
            co_log(CO_LOG_WARN, "cannot watch Flux sources", "kind", FLUX_KINDS[i][1], "error",
                   co_error_last(), NULL);
            co_error_clear();
        } else if (inf && publish_informer(m, &m->flux_inf[i], inf)) {
            co_log(CO_LOG_INFO, "Flux source CRD found; its sources are watched", "kind",
                   FLUX_KINDS[i][1], NULL);
            flux_catch_up(m, inf);
        }
    }
}

/*
 * Runs while a CRD the manager watches is not served: the ComponentPolicy CRD and the Flux
 * source CRDs may be installed after the controller. It looks for them every crd_probe_ns. A new
 * informer is published only once it has synced; then every Component is enqueued (a policy
 * applies without a restart), or those whose Flux source has an artifact they have not seen (a
 * new artifact does not wait for the requeue interval). Workers never wait for the prober: it
 * holds crd_mu only to publish.
 */
static void *crd_prober(void *arg)
{
    ctl_manager *m = arg;
    pthread_mutex_lock(&m->crd_mu);
    while (!atomic_load(&m->crd_stop) && crd_missing(m)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t abs = (int64_t)ts.tv_sec * CO_SECOND + ts.tv_nsec + m->crd_probe_ns;
        ts.tv_sec = (time_t)(abs / CO_SECOND);
        ts.tv_nsec = (long)(abs % CO_SECOND);
        pthread_cond_timedwait(&m->crd_cv, &m->crd_mu, &ts);
        if (atomic_load(&m->crd_stop)) {
            break;
        }
        pthread_mutex_unlock(&m->crd_mu);
        probe_crds(m);
        pthread_mutex_lock(&m->crd_mu);
    }
    pthread_mutex_unlock(&m->crd_mu);
    return NULL;
}

static co_kube_informer *policy_informer(ctl_manager *m)
{
    pthread_mutex_lock(&m->crd_mu);
    co_kube_informer *inf = m->policy_inf;
    pthread_mutex_unlock(&m->crd_mu);
    return inf;
}

static co_kube_informer *flux_informer(ctl_manager *m, size_t kind)
{
    pthread_mutex_lock(&m->crd_mu);
    co_kube_informer *inf = m->flux_inf[kind];
    pthread_mutex_unlock(&m->crd_mu);
    return inf;
}

/* DESIGN.md §3.3: the ComponentPolicy rules, evaluated again at reconcile time (a webhook can be
 * bypassed or fail open), and the grants of the applying policies. User and group exemptions
 * hold for the requester the webhook recorded on the Component (co/policy.h); an unreadable
 * record exempts nobody. Whatever keeps the policies from being evaluated is an error of the
 * pass: a policy never fails open. */
static int cache_policy_check(void *ctx,
                              const struct json_object *component,
                              char **msg_out,
                              co_policy_permissions *perm_out)
{
    ctl_manager *m = ctx;
    memset(perm_out, 0, sizeof(*perm_out));
    co_kube_informer *inf = policy_informer(m);
    if (!inf || co_kube_informer_len(inf) == 0) {
        return 0;
    }
    struct json_object *all = NULL;
    int rc = co_kube_informer_list(&all, inf, NULL);
    if (rc < 0) {
        return co_error_wrap("reading the cached ComponentPolicies");
    }
    co_policy_set *set = NULL;
    if ((rc = co_policy_set_new(&set)) < 0) {
        json_object_put(all);
        return rc;
    }
    for (size_t i = 0; i < json_object_array_length(all); i++) {
        /* an invalid policy is skipped here; its own validation reports it */
        (void)!co_policy_set_put(set, json_object_array_get_idx(all, i));
    }
    json_object_put(all);
    const char *ns = str_at(co_json_get(component, "metadata", NULL), "namespace");
    struct json_object *nsobj = NULL;
    struct json_object *defaulted = NULL;
    co_component *c = NULL;
    co_kube_ref ref = {"v1", "Namespace", NULL, ns};
    co_policy_result res = {0};
    co_policy_requester requester = {NULL, NULL, 0};
    if (co_kube_get(&nsobj, m->client, &ref, NULL) < 0) {
        rc = co_error_wrap("reading namespace %s for its labels", ns ? ns : "");
        goto done;
    }
    if ((rc = co_component_default(&defaulted, component, ns, NULL)) < 0 ||
        (rc = co_component_parse(&c, defaulted)) < 0) {
        goto done;
    }
    co_policy_request req = {0};
    req.ns = ns;
    req.namespace_labels = co_json_get(nsobj, "metadata", "labels", NULL);
    if (co_policy_requester_of(&requester, component) < 0) {
        /* the webhook never writes such a record: somebody wrote it past the webhook */
        const char *name = str_at(co_json_get(component, "metadata", NULL), "name");
        co_log(CO_LOG_DEBUG, "exemption record ignored", "namespace", ns ? ns : "", "name",
               name ? name : "", "error", co_error_last(), NULL);
        co_error_clear();
    }
    co_policy_request_set_requester(&req, &requester);
    /* grants first: a Component being deleted needs them even when a rule now denies it */
    if ((rc = co_policy_permissions_of(perm_out, set, &req)) < 0 ||
        (rc = co_policy_evaluate(&res, set, c, &req)) < 0) {
        goto done;
    }
    if (res.verdict == CO_POLICY_DENY) {
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        int brc = 0;
        for (size_t i = 0; i < res.len && brc == 0; i++) {
            if (res.items[i].action != CO_POLICY_DENY) {
                continue;
            }
            if (b.len > 0) {
                brc = co_buf_puts(&b, "; ");
            }
            if (brc == 0) {
                brc = co_policy_violation_format(&b, &res.items[i]);
            }
        }
        *msg_out = co_buf_take(&b, NULL);
        rc = CO_EINVALID;
    }
done:
    co_policy_requester_dispose(&requester);
    co_policy_result_dispose(&res);
    co_component_free(c);
    json_object_put(defaulted);
    json_object_put(nsobj);
    co_policy_set_free(set);
    return rc;
}

static int targets_acquire(void *ctx,
                           const char *kubeconfig,
                           size_t len,
                           const char *user,
                           unsigned flags,
                           co_kube_client **out,
                           void **hold)
{
    ctl_manager *m = ctx;
    return ctl_targets_acquire(m->targets, kubeconfig, len, user, flags, out, hold);
}

static void targets_release(void *ctx, void *hold)
{
    ctl_manager *m = ctx;
    ctl_targets_release(m->targets, hold);
}

static struct co_kube_recorder *targets_recorder(void *ctx, void *hold)
{
    ctl_manager *m = ctx;
    co_kube_recorder_options ro = {0};
    ro.component = CTL_RECONCILER_NAME;
    ro.instance = m->identity;
    ro.dedup_window_ms = 5L * 60 * 1000;
    return ctl_targets_recorder(m->targets, hold, &ro);
}

/* ---- observer: metrics and events -------------------------------------------------------- */

static bool event_is_duplicate(ctl_manager *m, const char *uid, const char *text)
{
    int64_t now = co_time_monotonic();
    bool dup = false;
    pthread_mutex_lock(&m->ev_mu);
    last_event *e = m->events;
    while (e && strcmp(e->uid, uid) != 0) {
        e = e->next;
    }
    if (e) {
        if (strcmp(e->text, text) == 0 && now - e->at < EVENT_DEDUP_NS) {
            dup = true;
        } else {
            free(e->text);
            e->text = co_xstrdup(text);
            e->at = now;
        }
    } else {
        e = co_xcalloc(1, sizeof(*e));
        e->uid = co_xstrdup(uid);
        e->text = co_xstrdup(text);
        e->at = now;
        e->next = m->events;
        m->events = e;
    }
    pthread_mutex_unlock(&m->ev_mu);
    return dup;
}

static void forget_events(ctl_manager *m, const char *ns, const char *name)
{
    (void)ns;
    (void)name;
    /* entries are keyed by UID; drop those older than the window to bound the list */
    int64_t now = co_time_monotonic();
    pthread_mutex_lock(&m->ev_mu);
    last_event **pp = &m->events;
    while (*pp) {
        last_event *e = *pp;
        if (now - e->at >= EVENT_DEDUP_NS) {
            *pp = e->next;
            free(e->uid);
            free(e->text);
            free(e);
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&m->ev_mu);
}

static void observe_outcome(void *ctx, const ctl_outcome *o)
{
    ctl_manager *m = ctx;
    const co_component *c = o->component;
    const char *ns = c->ns, *name = c->name, *uid = c->uid;
    const char *state = o->state, *reason = o->reason, *message = o->message;
    if (!ns || !name) {
        return;
    }
    for (size_t i = 0; i < NSTATES; i++) {
        const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", ns, name, STATES[i]};
        co_metric_set(m->m_state, lv, strcmp(state, STATES[i]) == 0 ? 1 : 0);
    }
    const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", ns, name};
    co_metric_set(m->m_dependents, lv, (double)o->dependents);
    co_metric_set(m->m_unready, lv, (double)o->unready);
    if (o->error_code < 0) {
        co_log(CO_LOG_WARN, "reconcile failed", "component", ns, "name", name, "reason", reason,
               "message", message, NULL);
        const co_kube_status *ks = co_kube_status_last();
        char code[16] = "other";
        if (ks && ks->code > 0) {
            snprintf(code, sizeof(code), "%d", ks->code);
        }
        const char *ev[] = {CONTROLLER, code};
        co_metric_inc(m->m_reconcile_errors, ev);
    }
    co_log(CO_LOG_DEBUG, "reconciled", "namespace", ns, "name", name, "state", state, "reason",
           reason, NULL);
    if (!m->recorder || !uid || !*state) {
        return;
    }
    const char *type = strcmp(state, CTL_STATE_ERROR) == 0 ? "Warning" : "Normal";
    /* the Go operator's event annotations (api/v1alpha1 GetEventAnnotations): keys prefixed
     * with the group, as Flux's notification-controller expects of the involved object */
    const char *revision = c->status.last_attempted_revision;
    char *token = co_xasprintf("%s:%s", uid, o->component_digest);
    const char *annotations[] = {"core.cs.sap.com/revision", revision ? revision : "",
                                 "core.cs.sap.com/token", token, NULL};
    /* as upstream's de-duplication, the annotations count: a new digest is a new event */
    char *text = co_xasprintf("%s\n%s\n%s\n%s\n%s", type, reason, message, annotations[1], token);
    bool dup = event_is_duplicate(m, uid, text);
    free(text);
    if (dup) {
        atomic_fetch_add(&m->n_events_suppressed, 1);
        free(token);
        return;
    }
    co_kube_event_annotated(m->recorder, o->object, annotations, type, reason, "%s", message);
    if (m->notify) {
        ctl_notify_event(m->notify, o->object, type, reason, message, annotations);
    }
    free(token);
}

static void observe_gone(void *ctx, const char *ns, const char *name)
{
    ctl_manager *m = ctx;
    for (size_t i = 0; i < NSTATES; i++) {
        const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", ns, name, STATES[i]};
        co_metric_remove(m->m_state, lv);
    }
    const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", ns, name};
    co_metric_remove(m->m_dependents, lv);
    co_metric_remove(m->m_unready, lv);
    forget_events(m, ns, name);
    /* the informer's delete may have come while a reconcile was still resolving the source and
     * watching it again; this pass ran after that one */
    if (m->release) {
        m->release(m->release_ctx, ns, name);
    }
}

/* component_operator_runtime_operations_total: what the apply engine did to dependents */
static void observe_operations(void *ctx, const ctl_apply_stats *s)
{
    ctl_manager *m = ctx;
    const char *r[] = {CONTROLLER, "read"}, *c[] = {CONTROLLER, "create"},
               *u[] = {CONTROLLER, "update"}, *d[] = {CONTROLLER, "delete"};
    co_metric_add(m->m_operations, r, (double)s->reads);
    co_metric_add(m->m_operations, c, (double)s->creates);
    co_metric_add(m->m_operations, u, (double)s->updates);
    co_metric_add(m->m_operations, d, (double)s->deletes);
}

/* ---- workers ----------------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    ctl_manager *m = arg;
    for (;;) {
        char *key = NULL;
        if (ctl_queue_get(m->queue, &key) < 0) {
            break;
        }
        if (!atomic_load(&m->leading)) {
            ctl_queue_done(m->queue, key);
            free(key);
            continue;
        }
        char *slash = strchr(key, '/');
        if (!slash) {
            ctl_queue_forget(m->queue, key);
            ctl_queue_done(m->queue, key);
            free(key);
            continue;
        }
        char *ns = co_xstrndup(key, (size_t)(slash - key));
        const char *name = slash + 1;
        const char *lv[] = {CONTROLLER};
        co_metric_inc(m->m_reconcile_total, lv);
        atomic_fetch_add(&m->n_reconciles, 1);
        int64_t t0 = co_time_monotonic();
        ctl_result res;
        co_error_clear();
        int rc = ctl_reconcile(&res, &m->env, ns, name);
        double secs = (double)(co_time_monotonic() - t0) / 1e9;
        co_metric_observe(m->m_cr_time, lv, secs);
        const char *result = "success";
        if (rc < 0 || res.rate_limited) {
            result = "error";
            atomic_fetch_add(&m->n_reconcile_errors, 1);
            co_metric_inc(m->m_cr_errors, lv);
            if (rc < 0) {
                co_log(CO_LOG_ERROR, "reconcile failed", "component", key, "error", co_error_last(),
                       NULL);
            }
            ctl_queue_add_rate_limited(m->queue, key);
        } else {
            if (res.forget) {
                ctl_queue_forget(m->queue, key);
            }
            if (res.requeue_after_ns > 0) {
                result = "requeue_after";
                ctl_queue_add_after(m->queue, key, res.requeue_after_ns);
            }
        }
        const char *rv[] = {CONTROLLER, result};
        co_metric_inc(m->m_cr_total, rv);
        ctl_queue_done(m->queue, key);
        free(ns);
        free(key);
    }
    return NULL;
}

static int start_workers(ctl_manager *m)
{
    pthread_mutex_lock(&m->mu);
    /* the elector may win the Lease while the manager stops: no workers once stop has taken
     * them (it sets stopped before it locks mu) */
    if (m->workers || atomic_load(&m->stopped)) {
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    size_t n = (size_t)(m->opts.workers > 0 ? m->opts.workers : 5);
    m->workers = co_xcalloc(n, sizeof(*m->workers));
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&m->workers[i], NULL, worker_main, m) != 0) {
            break;
        }
        m->nworkers++;
    }
    bool all = m->nworkers == n;
    pthread_mutex_unlock(&m->mu);
    return all ? 0 : co_error_set(CO_ERROR, "cannot start worker threads");
}

static void on_started_leading(void *payload)
{
    ctl_manager *m = payload;
    co_log(CO_LOG_INFO, "became leader", "identity", m->identity, NULL);
    atomic_store(&m->leading, true);
    if (start_workers(m) < 0) {
        co_log(CO_LOG_ERROR, "cannot start workers", "error", co_error_last(), NULL);
    }
}

static void on_stopped_leading(void *payload)
{
    ctl_manager *m = payload;
    bool was = atomic_exchange(&m->leading, false);
    if (was && !atomic_load(&m->stopped)) {
        co_log(CO_LOG_ERROR, "leader election lost", "identity", m->identity, NULL);
        atomic_store(&m->lost, true);
        ctl_queue_shutdown(m->queue);
    }
}

/* ---- http -------------------------------------------------------------------------------- */

static int http_handler(co_buf *body, const char *path, void *payload)
{
    ctl_manager *m = payload;
    if (strcmp(path, "/metrics") == 0) {
        ctl_queue_stats qs;
        ctl_queue_get_stats(m->queue, &qs);
        const char *wl[] = {CONTROLLER, CONTROLLER};
        const char *dl[] = {CONTROLLER, CONTROLLER, "0"};
        co_metric_set(m->m_wq_depth, dl, (double)qs.depth);
        co_metric_set(m->m_wq_adds, wl, (double)qs.adds_total);
        co_metric_set(m->m_wq_retries, wl, (double)qs.retries_total);
        co_metric_set(m->m_wq_unfinished, wl, (double)qs.processing_total_ns / 1e9);
        co_metric_set(m->m_wq_longest, wl, (double)qs.oldest_processing_ns / 1e9);
        const char *cl[] = {CONTROLLER};
        co_metric_set(m->m_cr_workers, cl, (double)(m->opts.workers > 0 ? m->opts.workers : 5));
        co_metric_set(m->m_cr_active, cl, (double)qs.processing);
        if (m->opts.leader_elect) {
            const char *ll[] = {m->opts.leader_name ? m->opts.leader_name : CTL_RECONCILER_NAME};
            co_metric_set(m->m_leader, ll, atomic_load(&m->leading) ? 1 : 0);
        }
        ctl_targets_sweep(m->targets);
        co_metric_set(m->m_active_clients, cl, (double)ctl_targets_active(m->targets));
        co_metric_set(m->m_created_clients, cl, (double)ctl_targets_created(m->targets));
        return co_metrics_render(body, m->metrics) < 0 ? 500 : 200;
    }
    if (strcmp(path, "/healthz") == 0) {
        return co_buf_puts(body, "ok") < 0 ? 500 : 200;
    }
    if (strcmp(path, "/readyz") == 0) {
        bool ok = atomic_load(&m->synced);
        return co_buf_puts(body, ok ? "ok" : "informers not synced") < 0 ? 500 : ok ? 200 : 500;
    }
    return 404;
}

static void register_metrics(ctl_manager *m)
{
    m->metrics = co_metrics_new();
    const char *c[] = {"controller"};
    const char *ct[] = {"controller", "type"};
    const char *cm[] = {"controller", "method"};
    const char *obj[] = {"controller", "group", "kind", "namespace", "name"};
    const char *objs[] = {"controller", "group", "kind", "namespace", "name", "state"};
    const char *cr[] = {"controller", "result"};
    /* names, types, labels and help as component-operator-runtime's internal/metrics and
     * controller-runtime's pkg/internal/controller/metrics register them;
     * controller-runtime's workqueue metrics (pkg/internal/metrics/workqueue.go of v0.24) */
    const char *wq[] = {"name", "controller"};
    const char *wqp[] = {"name", "controller", "priority"};
    m->m_reconcile_total =
        co_metrics_counter(m->metrics, "component_operator_runtime_reconcile_total",
                           "Total number of reconciliations per controller", c, 1);
    const char *ca[] = {"controller", "action"};
    m->m_operations = co_metrics_counter(m->metrics, "component_operator_runtime_operations_total",
                                         "Dependent operations per controller and action", ca, 2);
    m->m_reconcile_errors =
        co_metrics_counter(m->metrics, "component_operator_runtime_reconcile_errors_total",
                           "Total number of reconciliation errors per controller and type", ct, 2);
    m->m_requests =
        co_metrics_counter(m->metrics, "component_operator_runtime_requests_total",
                           "Kubernetes API server requests per controller and method", cm, 2);
    m->m_created_clients =
        co_metrics_counter(m->metrics, "component_operator_runtime_created_clients_total",
                           "Kubernetes API clients created since the controller was started", c, 1);
    m->m_active_clients =
        co_metrics_gauge(m->metrics, "component_operator_runtime_active_clients_total",
                         "Currently active Kubernetes API clients", c, 1);
    m->m_state = co_metrics_gauge(m->metrics, "component_operator_runtime_component_state",
                                  "Current state of a component", objs, 6);
    m->m_dependents = co_metrics_gauge(m->metrics, "component_operator_runtime_dependents_total",
                                       "Number of dependent objects", obj, 5);
    m->m_unready =
        co_metrics_gauge(m->metrics, "component_operator_runtime_unready_dependents_total",
                         "Number of unready dependent objects", obj, 5);
    m->m_cr_total = co_metrics_counter(m->metrics, "controller_runtime_reconcile_total",
                                       "Total number of reconciliations per controller", cr, 2);
    m->m_cr_errors =
        co_metrics_counter(m->metrics, "controller_runtime_reconcile_errors_total",
                           "Total number of reconciliation errors per controller", c, 1);
    const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3,  0.35,
                              0.4,   0.45, 0.5,   0.6,  0.7, 0.8,  0.9, 1,    1.25, 1.5,
                              1.75,  2,    2.5,   3,    3.5, 4,    4.5, 5,    6,    7,
                              8,     9,    10,    15,   20,  25,   30,  40,   50,   60};
    m->m_cr_time = co_metrics_histogram(m->metrics, "controller_runtime_reconcile_time_seconds",
                                        "Length of time per reconciliation per controller", c, 1,
                                        buckets, CO_ARRAY_SIZE(buckets));
    m->m_cr_workers =
        co_metrics_gauge(m->metrics, "controller_runtime_max_concurrent_reconciles",
                         "Maximum number of concurrent reconciles per controller.", c, 1);
    m->m_cr_active = co_metrics_gauge(m->metrics, "controller_runtime_active_workers",
                                      "Number of currently used workers per controller.", c, 1);
    m->m_wq_depth =
        co_metrics_gauge(m->metrics, "workqueue_depth",
                         "Current depth of workqueue by workqueue and priority", wqp, 3);
    m->m_wq_adds = co_metrics_counter(m->metrics, "workqueue_adds_total",
                                      "Total number of adds handled by workqueue", wq, 2);
    m->m_wq_retries = co_metrics_counter(
        m->metrics, "workqueue_retries_total",
        "Total number of items added to the workqueue with a non-zero delay", wq, 2);
    m->m_wq_unfinished = co_metrics_gauge(
        m->metrics, "workqueue_unfinished_work_seconds",
        "How many seconds of work has been done that is in progress and hasn't been observed by "
        "work_duration.",
        wq, 2);
    m->m_wq_longest = co_metrics_gauge(
        m->metrics, "workqueue_longest_running_processor_seconds",
        "How many seconds has the longest running processor for workqueue been running.", wq, 2);
    const char *rest[] = {"code", "host", "method"};
    m->m_rest_requests = co_metrics_counter(
        m->metrics, "rest_client_requests_total",
        "Number of HTTP requests, partitioned by status code, method, and host.", rest, 3);
    const char *lease[] = {"name"};
    m->m_leader = co_metrics_gauge(
        m->metrics, "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
        "indicates master. 'name' is the string used to identify the lease. Please make sure to "
        "group by name.",
        lease, 1);
    co_metrics_process(m->metrics);
    /* ExponentialBuckets(10e-9, 10, 12) */
    const double wq_buckets[] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000};
    const char *wv[] = {CONTROLLER, CONTROLLER};
    m->wq_queue_duration = co_metric_series(
        co_metrics_histogram(m->metrics, "workqueue_queue_duration_seconds",
                             "How long in seconds an item stays in workqueue before being "
                             "requested",
                             wq, 2, wq_buckets, CO_ARRAY_SIZE(wq_buckets)),
        wv);
    m->wq_work_duration = co_metric_series(
        co_metrics_histogram(m->metrics, "workqueue_work_duration_seconds",
                             "How long in seconds processing an item from workqueue takes.", wq, 2,
                             wq_buckets, CO_ARRAY_SIZE(wq_buckets)),
        wv);
}

/* ---- lifecycle --------------------------------------------------------------------------- */

int ctl_manager_new(ctl_manager **out, const ctl_manager_options *opts)
{
    ctl_manager *m = co_xcalloc(1, sizeof(*m));
    m->opts = *opts;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->ev_mu, NULL);
    pthread_mutex_init(&m->crd_mu, NULL);
    pthread_mutex_init(&m->graph_mu, NULL);
    CO_ASSERT(co_depgraph_new(&m->graph) == 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->crd_cv, &ca);
    pthread_condattr_destroy(&ca);
    m->nnamespaces = opts->nnamespaces;
    m->namespaces = co_xcalloc(opts->nnamespaces + 1, sizeof(char *));
    for (size_t i = 0; i < opts->nnamespaces; i++) {
        m->namespaces[i] = co_xstrdup(opts->namespaces[i]);
    }
    m->label_selector = co_xstrdup(opts->label_selector);
    m->default_sa = co_xstrdup(opts->default_service_account);
    m->opts.namespaces = NULL;
    m->opts.label_selector = NULL;
    m->opts.default_service_account = NULL;
    m->opts.kubeconfig = NULL;
    m->opts.leader_namespace = NULL;
    m->opts.leader_name = NULL;
    m->opts.identity = NULL;
    m->opts.metrics_addr = co_xstrdup(opts->metrics_addr);
    m->opts.probe_addr = co_xstrdup(opts->probe_addr);
    m->leader_namespace = co_xstrdup(opts->leader_namespace);
    if (opts->identity) {
        m->identity = co_xstrdup(opts->identity);
    } else {
        char host[256] = "controller";
        (void)gethostname(host, sizeof(host) - 1);
        uint32_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
            r = (uint32_t)co_time_monotonic();
        }
        m->identity = co_xasprintf("%s_%08x", host, r);
    }
    m->opts.leader_name = opts->leader_name ? co_xstrdup(opts->leader_name) : NULL;
    if (opts->source) {
        m->source = *opts->source;
    }
    if (opts->apply) {
        m->apply = *opts->apply;
    }
    register_metrics(m);
    ctl_queue_options qo = CTL_QUEUE_OPTIONS_INIT;
    qo.queue_duration = m->wq_queue_duration;
    qo.work_duration = m->wq_work_duration;
    m->queue = ctl_queue_new(&qo);
    m->backoff = ctl_backoff_new();
    if (opts->events_address && opts->events_address[0]) {
        const char *rl[] = {"result"};
        ctl_notify_options no = {0};
        no.address = opts->events_address;
        no.reporting_controller = CTL_RECONCILER_NAME;
        no.results =
            co_metrics_counter(m->metrics, "component_controller_event_notifications_total",
                               "Component events forwarded to --events-address, by how "
                               "their delivery ended.",
                               rl, 1);
        int nrc = ctl_notify_new(&m->notify, &no);
        if (nrc < 0) {
            co_error_wrap("--events-address");
            ctl_manager_free(m);
            return nrc;
        }
    }
    m->opts.events_address = NULL;

    int rc = co_kube_config_load(&m->cfg, opts->kubeconfig, NULL);
    if (rc < 0) {
        ctl_manager_free(m);
        return rc;
    }
    const char *server = co_kube_config_server(m->cfg);
    const char *authority = server && strstr(server, "://") ? strstr(server, "://") + 3 : server;
    m->rest_host = authority ? co_xstrndup(authority, strcspn(authority, "/")) : NULL;
    co_kube_transport *inner = NULL;
    rc = co_kube_transport_curl_new(&inner, m->cfg);
    if (rc < 0) {
        ctl_manager_free(m);
        return rc;
    }
    counting_transport *ct = co_xcalloc(1, sizeof(*ct));
    ct->base.send = counting_send;
    ct->base.free = counting_free;
    ct->inner = inner;
    ct->m = m;
    co_kube_client_options co = CO_KUBE_CLIENT_OPTIONS_INIT;
    co.qps = opts->qps;
    co.burst = opts->burst;
    rc = co_kube_client_new_with_transport(&m->client, m->cfg, &ct->base, &co);
    if (rc < 0) {
        ctl_manager_free(m);
        return rc;
    }
    m->targets = ctl_targets_new(m->client, opts->target_ttl_ns > 0 ? opts->target_ttl_ns
                                                                    : (int64_t)15 * 60 * CO_SECOND);
    /* before any thread of the manager exists, so that the reconciler hands it to the apply
     * engine from the first reconcile on, without a lock */
    co_kube_recorder_options ro = {0};
    ro.component = CTL_RECONCILER_NAME;
    ro.instance = m->identity;
    ro.dedup_window_ms = 5L * 60 * 1000;
    if ((rc = co_kube_recorder_new(&m->recorder, m->client, &ro)) < 0) {
        ctl_manager_free(m);
        return rc;
    }
    m->crd_probe_ns = opts->policy_probe_ns > 0 ? opts->policy_probe_ns : CRD_PROBE_NS;

    m->env.client = m->client;
    m->env.default_service_account = m->default_sa;
    m->env.backoff = m->backoff;
    m->env.cache = (ctl_cache_ops){cache_get_component, cache_dependants, cache_cycle_of,
                                   cache_policy_check,  cache_claimed_by, m};
    m->env.source = m->source;
    m->env.apply = m->apply;
    m->env.targets = (ctl_target_ops){targets_acquire, targets_release, targets_recorder, m};
    m->env.observer = (ctl_observer){observe_outcome, observe_gone, observe_operations, m};
    m->env.events = m->recorder;
    *out = m;
    return 0;
}

static int read_cluster_id(ctl_manager *m)
{
    co_kube_ref ref = {"v1", "Namespace", NULL, "kube-system"};
    struct json_object *ns = NULL;
    int rc = co_kube_get(&ns, m->client, &ref, NULL);
    if (rc < 0) {
        return co_error_wrap("reading the cluster id (namespace kube-system)");
    }
    const char *uid = str_at(co_json_get(ns, "metadata", NULL), "uid");
    if (!uid || !*uid) {
        json_object_put(ns);
        return co_error_set(CO_EINVALID, "namespace kube-system has no uid");
    }
    m->cluster_id = co_xstrdup(uid);
    json_object_put(ns);
    m->env.cluster_id = m->cluster_id;
    return 0;
}

static int start_component_informer(ctl_manager *m, co_kube_informer **out, const char *ns)
{
    co_kube_informer_options io = {0};
    io.api_version = COMPONENT_API;
    io.kind = "Component";
    io.namespace = ns;
    io.label_selector = m->label_selector;
    io.strip_managed_fields = 1;
    co_kube_informer *inf = NULL;
    int rc = co_kube_informer_new(&inf, m->client, &io);
    if (rc < 0) {
        return rc;
    }
    co_kube_handlers h = {on_comp_add, on_comp_update, on_comp_delete, m};
    if ((rc = co_kube_informer_add_index(inf, "source", index_source, NULL)) < 0 ||
        (rc = co_kube_informer_add_index(inf, "inventory", index_inventory, NULL)) < 0 ||
        (rc = co_kube_informer_add_handlers(inf, &h)) < 0 ||
        (rc = co_kube_informer_start(inf)) < 0) {
        co_kube_informer_free(inf);
        return rc;
    }
    *out = inf;
    return 0;
}

int ctl_manager_start(ctl_manager *m)
{
    int rc = read_cluster_id(m);
    if (rc < 0) {
        return rc;
    }
    co_kube_mapping mp;
    rc = co_kube_client_mapping(&mp, m->client, COMPONENT_API, "Component");
    if (rc < 0) {
        return co_error_wrap("the Component CRD (core.cs.sap.com/v1alpha1) is not served");
    }
    co_kube_mapping_dispose(&mp);

    size_t ninf = m->nnamespaces ? m->nnamespaces : 1;
    m->comp_inf = co_xcalloc(ninf, sizeof(co_kube_informer *));
    for (size_t i = 0; i < ninf; i++) {
        rc = start_component_informer(m, &m->comp_inf[i], m->nnamespaces ? m->namespaces[i] : NULL);
        if (rc < 0) {
            return rc;
        }
        m->ncomp_inf++;
    }
    co_kube_informer *pinf = NULL;
    co_kube_informer *finf[NFLUX] = {NULL};
    rc = new_policy_informer(&pinf, m);
    /* Flux not installed: Flux sources fail per Component, clearly, until the prober finds it */
    for (size_t i = 0; i < NFLUX && rc == 0; i++) {
        rc = new_flux_informer(&finf[i], m, i);
    }
    pthread_mutex_lock(&m->crd_mu);
    m->policy_inf = pinf;
    memcpy(m->flux_inf, finf, sizeof(finf));
    pthread_mutex_unlock(&m->crd_mu);
    if (rc < 0) {
        return rc;
    }
    if (pinf && co_kube_informer_wait_synced(pinf, SYNC_TIMEOUT_MS) < 0) {
        return co_error_wrap("waiting for the ComponentPolicy cache");
    }
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        if (co_kube_informer_wait_synced(m->comp_inf[i], SYNC_TIMEOUT_MS) < 0) {
            return co_error_wrap("waiting for the Component cache");
        }
    }
    for (size_t i = 0; i < NFLUX; i++) {
        if (finf[i] && co_kube_informer_wait_synced(finf[i], SYNC_TIMEOUT_MS) < 0) {
            return co_error_wrap("waiting for the %s cache", FLUX_KINDS[i][1]);
        }
    }
    pthread_mutex_lock(&m->crd_mu);
    if (crd_missing(m)) {
        m->crd_prober_on = pthread_create(&m->crd_prober, NULL, crd_prober, m) == 0;
    }
    pthread_mutex_unlock(&m->crd_mu);
    atomic_store(&m->synced, true);

    if (!ctl_http_disabled(m->opts.metrics_addr) &&
        (rc = ctl_http_start(&m->metrics_http, m->opts.metrics_addr, http_handler, m)) < 0) {
        return rc;
    }
    if (!ctl_http_disabled(m->opts.probe_addr) &&
        (rc = ctl_http_start(&m->probe_http, m->opts.probe_addr, http_handler, m)) < 0) {
        return rc;
    }
    atomic_store(&m->started, true);
    if (!m->opts.leader_elect) {
        atomic_store(&m->leading, true);
        return start_workers(m);
    }
    co_kube_leader_options lo = {0};
    lo.namespace = m->leader_namespace ? m->leader_namespace : co_kube_client_namespace(m->client);
    lo.name = m->opts.leader_name ? m->opts.leader_name : CTL_RECONCILER_NAME;
    lo.identity = m->identity;
    if (m->opts.lease_duration_ms > 0) {
        lo.lease_duration_ms = m->opts.lease_duration_ms;
        lo.renew_deadline_ms = m->opts.lease_duration_ms * 2 / 3;
        lo.retry_period_ms = m->opts.lease_duration_ms / 7 > 0 ? m->opts.lease_duration_ms / 7 : 1;
    }
    lo.on_started_leading = on_started_leading;
    lo.on_stopped_leading = on_stopped_leading;
    lo.payload = m;
    if ((rc = co_kube_leader_new(&m->leader, m->client, &lo)) < 0) {
        return rc;
    }
    return co_kube_leader_start(m->leader);
}

void ctl_manager_stop(ctl_manager *m)
{
    if (!m || atomic_exchange(&m->stopped, true)) {
        return;
    }
    atomic_store(&m->leading, false);
    if (m->queue) {
        ctl_queue_shutdown(m->queue);
    }
    /* the elector's thread starts the workers: their list is read under the lock it writes
     * them under */
    pthread_mutex_lock(&m->mu);
    size_t nworkers = m->nworkers;
    m->nworkers = 0;
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < nworkers; i++) {
        pthread_join(m->workers[i], NULL);
    }
    if (m->leader) {
        co_kube_leader_stop(m->leader);
    }
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        co_kube_informer_stop(m->comp_inf[i]);
    }
    pthread_mutex_lock(&m->crd_mu);
    atomic_store(&m->crd_stop, true);
    pthread_cond_broadcast(&m->crd_cv);
    pthread_mutex_unlock(&m->crd_mu);
    if (m->crd_prober_on) {
        pthread_join(m->crd_prober, NULL);
        m->crd_prober_on = false;
    }
    /* the prober is gone: nothing writes the slots any more */
    for (size_t i = 0; i < NFLUX; i++) {
        if (m->flux_inf[i]) {
            co_kube_informer_stop(m->flux_inf[i]);
        }
    }
    if (m->policy_inf) {
        co_kube_informer_stop(m->policy_inf);
    }
    ctl_http_stop(m->metrics_http);
    m->metrics_http = NULL;
    ctl_http_stop(m->probe_http);
    m->probe_http = NULL;
}

void ctl_manager_free(ctl_manager *m)
{
    if (!m) {
        return;
    }
    ctl_manager_stop(m);
    co_kube_leader_free(m->leader);
    co_kube_recorder_free(m->recorder);
    ctl_notify_free(m->notify);
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        co_kube_informer_free(m->comp_inf[i]);
    }
    free(m->comp_inf);
    for (size_t i = 0; i < NFLUX; i++) {
        co_kube_informer_free(m->flux_inf[i]);
    }
    co_kube_informer_free(m->policy_inf);
    ctl_targets_free(m->targets);
    co_kube_client_free(m->client);
    co_kube_config_free(m->cfg);
    ctl_queue_free(m->queue);
    ctl_backoff_free(m->backoff);
    co_depgraph_free(m->graph);
    co_metrics_free(m->metrics);
    last_event *e = m->events;
    while (e) {
        last_event *next = e->next;
        free(e->uid);
        free(e->text);
        free(e);
        e = next;
    }
    for (size_t i = 0; i < m->nnamespaces; i++) {
        free(m->namespaces[i]);
    }
    free(m->namespaces);
    free(m->workers);
    free(m->label_selector);
    free(m->default_sa);
    free((char *)m->opts.metrics_addr);
    free((char *)m->opts.probe_addr);
    free((char *)m->opts.leader_name);
    free(m->leader_namespace);
    free(m->identity);
    free(m->rest_host);
    free(m->cluster_id);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->ev_mu);
    pthread_mutex_destroy(&m->crd_mu);
    pthread_mutex_destroy(&m->graph_mu);
    pthread_cond_destroy(&m->crd_cv);
    free(m);
}

bool ctl_manager_lost(ctl_manager *m)
{
    return atomic_load(&m->lost);
}

bool ctl_manager_leading(ctl_manager *m)
{
    return atomic_load(&m->leading);
}

const char *ctl_manager_cluster_id(ctl_manager *m)
{
    return m->cluster_id ? m->cluster_id : "";
}

int ctl_manager_metrics_port(ctl_manager *m)
{
    return m->metrics_http ? ctl_http_port(m->metrics_http) : 0;
}

int ctl_manager_probe_port(ctl_manager *m)
{
    return m->probe_http ? ctl_http_port(m->probe_http) : 0;
}

void ctl_manager_on_release(ctl_manager *m, ctl_release_fn fn, void *ctx)
{
    m->release = fn;
    m->release_ctx = ctx;
}

void ctl_manager_stats_get(ctl_manager *m, ctl_manager_stats *out)
{
    out->requests = atomic_load(&m->n_requests);
    out->writes = atomic_load(&m->n_writes);
    out->status_writes = atomic_load(&m->n_status_writes);
    out->event_writes = atomic_load(&m->n_event_writes);
    out->reconciles = atomic_load(&m->n_reconciles);
    out->reconcile_errors = atomic_load(&m->n_reconcile_errors);
    out->events_suppressed = atomic_load(&m->n_events_suppressed);
}

co_kube_client *ctl_manager_client(ctl_manager *m)
{
    return m->client;
}

struct co_metrics *ctl_manager_metrics(ctl_manager *m)
{
    return m->metrics;
}

struct ctl_notify *ctl_manager_notify(ctl_manager *m)
{
    return m->notify;
}

struct co_kube_recorder *ctl_manager_recorder(ctl_manager *m)
{
    return m->recorder;
}

int ctl_manager_read(ctl_manager *m,
                     const char *api_version,
                     const char *kind,
                     const char *ns,
                     const char *name,
                     struct json_object **out)
{
    if (strcmp(api_version, FLUX_API) == 0) {
        for (size_t i = 0; i < NFLUX; i++) {
            co_kube_informer *inf =
                strcmp(kind, FLUX_KINDS[i][1]) == 0 ? flux_informer(m, i) : NULL;
            if (inf) {
                return co_kube_informer_get(out, inf, ns, name);
            }
        }
    }
    co_kube_ref ref = {api_version, kind, ns, name};
    return co_kube_get(out, m->client, &ref, NULL);
}
