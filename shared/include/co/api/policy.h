/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file policy.h
 * ComponentPolicy (`core.cs.sap.com/v1alpha1`, cluster-scoped; docs/webhook-and-certs.md,
 * "ComponentPolicy"): how cluster admins configure what the webhook enforces and defaults, and what
 * the controller re-checks.
 *
 * A policy applies to a Component when its namespaceSelector matches the labels of the
 * Component's namespace (empty selector = every namespace) and neither the namespace nor the
 * requesting user or one of the user's groups is exempt. Every applying policy counts:
 * - rules: each optional, each with `action: Deny | Warn | Audit` (default Deny). Per rule the
 *   strictest action over all applying policies wins (Deny > Warn > Audit); on a tie the policy
 *   whose name sorts first gives the message. Dependency cycles are denied even when no policy
 *   says anything; missing dependency targets yield a warning by default.
 * - defaults: filled in by the mutating webhook where the Component leaves a field unset; when
 *   two policies disagree the one whose name sorts first wins and a warning says so.
 *
 * User and group exemptions are about who writes a Component, which only an admission knows.
 * The mutating webhook therefore records, in the annotation CO_POLICY_REQUESTER_ANNOTATION, the
 * part of the authenticated requester that some policy's exemptUsers or exemptGroups matches,
 * whenever a request writes the spec or that annotation; every other write keeps the stored
 * record (co_policy_requester_record()). The controller evaluates with the recorded requester
 * (co_policy_requester_parse()), so a Component whose spec an exempt user wrote stays exempt and
 * every other one is judged by every applying policy, exemptions or not. Without a user
 * (username NULL, no groups) no user or group exemption matches: the policy applies.
 *
 * A co_policy_set is not thread-safe; evaluation only reads it (several threads may evaluate
 * concurrently while nobody modifies the set).
 */
#ifndef CO_POLICY_H
#define CO_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "co/util/buf.h"
#include "co/util/common.h"
#include "co/api/component.h"
#include "co/api/depgraph.h"
#include "co/api/field_error.h"

struct json_object;

#define CO_POLICY_KIND        "ComponentPolicy"
#define CO_POLICY_API_VERSION "core.cs.sap.com/v1alpha1"
#define CO_POLICY_CRD_NAME    "componentpolicies.core.cs.sap.com"

/** Actions, ordered by strictness. */
typedef enum co_policy_action {
    CO_POLICY_NONE = 0,  /**< no violation */
    CO_POLICY_AUDIT = 1, /**< admitted, recorded as an audit annotation */
    CO_POLICY_WARN = 2,  /**< admitted with a warning */
    CO_POLICY_DENY = 3,  /**< rejected (controller: state Error, reason PolicyViolation) */
} co_policy_action;

/** The rules a policy can carry. */
typedef enum co_policy_rule {
    CO_RULE_SOURCE_KINDS = 0,         /**< rules.sourceKinds: allowed source variants */
    CO_RULE_HTTP_URLS = 1,            /**< rules.httpUrls: allowed URL prefixes */
    CO_RULE_REMOTE_KUBECONFIG = 2,    /**< rules.remoteKubeConfig: kubeConfig allowed or not */
    CO_RULE_IMPERSONATION = 3,        /**< rules.impersonation: serviceAccountName rules */
    CO_RULE_CROSS_NAMESPACE = 4,      /**< rules.crossNamespaceReferences */
    CO_RULE_INTERVALS = 5,            /**< rules.intervals: minimums and maximum timeout */
    CO_RULE_POLICIES = 6,             /**< rules.policies: allowed policy values */
    CO_RULE_DEPENDENCIES = 7,         /**< rules.dependencies.maxCount */
    CO_RULE_DEPENDENCY_CYCLES = 8,    /**< rules.dependencies.cycles (default Deny) */
    CO_RULE_MISSING_DEPENDENCIES = 9, /**< rules.dependencies.missingTargets (default Warn) */
    CO_RULE_LIFECYCLE = 10,           /**< rules.lifecycle: which lifecycle controls may be used */
} co_policy_rule;
#define CO_POLICY_RULE_COUNT 11

