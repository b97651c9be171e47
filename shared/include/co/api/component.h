/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file component.h
 * The Component API (`core.cs.sap.com` v1alpha1 and v1beta1): parsing into C structs,
 * defaulting, validation, conversion between the versions, effective values, and the
 * CustomResourceDefinition generated from the same schema.
 *
 * This module is the single definition of what a valid Component is; the webhook and the
 * controller call the same functions. Objects travel as json-c trees (`struct json_object`).
 *
 * - co_component_parse() decodes a Component of either version into a co_component (v1alpha1
 *   shape). It checks JSON types only; unknown fields are ignored, like the API server's decoder.
 * - co_component_validate() reports every problem as Kubernetes-style field errors: the checks
 *   the CRD schema also makes (types, required fields, enums, duration patterns, exactly one
 *   source, unknown fields), then the semantic checks only this code can make (DNS names,
 *   secret references, variable names, patch targets, managed-type patterns, dependency
 *   entries, path safety, URLs). Paths are reported in the object's own version.
 * - co_component_default() returns a defaulted copy (built-in defaults plus the defaults of
 *   matching ComponentPolicies); the webhook diffs it against the original for a JSON Patch.
 * - co_component_convert() moves fields between v1alpha1 and v1beta1
 *   (docs/webhook-and-certs.md, "Conversion"). It is a pure function: no defaulting, no validation,
 *   metadata and status untouched, and lossless: convert(convert(x)) equals x for every x it
 *   accepts. An object whose content cannot be represented in the other version (for example an
 *   empty `policies: {}` group, or an unknown field that would collide with a moved one) is refused
 *   with CO_EINVALID rather than changed.
 *
 * JSON null is treated as absent everywhere except inside `spec.values` (the API server prunes
 * nulls of non-nullable fields before validation, and Go decodes them as zero values).
 * Ownership follows shared/README.md; all functions are thread-safe (no shared state).
 */
#ifndef CO_COMPONENT_H
#define CO_COMPONENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/api/field_error.h"
#include "co/source/source_kind.h"

struct co_jv;
struct json_object;

#define CO_COMPONENT_GROUP    "core.cs.sap.com"
#define CO_COMPONENT_KIND     "Component"
#define CO_COMPONENT_V1ALPHA1 "core.cs.sap.com/v1alpha1"
#define CO_COMPONENT_V1BETA1  "core.cs.sap.com/v1beta1"
/** The CRD's name. */
#define CO_COMPONENT_CRD_NAME "components.core.cs.sap.com"

/** API versions of the Component kind. */
typedef enum co_api_version {
    CO_API_UNKNOWN = 0,  /**< not a Component of a version we serve */
    CO_API_V1ALPHA1 = 1, /**< core.cs.sap.com/v1alpha1 (storage version) */
    CO_API_V1BETA1 = 2,  /**< core.cs.sap.com/v1beta1 */
} co_api_version;

/** spec.adoptionPolicy */
typedef enum co_adoption_policy {
    CO_ADOPTION_UNSET = 0,      /**< not set */
    CO_ADOPTION_NEVER = 1,      /**< "Never" */
    CO_ADOPTION_IF_UNOWNED = 2, /**< "IfUnowned" (default) */
    CO_ADOPTION_ALWAYS = 3,     /**< "Always" */
} co_adoption_policy;

/** spec.updatePolicy */
typedef enum co_update_policy {
    CO_UPDATE_UNSET = 0,        /**< not set */
    CO_UPDATE_RECREATE = 1,     /**< "Recreate" */
    CO_UPDATE_REPLACE = 2,      /**< "Replace" */
    CO_UPDATE_SSA_MERGE = 3,    /**< "SsaMerge" */
    CO_UPDATE_SSA_OVERRIDE = 4, /**< "SsaOverride" (default) */
} co_update_policy;

