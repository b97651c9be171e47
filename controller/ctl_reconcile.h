/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_reconcile.h
 * One reconcile of one Component: the state machine of docs/behaviour.md, "Reconcile steps", with
 * "States and reasons", "Intervals and requeue", "Processing timeout", "Retriable errors",
 * "Component digest", "Owner identity", "Values", "Pinning", "Sticky sources", "Dependencies" and
 * "Targets and impersonation" — plus what the Go original lacks: a dependency cycle puts every
 * member into Error/DependencyCycle, and ComponentPolicy rules are enforced here too
 * (Error/PolicyViolation).
 *
 * Everything that is not the state machine itself comes in through seams filled by the
 * manager: the informer caches (dependencies, dependants, cycles, policies), the source layer,
 * the target clients and the apply engine. The Component and its Secrets are always read
 * uncached through the local client, and parsed once per pass into the API module's typed
 * model (co/api/component.h), whose enums, effective values and defaults drive the pass; status
 * is built in that model and written with a full PUT of the status subresource carrying the
 * resourceVersion read, and a conflict is retried on a fresh read with the status computed here
 * (status belongs to the controller), so no field is lost.
 */
#ifndef CTL_RECONCILE_H
#define CTL_RECONCILE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "co/api/component.h"
#include "co/util/common.h"
#include "co/kube/kube_client.h"
#include "co/kube/kube_informer.h"
#include "co/api/policy.h"
#include "controller/ctl_apply.h"
#include "controller/ctl_state.h"

struct json_object;
struct ctl_depcache;

/** The reconciler name: finalizer, field manager, label and annotation prefix. */
#define CTL_RECONCILER_NAME "component-operator.cs.sap.com"

/** Delay of the retriable errors (docs/behaviour.md, "Retriable errors") that have one of their
 * own (10 s). */
#define CTL_RETRY_REFERENCE_NS ((int64_t)10 * 1000000000)

/** A resolved source artifact (status.sourceRef). */
typedef struct ctl_artifact {
    char *url;
    char *digest;
    char *revision;
    char *source_digest; /**< feeds the component digest */
} ctl_artifact;

/** Frees the strings of @p a and zeroes it. */
void ctl_artifact_dispose(ctl_artifact *a);

/** The source layer. */
typedef struct ctl_source_ops {
    /** Resolves spec.sourceRef of @p component. On failure *retry_ns > 0 marks it retriable. */
    int (*resolve)(void *ctx, const co_component *component, ctl_artifact *out, int64_t *retry_ns);
    /** Materialises @p a and returns the directory spec.path names (free()) and a hold to
     * release when done. */
    int (*fetch)(void *ctx,
                 const co_component *component,
                 const ctl_artifact *a,
                 char **dir_out,
                 void **hold_out);
    void (*release)(void *ctx, void *hold);
    void *ctx;
    /** Optional: the root of the artifact @p hold holds (free()), the fetched directory in or
     * below it; a templated kustomization may refer to bases anywhere below it. NULL member:
     * the directory is its own root. */
    int (*root)(void *ctx, void *hold, char **root_out);
} ctl_source_ops;

/** Informer-backed lookups. Any member may be NULL (the check is then skipped). */
typedef struct ctl_cache_ops {
    /** Optional: the Component as the cache holds it (a new reference), provided the cache
     * has caught up with this controller's last write of it (see @ref wrote); CO_ENOTFOUND
     * when it does not hold it or lags behind: the reconcile then reads the API server. */
    int (*read)(void *ctx, const char *ns, const char *name, struct json_object **out);
    /** Optional: records this controller's last write of a Component, @p obj being the API
     * server's answer; NULL when the Component is gone. */
    void (*wrote)(void *ctx, const char *ns, const char *name, const struct json_object *obj);
    /** A cached Component, parsed (co_component_free()); CO_ENOTFOUND when absent. */
    int (*get_component)(void *ctx, const char *ns, const char *name, co_component **out);
    /** Keys ("ns/name") of the Components that list @p key as a dependency; an error blocks
     * the deletion (retried), as a dependant would. */
    int (*dependants)(void *ctx, const char *key, co_kube_keys *out);
    /** The dependency cycle through @p key ("ns/a -> ns/b -> ns/a"), or CO_ENOTFOUND. */
    int (*cycle_of)(void *ctx, const char *key, char **path_out);
    /** ComponentPolicy verdict: 0 when admitted (with the rules of action Warn that matched in
     * *msg_out, when some did; NULL otherwise); CO_EINVALID with *msg_out when denied; any
     * other error when the policies cannot be evaluated (the pass then fails: a policy never
     * fails open). What the applying policies grant is in *perm_out (dispose it) on 0 and on
     * CO_EINVALID. */
    int (*policy_check)(void *ctx,
                        const struct json_object *component,
                        char **msg_out,
                        co_policy_permissions *perm_out);
    /** Whether a Component other than @p self ("ns/name") that deploys into the local cluster
     * lists the object (@p group, @p kind, @p ns, @p name) in its inventory: 1 with its key in
     * *owner_out (free()), else 0. */
    int (*claimed_by)(void *ctx,
                      const char *self,
                      const char *group,
                      const char *kind,
                      const char *ns,
                      const char *name,
                      char **owner_out);
    void *ctx;
} ctl_cache_ops;

/** Target clients (ctl_targets.h). */
typedef struct ctl_target_ops {
    /** A client for @p kubeconfig (NULL: the local cluster) acting as @p user (NULL: as the
     * controller), with ctl_targets_acquire()'s @p flags; *hold is released with release(). */
    int (*acquire)(void *ctx,
                   const char *kubeconfig,
                   size_t kubeconfig_len,
                   const char *user,
                   unsigned flags,
                   co_kube_client **out,
                   void **hold);
    void (*release)(void *ctx, void *hold);
    /** The event recorder of a held client (NULL: none); optional. */
    struct co_kube_recorder *(*recorder)(void *ctx, void *hold);
    void *ctx;
} ctl_target_ops;

