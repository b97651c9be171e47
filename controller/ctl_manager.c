/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager (see ctl_manager.h): its lifecycle and accessors, and the target clients handed
 * to the reconciler. The other parts live beside it (ctl_manager_int.h).
 */
#include "controller/ctl_manager.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "co/json/json.h"
#include "co/util/error.h"
#include "co/util/time.h"
#include "co/util/thread.h"
#include "controller/ctl_depcache.h"
#include "controller/ctl_pending.h"
#include "controller/ctl_manager_int.h"

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

/* A Secret a Component references changed (ctl_refwatch.h). */
static void enqueue_reference_change(void *ctx, const char *component)
{
    ctl_manager *m = ctx;
    ctl_queue_add(m->queue, component);
    if (m->m_reference_requeues) {
        const char *lv[] = {CONTROLLER};
        co_metric_inc(m->m_reference_requeues, lv);
    }
}

int ctl_manager_new(ctl_manager **out, const ctl_manager_options *opts)
{
    ctl_manager *m = co_xcalloc(1, sizeof(*m));
    m->opts = *opts;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->ev_mu, NULL);
    pthread_mutex_init(&m->wrote_mu, NULL);
    pthread_mutex_init(&m->crd_mu, NULL);
    pthread_mutex_init(&m->graph_mu, NULL);
    m->graph = co_depgraph_new();
    co_cond_init_monotonic(&m->crd_cv);
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
    ctl_manager__register_metrics(m);
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
    co_kube_client_options co = CO_KUBE_CLIENT_OPTIONS_INIT;
    co.qps = opts->qps;
    co.burst = opts->burst;
    rc =
        co_kube_client_new_with_transport(&m->client, m->cfg, ctl_manager__counting(m, inner), &co);
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
    m->blueprint_grace_ns =
        opts->blueprint_grace_ns > 0 ? opts->blueprint_grace_ns : (int64_t)60 * CO_SECOND;

    ctl_refwatch_options rwo = {0};
    rwo.client = m->client;
    rwo.namespaces = (const char *const *)m->namespaces;
    rwo.nnamespaces = m->nnamespaces;
    rwo.enqueue = enqueue_reference_change;
    rwo.ctx = m;
    if ((rc = ctl_refwatch_new(&m->refwatch, &rwo)) < 0) {
        ctl_manager_free(m);
        return rc;
    }

    m->env.client = m->client;
    m->env.proceed = &m->leading;
    m->env.default_service_account = m->default_sa;
    m->env.backoff = m->backoff;
    m->pending = ctl_pending_new();
    m->env.pending = m->pending;
    m->env.cache = ctl_manager__cache_ops(m);
    m->env.source = m->source;
    m->env.apply = m->apply;
    m->env.targets = (ctl_target_ops){targets_acquire, targets_release, targets_recorder, m};
    m->env.observer = ctl_manager__observer(m);
    m->env.events = m->recorder;
    m->env.dependent_events = m->opts.dependent_events;
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
    const char *uid = co_json_str(ns, "metadata", "uid", NULL);
    if (!uid || !*uid) {
        json_object_put(ns);
        return co_error_set(CO_EINVALID, "namespace kube-system has no uid");
    }
    m->cluster_id = co_xstrdup(uid);
    json_object_put(ns);
    m->env.cluster_id = m->cluster_id;
    return 0;
}

/* Whether this controller manages a Component (ctl_depcache.h): it is in a Component informer
 * (a watched namespace, the label selector). Reads no text. */
static bool manages_component(void *ctx, const char *ns, const char *name)
{
    co_kube_informer *inf = ctl_manager__informer_for(ctx, ns);
    return inf && co_kube_informer_contains(inf, ns, name);
}

/* A dependent of a Component changed (ctl_depcache.h): queue the Component when this
 * controller manages it. */
static void on_dependent_changed(void *ctx, const char *ns, const char *name)
{
    if (manages_component(ctx, ns, name)) {
        ctl_manager_enqueue(ctx, ns, name);
    }
}