/** spec.deletePolicy, and a dependent object's delete-policy annotation */
typedef enum co_delete_policy {
    CO_DELETE_UNSET = 0,  /**< not set */
    CO_DELETE_DELETE = 1, /**< "Delete" (default) */
    CO_DELETE_ORPHAN = 2, /**< "Orphan" */
    /** "OrphanOnApply": kept when the source drops it, deleted with the Component; a value of
     * the object annotation only, never of spec.deletePolicy */
    CO_DELETE_ORPHAN_ON_APPLY = 3,
    /** "OrphanOnDelete": deleted when the source drops it, kept when the Component goes; a
     * value of the object annotation only */
    CO_DELETE_ORPHAN_ON_DELETE = 4,
} co_delete_policy;

/** spec.missingNamespacesPolicy */
typedef enum co_missing_namespaces_policy {
    CO_MISSING_NAMESPACES_UNSET = 0,         /**< not set */
    CO_MISSING_NAMESPACES_DO_NOT_CREATE = 1, /**< "DoNotCreate" */
    CO_MISSING_NAMESPACES_CREATE = 2,        /**< "Create" (default) */
} co_missing_namespaces_policy;

/**
 * Built-in defaults (docs/behaviour.md, "Defaults"): what an unset field means. The
 * defaulting webhook writes these (co_component_default()) and the effective values below
 * (co_component_requeue_ns(), co_component_adoption_policy(), ...) read them; nothing else
 * spells them out. retryInterval and timeout have none of their own: unset, they follow the
 * effective requeueInterval.
 */
#define CO_COMPONENT_DEFAULT_REQUEUE_INTERVAL   "10m"
#define CO_COMPONENT_DEFAULT_REQUEUE_NS         ((int64_t)600 * 1000000000)  /**< 10m */
#define CO_COMPONENT_DEFAULT_REAPPLY_NS         ((int64_t)3600 * 1000000000) /**< 60m */
#define CO_COMPONENT_DEFAULT_ADOPTION           CO_ADOPTION_IF_UNOWNED
#define CO_COMPONENT_DEFAULT_UPDATE             CO_UPDATE_SSA_OVERRIDE
#define CO_COMPONENT_DEFAULT_DELETE             CO_DELETE_DELETE
#define CO_COMPONENT_DEFAULT_MISSING_NAMESPACES CO_MISSING_NAMESPACES_CREATE

/** An optional boolean whose absence means something other than false (spec.enabled,
 * spec.managed: absent = true). */
typedef enum co_opt_bool {
    CO_OPT_UNSET = 0, /**< absent */
    CO_OPT_TRUE = 1,  /**< true */
    CO_OPT_FALSE = 2, /**< false */
} co_opt_bool;

/** spec.suspendMode (docs/lifecycle.md, "Suspension that scales down") */
typedef enum co_suspend_mode {
    CO_SUSPEND_MODE_UNSET = 0,      /**< not set (= Pause) */
    CO_SUSPEND_MODE_PAUSE = 1,      /**< "Pause": reconciliation stops, objects stay as they are */
    CO_SUSPEND_MODE_SCALE_DOWN = 2, /**< "ScaleDown": workloads go to 0, CronJobs suspended */
} co_suspend_mode;

/** spec.prerequisites[]: a condition of another object (docs/lifecycle.md, "Prerequisites"). */
typedef struct co_prerequisite {
    char *api_version;    /**< apiVersion of the object ("v1", "apps/v1") */
    char *kind;           /**< kind */
    char *ns;             /**< namespace; NULL = the Component's (ignored for cluster scope) */
    char *name;           /**< name */
    char *condition_type; /**< condition type; NULL = "Ready" */
} co_prerequisite;

/** Which field of spec.sourceRef.git.ref is set. */
typedef enum co_git_ref_kind {
    CO_GIT_REF_NONE = 0,   /**< none */
    CO_GIT_REF_BRANCH = 1, /**< branch */
    CO_GIT_REF_TAG = 2,    /**< tag */
    CO_GIT_REF_SEMVER = 3, /**< semver (a version constraint over tags) */
    CO_GIT_REF_COMMIT = 4, /**< commit (full hex id) */
} co_git_ref_kind;