/** How one reconcile ended. Everything is borrowed for the call. */
typedef struct ctl_outcome {
    /** the Component as read; its status is the new one except for the inventory */
    const co_component *component;
    /** the same as last read or written (after the status write, when there was one): the
     * involved object of events */
    const struct json_object *object;
    /** the digest of this reconcile ("" when it ended before the digest was computed, as the
     * Go operator's event token has it) */
    const char *component_digest;
    const char *state;   /**< status.state ("" when the pass left it unset) */
    const char *reason;  /**< the Ready condition's reason */
    const char *message; /**< the Ready condition's message */
    int error_code;      /**< 0, or the error of a pass that failed for good */
    size_t dependents;   /**< items of status.inventory */
    size_t unready;      /**< of which neither Ready nor Completed */
    /** inventory items recorded as drifted and kept so (docs/drift.md, "Reporting") */
    size_t drifted;
    /** the Drifted condition's new message when this pass changed it, "" when it went away;
     * NULL: unchanged */
    const char *drift_change;
    /** the status was held back for the next pass (ctl_pending.h) rather than written: that
     * pass reports the state it writes, so this one records no event */
    bool held;
} ctl_outcome;

/** Something observable for every reconcile (metrics, events). */
typedef struct ctl_observer {
    /** After the outcome is known, before the status write. */
    void (*outcome)(void *ctx, const ctl_outcome *o);
    /** The Component is gone for good (finalizer removed or object not found). */
    void (*gone)(void *ctx, const char *ns, const char *name);
    /** What one call into the apply engine did to dependents; optional. */
    void (*operations)(void *ctx, const ctl_apply_stats *stats);
    void *ctx;
    /** Optional: whether this pass was skipped for the skip-reconciliation label
     * (docs/lifecycle.md, "Skip reconciliation"); told of every pass of a Component that parses,
     * before anything else is done. @p object is the Component as read. */
    void (*skipped)(void *ctx, const co_component *c, const struct json_object *object, bool skip);
} ctl_observer;

/** Everything a reconcile needs; shared by all workers (all members thread-safe). */
typedef struct ctl_env {
    co_kube_client *client;              /**< local, uncached */
    const char *cluster_id;              /**< UID of kube-system */
    const char *default_service_account; /**< --default-service-account or NULL */
    ctl_backoff *backoff;
    ctl_cache_ops cache;
    ctl_source_ops source; /**< resolve NULL: no source layer (reconcile fails) */
    ctl_apply_ops apply;   /**< apply NULL: no apply engine (never Ready) */
    /** Events on dependents in the local cluster (those of a remote target go through its own
     * client's recorder, ctl_target_ops.recorder); NULL: none */
    struct co_kube_recorder *events;
    /** whether dependents get events too (ctl_apply_opts.events); the Component's own
     * `disable-events` annotation still turns them off */
    bool dependent_events;
    ctl_target_ops targets;
    ctl_observer observer;
    /** Wall clock (ns since the epoch) and randomness; NULL: the system's. */
    int64_t (*now)(void);
    uint64_t (*random)(void);
    int status_retries; /**< status PUT attempts on conflict; 0: 5 */
    /** the local cluster's dependents cache (ctl_depcache.h), used for Components deploying
     * into this cluster; NULL: none */
    struct ctl_depcache *dependents;
    /** statuses held back for one pass (ctl_pending.h); NULL: every pass writes its status */
    struct ctl_pending *pending;
    /** largest status.inventory written as a plain list (co_component_inventory_put());
     * 0: CO_INVENTORY_PLAIN_MAX */
    size_t inventory_plain_max;
    /** false once the controller stops or loses its lease: a pass then ends at the next object
     * (ctl_apply_opts.proceed); NULL: passes always run to their end */
    const atomic_bool *proceed;
} ctl_env;

/** What the worker does with the key afterwards. */
typedef struct ctl_result {
    int64_t requeue_after_ns; /**< > 0: requeue after this; 0: only on the next event */
    bool rate_limited;        /**< a non-retriable error: requeue with the queue's backoff */
    bool forget;              /**< reset the queue's backoff for the key */
} ctl_result;

/**
 * Reconciles the Component @p ns/@p name once.
 * @return 0 when the pass completed (whatever the Component's state), or an error when the
 *         status could not be written (then out->rate_limited is set).
 */
int ctl_reconcile(ctl_result *out, ctl_env *env, const char *ns, const char *name);

/** The owner id (docs/behaviour.md, "Owner identity"): "<cluster-id>/<ns>/<name>" (free()). */
char *ctl_owner_id(const char *cluster_id, const char *ns, const char *name);

/** The hashed owner id label value: lower-case unpadded base32 of sha256 (free()). */
char *ctl_owner_label(const char *owner_id);

/**
 * The effective values (docs/behaviour.md, "Values"): each valuesFrom document in order, then
 * spec.values, deep-merged (a map replaced by a scalar becomes the scalar, unlike the Go original).
 * @param docs the parsed valuesFrom documents (objects or NULL for empty), @p ndocs of them
 * @param[out] out a new object
 * @return 0 or CO_EINVALID when spec.values or a document is not a mapping.
 */
int ctl_values_merge(struct json_object **out,
                     struct json_object *const *docs,
                     size_t ndocs,
                     const struct json_object *spec_values);

#endif