int ctl_manager_start(ctl_manager *m)
{
    int rc = read_cluster_id(m);
    if (rc < 0) {
        return rc;
    }
    if (m->opts.cache_dependents) {
        /* before the workers: they read m->env without a lock */
        ctl_depcache_hooks hooks = {on_dependent_changed, manages_component, m};
        CO_ASSERT(ctl_depcache_new(&m->depcache, m->client, m->cluster_id, &hooks) == 0);
        m->env.dependents = m->depcache;
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
        rc = ctl_manager__start_component_informer(m, &m->comp_inf[i],
                                                   m->nnamespaces ? m->namespaces[i] : NULL);
        if (rc < 0) {
            return rc;
        }
        m->ncomp_inf++;
    }
    co_kube_informer *pinf = NULL;
    co_kube_informer *finf[NFLUX] = {NULL};
    co_kube_informer *binf = NULL;
    co_kube_informer *bvinf = NULL;
    /* the Blueprint controller's queue exists before the informers that feed it */
    if ((rc = ctl_manager__start_blueprints(m)) < 0) {
        return rc;
    }
    /* the audit exists before the policy informer that triggers it */
    if ((rc = ctl_manager__start_audit(m)) < 0) {
        return rc;
    }
    rc = ctl_manager__new_policy_informer(&pinf, m);
    if (rc == 0) {
        rc = ctl_manager__new_blueprint_version_informer(&bvinf, m);
    }
    if (rc == 0) {
        rc = ctl_manager__new_blueprint_informer(&binf, m);
    }
    /* Flux not installed: Flux sources fail per Component, clearly, until the prober finds it */
    for (size_t i = 0; i < NFLUX && rc == 0; i++) {
        rc = ctl_manager__new_flux_informer(&finf[i], m, i);
    }
    pthread_mutex_lock(&m->crd_mu);
    m->policy_inf = pinf;
    m->bp_inf = binf;
    m->bpv_inf = bvinf;
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
    if ((binf && co_kube_informer_wait_synced(binf, SYNC_TIMEOUT_MS) < 0) ||
        (bvinf && co_kube_informer_wait_synced(bvinf, SYNC_TIMEOUT_MS) < 0)) {
        return co_error_wrap("waiting for the Blueprint caches");
    }
    for (size_t i = 0; i < NFLUX; i++) {
        if (finf[i] && co_kube_informer_wait_synced(finf[i], SYNC_TIMEOUT_MS) < 0) {
            return co_error_wrap("waiting for the %s cache", ctl_manager__flux_kinds[i][1]);
        }
    }
    /* the index holds the synced Components' references: the watch starts with the first */
    if ((rc = ctl_refwatch_start(m->refwatch)) < 0) {
        return rc;
    }
    pthread_mutex_lock(&m->crd_mu);
    if (ctl_manager__crd_missing(m)) {
        m->crd_prober_on = pthread_create(&m->crd_prober, NULL, ctl_manager__crd_prober, m) == 0;
    }
    pthread_mutex_unlock(&m->crd_mu);
    atomic_store(&m->synced, true);

    if (!ctl_http_disabled(m->opts.metrics_addr) &&
        (rc = ctl_http_start(&m->metrics_http, m->opts.metrics_addr, ctl_manager__http, m)) < 0) {
        return rc;
    }
    if (!ctl_http_disabled(m->opts.probe_addr) &&
        (rc = ctl_http_start(&m->probe_http, m->opts.probe_addr, ctl_manager__http, m)) < 0) {
        return rc;
    }
    atomic_store(&m->started, true);
    if (!m->opts.leader_elect) {
        atomic_store(&m->leading, true);
        return ctl_manager__start_workers(m);
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
    lo.on_started_leading = ctl_manager__on_started_leading;
    lo.on_stopped_leading = ctl_manager__on_stopped_leading;
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
    /* before the informers it reads */
    ctl_manager__stop_audit(m);
    if (m->leader) {
        co_kube_leader_stop(m->leader);
    }
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        co_kube_informer_stop(m->comp_inf[i]);
    }
    ctl_refwatch_stop(m->refwatch);
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
    if (m->bp_inf) {
        co_kube_informer_stop(m->bp_inf);
    }
    if (m->bpv_inf) {
        co_kube_informer_stop(m->bpv_inf);
    }
    ctl_manager__stop_blueprints(m);
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
    ctl_depcache_free(m->depcache);
    co_kube_leader_free(m->leader);
    co_kube_recorder_free(m->recorder);
    ctl_notify_free(m->notify);
    for (size_t i = 0; i < m->ncomp_inf; i++) {
        co_kube_informer_free(m->comp_inf[i]);
    }
    free(m->comp_inf);
    ctl_refwatch_free(m->refwatch);
    for (size_t i = 0; i < NFLUX; i++) {
        co_kube_informer_free(m->flux_inf[i]);
    }
    co_kube_informer_free(m->policy_inf);
    co_kube_informer_free(m->bp_inf);
    co_kube_informer_free(m->bpv_inf);
    ctl_manager__free_blueprints(m);
    ctl_manager__free_audit(m);
    ctl_targets_free(m->targets);
    co_kube_client_free(m->client);
    co_kube_config_free(m->cfg);
    ctl_queue_free(m->queue);
    ctl_backoff_free(m->backoff);
    ctl_pending_free(m->pending);
    co_depgraph_free(m->graph);
    co_metrics_free(m->metrics);
    ctl_manager__forget_all_events(m);
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
    pthread_mutex_destroy(&m->wrote_mu);
    size_t iter = 0;
    const char *wk = NULL;
    void *wv = NULL;
    while (co_strmap_next(&m->wrote, &iter, &wk, &wv)) {
        free(wv);
    }
    co_strmap_dispose(&m->wrote);
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
    out->policy_status_writes = atomic_load(&m->n_policy_status_writes);
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

struct ctl_depcache *ctl_manager_dependents_cache(ctl_manager *m)
{
    return m->depcache;
}

struct ctl_refwatch *ctl_manager_reference_watch(ctl_manager *m)
{
    return m->refwatch;
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
            co_kube_informer *inf = strcmp(kind, ctl_manager__flux_kinds[i][1]) == 0
                                        ? ctl_manager__flux_informer(m, i)
                                        : NULL;
            if (inf) {
                return co_kube_informer_get(out, inf, ns, name);
            }
        }
    }
    co_kube_ref ref = {api_version, kind, ns, name};
    return co_kube_get(out, m->client, &ref, NULL);
}