/** A duration field: the text as written and its value (Go semantics). */
typedef struct co_duration_field {
    char *text; /**< as written; NULL = unset */
    int64_t ns; /**< nanoseconds; 0 when unset or unparsable (validation reports the latter) */
} co_duration_field;

/** A namespace and a name; namespace NULL = the Component's namespace. */
typedef struct co_object_ref {
    char *ns;   /**< namespace or NULL */
    char *name; /**< name */
} co_object_ref;

/** A reference to a key of a Secret in the Component's namespace. */
typedef struct co_secret_key_ref {
    char *name; /**< Secret name */
    char *key;  /**< key, NULL = try the fallback keys */
} co_secret_key_ref;

/** spec.sourceRef.httpRepository */
typedef struct co_http_repository {
    char *url;             /**< URL of the .tar.gz */
    char *digest_header;   /**< NULL = ETag */
    char *revision_header; /**< NULL = the digest header */
} co_http_repository;

/** spec.sourceRef.git (ours) */
typedef struct co_git_source {
    char *url;                  /**< repository URL */
    co_git_ref_kind ref_kind;   /**< which of the ref fields is set (first found) */
    char *branch;               /**< ref.branch */
    char *tag;                  /**< ref.tag */
    char *semver;               /**< ref.semver */
    char *commit;               /**< ref.commit */
    char *secret_name;          /**< secretRef.name, NULL = anonymous */
    co_duration_field interval; /**< poll interval, unset = the requeue interval */
} co_git_source;

/** spec.sourceRef: exactly one variant is valid; parse records the first it finds. */
typedef struct co_source_ref {
    co_source_kind kind;     /**< the variant found (first in enum order) */
    unsigned nkinds;         /**< how many variants were present */
    co_object_ref flux;      /**< for the four flux kinds and CO_SOURCE_BLUEPRINT */
    co_http_repository http; /**< for CO_SOURCE_HTTP_REPOSITORY */
    co_git_source git;       /**< for CO_SOURCE_GIT */
} co_source_ref;

/** An entry of spec.additionalManagedTypes. */
typedef struct co_type_info {
    char *group; /**< API group, "*" or "*.<suffix>" */
    char *kind;  /**< kind or "*" */
} co_type_info;

/** A kustomize selector (spec.postBuild.patches[].target). */
typedef struct co_kustomize_selector {
    char *group;               /**< API group */
    char *version;             /**< API version */
    char *kind;                /**< kind */
    char *name;                /**< name (kustomize regex) */
    char *ns;                  /**< namespace (kustomize regex) */
    char *label_selector;      /**< label selector string */
    char *annotation_selector; /**< annotation selector string */
} co_kustomize_selector;

/** spec.postBuild.patches[] */
typedef struct co_kustomize_patch {
    char *patch;                  /**< strategic merge or JSON 6902 patch (YAML/JSON text) */
    int has_target;               /**< whether target was given */
    co_kustomize_selector target; /**< objects to patch */
} co_kustomize_patch;

/** spec.postBuild.images[] */
typedef struct co_kustomize_image {
    char *name;     /**< image name to match */
    char *new_name; /**< replacement name */
    char *new_tag;  /**< replacement tag */
    char *digest;   /**< replacement digest */
} co_kustomize_image;

/** A string-to-string map in document order. */
typedef struct co_string_map {
    char **keys;   /**< keys */
    char **values; /**< values, parallel to keys */
    size_t len;    /**< number of entries */
} co_string_map;

