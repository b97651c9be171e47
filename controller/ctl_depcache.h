/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_depcache.h
 * The local cluster's dependents, watched (docs/behaviour.md, "Dependents cache"): one informer
 * per type of dependent, cluster-wide, of the objects carrying this operator's owner label. It
 * serves two things:
 * - reads: the apply engine takes an unchanged dependent from here instead of reading it from
 *   the API server on every pass (ctl_apply.c decides when a cached object may stand in for a
 *   live read);
 * - triggers: a dependent whose status, generation, deletion or owner marks change queues its
 *   Component, so a Component waiting for a Deployment to become available is reconciled when
 *   it does, not on the next backoff step.
 *
 * Types are watched on first use. A type is watched only when the controller's own identity
 * may list and watch it cluster-wide (asked with SelfSubjectAccessReviews, so a controller
 * without the right never makes a request that is refused): in the least-privilege
 * installation, where the controller reads nothing but its own kinds, nothing is cached and
 * every read stays live. Only built-in types that a cluster always serves are cached (a custom type
 * can vanish with its CRD, leaving a cache that no longer follows anything), and Secrets never are
 * (the controller does not hold its tenants' Secrets in memory). At most CTL_DEPCACHE_MAX_TYPES
 * types are watched.
 */
#ifndef CTL_DEPCACHE_H
#define CTL_DEPCACHE_H

#include <stdbool.h>

#include "co/util/common.h"

struct json_object;
struct co_kube_client;

/** Most types watched at once. */
#define CTL_DEPCACHE_MAX_TYPES 32

typedef struct ctl_depcache ctl_depcache;

/** What the cache tells its owner, and asks it; called on informer threads. */
typedef struct ctl_depcache_hooks {
    /** The Component ("namespace", "name") a dependent's change concerns; enqueue only. NULL:
     * no triggers. */
    void (*changed)(void *ctx, const char *ns, const char *name);
    /** Whether this controller manages the Component ("namespace", "name"): the dependents of
     * the Components it does not (other namespaces, another controller's label selector) are
     * not kept. Must be cheap and must not block. NULL: every Component of the cluster. */
    bool (*manages)(void *ctx, const char *ns, const char *name);
    void *ctx;
} ctl_depcache_hooks;

/**
 * A cache over @p client (the local cluster, the controller's own identity; borrowed, must
 * outlive the cache). It keeps the dependents whose owner label and annotation name a Component
 * of @p cluster_id (copied) that @p hooks->manages, and reports their changes to
 * @p hooks->changed.
 * @param hooks copied; NULL: no hooks
 * @param[out] out free with ctl_depcache_free()
 * @return 0 (cannot fail).
 */
CO_MUST_CHECK int ctl_depcache_new(ctl_depcache **out,
                                   struct co_kube_client *client,
                                   const char *cluster_id,
                                   const ctl_depcache_hooks *hooks);

/** Stops every informer and frees the cache. NULL is a no-op. */
void ctl_depcache_free(ctl_depcache *d);

/**
 * Whether objects of @p group / @p version / @p kind are served now (the type's informer has
 * synced). The first call for a cacheable type starts watching it, so later passes are served.
 * Thread-safe.
 */
bool ctl_depcache_serves(ctl_depcache *d, const char *group, const char *version, const char *kind);

/**
 * The cached object @p ns / @p name (ns "" or NULL: cluster-scoped) of a served type, when it
 * carries the owner label @p hashed_owner.
 * @param[out] out a private copy without metadata.managedFields, a ConfigMap's values
 *        fingerprinted and a workload's templates left out (ctl_depcache_trim())
 *        (json_object_put())
 * @return 0; CO_ENOTFOUND when the type is not served, the object is not cached, or it carries
 *         another owner's label (then only a live read can tell).
 */
CO_MUST_CHECK int ctl_depcache_get(struct json_object **out,
                                   ctl_depcache *d,
                                   const char *group,
                                   const char *version,
                                   const char *kind,
                                   const char *ns,
                                   const char *name,
                                   const char *hashed_owner);

/** How a fingerprinted value starts: the rest is its SHA-256 in hex. */
#define CTL_DEPCACHE_FINGERPRINT "sha256:"

/**
 * Gives @p obj, of kind @p kind, the shape the cache keeps such objects in: each value of a
 * ConfigMap's data and binaryData longer than a fingerprint replaced by its fingerprint (long
 * values stay out of memory; shorter ones cost less than theirs), a workload's spec.template and
 * spec.volumeClaimTemplates and kubectl's last-applied-configuration annotation left out. Applied
 * to a copy of a manifest, it makes the manifest comparable with a cached object (docs/drift.md,
 * "Comparison" and "Limits").
 */
void ctl_depcache_trim(struct json_object *obj, const char *kind);

/** Types watched now (for tests and metrics). */
size_t ctl_depcache_types(ctl_depcache *d);

#endif
