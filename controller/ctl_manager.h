/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_manager.h
 * The controller's manager: the local client (counting every request for metrics), the cluster
 * id (UID of kube-system, read once at start), informers for Components (all namespaces or a
 * namespace list, optionally a label selector, so several instances can shard a cluster), for
 * ComponentPolicies and for the Flux source kinds (each CRD installed after start is looked for
 * again until it is served), secondary indexes by dependency target and by source reference,
 * the keyed work queue with N workers, leader election on a Lease, the probe and metrics
 * listeners, and Component events de-duplicated for 5 minutes per object.
 *
 * The deletion of a Component waits for its dependants wherever they live: with a namespace
 * list or a label selector, Components outside the watched set are listed from the API server
 * (cluster-wide list permission on Components) when one is about to be deleted. Without that
 * permission the watched namespaces are listed whole, and a warning (once) says that
 * dependants in other namespaces are not seen. Component events are also forwarded to Flux's
 * notification-controller when an events address is set.
 *
 * Without leader election the workers start as soon as the caches have synced. With it they
 * start when the Lease is won; when it is lost, nothing is reconciled any more (workers check
 * before every reconcile), the queue is shut down and ctl_manager_lost() turns true so that
 * the daemon exits, as controller-runtime does.
 */
#ifndef CTL_MANAGER_H
#define CTL_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/common.h"
#include "controller/ctl_reconcile.h"

typedef struct ctl_manager ctl_manager;

typedef struct ctl_manager_options {
    const char *kubeconfig;   /**< NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
    const char *metrics_addr; /**< "0" or NULL: none */
    const char *probe_addr;   /**< "0" or NULL: none */
    bool leader_elect;
    /** events on dependents (Created, Updated, Deleted ...; docs/behaviour.md, "Create, update
     * and delete"); false: Component events only */
    bool dependent_events;
    /** watch dependents' types (ctl_depcache.h); false: every dependent read live */
    bool cache_dependents;
    const char *leader_namespace; /**< NULL: the client's default namespace */
    const char *leader_name;      /**< NULL: "component-operator.cs.sap.com" */
    long lease_duration_ms;       /**< 0: 15 s (renew 10 s, retry 2 s) */
    const char *identity;         /**< NULL: hostname_random */
    const char *default_service_account;
    int workers;                   /**< 0: 5 */
    const char *const *namespaces; /**< watched namespaces; none: all */
    size_t nnamespaces;            /**< number of @ref namespaces */
    const char *label_selector;    /**< Components watched, or NULL */
    int64_t target_ttl_ns;         /**< unused target clients expire; 0: 15 min */
    const ctl_source_ops *source;  /**< the source layer, or NULL */
    const ctl_apply_ops *apply;    /**< the apply engine, or NULL (never Ready) */
    double qps;                    /**< client rate limit; 0: the client's default */
    int burst;                     /**< client burst; 0: the client's default */
    int64_t policy_probe_ns;       /**< how often to look for the ComponentPolicy and Flux source
                                        CRDs when they were not served at start; 0: 30 s */
    const char *events_address;    /**< Component events are also POSTed here as Flux events
                                        (ctl_notify.h); NULL or "": not */
    int64_t blueprint_grace_ns;    /**< a BlueprintVersion younger than this is never collected
                                        (docs/behaviour.md, "The Blueprint controller"); 0: 60 s */
    /** how often every ComponentPolicy is audited against every watched Component, and its
     * report written to its status (docs/policy-audit.md); 0: never (no audit at all) */
    int64_t policy_audit_interval_ns;
    /** an audit runs this long after the last policy change (at most five times this after
     * the first); 0: 2 s */
    int64_t policy_audit_debounce_ns;
} ctl_manager_options;

/** At most this many violating Components are listed in a policy's audit report. */
#define CTL_AUDIT_MAX_VIOLATORS 20
/** Each message of an audit report is cut to this many bytes. */
#define CTL_AUDIT_MAX_MESSAGE 256