/** spec (v1alpha1 layout; v1beta1 objects are converted before parsing). */
typedef struct co_component_spec {
    char *ns;                      /**< target namespace (NULL = metadata.namespace) */
    char *name;                    /**< target name (NULL = metadata.name) */
    int has_kube_config;           /**< kubeConfig given */
    co_secret_key_ref kube_config; /**< kubeConfig.secretRef */
    char *service_account_name;    /**< impersonation, NULL = none */
    int suspend;                   /**< reconciliation suspended */
    co_duration_field requeue_interval;
    co_duration_field retry_interval;
    co_duration_field timeout;
    co_duration_field reapply_interval;
    co_adoption_policy adoption_policy;
    co_update_policy update_policy;
    co_delete_policy delete_policy;
    co_missing_namespaces_policy missing_namespaces_policy;
    co_type_info *additional_managed_types;
    size_t n_additional_managed_types;
    co_source_ref source;
    char *digest;               /**< pinned artifact digest, NULL = none */
    char *revision;             /**< pinned artifact revision, NULL = none */
    int sticky;                 /**< keep the source version while processing */
    char *path;                 /**< path inside the artifact, NULL = root */
    struct json_object *values; /**< spec.values (a reference held by the struct), NULL = none */
    co_secret_key_ref *values_from;
    size_t n_values_from;
    int has_decryption;           /**< decryption given */
    char *decryption_provider;    /**< NULL = sops */
    char *decryption_secret_name; /**< decryption.secretRef.name */
    int has_post_build;           /**< postBuild given */
    co_string_map substitute;     /**< postBuild.substitute */
    char **substitute_from;       /**< postBuild.substituteFrom[].name */
    size_t n_substitute_from;
    co_kustomize_patch *patches; /**< postBuild.patches */
    size_t n_patches;
    co_kustomize_image *images; /**< postBuild.images */
    size_t n_images;
    co_object_ref *dependencies; /**< dependencies (namespace as written, may be NULL) */
    size_t n_dependencies;
    /* lifecycle controls (docs/lifecycle.md) */
    co_opt_bool enabled;            /**< spec.enabled; false = Disabled */
    co_opt_bool managed;            /**< spec.managed; false = Unmanaged */
    co_duration_field grace_period; /**< spec.gracePeriod */
    co_suspend_mode suspend_mode;   /**< spec.suspendMode */
    co_prerequisite *prerequisites; /**< spec.prerequisites */
    size_t n_prerequisites;
} co_component_spec;

/** status.conditions[] */
typedef struct co_condition {
    char *type;                 /**< "Ready" */
    char *status;               /**< "True", "False", "Unknown" */
    char *last_transition_time; /**< RFC 3339, NULL = unset */
    char *reason;               /**< reason, NULL = unset */
    char *message;              /**< message, NULL = unset */
} co_condition;

/** status.inventory[].managedTypes[] */
typedef struct co_type_version_info {
    char *group;   /**< API group */
    char *version; /**< version or "*" */
    char *kind;    /**< kind or "*" */
} co_type_version_info;

/** status.inventory[] (docs/behaviour.md, "Inventory") */
typedef struct co_inventory_item {
    char *group, *version, *kind, *ns, *name;
    char *adoption_policy, *reconcile_policy, *update_policy, *delete_policy;
    int64_t apply_order, delete_order;
    co_type_version_info *managed_types;
    size_t n_managed_types;
    char *digest;          /**< "" = obsolete */
    char *phase;           /**< phase, NULL = unset */
    char *status;          /**< kstatus value, NULL = unset */
    char *last_applied_at; /**< RFC 3339, NULL = unset */
    char *mode;            /**< "read-only", "delete-only"; NULL = managed */
    char *drift;           /**< drifted fields kept (docs/drift.md); NULL = none */
} co_inventory_item;

/** status (docs/behaviour.md, "Status") */
typedef struct co_component_status {
    int64_t observed_generation; /**< -1 when absent (the schema default) */
    int64_t applied_generation;
    char *last_observed_at, *last_applied_at;
    char *processing_digest, *processing_since, *last_processing_digest;
    int64_t revision;
    co_condition *conditions;
    size_t n_conditions;
    /** Ready, Pending, Processing, DeletionPending, Deleting, Error, Warning, Unmanaged;
     * NULL = unset */
    char *state;
    co_inventory_item *inventory;
    size_t n_inventory;
    int has_source_ref;                                       /**< status.sourceRef given */
    char *artifact_url, *artifact_digest, *artifact_revision; /**< status.sourceRef.artifact */
    char *source_digest;                                      /**< status.sourceRef.digest */
    char *last_attempted_digest, *last_attempted_revision;
    char *last_applied_digest, *last_applied_revision;
    /** since when gating dependents of a Ready Component have been unready (grace period) */
    char *unready_since;
    char *last_operation;      /**< status.lastOperation.operation, NULL = unset */
    char *last_operation_time; /**< status.lastOperation.lastUpdateTime */
} co_component_status;

