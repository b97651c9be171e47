/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the manager (ctl_manager.h) shared by its files, one per responsibility:
 * ctl_manager.c the lifecycle and the accessors; ctl_informers.c the informers, their handlers
 * and indexes, the dependency graph they keep and the prober for CRDs installed late;
 * ctl_cache.c the reconciler's lookups in what the informers hold; ctl_observer.c the metrics
 * and events of every reconcile; ctl_workers.c the workers and leadership; ctl_metrics.c the
 * counting transport, the metric families and the HTTP endpoints.
 */
#ifndef CTL_MANAGER_INT_H
#define CTL_MANAGER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "co/api/depgraph.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_config.h"
#include "co/kube/kube_event.h"
#include "co/kube/kube_informer.h"
#include "co/kube/kube_lease.h"
#include "co/kube/kube_transport.h"
#include "co/util/buf.h"
#include "co/util/duration.h"
#include "co/util/metrics.h"
#include "co/util/strmap.h"
#include "controller/ctl_http.h"
#include "controller/ctl_manager.h"
#include "controller/ctl_notify.h"
#include "controller/ctl_queue.h"
#include "controller/ctl_refwatch.h"
#include "controller/ctl_targets.h"

struct json_object;

#define COMPONENT_API   "core.cs.sap.com/v1alpha1"
#define FLUX_API        "source.toolkit.fluxcd.io/v1"
#define CONTROLLER      "component"
#define SYNC_TIMEOUT_MS 120000L
/* how often a controller started before the ComponentPolicy or Flux CRDs looks for them again */
#define CRD_PROBE_NS (30 * CO_SECOND)

/* The Flux source kinds: the spec.sourceRef member and the kind. */
#define NFLUX 4
extern const char *const ctl_manager__flux_kinds[NFLUX][2];

/* The last event sent per Component (by UID), for the 5-minute de-duplication. */
typedef struct last_event {
    char *text; /* type \n reason \n message */
    int64_t at;
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
    /* the dependents cache (--cache-dependents), created once the cluster id is known */
    struct ctl_depcache *depcache;
    char *cluster_id;

    co_kube_informer **comp_inf; /* one per namespace, or one for all */
    size_t ncomp_inf;
    co_kube_informer *flux_inf[NFLUX]; /* Flux sources, per kind the cluster serves */
    co_kube_informer *policy_inf;      /* ComponentPolicies, when the CRD is served */
    co_kube_informer *bp_inf;          /* Blueprints, when the CRD is served */
    co_kube_informer *bpv_inf;         /* BlueprintVersions, when the CRD is served */
    struct ctl_blueprints *blueprints; /* the Blueprint controller */
    struct ctl_audit *audit;           /* the ComponentPolicy audit (ctl_audit.c), or NULL */
    int64_t blueprint_grace_ns;        /* a younger BlueprintVersion is never collected */
    pthread_mutex_t crd_mu;            /* guards flux_inf, policy_inf and the prober below */
    pthread_cond_t crd_cv;             /* wakes the prober when the manager stops */
    pthread_t crd_prober;              /* looks for the CRDs above when installed late */
    bool crd_prober_on;
    atomic_bool crd_stop;
    int64_t crd_probe_ns; /* the interval between looks */

    /* the Secrets the Components reference, watched as metadata (docs/refwatch.md); created
     * before the informers whose handlers feed its index */
    ctl_refwatch *refwatch;

    pthread_mutex_t graph_mu; /* guards graph */
    co_depgraph *graph;       /* dependencies of the watched Components */

    ctl_queue *queue;
    ctl_backoff *backoff;
    struct ctl_pending *pending; /* statuses held back for one pass (ctl_pending.h) */
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
    co_metric *m_skipped;            /* component_operator_skipped_components */
    co_metric *m_reference_requeues; /* component_operator_reference_requeues_total */
    co_metric *m_drifted;            /* component_operator_drifted_objects (docs/drift.md) */
    /* component_policy_violations{policy,action} (ctl_audit.c) */
    co_metric *m_policy_violations;
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
    co_strmap events;         /* UID -> last_event *, guarded by ev_mu */
    int64_t events_pruned_at; /* monotonic; entries past the window go at most once a minute */
    /* "ns/name" of the Components skipped for their skip-reconciliation label (values unused),
     * guarded by ev_mu */
    co_strmap skipped;

    /* "ns/name" -> resourceVersion (char *) of this controller's last write of a Component
     * that the informer has not delivered yet (ctl_cache.c, read-your-writes) */
    pthread_mutex_t wrote_mu;
    co_strmap wrote;

    atomic_ulong n_event_writes;
    atomic_ulong n_policy_status_writes; /* PUTs of ComponentPolicy status (audit reports) */
    atomic_ulong n_requests, n_writes, n_status_writes, n_reconciles, n_reconcile_errors,
        n_events_suppressed;
};