/** Request and reconcile counters (for tests and the benchmark). */
typedef struct ctl_manager_stats {
    unsigned long requests;      /**< API requests of the local client */
    unsigned long writes;        /**< of which POST, PUT, PATCH, DELETE */
    unsigned long status_writes; /**< PUTs of Component status */
    unsigned long event_writes;  /**< Event creations and updates */
    unsigned long reconciles;    /**< reconciles run */
    unsigned long reconcile_errors;
    unsigned long events_suppressed;    /**< Component events dropped as duplicates */
    unsigned long policy_status_writes; /**< PUTs of ComponentPolicy status (audit reports) */
} ctl_manager_stats;

/**
 * Loads the configuration and builds the client and the event recorder. Nothing is contacted
 * yet.
 * @return 0 or the configuration error (the message names the file).
 */
CO_MUST_CHECK int ctl_manager_new(ctl_manager **out, const ctl_manager_options *opts);

/**
 * Reads the cluster id, starts the informers and waits for their first lists, opens the
 * listeners, then starts leader election or the workers.
 * @return 0; CO_ENOTFOUND when kube-system cannot be read; listener or API errors.
 */
CO_MUST_CHECK int ctl_manager_start(ctl_manager *m);

/** Stops workers, elector (releasing the Lease), informers and listeners. Idempotent. */
void ctl_manager_stop(ctl_manager *m);

/** Stops and frees. NULL is a no-op. */
void ctl_manager_free(ctl_manager *m);

/** Whether leadership was held and lost (the daemon should exit). */
bool ctl_manager_lost(ctl_manager *m);

/** Whether this instance reconciles (leader, or no leader election). */
bool ctl_manager_leading(ctl_manager *m);

/** The cluster id read at start ("" before). Borrowed. */
const char *ctl_manager_cluster_id(ctl_manager *m);

/** The metrics port actually bound (0 when none). */
int ctl_manager_metrics_port(ctl_manager *m);

/** The probe port actually bound (0 when none). */
int ctl_manager_probe_port(ctl_manager *m);

/** Queues a Component for reconciliation. */
void ctl_manager_enqueue(ctl_manager *m, const char *ns, const char *name);

/** Called when a Component no longer needs its source followed (ctl_manager_on_release()). */
typedef void (*ctl_release_fn)(void *ctx, const char *ns, const char *name);

/**
 * Registers @p fn, called with a Component's namespace and name once it no longer needs its
 * source followed: its deletion has begun, it was deleted (or left the watched set), or a
 * reconcile found it gone. It runs on informer and worker threads, so it must be thread-safe and
 * quick. Call before ctl_manager_start(); a later call replaces the earlier one.
 */
void ctl_manager_on_release(ctl_manager *m, ctl_release_fn fn, void *ctx);

/** Copies the counters. */
void ctl_manager_stats_get(ctl_manager *m, ctl_manager_stats *out);

/** The events forwarder of --events-address (borrowed; NULL when none). */
struct ctl_notify *ctl_manager_notify(ctl_manager *m);

/** The local client (borrowed). */
co_kube_client *ctl_manager_client(ctl_manager *m);

/** The metrics registry (borrowed), for other parts of the daemon to add to. */
struct co_metrics *ctl_manager_metrics(ctl_manager *m);

/** The event recorder of the local cluster (borrowed; exists from ctl_manager_new() on, so
 * that it can be handed to the apply engine before ctl_manager_start() starts workers). */
struct co_kube_recorder *ctl_manager_recorder(ctl_manager *m);

/** The dependents cache (ctl_depcache.h); NULL before ctl_manager_start() or without
 * cache_dependents. Borrowed. */
struct ctl_depcache *ctl_manager_dependents_cache(ctl_manager *m);

/** The watch of referenced Secrets (ctl_refwatch.h; borrowed, lives as long as the manager). */
struct ctl_refwatch *ctl_manager_reference_watch(ctl_manager *m);

/**
 * Reads an object for the source layer: Flux source kinds from the informer caches when they
 * run, everything else (and Flux kinds the cluster does not serve) from the API server.
 * @param[out] out a new reference
 * @return 0, CO_ENOTFOUND, CO_ENOMATCH (kind not served) or an API error.
 */
int ctl_manager_read(ctl_manager *m,
                     const char *api_version,
                     const char *kind,
                     const char *ns,
                     const char *name,
                     struct json_object **out);

#endif