/** A parsed Component (always in the v1alpha1 layout). */
typedef struct co_component {
    co_api_version version;    /**< version of the object that was parsed */
    char *ns;                  /**< metadata.namespace, NULL = unset */
    char *name;                /**< metadata.name, NULL = unset */
    char *uid;                 /**< metadata.uid, NULL = unset */
    char *resource_version;    /**< metadata.resourceVersion, NULL = unset */
    int64_t generation;        /**< metadata.generation, 0 = unset */
    char *deletion_timestamp;  /**< metadata.deletionTimestamp, NULL = not being deleted */
    co_string_map labels;      /**< metadata.labels */
    co_string_map annotations; /**< metadata.annotations */
    char **finalizers;         /**< metadata.finalizers */
    size_t n_finalizers;
    co_component_spec spec;
    int has_status; /**< whether the object carried a status */
    co_component_status status;
} co_component;

/**
 * Defaults contributed by ComponentPolicies (see co/api/policy.h), applied before the built-in
 * ones wherever the Component leaves the field unset. All pointers are borrowed; NULL or
 * *_UNSET = no default.
 */
typedef struct co_component_defaults {
    const char *requeue_interval;
    const char *retry_interval;
    const char *timeout;
    const char *reapply_interval;
    co_adoption_policy adoption_policy;
    co_update_policy update_policy;
    co_delete_policy delete_policy;
    co_missing_namespaces_policy missing_namespaces_policy;
    const char *service_account_name;
    /* lifecycle controls (docs/lifecycle.md, "Validation and policies") */
    co_opt_bool enabled;          /**< spec.enabled */
    co_opt_bool managed;          /**< spec.managed */
    const char *grace_period;     /**< spec.gracePeriod (v1beta1 spec.intervals.grace) */
    co_suspend_mode suspend_mode; /**< spec.suspendMode */
} co_component_defaults;

/** Validation flag: do not report unknown fields. */
#define CO_COMPONENT_ALLOW_UNKNOWN_FIELDS 1u

/* --- versions and names --------------------------------------------------------------------- */

/** The version of @p obj from its apiVersion/kind; CO_API_UNKNOWN unless it is a Component of a
 * served version. */
co_api_version co_component_version(const struct json_object *obj);

/** co_component_version() of an object in a co_jdoc document. */
co_api_version co_component_version_jv(const struct co_jv *obj);

/** "core.cs.sap.com/v1alpha1" / "core.cs.sap.com/v1beta1" (NULL for CO_API_UNKNOWN). */
const char *co_api_version_string(co_api_version version);

/** "Pause", "ScaleDown"; NULL for CO_SUSPEND_MODE_UNSET. */
const char *co_suspend_mode_name(co_suspend_mode m);
/** Parses a suspendMode; CO_SUSPEND_MODE_UNSET when @p s is NULL or unknown. */
co_suspend_mode co_suspend_mode_parse(const char *s);

/** Enum value names as written in the API ("IfUnowned", ..., and the annotation-only
 * "OrphanOnApply", "OrphanOnDelete"); NULL for *_UNSET and values out of range. */
const char *co_adoption_policy_name(co_adoption_policy p);
const char *co_update_policy_name(co_update_policy p);
const char *co_delete_policy_name(co_delete_policy p);
const char *co_missing_namespaces_policy_name(co_missing_namespaces_policy p);

/** Whether @p s is a valid service account name (a DNS subdomain), as spec.serviceAccountName
 * must be; the controller checks it again before it becomes an impersonation header. */
bool co_component_is_service_account_name(const char *s);

/** Parses an enum value name; the *_UNSET value when @p s is NULL or not a supported value
 * of the spec field (so never CO_DELETE_ORPHAN_ON_APPLY or CO_DELETE_ORPHAN_ON_DELETE). */