/** A parsed ComponentPolicy (opaque). */
typedef struct co_policy co_policy;
/** A set of policies keyed by name, kept sorted by name. */
typedef struct co_policy_set co_policy_set;

/** What a Component is evaluated with, besides the Component itself. All borrowed. */
typedef struct co_policy_request {
    const char *ns; /**< the Component's namespace (NULL = take it from the Component) */
    /** labels of that Namespace object (a JSON object of strings); NULL = none known */
    const struct json_object *namespace_labels;
    const char *username;      /**< requesting user; NULL = none (exempt by no exemptUsers) */
    const char *const *groups; /**< the user's groups */
    size_t ngroups;
    /** cluster-wide dependency graph; NULL = skip cycle and missing-target checks */
    const co_depgraph *graph;
} co_policy_request;

/**
 * The Component annotation holding the exemption record: a JSON object with "user" (the
 * requester's name, when some policy's exemptUsers matches it) and "groups" (those of the
 * requester's groups that some policy's exemptGroups matches), as written by the mutating
 * webhook (docs/security.md, "ComponentPolicy exemptions").
 */
#define CO_POLICY_REQUESTER_ANNOTATION "component-operator.cs.sap.com/exempt-requester"

/** A requester as far as exemptions go, read from an exemption record (caller-embedded). */
typedef struct co_policy_requester {
    char *username; /**< NULL = none recorded (owned) */
    char **groups;  /**< owned */
    size_t ngroups;
} co_policy_requester;

/** One rule's outcome after combining all applying policies. Strings owned by the result. */
typedef struct co_policy_violation {
    co_policy_rule rule;     /**< which rule */
    co_policy_action action; /**< the strictest action */
    char *policy;            /**< name of the deciding policy; NULL = built-in default */
    char *message;           /**< what is wrong, without the policy name */
} co_policy_violation;

/** The result of an evaluation (caller-embedded). */
typedef struct co_policy_result {
    co_policy_violation *items; /**< at most one per rule, in rule order */
    size_t len;
    co_policy_action verdict; /**< strictest action of all items (CO_POLICY_NONE = clean) */
} co_policy_result;

/** The merged defaults of the applying policies. */
typedef struct co_policy_defaults {
    co_component_defaults defaults; /**< strings borrowed from the set (valid while unchanged) */
    char **warnings;                /**< conflict warnings (owned) */
    size_t nwarnings;
} co_policy_defaults;

/** Validation flag: do not report unknown fields. */
#define CO_POLICY_ALLOW_UNKNOWN_FIELDS 1u

/** "Deny", "Warn", "Audit" (NULL for CO_POLICY_NONE). */
const char *co_policy_action_name(co_policy_action a);
/** "sourceKinds", ..., "dependencies.cycles", "dependencies.missingTargets", "lifecycle". */
const char *co_policy_rule_name(co_policy_rule r);

/* --- single policies ------------------------------------------------------------------------- */

/**
 * Validates a ComponentPolicy object and appends every problem to @p errs.
 * @return 0 when nothing was found, CO_EINVALID when errors were appended.
 */
int co_policy_validate(co_field_errors *errs, const struct json_object *obj, unsigned flags);

/**
 * Parses a ComponentPolicy (unknown fields ignored).
 * @param[out] out free with co_policy_free()
 * @return 0; CO_EINVALID when it does not validate (the message lists the field errors).
 */
CO_MUST_CHECK int co_policy_parse(co_policy **out, const struct json_object *obj);

/** Frees a policy. NULL is a no-op. */
void co_policy_free(co_policy *p);

/** metadata.name of the policy (borrowed from @p p). */
const char *co_policy_name(const co_policy *p);

