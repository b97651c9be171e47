/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_apply.h
 * The apply engine: keeps the dependent objects of one Component in a target cluster in step
 * with its rendered manifests, recording them in status.inventory (docs/behaviour.md, "Owner
 * identity" through "Finalizers"; readiness by ctl_health.h per "Health"). The controller core
 * calls these once per reconcile and persists the inventory after every call.
 *
 * What each call does today:
 * - ctl_apply(): the whole of docs/behaviour.md, "Apply pass". Validates and normalises the objects
 *   (generateName refused, string labels/annotations, CRD/APIService versions, Secret stringData
 *   folded into data, owner label/annotations stripped, server-set metadata (resourceVersion, uid,
 *   selfLink, creationTimestamp, managedFields) dropped, the `protocol` of Service and container
 *   ports defaulted to TCP as server-side apply needs it, namespaces fixed by discovery or by a
 *   CRD/APIService of the same set, duplicates refused, policy/order/interval/participation
 *   annotations checked), merges them into the inventory ("Adoption" for new objects, digests per
 *   "Object digest and reconcile policies", obsolete items scheduled for deletion, consistency
 *   checks); if an item was added, the new keys are persisted (opts->persist) before anything is
 *   created, or without that hook the call returns *done = false right there. Then: creates missing
 * namespaces (policy Create; never tracked), finishes due purges, applies wave by wave (regular
 * objects, then APIServices, then managed instances; create, or update per policy Replace /
 * Recreate / SsaMerge / SsaOverride with the managedFields takeover of "Create, update and delete"
 * — APIServices excepted, which are always written by POST and PUT because the kube-aggregator
 *   before Kubernetes 1.21 cannot server-side apply them; reapply on digest change or after the
 *   reapply interval; never again for Once), computes readiness (of a written object from the
 *   API server's answer to the write, of the others from a read), schedules purges at the end of a
 *   ready wave, and when every wave is ready removes obsolete objects in delete waves (managed
 *   instances first, namespaces when empty, orphaning per policy and foreign owner).
 * - ctl_apply_deletion_allowed(): "Deletion guard" (additional managed types, all-orphan shortcut,
 *   foreign instances of managed CRDs and APIServices).
 * - ctl_apply_delete(): "Component deletion", one pass of reverse-wave deletion.
 * - ctl_apply_release(): docs/lifecycle.md, "Unmanaged": the owner marks leave the dependents,
 *   which leave the inventory.
 * Every create, update and delete emits an Event on the dependent (Created, Updated,
 * UpdateError, Deleted, DeleteError; Released for a release) through opts->events when it is
 * not NULL.
 *
 * Beyond the Go original: an object annotated `component-operator.cs.sap.com/participation:
 * auxiliary` is applied, tracked and its status reported like any other, but its readiness
 * does not gate its wave or the component. The lifecycle controls of docs/lifecycle.md:
 * objects annotated `component-operator.cs.sap.com/mode: read-only` are only read (their
 * readiness counts, a missing one is not ready) and `delete-only` ones only deleted where the
 * adoption policy would let the Component adopt them ("Object modes"); an object's
 * `component-operator.cs.sap.com/guard` is checked before it is applied, and while it does not
 * hold neither it nor any later object is applied (opts->blocked says why; "Guards"); and
 * ctl_apply_suspend() scales workloads down for a ScaleDown suspension, which ctl_apply()
 * undoes object by object as it reaches them ("Suspension that scales down").
 *
 * Errors are negative co_error_codes with a message naming the object ("error creating object
 * apps/v1 Deployment ns/name: ..."). Client errors keep their code (CO_EUNAVAILABLE,
 * CO_ETIMEOUT, CO_ECONFLICT, ... — the caller decides which are worth a quick retry); owner
 * conflicts are CO_ECONFLICT; invalid manifests and inconsistent sets CO_EINVALID. On error
 * the inventory holds what was done up to the failure (so it should still be persisted).
 *
 * Not thread-safe per inventory; calls for distinct Components may run in parallel.
 */
#ifndef CTL_APPLY_H
#define CTL_APPLY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "co/api/component.h"
#include "co/util/common.h"

struct json_object;
struct co_kube_client;
struct co_kube_recorder;
struct ctl_depcache;

/** Counters of dependent-object operations (component_operator_runtime_operations_total;
 * docs/behaviour.md, "Metrics"). */
typedef struct ctl_apply_stats {
    unsigned long reads;   /**< GET of a dependent, a namespace, a CRD; and instance LISTs */
    unsigned long creates; /**< POST or creating server-side apply */
    unsigned long updates; /**< PUT, managedFields patch, server-side apply, finalizer patch */
    unsigned long deletes; /**< DELETE */
    unsigned long cached;  /**< dependents taken from the dependents cache instead of read */
} ctl_apply_stats;

/** Per-call settings. Strings are borrowed for the call. */
typedef struct ctl_apply_opts {
    /** Client of the target cluster (possibly impersonating or remote). Required. */
    struct co_kube_client *target;
    /** Recorder for events on dependents: the local cluster's, or the target client's own for a
     * remote target; NULL = none (when the Component carries `disable-events: "true"`, see
     * ctl_apply_events_disabled()). */
    struct co_kube_recorder *events;
    /** "<cluster-id>/<component namespace>/<component name>" (docs/behaviour.md, "Owner
     * identity"). Required. */
    const char *owner_id;
    /** Component digest (docs/behaviour.md, "Component digest"), for reconcile policy
     * OnObjectOrComponentChange. */
    const char *component_digest;
    /** Placement namespace for namespaced objects without one. Required. */
    const char *namespace;
    /** Component-level policies: the Component's effective values
     * (co_component_adoption_policy(), ...); *_UNSET = the API's default
     * (CO_COMPONENT_DEFAULT_ADOPTION, ...). The reconcile policy has no Component field: it is
     * OnObjectChange unless an object's annotation says otherwise. */
    co_adoption_policy adoption_policy;
    co_update_policy update_policy;
    co_delete_policy delete_policy; /**< CO_DELETE_DELETE or CO_DELETE_ORPHAN */
    co_missing_namespaces_policy missing_namespaces_policy;
    /** spec.reapplyInterval (co_component_reapply_ns()); <= 0 = CO_COMPONENT_DEFAULT_REAPPLY_NS. */
    int64_t reapply_interval_ns;
    /** spec.additionalManagedTypes (borrowed), @ref n_additional_managed_types of them. */
    const co_type_info *additional_managed_types;
    size_t n_additional_managed_types;
    /** Optional: whether another Component (not this one) lists the object in its inventory;
     * 1 with its "namespace/name" in *owner_out (free()), else 0. Objects it names are refused
     * unless their adoption policy is Always (see ctl_claim_fn). */
    int (*claimed)(void *ctx,
                   char **owner_out,
                   const char *group,
                   const char *kind,
                   const char *ns,
                   const char *name);
    void *claimed_ctx;
    /** Optional: persists the inventory (the caller's status write) once objects new to it are
     * recorded and before any of them is created (docs/behaviour.md, "Apply pass", step 4);
     * 0 lets the pass go on in the same call. NULL: ctl_apply() returns *done = false there
     * instead, and the caller persists the inventory and calls again. */
    int (*persist)(void *ctx, struct json_object *inventory);
    void *persist_ctx;
    /** Out, optional: set to whether the call changed the inventory, the items' drift records
     * aside (backoff reset; docs/behaviour.md, "Intervals and requeue"). */
    bool *inventory_changed;
    /** Optional: the local cluster's dependents cache, for a Component deploying into this
     * cluster; objects unchanged since this inventory wrote them are taken from there instead of
     * read (ctl_depcache.h). NULL: every read is live. */
    struct ctl_depcache *cache;
    /** Optional: once it reads false (the controller stops, or lost its lease), the call makes no
     * further change: it ends "not done" before its next object, as when it waits, with the
     * inventory recording what was done so far. NULL: always go on. */
    const atomic_bool *proceed;
    /** Out, optional: operation counters, added to. */
    ctl_apply_stats *stats;
    /** Out, optional: when ctl_apply() stops at a guard that does not hold (docs/lifecycle.md,
     * "Guards"), a message naming it (`guard of apps/v1 Deployment ns/web: waiting for condition
     * "Ready" of v1 ConfigMap ns/settings to become True (currently not found)`; free()), and
     * *done is false; NULL otherwise. */
    char **blocked;
} ctl_apply_opts;

/** Where a ScaleDown suspension stands (docs/lifecycle.md, "Suspension that scales down"). */
typedef enum ctl_suspension {
    CTL_SUSPENSION_PENDING = 0, /**< some workload is not scaled down yet: nothing done to it */
    CTL_SUSPENSION_SUSPENDING,  /**< every workload is told to stop; some still run */
    CTL_SUSPENSION_SUSPENDED,   /**< every workload is down */
} ctl_suspension;

/**
 * One apply pass (docs/behaviour.md, "Apply pass").
 * @param inventory status.inventory, a json-c array (never NULL; empty for a new component);
 *        rewritten in place
 * @param objects the rendered objects, a json-c array; normalised in place (namespaces, owner
 *        marks, Secret data)
 * @param[out] done true when every object is applied and ready (auxiliary ones aside) and
 *        nothing obsolete remains
 * @return 0 or a negative co_error_code (see the file comment).
 */
CO_MUST_CHECK int ctl_apply(const ctl_apply_opts *o,
                            struct json_object *inventory,
                            struct json_object *objects,
                            bool *done);

/**
 * The deletion guard (docs/behaviour.md, "Deletion guard").
 * @param[out] allowed false when foreign instances of a managed type exist
 * @param[out] msg when not allowed, the reason ("crd foos.x.io is still in use (instances
 *        exist)"); the caller frees it; NULL otherwise
 * @return 0 or a negative co_error_code (discovery or list failures).
 */
CO_MUST_CHECK int ctl_apply_deletion_allowed(const ctl_apply_opts *o,
                                             struct json_object *inventory,
                                             bool *allowed,
                                             char **msg);

/**
 * One step of component deletion (docs/behaviour.md, "Component deletion" and "Deletion
 * waves"): reverse delete waves, managed instances first within a wave, namespaces when no item
 * lives in them, orphaning for Orphan / OrphanOnDelete and for objects someone else owns.
 * @param[out] done true when the inventory is empty
 * @return 0 or a negative co_error_code.
 */
CO_MUST_CHECK int
ctl_apply_delete(const ctl_apply_opts *o, struct json_object *inventory, bool *done);

/**
 * One step of a ScaleDown suspension (docs/lifecycle.md, "Suspension that scales down"): every
 * Deployment and StatefulSet (group apps) and CronJob (group batch) of the inventory that this
 * Component owns and manages (not read-only or delete-only ones) is read; one not scaled down yet
 * gets its spec.replicas (CronJob: spec.suspend) recorded in the annotation CTL_ANN_SUSPENDED_STATE
 * and is patched to 0 replicas (suspend: true) by a merge patch of our field manager; one scaled
 * up again meanwhile is patched back. Nothing else is read or written; the inventory is left
 * as it is. ctl_apply() restores the recorded value and removes the annotation when it reaches
 * the object again.
 * @param[out] phase PENDING when the call stopped (opts->proceed) before every workload was
 *        patched, SUSPENDING while a Deployment or StatefulSet still has status.replicas > 0,
 *        else SUSPENDED
 * @param[out] message what is left, naming up to three workloads (free()): "waiting for
 *        apps/v1 Deployment ns/web to scale down (2 replicas)"; "" when suspended
 * @return 0 or a negative co_error_code naming the object.
 */
CO_MUST_CHECK int ctl_apply_suspend(const ctl_apply_opts *o,
                                    struct json_object *inventory,
                                    ctl_suspension *phase,
                                    char **message);

/**
 * Releases the dependents of an unmanaged Component (docs/lifecycle.md, "Unmanaged"): every
 * object of the inventory that still carries this owner's label loses the owner label, the
 * owner and digest annotations and, on a CRD or APIService, the operator's finalizer (a merge
 * patch guarded by the resourceVersion read); everything else about it stays. Objects that are
 * gone or owned by someone else are left alone. Each item leaves the inventory once done.
 * @param[out] done true when the inventory is empty
 * @return 0 or a negative co_error_code naming the object.
 */
CO_MUST_CHECK int
ctl_apply_release(const ctl_apply_opts *o, struct json_object *inventory, bool *done);

/** Whether @p component carries `component-operator.cs.sap.com/disable-events: "true"`. */
bool ctl_apply_events_disabled(const co_component *component);

/**
 * The apply engine behind the reconciler's seam (controller/ctl_reconcile.h), so that tests can
 * drive the state machine with a fake. Each member has the contract of the function of this
 * file it stands for.
 */
typedef struct ctl_apply_ops {
    /** ctl_apply() */
    int (*apply)(void *ctx,
                 const ctl_apply_opts *o,
                 struct json_object *inventory,
                 struct json_object *objects,
                 bool *done);
    /** ctl_apply_deletion_allowed() */
    int (*deletion_allowed)(void *ctx,
                            const ctl_apply_opts *o,
                            struct json_object *inventory,
                            bool *allowed,
                            char **msg);
    /** ctl_apply_delete() */
    int (*delete_all)(void *ctx,
                      const ctl_apply_opts *o,
                      struct json_object *inventory,
                      bool *done);
    void *ctx;
    /** ctl_apply_suspend(); NULL: a ScaleDown suspension fails as unsupported */
    int (*suspend)(void *ctx,
                   const ctl_apply_opts *o,
                   struct json_object *inventory,
                   ctl_suspension *phase,
                   char **message);
    /** ctl_apply_release(); NULL: an unmanaged Component fails to release its dependents */
    int (*release)(void *ctx, const ctl_apply_opts *o, struct json_object *inventory, bool *done);
} ctl_apply_ops;

/** The seam filled with this engine. */
ctl_apply_ops ctl_apply_engine_ops(void);

/**
 * The cluster id (docs/behaviour.md, "Owner identity"): the UID of namespace kube-system, read
 * through @p local.
 * @param[out] out the UID (free with free())
 * @return 0 or the client's error.
 */
CO_MUST_CHECK int ctl_apply_cluster_id(char **out, struct co_kube_client *local);

#endif