co_adoption_policy co_adoption_policy_parse(const char *s);
co_update_policy co_update_policy_parse(const char *s);
co_delete_policy co_delete_policy_parse(const char *s);
co_missing_namespaces_policy co_missing_namespaces_policy_parse(const char *s);

/* --- parse ----------------------------------------------------------------------------------- */

/**
 * Decodes a Component of either served version into a co_component.
 * @param[out] out the Component; free with co_component_free()
 * @return 0; CO_EINVALID when @p obj is not a Component of a served version or a field has the
 *         wrong JSON type (the message lists the field errors).
 */
CO_MUST_CHECK int co_component_parse(co_component **out, const struct json_object *obj);

/**
 * co_component_parse() of an object that co_component_validate() has just accepted (without
 * CO_COMPONENT_ALLOW_UNKNOWN_FIELDS): validation checked the JSON types of everything but
 * status, so only status is type-checked again. Same result, errors included, as
 * co_component_parse() for such an object.
 * @param[out] out the Component; free with co_component_free()
 * @return as co_component_parse().
 */
CO_MUST_CHECK int co_component_parse_validated(co_component **out, const struct json_object *obj);

/** Frees a parsed Component. NULL is a no-op. */
void co_component_free(co_component *c);

/**
 * Encodes @p c as a v1alpha1 object (Go's omitempty rules: empty strings, false, zero and empty
 * lists are left out). Together with co_component_parse() this is lossless for every field of
 * the model. @param[out] out a new object (json_object_put() it).
 * @return 0 (cannot fail).
 */
CO_MUST_CHECK int co_component_to_json(struct json_object **out, const co_component *c);

/**
 * Encodes @p status as the value of a Component's `status`, exactly as co_component_to_json()
 * does within the whole object (the controller writes the status it built in the model).
 * @param[out] out a new object (json_object_put() it). @return 0 (cannot fail).
 */
CO_MUST_CHECK int co_component_status_to_json(struct json_object **out,
                                              const co_component_status *status);

/* --- status.inventory and its packed form (docs/behaviour.md, "Inventory") ------------------ */

/** Largest status.inventory, as compact JSON, written as a plain list; a larger one is written
 * gzip-compressed to status.packedInventory, so that a Component with thousands of dependents
 * stays well below etcd's object size limit. */
#define CO_INVENTORY_PLAIN_MAX (512 * CO_KIB)
/** Largest status.packedInventory.data (base64 text) read. */
#define CO_INVENTORY_PACKED_MAX (4 * CO_MIB)
/** Largest packed inventory once decompressed. */
#define CO_INVENTORY_UNPACKED_MAX (64 * CO_MIB)
/** status.packedInventory.encoding: base64 of the gzip of the list as compact JSON. */
#define CO_INVENTORY_ENCODING "gzip"

/**
 * The inventory of @p status (a Component's `status`; NULL is no status): status.inventory as
 * it is, or the list status.packedInventory holds.
 * @param[out] out a new reference to the array (json_object_put() it); NULL when there is none
 * @return 0; CO_EINVALID naming the field when status.inventory is not an array, both forms are
 *         set, or packedInventory cannot be read (encoding, base64, gzip, JSON, or a list whose
 *         length differs from `items`); CO_ETOOBIG when it is larger than
 *         CO_INVENTORY_PACKED_MAX, or than CO_INVENTORY_UNPACKED_MAX once decompressed.
 */
CO_MUST_CHECK int co_component_inventory_get(struct json_object **out,
                                             const struct json_object *status);

/**
 * Sets the inventory of @p status (an object) to @p inventory (an array, borrowed; NULL removes
 * both forms): status.inventory when its compact JSON is at most @p plain_max bytes, else
 * status.packedInventory. The form not written is removed. The packed form is a function of the
 * list alone, so the same list packs to the same value (a status compares equal to the stored
 * one).
 */
void co_component_inventory_put(struct json_object *status,
                                struct json_object *inventory,
                                size_t plain_max);