/**
 * Whether @p p applies to a Component in @p req->ns with the given namespace labels and user.
 */
bool co_policy_applies(const co_policy *p, const co_policy_request *req);

/* --- sets ------------------------------------------------------------------------------------ */

/** Creates an empty set (free with co_policy_set_free()). */
co_policy_set *co_policy_set_new(void);

/** Frees the set and its policies. NULL is a no-op. */
void co_policy_set_free(co_policy_set *set);

/**
 * Parses @p obj and adds it, replacing a policy of the same name.
 * @return 0; CO_EINVALID when it does not parse (the set is unchanged).
 */
CO_MUST_CHECK int co_policy_set_put(co_policy_set *set, const struct json_object *obj);

/** Removes the policy @p name; unknown names are ignored. */
void co_policy_set_remove(co_policy_set *set, const char *name);

/** Number of policies in the set. */
size_t co_policy_set_size(const co_policy_set *set);

/* --- evaluation ------------------------------------------------------------------------------ */

/**
 * Evaluates the (defaulted) Component @p c against every applying policy of @p set (which may
 * be NULL or empty: the built-in cycle and missing-target rules still apply when req->graph is
 * given).
 * @param[out] out the combined result; dispose with co_policy_result_dispose()
 * @return 0 (cannot fail).
 */
CO_MUST_CHECK int co_policy_evaluate(co_policy_result *out,
                                     const co_policy_set *set,
                                     const co_component *c,
                                     const co_policy_request *req);

/** Whether any policy of @p set (NULL = none) applies to @p req; req->ns must be set. */
bool co_policy_set_applies(const co_policy_set *set, const co_policy_request *req);

/**
 * What co_policy_evaluate() reports for a Component no policy applies to, without the parsed
 * Component: the built-in cycle and missing-target rules on req->graph for the Component
 * @p key ("namespace/name"; NULL = none yet, nothing to check) with the dependency keys
 * @p deps (namespace-defaulted, without duplicates).
 * @param[out] out dispose with co_policy_result_dispose()
 * @return 0 (cannot fail).
 */
CO_MUST_CHECK int co_policy_evaluate_graph(co_policy_result *out,
                                           const co_policy_request *req,
                                           const char *key,
                                           const char *const *deps,
                                           size_t n);

/**
 * Grants: what a ComponentPolicy's `spec.grants` lets Components do beyond the safe defaults.
 * Unlike rules, which restrict what a Component may say, grants widen what the controller does
 * for it at reconcile time. A grant holds when an applying policy sets it to true and no
 * applying policy sets it to false.
 */
typedef enum co_policy_grant {
    /** templates of a Component without a service account may look up objects outside its
     * namespace (and cluster-scoped ones) with the controller's rights */
    CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE = 1u << 0,
    /** a Component may deploy Component and ComponentPolicy objects */
    CO_GRANT_NESTED_COMPONENTS = 1u << 1,
    /** kubeconfigs from Secrets and templates may name http:// servers */
    CO_GRANT_INSECURE_KUBECONFIG_SERVERS = 1u << 2,
} co_policy_grant;

/** What the controller may do for one Component, from the policies applying to it. */
typedef struct co_policy_permissions {
    unsigned grants; /**< co_policy_grant bits that hold */
    /** name of a policy whose remoteKubeConfig rule denies kubeconfigs (action Deny, allowed
     * false), so that templates may not bring one either; NULL when none does (owned) */
    char *kubeconfig_denied_by;
} co_policy_permissions;

/**
 * The permissions the policies of @p set (NULL = none) applying to @p req give. req->ns must be
 * set; applying is decided as for evaluation (a user or group exemption needs the requester).
 * @param[out] out dispose with co_policy_permissions_dispose()
 * @return 0 (cannot fail).
 */
CO_MUST_CHECK int co_policy_permissions_of(co_policy_permissions *out,
                                           const co_policy_set *set,
                                           const co_policy_request *req);

