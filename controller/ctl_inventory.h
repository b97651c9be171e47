/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file ctl_inventory.h
 * The pure half of the apply engine (docs/behaviour.md, "Apply pass", steps 1–4, "Inventory",
 * "Object digest and reconcile policies", "Policy resolution", "Apply waves" and "Deletion
 * waves"): the rendered object list is validated and normalised into a ctl_objset, the
 * inventory (status.inventory) is read into a ctl_inventory, merged with the object set, checked
 * for consistency, sorted and written back. Nothing here talks to an API server: the two
 * questions that need one (the scope of a kind, the owner of an existing object) are asked
 * through callbacks, so that every rule is testable without a cluster.
 *
 * Policies are the API module's enums (co/api/component.h); their values are kept in the Go
 * operator's spelling ("IfUnowned", "SsaOverride", ...) in the inventory, so that a cluster can
 * switch between the Go and the C operator. Annotation values are accepted in any case style
 * (normalised to kebab case, like the Go original).
 *
 * Ownership: a ctl_objset borrows the manifests of the array it was built from (and edits them
 * in place); everything else it holds is its own. Free with the matching _dispose(). Not
 * thread-safe per set; distinct sets may be used by distinct threads.
 */
#ifndef CTL_INVENTORY_H
#define CTL_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/api/component.h"
#include "co/api/drift.h"
#include "co/api/lifecycle.h"
#include "co/util/common.h"

struct json_object;

/** Prefix of every label and annotation the operator reads or writes. */
#define CTL_NAME "component-operator.cs.sap.com"

#define CTL_LABEL_OWNER_ID       CTL_NAME "/owner-id"
#define CTL_ANN_OWNER_ID         CTL_NAME "/owner-id"
#define CTL_ANN_DIGEST           CTL_NAME "/digest"
#define CTL_ANN_ADOPTION_POLICY  CTL_NAME "/adoption-policy"
#define CTL_ANN_RECONCILE_POLICY CTL_NAME "/reconcile-policy"
#define CTL_ANN_UPDATE_POLICY    CTL_NAME "/update-policy"
#define CTL_ANN_DELETE_POLICY    CTL_NAME "/delete-policy"
#define CTL_ANN_REAPPLY_INTERVAL CTL_NAME "/reapply-interval"
#define CTL_ANN_APPLY_ORDER      CTL_NAME "/apply-order"
#define CTL_ANN_PURGE_ORDER      CTL_NAME "/purge-order"
#define CTL_ANN_DELETE_ORDER     CTL_NAME "/delete-order"
#define CTL_ANN_STATUS_HINT      CTL_NAME "/status-hint"
#define CTL_ANN_PARTICIPATION    CTL_NAME "/participation"
#define CTL_ANN_DISABLE_EVENTS   CTL_NAME "/disable-events"
/** On a workload scaled down by a ScaleDown suspension: what it was before, restored on resume
 * (docs/lifecycle.md, "Suspension that scales down"). */
#define CTL_ANN_SUSPENDED_STATE CTL_NAME "/suspended-state"
/** Finalizer on Components and on the CRDs and APIServices the operator manages. */
#define CTL_FINALIZER CTL_NAME
/** Field manager of every write. */
#define CTL_FIELD_MANAGER CTL_NAME
/** Digest of objects with reconcile policy Once. */
#define CTL_DIGEST_ONCE "__once__"

/** Orders are int16 values; a purge order outside that range means "never purged". */
#define CTL_ORDER_MIN (-32768)
#define CTL_ORDER_MAX 32767
#define CTL_NO_PURGE  (CTL_ORDER_MAX + 1)

/** Longest drift text kept in an inventory item (ctl_item.drift). */
#define CTL_DRIFT_TEXT_MAX 2048

/** Most objects one component may render (and hence inventory items it may hold). */
#define CTL_MAX_OBJECTS 100000

/** An object's reconcile-policy annotation (no Component field has one: OnObjectChange). */
typedef enum ctl_reconcile_policy {
    CTL_RECONCILE_ON_OBJECT_CHANGE = 0,
    CTL_RECONCILE_ON_OBJECT_OR_COMPONENT_CHANGE,
    CTL_RECONCILE_ONCE,
} ctl_reconcile_policy;

typedef enum ctl_phase {
    CTL_PHASE_NONE = 0, /**< "": an item about to leave the inventory */
    CTL_PHASE_SCHEDULED_FOR_APPLICATION,
    CTL_PHASE_CREATING,
    CTL_PHASE_UPDATING,
    CTL_PHASE_READY,
    CTL_PHASE_SCHEDULED_FOR_COMPLETION,
    CTL_PHASE_COMPLETING,
    CTL_PHASE_COMPLETED,
    CTL_PHASE_SCHEDULED_FOR_DELETION,
    CTL_PHASE_DELETING,
} ctl_phase;

/** Go spellings of the values ("OnObjectChange", ..., "ScheduledForApplication", ...); those of
 * the adoption, update and delete policies are the API module's (co_adoption_policy_name(),
 * ...). */
const char *ctl_reconcile_policy_name(ctl_reconcile_policy v);
const char *ctl_phase_name(ctl_phase v);

/** A type pattern: {group, version, kind}, each possibly "*". */
typedef struct ctl_type {
    char *group;
    char *version;
    char *kind;
} ctl_type;

/** One inventory item (docs/behaviour.md, "Inventory"). */
typedef struct ctl_item {
    char *group;
    char *version;
    char *kind;
    char *namespace; /**< "" for cluster-scoped objects */
    char *name;
    co_adoption_policy adoption;
    ctl_reconcile_policy reconcile;
    co_update_policy update;
    co_delete_policy delete_policy;
    int apply_order;
    int delete_order;
    ctl_type *managed_types;
    size_t nmanaged_types;
    char *digest; /**< "" = obsolete */
    ctl_phase phase;
    char *status;            /**< kstatus name or "" */
    int64_t last_applied_at; /**< nanoseconds since the epoch; 0 = unset */
    /** The object's mode (docs/lifecycle.md, "Object modes"); stored as `mode` when not
     * CO_MODE_MANAGED. */
    co_object_mode mode;
    /** The drifted fields a Warn object kept at the last comparison ("/data/a, /spec/replicas",
     * at most CO_DRIFT_MAX_FIELDS named, "(and N more)" after them); stored as `drift`; NULL =
     * none (docs/drift.md, "Reporting"). */
    char *drift;
    /** Not stored: the object refused adoption when first applied; the item leaves the
     * inventory (it never was this Component's). */
    bool refused;
} ctl_item;

/** The inventory: items in their stored order. */
typedef struct ctl_inventory {
    ctl_item *items;
    size_t len;
    size_t cap;
} ctl_inventory;

/** One validated, normalised dependent object. */
typedef struct ctl_obj {
    struct json_object *manifest; /**< borrowed from the rendered array; edited in place */
    char *group;
    char *version;
    char *kind;
    char *namespace; /**< "" for cluster-scoped objects */
    char *name;
    co_adoption_policy adoption;
    ctl_reconcile_policy reconcile;
    co_update_policy update;
    co_delete_policy delete_policy;
    int apply_order;
    int delete_order;
    int purge_order;     /**< CTL_NO_PURGE when absent */
    int64_t reapply_ns;  /**< forced reapply interval */
    bool auxiliary;      /**< participation: auxiliary — readiness does not gate */
    co_object_mode mode; /**< the mode annotation (docs/lifecycle.md, "Object modes") */
    /** The guard annotation (docs/lifecycle.md, "Guards"), its namespace filled in with the
     * object's own when it names none; all NULL when the object has no guard. */
    co_prerequisite guard;
    /** The drift policy and ignored fields annotations (docs/drift.md). */
    co_drift_policy drift;
    co_drift_ignore ignore;
    char *digest; /**< docs/behaviour.md, "Object digest and reconcile policies" */
    ctl_type *managed_types;
    size_t nmanaged_types;
} ctl_obj;

typedef struct ctl_objset {
    ctl_obj *objs;
    size_t len;
} ctl_objset;

/** Effective component-level settings (docs/behaviour.md, "Policy resolution"): what an object
 * without annotations gets. */
typedef struct ctl_defaults {
    co_adoption_policy adoption;    /**< never *_UNSET */
    co_update_policy update;        /**< never *_UNSET */
    co_delete_policy delete_policy; /**< never *_UNSET */
    int64_t reapply_ns;             /**< > 0 */
    const char *namespace;          /**< placement namespace */
    const char *component_digest;   /**< for OnObjectOrComponentChange */
} ctl_defaults;

/**
 * The scope of a kind: *namespaced_out = 1 (namespaced) or 0 (cluster-scoped).
 * @return 0; CO_ENOMATCH when the server does not serve the kind; other errors are passed on.
 */
typedef int (*ctl_scope_fn)(int *namespaced_out,
                            const char *api_version,
                            const char *kind,
                            void *payload);

/**
 * Validates and normalises the rendered objects (docs/behaviour.md, "Apply pass", steps 1–3) and
 * computes their digests ("Object digest and reconcile policies"): generateName refused;
 * apiVersion, kind, name required; labels and annotations must be string maps; CRDs other than
 * apiextensions.k8s.io/v1 and APIServices other than apiregistration.k8s.io/v1 refused; Secret
 * stringData folded into data; the owner-id label and the owner-id and digest annotations removed;
 * namespaces fixed by scope (@p scope, or a CRD or APIService of the same set for a kind not served
 * yet); duplicates (group, kind, namespace, name) refused; policy, reapply-interval, order and
 * participation, mode, guard, drift-policy and ignore-fields annotations validated; purge orders
 * refused on Namespaces, CRDs and APIServices.
 * @param objects the rendered array; its manifests are edited in place and borrowed by @p out
 * @return 0; CO_EINVALID with "... object <apiVersion> <Kind> <ns>/<name>: <problem>";
 * CO_ETOOBIG over CTL_MAX_OBJECTS; errors of @p scope (wrapped with the object).
 */
CO_MUST_CHECK int ctl_objset_prepare(ctl_objset *out,
                                     struct json_object *objects,
                                     const ctl_defaults *defaults,
                                     ctl_scope_fn scope,
                                     void *payload);

void ctl_objset_dispose(ctl_objset *set);

/**
 * The object digest (docs/behaviour.md, "Object digest and reconcile policies") of @p manifest:
 * `__once__` for policy Once; otherwise sha256 hex of the canonical JSON with
 * metadata.resourceVersion, generation and managedFields removed, followed by `@<component digest>`
 * for OnObjectOrComponentChange. Free with free().
 */
char *ctl_object_digest(const struct json_object *manifest,
                        ctl_reconcile_policy policy,
                        const char *component_digest);

/** The apiVersion of @p group and @p version: "apps/v1", or "v1" for the core group. Free with
 * free(). */
char *ctl_api_version(const char *group, const char *version);

/** "apps/v1 Deployment ns/name" or "v1 Namespace name". Free with free(). */
char *ctl_key_string(const char *group,
                     const char *version,
                     const char *kind,
                     const char *namespace,
                     const char *name);

/** ctl_key_string() of an item / object. Free with free(). */
char *ctl_item_key(const ctl_item *it);
char *ctl_obj_key(const ctl_obj *o);

/**
 * Reads status.inventory (a json-c array; NULL reads as empty).
 * @return 0 or CO_EINVALID naming the item index and field.
 */
CO_MUST_CHECK int ctl_inventory_read(ctl_inventory *out, const struct json_object *array);

/** Replaces the contents of the json-c array @p array by the items (Go's JSON shape). */
void ctl_inventory_write(const ctl_inventory *inv, struct json_object *array);

void ctl_inventory_dispose(ctl_inventory *inv);

/** Frees the strings of one item and zeroes it. */
void ctl_item_dispose(ctl_item *it);

/** The item of @p inv with the group, kind, namespace and name of @p o, or NULL. */
ctl_item *ctl_inventory_find(const ctl_inventory *inv, const ctl_obj *o);

/**
 * Answers whether an object that is not yet in the inventory may enter it (docs/behaviour.md,
 * "Adoption"): @p live is the live object or NULL when absent.
 * @return 0, or CO_ECONFLICT with "found existing object K without owner" / "owner conflict;
 * object K is owned by <clear owner id>".
 */
CO_MUST_CHECK int
ctl_adoption_check(const ctl_obj *o, const struct json_object *live, const char *hashed_owner_id);

/** Reads the live object of @p o for the adoption check: *out NULL when it does not exist. */
typedef int (*ctl_live_fn)(struct json_object **out, const ctl_obj *o, void *payload);

/**
 * Whether another Component lists @p o in its inventory: 1 with its "namespace/name" in
 * *owner_out (free()), else 0. An object without an owner label may still be another
 * Component's: it persists new inventory entries before it creates the objects, and a label
 * can be removed by hand.
 */
typedef int (*ctl_claim_fn)(char **owner_out, const ctl_obj *o, void *payload);

/**
 * Merges the object set into the inventory (docs/behaviour.md, "Apply pass", step 4): new objects
 * are checked for adoption (through @p live, when given) and appended; item fields are refreshed; a
 * changed digest schedules the item for application; items no object matches are scheduled for
 * deletion; consistency of managed types and namespaces is checked; the inventory is sorted for
 * deletion. On failure @p inv is left as it was.
 * @param[out] added_out number of items appended
 * @param live NULL, or reads an object new to the inventory for the adoption check. Without it
 *        the check is the caller's, when it first writes the object (ctl_apply() does).
 * @param claimed NULL, or asked for each new object without our owner label whose adoption
 *        policy is not Always: an object another Component lists is refused as an owner
 *        conflict (docs/security.md)
 * @return 0; CO_ECONFLICT from the adoption check; CO_EINVALID for a consistency violation;
 * errors of @p live.
 */
CO_MUST_CHECK int ctl_inventory_update(size_t *added_out,
                                       ctl_inventory *inv,
                                       const ctl_objset *set,
                                       const char *hashed_owner_id,
                                       ctl_live_fn live,
                                       ctl_claim_fn claimed,
                                       void *payload);

/** Stable sort of the inventory by delete order, then by the kind priorities of
 * docs/behaviour.md, "Deletion waves". */
void ctl_inventory_sort_for_delete(ctl_inventory *inv);

/** Stable sort of the object set by apply order, then by the kind priorities of
 * docs/behaviour.md, "Apply waves". */
void ctl_objset_sort_for_apply(ctl_objset *set);

/** Apply / delete priority of a group and kind (docs/behaviour.md, "Apply waves" and "Deletion
 * waves"). */
int ctl_apply_priority(const char *group, const char *kind);
int ctl_delete_priority(const char *group, const char *kind);

/** Whether @p group matches the pattern @p pattern ("*", "*.<suffix>" or exact). */
bool ctl_group_matches(const char *pattern, const char *group);

/**
 * Whether the object of that type is a managed instance: an instance of a type an inventory
 * item defines (CRD or APIService managedTypes) or of one of the @p nextra additional managed
 * types @p extra (spec.additionalManagedTypes).
 */
bool ctl_is_managed_instance(const co_type_info *extra,
                             size_t nextra,
                             const ctl_inventory *inv,
                             const char *group,
                             const char *version,
                             const char *kind);

/** Whether an inventory item lives in namespace @p ns. */
bool ctl_namespace_used(const ctl_inventory *inv, const char *ns);

/**
 * Parses the value of CTL_ANN_PARTICIPATION (kebab-cased first, as the other annotations):
 * "auxiliary" sets *auxiliary, "required" and "" clear it.
 * @return 0; CO_EINVALID naming the annotation and the value for anything else.
 */
CO_MUST_CHECK int ctl_participation_parse(bool *auxiliary, const char *value);

bool ctl_is_namespace(const char *group, const char *kind);
bool ctl_is_crd(const char *group, const char *kind);
bool ctl_is_apiservice(const char *group, const char *kind);

/** Owner-id label value: lower-case unpadded base32 of sha256(@p owner_id). Free with free(). */
char *ctl_hash_owner_id(const char *owner_id);

#endif