/** Whether two spec.sourceRef values name the same source (every field of the model equal). */
bool co_source_ref_equal(const co_source_ref *a, const co_source_ref *b);

/* --- effective values (what the controller uses) -------------------------------------------- */

/** spec.requeueInterval if > 0, else 10m. */
int64_t co_component_requeue_ns(const co_component *c);
/** spec.retryInterval if > 0, else the effective requeue interval. */
int64_t co_component_retry_ns(const co_component *c);
/** spec.timeout if > 0, else the effective requeue interval. */
int64_t co_component_timeout_ns(const co_component *c);
/** spec.reapplyInterval if > 0, else 60m. */
int64_t co_component_reapply_ns(const co_component *c);
/** spec.gracePeriod (0 = none: unready dependents count at once, as without the field). */
int64_t co_component_grace_ns(const co_component *c);
/** Whether spec.enabled is not false. */
bool co_component_enabled(const co_component *c);
/** Whether spec.managed is not false. */
bool co_component_managed(const co_component *c);
/** spec.suspendMode, CO_SUSPEND_MODE_PAUSE when unset. */
co_suspend_mode co_component_suspend_mode(const co_component *c);
/** Effective policies (the built-in default when unset). */
co_adoption_policy co_component_adoption_policy(const co_component *c);
co_update_policy co_component_update_policy(const co_component *c);
co_delete_policy co_component_delete_policy(const co_component *c);
co_missing_namespaces_policy co_component_missing_namespaces_policy(const co_component *c);
/** Target namespace: spec.namespace, else metadata.namespace (borrowed from @p c; may be NULL). */
const char *co_component_target_namespace(const co_component *c);
/** Target name: spec.name, else metadata.name (borrowed from @p c; may be NULL). */
const char *co_component_target_name(const co_component *c);
/** Namespace of a reference: its own, else the Component's (borrowed; may be NULL). */
const char *co_component_ref_namespace(const co_component *c, const co_object_ref *ref);
/** The value of annotation @p key, or NULL when absent (borrowed from @p c). */
const char *co_component_annotation(const co_component *c, const char *key);
/** Whether finalizer @p name is among metadata.finalizers. */
bool co_component_has_finalizer(const co_component *c, const char *name);

/* --- defaulting ------------------------------------------------------------------------------ */

/**
 * Returns a defaulted deep copy of @p obj (either version, fields in that version's layout).
 * Unset means absent or null. In this order:
 * - from @p defaults (ComponentPolicies): intervals, policies, serviceAccountName, enabled,
 *   managed, gracePeriod, suspendMode;
 * - the built-in constants: requeueInterval "10m", adoptionPolicy IfUnowned, updatePolicy
 *   SsaOverride, deletePolicy Delete, missingNamespacesPolicy Create;
 * - dependencies[].namespace (absent, null or "") = the Component's namespace;
 * - prerequisites[].conditionType = "Ready" (their namespace is never defaulted: for a
 *   cluster-scoped kind there is none).
 * retryInterval and timeout are never derived here (only a policy default sets them): unset,
 * they follow the effective requeue interval at reconcile time (co_component_retry_ns(),
 * co_component_timeout_ns()), also after requeueInterval changes.
 * Fields of the wrong type are left alone (validation reports them). Idempotent.
 * @param ns the Component's namespace (the AdmissionReview's request.namespace); NULL = take
 *        metadata.namespace; when neither is known, dependency namespaces stay unset
 * @param defaults policy defaults, or NULL
 * @param[out] out the defaulted copy (json_object_put() it)
 * @return 0; CO_EINVALID when @p obj is not a Component of a served version, or is a v1beta1
 *         object that cannot be converted (see co_component_convert()).
 */
CO_MUST_CHECK int co_component_default(struct json_object **out,
                                       const struct json_object *obj,
                                       const char *ns,
                                       const co_component_defaults *defaults);

/* --- validation ------------------------------------------------------------------------------ */