/** Frees what @p perm holds and zeroes it. NULL is a no-op. */
void co_policy_permissions_dispose(co_policy_permissions *perm);

/** "grants.lookupsOutsideNamespace", ... for messages. */
const char *co_policy_grant_name(co_policy_grant g);

/**
 * The exemption record of a write by @p req's user (username and groups): the user when some
 * policy of @p set (applying or not, so that a namespace labelled later finds it) exempts it by
 * exemptUsers, and each of the groups that some policy exempts by exemptGroups, without
 * duplicates, in the request's order. Canonical JSON (sorted keys).
 * @param[out] out the annotation value (free() it); NULL when nothing is exempt (the
 *             annotation is then removed)
 * @return 0; CO_ETOOBIG when the record would be longer than CO_MAX_EXEMPTION_RECORD or list
 *         more than CO_MAX_EXEMPTION_RECORD_GROUPS groups (record nothing then: stricter).
 */
CO_MUST_CHECK int
co_policy_requester_record(char **out, const co_policy_set *set, const co_policy_request *req);

/**
 * Parses an exemption record (the value of CO_POLICY_REQUESTER_ANNOTATION).
 * @param[out] out dispose with co_policy_requester_dispose()
 * @return 0; CO_EINVALID when it is not a JSON object with at most a string "user" and an
 *         array of strings "groups" (the message names the annotation and the problem);
 *         CO_ETOOBIG over CO_MAX_EXEMPTION_RECORD bytes or CO_MAX_EXEMPTION_RECORD_GROUPS groups.
 */
CO_MUST_CHECK int co_policy_requester_parse(co_policy_requester *out, const char *value);

/**
 * The exemption record of the Component @p component (a json-c object of either version), read
 * from its annotation.
 * @param[out] out dispose with co_policy_requester_dispose(); empty without the annotation
 * @return as co_policy_requester_parse().
 */
CO_MUST_CHECK int co_policy_requester_of(co_policy_requester *out,
                                         const struct json_object *component);

/** Points @p req's username and groups at @p r (borrowed: valid while @p r is unchanged). */
void co_policy_request_set_requester(co_policy_request *req, const co_policy_requester *r);

/** Frees what @p r holds and zeroes it. NULL is a no-op. */
void co_policy_requester_dispose(co_policy_requester *r);

/** Frees the result's items; it is empty afterwards. NULL is a no-op. */
void co_policy_result_dispose(co_policy_result *res);

/**
 * Appends `ComponentPolicy "<name>": <rule>: <message>` (or `<rule>: <message>` for a built-in
 * default) to @p out. @return 0 or CO_ETOOBIG.
 */
CO_MUST_CHECK int co_policy_violation_format(co_buf *out, const co_policy_violation *v);

/**
 * Merges the `defaults` of every policy applying to @p req, in name order: the first policy
 * setting a field wins, later disagreeing ones add a warning.
 * @param[out] out dispose with co_policy_defaults_dispose(); its strings are borrowed from
 *             @p set and valid until the set changes
 * @return 0 (cannot fail).
 */
CO_MUST_CHECK int co_policy_defaults_merge(co_policy_defaults *out,
                                           const co_policy_set *set,
                                           const co_policy_request *req);

/** Frees the warnings. NULL is a no-op. */
void co_policy_defaults_dispose(co_policy_defaults *d);

/* --- CustomResourceDefinition ---------------------------------------------------------------- */

/** The componentpolicies.core.cs.sap.com CRD as a new JSON object (json_object_put() it).
 * @return 0. */
CO_MUST_CHECK int co_policy_crd(struct json_object **out);

/** Appends the YAML of crds/core.cs.sap.com_componentpolicies.yaml. @return 0 or CO_ETOOBIG. */
CO_MUST_CHECK int co_policy_crd_yaml(co_buf *out);

#endif
