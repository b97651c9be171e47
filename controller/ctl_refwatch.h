/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reconciles on changes of referenced Secrets (docs/refwatch.md): the Secrets a Component names
 * in valuesFrom, kubeConfig.secretRef, decryption.secretRef and postBuild.substituteFrom queue
 * it when they are created, changed or deleted, instead of waiting for its requeue interval.
 *
 * Two parts. The reference index maps each referenced Secret ("Secret/<ns>/<name>") to the
 * Components ("<ns>/<name>") that name it; it is built from the Components the manager's
 * informers hold, so its size follows the references, not the Secrets of the cluster. The watch
 * lists and watches Secrets as metadata only (PartialObjectMetadata: no data ever reaches the
 * controller this way), admits into its store only the referenced ones, trimmed to name,
 * namespace, uid and resourceVersion, and queues their Components on a change. It starts with
 * the first reference, after a SelfSubjectAccessReview: a controller that may not list and watch
 * Secrets says so once and keeps today's behaviour (the requeue interval).
 *
 * Thread-safe: the index is updated from the Component informers' threads and read from the
 * Secret informers' threads.
 */
#ifndef CTL_REFWATCH_H
#define CTL_REFWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/kube/kube_client.h"
#include "co/kube/kube_informer.h"

struct json_object;

/* ---- the reference index ------------------------------------------------------------------- */

typedef struct ctl_refindex ctl_refindex;

ctl_refindex *ctl_refindex_new(void);

/** Frees the index. NULL is a no-op. */
void ctl_refindex_free(ctl_refindex *idx);

/**
 * The objects a Component object references, as index keys "Secret/<ns>/<name>" (the
 * Component's namespace; empty names are left out), without duplicates. Reads the v1alpha1
 * layout the manager's informers receive.
 * @param[out] out appended to (co_kube_keys_dispose())
 */
void ctl_refindex_refs_of(co_kube_keys *out, const struct json_object *component);

/** Makes @p refs the references of Component @p component ("<ns>/<name>"), replacing those it
 * had; an empty list removes the Component. */
void ctl_refindex_set(ctl_refindex *idx, const char *component, const co_kube_keys *refs);

/** Forgets the references of @p component. */
void ctl_refindex_remove(ctl_refindex *idx, const char *component);

/** Whether some Component references @p ref. */
bool ctl_refindex_referenced(ctl_refindex *idx, const char *ref);

/** The Components that reference @p ref, sorted. @param[out] out appended to. */
void ctl_refindex_referrers(co_kube_keys *out, ctl_refindex *idx, const char *ref);

/** Number of referenced objects (index keys). */
size_t ctl_refindex_len(ctl_refindex *idx);

/* ---- the watch ----------------------------------------------------------------------------- */

typedef struct ctl_refwatch ctl_refwatch;

/** Queues a Component ("<ns>/<name>"); called on a Secret informer's thread. */
typedef void (*ctl_refwatch_enqueue_fn)(void *ctx, const char *component);

typedef struct ctl_refwatch_options {
    co_kube_client *client;          /**< borrowed: the controller's own client */
    const char *const *namespaces;   /**< the watched namespaces (copied); none: all */
    size_t nnamespaces;              /**< number of @ref namespaces */
    ctl_refwatch_enqueue_fn enqueue; /**< required */
    void *ctx;                       /**< for @ref enqueue */
    int64_t retry_ns;                /**< after a failed permission check; 0: 30 s */
} ctl_refwatch_options;

/** Counters (for tests and the metrics). */
typedef struct ctl_refwatch_stats {
    bool watching;          /**< the Secret informers run */
    bool refused;           /**< the controller may not list and watch Secrets */
    size_t referenced;      /**< referenced Secrets in the index */
    size_t stored;          /**< Secrets in the informers' stores (trimmed metadata) */
    unsigned long changes;  /**< changes of referenced Secrets seen */
    unsigned long requeues; /**< Components queued for them */
} ctl_refwatch_stats;

/** Creates the index and the (not yet running) watch. @return 0 or CO_EINVALID. */
int ctl_refwatch_new(ctl_refwatch **out, const ctl_refwatch_options *opts);

/** A Component was added or changed: its references replace the ones it had. */
void ctl_refwatch_component_set(ctl_refwatch *rw, const struct json_object *component);

/** A Component is gone. */
void ctl_refwatch_component_remove(ctl_refwatch *rw, const struct json_object *component);

/** Starts the thread that starts the watch once a Component references a Secret (the permission
 * check and the informers are its work). @return 0 or CO_ERROR. */
int ctl_refwatch_start(ctl_refwatch *rw);

/** Whether the watch runs and has listed once, within @p timeout_ms (tests). */
bool ctl_refwatch_wait_watching(ctl_refwatch *rw, long timeout_ms);

/** Stops the thread and the informers. Idempotent. */
void ctl_refwatch_stop(ctl_refwatch *rw);

/** Stops and frees. NULL is a no-op. */
void ctl_refwatch_free(ctl_refwatch *rw);

void ctl_refwatch_stats_get(ctl_refwatch_stats *out, ctl_refwatch *rw);

#endif