/**
 * Validates a Component of either served version and appends every problem to @p errs, with
 * paths in the object's own version. Validation does not default: run it on the defaulted
 * object where defaults matter (dependency namespaces for the self/duplicate checks are
 * resolved against @p ns or metadata.namespace either way).
 * @param ns the Component's namespace, or NULL to take metadata.namespace
 * @param flags CO_COMPONENT_ALLOW_UNKNOWN_FIELDS or 0
 * @return 0 when nothing was found, CO_EINVALID when errors were appended.
 */
int co_component_validate(co_field_errors *errs,
                          const struct json_object *obj,
                          const char *ns,
                          unsigned flags);

/** co_component_validate() of an object in a co_jdoc document (see co/json/jdoc.h). */
int co_component_validate_jv(co_field_errors *errs,
                             const struct co_jv *obj,
                             const char *ns,
                             unsigned flags);

/* --- conversion ------------------------------------------------------------------------------ */

/**
 * Converts @p obj to @p desired_api_version ("core.cs.sap.com/v1alpha1" or ".../v1beta1").
 * Only apiVersion and spec change; an object already in the desired version is copied.
 * @param[out] out a new object (json_object_put() it)
 * @return 0; CO_EINVALID when @p obj is not a Component of a served version, the desired
 *         version is not served, or the content cannot be represented losslessly (the message
 *         names the field).
 */
CO_MUST_CHECK int co_component_convert(struct json_object **out,
                                       const struct json_object *obj,
                                       const char *desired_api_version);

/**
 * Translates a v1alpha1 field path into v1beta1 terms ("spec.updatePolicy" →
 * "spec.policies.update"); paths outside moved fields are returned unchanged.
 * @return a new string (free with free()).
 */
char *co_component_path_to_v1beta1(const char *v1alpha1_path);

/* --- CustomResourceDefinition ---------------------------------------------------------------- */

/**
 * co_component_crd() flag: serve v1beta1 next to v1alpha1, converted by component-webhook's
 * /convert (crds/v1beta1/, the opt-in of deploy/v1beta1 and the chart's crds.v1beta1). Without
 * it the CRD serves v1alpha1 only, with conversion strategy None and the webhook stanza null
 * (crds/), so that Helm's upgrade turns a CRD that served v1beta1 back.
 */
#define CO_COMPONENT_CRD_V1BETA1 0x1u

/**
 * The components.core.cs.sap.com CRD as a JSON object, generated from the same schema the
 * validation uses. @param flags 0 or CO_COMPONENT_CRD_V1BETA1.
 * @param[out] out a new object (json_object_put() it). @return 0.
 */
CO_MUST_CHECK int co_component_crd(struct json_object **out, unsigned flags);

/**
 * Appends the YAML of the components.core.cs.sap.com CRD (crds/core.cs.sap.com_components.yaml,
 * with CO_COMPONENT_CRD_V1BETA1 crds/v1beta1/core.cs.sap.com_components.yaml), generated from
 * the same schema the validation uses. @return 0 or CO_ETOOBIG.
 */
CO_MUST_CHECK int co_component_crd_yaml(co_buf *out, unsigned flags);

/**
 * Appends the Helm template of the CRD (deploy/chart/templates/crd-components.yaml): the CRD of
 * co_component_crd_yaml() with flags 0, or with `.Values.crds.v1beta1` that with
 * CO_COMPONENT_CRD_V1BETA1 (the conversion webhook in the release namespace); annotated
 * `helm.sh/resource-policy: keep` in both. @return 0 or CO_ETOOBIG.
 */
CO_MUST_CHECK int co_component_crd_chart_template(co_buf *out);

/* --- the source layer's view ------------------------------------------------------------------ */

struct co_source_spec;

/**
 * Builds the source layer's view (co/source/source.h) of the API model's parsed
 * `spec.sourceRef` @p ref, with the same checks as co_source_spec_parse().
 * @param[out] out borrows strings from @p ref
 * @return 0 or CO_EINVALID naming the field.
 */
CO_MUST_CHECK int co_source_spec_from_ref(struct co_source_spec *out, const co_source_ref *ref);

#endif