/* ---- ctl_informers.c ---------------------------------------------------------------------- */

/* The Component informer that watches namespace @p ns, or NULL. */
co_kube_informer *ctl_manager__informer_for(ctl_manager *m, const char *ns);
/* Dependency keys "ns/name" of a Component object; none when it has no namespace or name. */
void ctl_manager__dependency_keys(co_depgraph_list *out, const struct json_object *obj);
/* The watched Components that list @p key as a dependency. */
void ctl_manager__graph_dependents(ctl_manager *m, const char *key, co_depgraph_list *out);
/* "group/kind/namespace/name": the key of the inventory index (free()). */
char *
ctl_manager__inventory_key(const char *group, const char *kind, const char *ns, const char *name);
/* A started Component informer for @p ns (NULL: all namespaces). */
int ctl_manager__start_component_informer(ctl_manager *m, co_kube_informer **out, const char *ns);
/* The ComponentPolicy informer, or *out NULL while its CRD is not served. */
int ctl_manager__new_policy_informer(co_kube_informer **out, ctl_manager *m);
/* The informer of Flux kind @p kind, or *out NULL while its CRD is not served. */
int ctl_manager__new_flux_informer(co_kube_informer **out, ctl_manager *m, size_t kind);
/* The Blueprint and BlueprintVersion informers, or *out NULL while their CRDs are not served. */
int ctl_manager__new_blueprint_informer(co_kube_informer **out, ctl_manager *m);
int ctl_manager__new_blueprint_version_informer(co_kube_informer **out, ctl_manager *m);
co_kube_informer *ctl_manager__blueprint_version_informer(ctl_manager *m);
/* The Blueprint controller's triggers (ctl_blueprints.c): @p bp changed; Blueprint @p ns/@p name
 * is due again in @p delay_ns. */
void ctl_manager__blueprint_changed(ctl_manager *m, const struct json_object *bp);
void ctl_manager__blueprint_enqueue(ctl_manager *m,
                                    const char *ns,
                                    const char *name,
                                    int64_t delay_ns);
/* The Blueprint controller's thread (ctl_blueprints.c). */
int ctl_manager__start_blueprints(ctl_manager *m);
void ctl_manager__stop_blueprints(ctl_manager *m);
void ctl_manager__free_blueprints(ctl_manager *m);
/* Whether a CRD the manager would watch is not served yet (called with crd_mu held). */
bool ctl_manager__crd_missing(const ctl_manager *m);
/* The thread that looks for CRDs installed after the start. */
void *ctl_manager__crd_prober(void *arg);
/* The informers published by the prober (NULL while not served). */
co_kube_informer *ctl_manager__policy_informer(ctl_manager *m);
co_kube_informer *ctl_manager__flux_informer(ctl_manager *m, size_t kind);

/* ---- ctl_audit.c -------------------------------------------------------------------------- */

typedef struct ctl_audit ctl_audit;
/* The audit thread (docs/policy-audit.md), when opts.policy_audit_interval_ns > 0; before the
 * policy informer, which triggers it. */
int ctl_manager__start_audit(ctl_manager *m);
void ctl_manager__stop_audit(ctl_manager *m);
void ctl_manager__free_audit(ctl_manager *m);
/* A ComponentPolicy appeared, changed its spec or went away: audit after the debounce. */
void ctl_manager__audit_trigger(ctl_manager *m);

/* ---- ctl_cache.c -------------------------------------------------------------------------- */

/* The reconciler's lookups. */
ctl_cache_ops ctl_manager__cache_ops(ctl_manager *m);

/* ---- ctl_observer.c ----------------------------------------------------------------------- */

/* Metrics and events of every reconcile. */
ctl_observer ctl_manager__observer(ctl_manager *m);
/* Frees the event de-duplication list. */
void ctl_manager__forget_all_events(ctl_manager *m);

/* ---- ctl_workers.c ------------------------------------------------------------------------ */

/* Starts the workers once (none after stop). */
int ctl_manager__start_workers(ctl_manager *m);
/* Leader election callbacks. */
void ctl_manager__on_started_leading(void *payload);
void ctl_manager__on_stopped_leading(void *payload);

/* ---- ctl_metrics.c ------------------------------------------------------------------------ */

/* Creates the metric families. */
void ctl_manager__register_metrics(ctl_manager *m);
/* The handler of the metrics and probe listeners. */
int ctl_manager__http(co_buf *body, const char *path, void *payload);
/* @p inner wrapped to count requests (takes @p inner). */
co_kube_transport *ctl_manager__counting(ctl_manager *m, co_kube_transport *inner);

#endif
