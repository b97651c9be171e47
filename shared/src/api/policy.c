/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ComponentPolicy: its schema (shared with the CRD generator), validation, parsing into a
 * compact struct, selection by namespace labels and exemptions, evaluation of a Component with
 * strictest-action-wins per rule, and the name-ordered merge of defaults.
 */
#include "co/api/policy.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/api/lifecycle.h"
#include "co/util/caps.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "schema_lib.h"

/* ---------------------------------------------------------------------------------------------
 * Schema
 * ------------------------------------------------------------------------------------------- */

#define FIELDS(...) ((const co_schema[]){__VA_ARGS__, {NULL}})
#define NAMES(...)  ((const char *const[]){__VA_ARGS__, NULL})
#define ITEMS(...)  (&(const co_schema){__VA_ARGS__})

static const char *const action_names[] = {NULL, "Audit", "Warn", "Deny"};

#define ACTION_FIELD(what)                                                                         \
    {                                                                                              \
        .name = "action", .type = CO_SCHEMA_STRING, .enums = NAMES("Deny", "Warn", "Audit"),       \
        .default_json = "\"Deny\"",                                                                \
        .description = "What a violation of " what " does: Deny rejects the Component, Warn "      \
                       "admits it with a warning, Audit admits it and records an audit "           \
                       "annotation. Default Deny."                                                 \
    }

static const co_schema string_item = {.type = CO_SCHEMA_STRING,
                                      .min_length = 1,
                                      .description = "An entry."};

#define STRING_LIST(n, d)                                                                          \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_ARRAY, .description = (d),                                  \
        .max_items = CO_MAX_SPEC_LIST_ITEMS, .items = &string_item                                 \
    }

#define ENUM_LIST(n, d, ...)                                                                       \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_ARRAY, .description = (d),                                  \
        .max_items = CO_MAX_SPEC_LIST_ITEMS,                                                       \
        .items = ITEMS(.type = CO_SCHEMA_STRING, .enums = NAMES(__VA_ARGS__),                      \
                       .description = "A value.")                                                  \
    }

#define DUR(n, d)                                                                                  \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_STRING, .flags = CO_SCHEMA_DURATION, .description = (d)     \
    }

#define BOOL(n, d)                                                                                 \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_BOOLEAN, .description = (d)                                 \
    }

static const co_schema policy_spec_fields[] = {
    {.name = "namespaceSelector",
     .type = CO_SCHEMA_OBJECT,
     .description = "Selects the namespaces whose Components this policy applies to, by the "
                    "labels of the Namespace. Empty or absent selects every namespace.",
     .fields = FIELDS(
         {.name = "matchLabels",
          .type = CO_SCHEMA_STRING_MAP,
          .description = "Labels the namespace must carry with exactly these values.",
          .max_items = CO_MAX_SPEC_LIST_ITEMS},
         {.name = "matchExpressions",
          .type = CO_SCHEMA_ARRAY,
          .description = "Requirements on namespace labels; all must hold.",
          .max_items = CO_MAX_SPEC_LIST_ITEMS,
          .items =
              ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "A requirement on one label.",
                    .fields = FIELDS({.name = "key",
                                      .type = CO_SCHEMA_STRING,
                                      .flags = CO_SCHEMA_REQUIRED,
                                      .min_length = 1,
                                      .description = "The label key."},
                                     {.name = "operator",
                                      .type = CO_SCHEMA_STRING,
                                      .flags = CO_SCHEMA_REQUIRED,
                                      .enums = NAMES("In", "NotIn", "Exists", "DoesNotExist"),
                                      .description =
                                          "In and NotIn compare the value with values; Exists and "
                                          "DoesNotExist only look at the key."},
                                     STRING_LIST("values",
                                                 "Values for In and NotIn; empty for Exists and "
                                                 "DoesNotExist.")))})},
    STRING_LIST("exemptNamespaces",
                "Namespaces the policy does not apply to; shell patterns "
                "such as kube-* are allowed."),
    STRING_LIST("exemptUsers",
                "Users whose requests the policy does not apply to, nor, at reconcile time, "
                "to the Components whose spec such a user wrote last (recorded by the "
                "webhook); shell patterns are allowed."),
    STRING_LIST("exemptGroups",
                "Groups whose members' requests the policy does not apply to, nor, at "
                "reconcile time, to the Components whose spec such a member wrote last "
                "(recorded by the webhook); shell patterns are allowed."),
    {.name = "rules",
     .type = CO_SCHEMA_OBJECT,
     .description = "What Components must satisfy; every rule is optional.",
     .fields = FIELDS(
         {.name = "sourceKinds",
          .type = CO_SCHEMA_OBJECT,
          .description = "Restricts the kinds of source a Component may use.",
          .fields = FIELDS(ACTION_FIELD("this rule"),
                           {.name = "allowed",
                            .type = CO_SCHEMA_ARRAY,
                            .flags = CO_SCHEMA_REQUIRED,
                            .description = "The source kinds that may be used.",
                            .max_items = CO_MAX_SPEC_LIST_ITEMS,
                            .items = ITEMS(.type = CO_SCHEMA_STRING,
                                           .description = "A source kind.",
                                           .enums = NAMES("fluxGitRepository",
                                                          "fluxOciRepository",
                                                          "fluxBucket",
                                                          "fluxHelmChart",
                                                          "httpRepository",
                                                          "git",
                                                          "blueprint"))})},
         {.name = "httpUrls",
          .type = CO_SCHEMA_OBJECT,
          .description = "Restricts the URLs the controller fetches itself (httpRepository and "
                         "git sources) to the given prefixes.",
          .fields = FIELDS(
              ACTION_FIELD("this rule"),
              {.name = "allowedPrefixes",
               .type = CO_SCHEMA_ARRAY,
               .flags = CO_SCHEMA_REQUIRED,
               .description = "URL prefixes, for example https://artifacts.example.com/.",
               .max_items = CO_MAX_SPEC_LIST_ITEMS,
               .items =
                   ITEMS(.type = CO_SCHEMA_STRING, .min_length = 1, .description = "A prefix.")})},
         {.name = "remoteKubeConfig",
          .type = CO_SCHEMA_OBJECT,
          .description = "Whether Components may deploy into other clusters with "
                         "spec.kubeConfig.",
          .fields = FIELDS(ACTION_FIELD("this rule"),
                           BOOL("allowed", "Allow spec.kubeConfig. Default false."))},
         {.name = "impersonation",
          .type = CO_SCHEMA_OBJECT,
          .description = "Requirements on spec.serviceAccountName, the identity the controller "
                         "deploys with.",
          .fields = FIELDS(ACTION_FIELD("this rule"),
                           BOOL("required", "Require spec.serviceAccountName. Default true."),
                           STRING_LIST("allowedServiceAccounts",
                                       "Allowed service account names; shell patterns are "
                                       "allowed. Empty allows any."))},
         {.name = "crossNamespaceReferences",
          .type = CO_SCHEMA_OBJECT,
          .description = "Restricts references out of the Component's own namespace.",
          .fields = FIELDS(ACTION_FIELD("this rule"),
                           BOOL("allowSources",
                                "Allow Flux sources and Blueprints in other namespaces. "
                                "Default false."),
                           BOOL("allowDependencies",
                                "Allow dependencies on Components in other "
                                "namespaces. Default false."),
                           BOOL("allowTargetNamespace",
                                "Allow deploying into another namespace "
                                "(spec.namespace). Default false."))},
         {.name = "intervals",
          .type = CO_SCHEMA_OBJECT,
          .description = "Bounds on the effective intervals (after defaulting).",
          .fields = FIELDS(ACTION_FIELD("this rule"),
                           DUR("minRequeueInterval", "Smallest requeue interval allowed."),
                           DUR("minRetryInterval", "Smallest retry interval allowed."),
                           DUR("minReapplyInterval", "Smallest reapply interval allowed."),
                           DUR("maxTimeout", "Largest timeout allowed."))},
         {.name = "policies",
          .type = CO_SCHEMA_OBJECT,
          .description = "Allowed values of the effective adoption, update, delete and "
                         "missing-namespaces policies; an absent list allows every value.",
          .fields = FIELDS(
              ACTION_FIELD("this rule"),
              ENUM_LIST("adoption", "Allowed adoption policies.", "Never", "IfUnowned", "Always"),
              ENUM_LIST("update",
                        "Allowed update policies.",
                        "Recreate",
                        "Replace",
                        "SsaMerge",
                        "SsaOverride"),
              ENUM_LIST("delete", "Allowed delete policies.", "Delete", "Orphan"),
              ENUM_LIST("missingNamespaces",
                        "Allowed missing-namespaces policies.",
                        "DoNotCreate",
                        "Create"))},
         {.name = "dependencies",
          .type = CO_SCHEMA_OBJECT,
          .description = "Rules on spec.dependencies.",
          .fields = FIELDS(
              ACTION_FIELD("maxCount"),
              {.name = "maxCount",
               .type = CO_SCHEMA_INTEGER,
               .description = "Largest number of dependencies allowed."},
              {.name = "cycles",
               .type = CO_SCHEMA_STRING,
               .enums = NAMES("Deny", "Warn", "Audit"),
               .description = "What a dependency cycle does. Cycles are denied when no policy "
                              "says otherwise."},
              {.name = "missingTargets",
               .type = CO_SCHEMA_STRING,
               .enums = NAMES("Deny", "Warn", "Audit"),
               .description = "What a dependency on a Component that does not exist does. "
                              "Warn when no policy says otherwise."})},
         {.name = "lifecycle",
          .type = CO_SCHEMA_OBJECT,
          .description = "Which lifecycle controls Components may use (docs/lifecycle.md).",
          .fields = FIELDS(
              ACTION_FIELD("this rule"),
              BOOL("allowDisabled", "Allow spec.enabled: false. Default true."),
              BOOL("requireDisabled",
                   "Require spec.enabled: false, for namespaces whose Components must stay "
                   "uninstalled. Default false."),
              BOOL("allowUnmanaged", "Allow spec.managed: false. Default true."),
              ENUM_LIST("suspendModes",
                        "Allowed values of the effective spec.suspendMode (unset is Pause); an "
                        "absent list allows every value.",
                        "Pause",
                        "ScaleDown"),
              DUR("maxGracePeriod",
                  "Largest spec.gracePeriod (v1beta1 spec.intervals.grace) allowed; 0s allows "
                  "none."),
              BOOL("allowPrerequisites", "Allow spec.prerequisites. Default true."),
              BOOL("allowSkipReconciliation",
                   "Allow the skip-reconciliation labels on Components. Default true."))})},
    {.name = "grants",
     .type = CO_SCHEMA_OBJECT,
     .description = "What Components in the selected namespaces may do beyond the safe defaults "
                    "(read by the controller at reconcile time). A grant holds when an applying "
                    "policy sets it to true and no applying policy sets it to false.",
     .fields = FIELDS(BOOL("lookupsOutsideNamespace",
                           "Let the templates of Components that impersonate no service account "
                           "look up objects outside the Component's namespace, and "
                           "cluster-scoped objects, with the controller's own rights. Default "
                           "false: such lookups are confined to the Component's namespace."),
                      BOOL("nestedComponents",
                           "Let Components deploy Component and ComponentPolicy objects. "
                           "Default false."),
                      BOOL("insecureKubeConfigServers",
                           "Let kubeconfigs from spec.kubeConfig Secrets and from "
                           "lookupWithKubeConfig name plain http:// servers. Default false."))},
    {.name = "defaults",
     .type = CO_SCHEMA_OBJECT,
     .description = "Values filled in by the mutating webhook where a Component leaves them "
                    "unset. When policies disagree, the one whose name sorts first wins.",
     .fields = FIELDS(
         DUR("requeueInterval", "Default requeue interval."),
         DUR("retryInterval", "Default retry interval."),
         DUR("timeout", "Default timeout."),
         DUR("reapplyInterval", "Default reapply interval."),
         {.name = "adoptionPolicy",
          .type = CO_SCHEMA_STRING,
          .enums = NAMES("Never", "IfUnowned", "Always"),
          .description = "Default adoption policy."},
         {.name = "updatePolicy",
          .type = CO_SCHEMA_STRING,
          .enums = NAMES("Recreate", "Replace", "SsaMerge", "SsaOverride"),
          .description = "Default update policy."},
         {.name = "deletePolicy",
          .type = CO_SCHEMA_STRING,
          .enums = NAMES("Delete", "Orphan"),
          .description = "Default delete policy."},
         {.name = "missingNamespacesPolicy",
          .type = CO_SCHEMA_STRING,
          .enums = NAMES("DoNotCreate", "Create"),
          .description = "Default missing-namespaces policy."},
         {.name = "serviceAccountName",
          .type = CO_SCHEMA_STRING,
          .description = "Default service account to impersonate."},
         BOOL("enabled",
              "Default spec.enabled; false leaves Components that do not say "
              "otherwise uninstalled (Disabled)."),
         BOOL("managed", "Default spec.managed."),
         DUR("gracePeriod", "Default spec.gracePeriod (v1beta1 spec.intervals.grace); positive."),
         {.name = "suspendMode",
          .type = CO_SCHEMA_STRING,
          .enums = NAMES("Pause", "ScaleDown"),
          .description = "Default spec.suspendMode."})},
    {NULL},
};

/* The audit report the controller writes (docs/policy-audit.md): small whatever the cluster
 * holds, as the controller caps the list and each message. */
static const co_schema policy_status_fields[] = {
    {.name = "observedGeneration",
     .type = CO_SCHEMA_INTEGER,
     .flags = CO_SCHEMA_INT64,
     .description = "Generation of the policy the report was made for."},
    {.name = "lastReportTime",
     .type = CO_SCHEMA_STRING,
     .flags = CO_SCHEMA_DATE_TIME,
     .description = "When the report last changed; an audit that finds what the report already "
                    "says writes nothing."},
    {.name = "componentsEvaluated",
     .type = CO_SCHEMA_INTEGER,
     .flags = CO_SCHEMA_INT64,
     .description = "Number of Components the policy was evaluated against (those the "
                    "controller watches, whether the policy applies to them or not)."},
    {.name = "violations",
     .type = CO_SCHEMA_OBJECT,
     .description = "Violating Components per action: each counts once, under the strictest "
                    "action of the rules of this policy it breaks.",
     .fields = FIELDS({.name = "deny",
                       .type = CO_SCHEMA_INTEGER,
                       .flags = CO_SCHEMA_INT64,
                       .description = "Components a Deny rule rejects."},
                      {.name = "warn",
                       .type = CO_SCHEMA_INTEGER,
                       .flags = CO_SCHEMA_INT64,
                       .description = "Components a Warn rule warns about (and no Deny rule "
                                      "rejects)."},
                      {.name = "audit",
                       .type = CO_SCHEMA_INTEGER,
                       .flags = CO_SCHEMA_INT64,
                       .description = "Components only an Audit rule flags."})},
    {.name = "violators",
     .type = CO_SCHEMA_ARRAY,
     .description = "The first violating Components (Deny before Warn before Audit, then by "
                    "namespace and name), at most 20.",
     .max_items = 20,
     .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "A violating Component.",
                    .fields = FIELDS({.name = "namespace",
                                      .type = CO_SCHEMA_STRING,
                                      .description = "Namespace of the Component."},
                                     {.name = "name",
                                      .type = CO_SCHEMA_STRING,
                                      .description = "Name of the Component."},
                                     {.name = "action",
                                      .type = CO_SCHEMA_STRING,
                                      .enums = NAMES("Deny", "Warn", "Audit"),
                                      .description = "Strictest action of the broken rules."},
                                     {.name = "message",
                                      .type = CO_SCHEMA_STRING,
                                      .description = "The broken rules and what is wrong, cut "
                                                     "at 256 bytes."}))},
    {NULL},
};

static const co_schema policy_root = {
    .name = "",
    .type = CO_SCHEMA_OBJECT,
    .description = "A ComponentPolicy configures what the webhook enforces and defaults for "
                   "Components, and what the controller re-checks before reconciling.",
    .fields = FIELDS({.name = "apiVersion",
                      .type = CO_SCHEMA_STRING,
                      .description = "Version of the schema the object is written in."},
                     {.name = "kind",
                      .type = CO_SCHEMA_STRING,
                      .description = "Kind of the object: ComponentPolicy."},
                     {.name = "metadata", .type = CO_SCHEMA_METADATA},
                     {.name = "spec",
                      .type = CO_SCHEMA_OBJECT,
                      .flags = CO_SCHEMA_REQUIRED,
                      .description = "Where the policy applies, its rules and its defaults.",
                      .fields = policy_spec_fields},
                     {.name = "status",
                      .type = CO_SCHEMA_OBJECT,
                      .description = "The controller's audit report: which of the Components it "
                                     "watches violate the policy.",
                      .fields = policy_status_fields}),
};

/* ---------------------------------------------------------------------------------------------
 * The parsed policy
 * ------------------------------------------------------------------------------------------- */

typedef enum sel_op { SEL_IN, SEL_NOT_IN, SEL_EXISTS, SEL_DOES_NOT_EXIST } sel_op;

typedef struct strv {
    char **v;
    size_t n;
} strv;

typedef struct sel_expr {
    char *key;
    sel_op op;
    strv values;
} sel_expr;

typedef struct rule_hdr {
    int present;
    co_policy_action action;
} rule_hdr;

struct co_policy {
    char *name;
    strv match_keys, match_values;
    sel_expr *exprs;
    size_t nexprs;
    strv exempt_ns, exempt_users, exempt_groups;

    rule_hdr source_kinds;
    int kind_allowed[CO_SOURCE_KIND_COUNT];
    rule_hdr http_urls;
    strv prefixes;
    rule_hdr kubeconfig;
    int kubeconfig_allowed;
    rule_hdr impersonation;
    int sa_required;
    strv sa_patterns;
    rule_hdr xns;
    int allow_sources, allow_deps, allow_target;
    rule_hdr intervals;
    int64_t min_requeue, min_retry, min_reapply, max_timeout; /* 0 = no bound */
    rule_hdr policies;
    unsigned adoption_ok, update_ok, delete_ok, missing_ok; /* bit per enum value; 0 = any */
    rule_hdr deps;
    int64_t max_deps;                         /* -1 = no bound */
    co_policy_action cycles, missing_targets; /* NONE = not configured */
    rule_hdr lifecycle;
    int allow_disabled, require_disabled, allow_unmanaged, allow_prerequisites, allow_skip;
    unsigned suspend_ok; /* bit per co_suspend_mode; 0 = any */
    int64_t max_grace;   /* -1 = no bound */

    unsigned grants_true, grants_false; /* CO_GRANT_* bits set to true / to false */

    char *d_requeue, *d_retry, *d_timeout, *d_reapply, *d_sa;
    co_adoption_policy d_adoption;
    co_update_policy d_update;
    co_delete_policy d_delete;
    co_missing_namespaces_policy d_missing;
    co_opt_bool d_enabled, d_managed;
    char *d_grace;
    co_suspend_mode d_suspend;
};

const char *co_policy_action_name(co_policy_action a)
{
    return a > CO_POLICY_NONE && a <= CO_POLICY_DENY ? action_names[a] : NULL;
}

static co_policy_action action_parse(const char *s)
{
    for (int i = 1; s && i <= CO_POLICY_DENY; i++) {
        if (strcmp(action_names[i], s) == 0) {
            return (co_policy_action)i;
        }
    }
    return CO_POLICY_NONE;
}

const char *co_policy_rule_name(co_policy_rule r)
{
    static const char *const names[] = {"sourceKinds",
                                        "httpUrls",
                                        "remoteKubeConfig",
                                        "impersonation",
                                        "crossNamespaceReferences",
                                        "intervals",
                                        "policies",
                                        "dependencies",
                                        "dependencies.cycles",
                                        "dependencies.missingTargets",
                                        "lifecycle"};
    return (size_t)r < CO_ARRAY_SIZE(names) ? names[r] : "unknown";
}

static void strv_free(strv *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i]);
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

static strv strv_of(const json_object *arr)
{
    strv s = {NULL, 0};
    size_t n = arr && json_object_is_type((json_object *)arr, json_type_array)
                   ? json_object_array_length(arr)
                   : 0;
    s.v = co_xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (e && json_object_is_type(e, json_type_string)) {
            s.v[s.n++] = co_xstrdup(json_object_get_string(e));
        }
    }
    return s;
}

void co_policy_free(co_policy *p)
{
    if (!p) {
        return;
    }
    free(p->name);
    strv_free(&p->match_keys);
    strv_free(&p->match_values);
    for (size_t i = 0; i < p->nexprs; i++) {
        free(p->exprs[i].key);
        strv_free(&p->exprs[i].values);
    }
    free(p->exprs);
    strv_free(&p->exempt_ns);
    strv_free(&p->exempt_users);
    strv_free(&p->exempt_groups);
    strv_free(&p->prefixes);
    strv_free(&p->sa_patterns);
    free(p->d_requeue);
    free(p->d_retry);
    free(p->d_timeout);
    free(p->d_reapply);
    free(p->d_sa);
    free(p->d_grace);
    free(p);
}

const char *co_policy_name(const co_policy *p)
{
    return p->name;
}

/* ---------------------------------------------------------------------------------------------
 * Validation
 * ------------------------------------------------------------------------------------------- */

static void validate_semantics(co_field_errors *errs, const json_object *spec)
{
    json_object *sel = co_json__member(spec, "namespaceSelector");
    json_object *labels = co_json__member(sel, "matchLabels");
    if (labels && json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach (labels, key, val) {
            char *p = co_xasprintf("spec.namespaceSelector.matchLabels.%s", key);
            if (!co_name__is_qualified_name(key)) {
                co_field_errors_add_str(errs, CO_FIELD_INVALID, p, key, "must be a label key");
            } else if (json_object_is_type(val, json_type_string) &&
                       !co_name__is_label_value(json_object_get_string(val))) {
                co_field_errors_add(errs, CO_FIELD_INVALID, p, val, "must be a label value");
            }
            free(p);
        }
    }
    json_object *exprs = co_json__member(sel, "matchExpressions");
    size_t n =
        exprs && json_object_is_type(exprs, json_type_array) ? json_object_array_length(exprs) : 0;
    for (size_t i = 0; i < n && i < CO_MAX_SPEC_LIST_ITEMS; i++) {
        json_object *e = json_object_array_get_idx(exprs, i);
        const char *key = co_json_str(e, "key", NULL);
        const char *op = co_json_str(e, "operator", NULL);
        json_object *values = co_json__member(e, "values");
        size_t nv = values && json_object_is_type(values, json_type_array)
                        ? json_object_array_length(values)
                        : 0;
        char *base = co_xasprintf("spec.namespaceSelector.matchExpressions[%zu]", i);
        if (key && key[0] && !co_name__is_qualified_name(key)) {
            char *p = co_schema__join(base, "key");
            co_field_errors_add_str(errs, CO_FIELD_INVALID, p, key, "must be a label key");
            free(p);
        }
        char *vp = co_schema__join(base, "values");
        if (op && (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0) && nv == 0) {
            co_field_errors_add_novalue(errs, CO_FIELD_REQUIRED, vp,
                                        "must be specified when operator is In or NotIn");
        } else if (op && (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0) && nv > 0) {
            co_field_errors_add_novalue(errs, CO_FIELD_FORBIDDEN, vp,
                                        "may not be specified when operator is Exists or "
                                        "DoesNotExist");
        }
        for (size_t k = 0; k < nv; k++) {
            json_object *v = json_object_array_get_idx(values, k);
            if (v && json_object_is_type(v, json_type_string) &&
                !co_name__is_label_value(json_object_get_string(v))) {
                char *p = co_schema__index(vp, k);
                co_field_errors_add(errs, CO_FIELD_INVALID, p, v, "must be a label value");
                free(p);
            }
        }
        free(vp);
        free(base);
    }
    json_object *deps = co_json__member(co_json__member(spec, "rules"), "dependencies");
    json_object *max = co_json__member(deps, "maxCount");
    if (max && json_object_is_type(max, json_type_int) && json_object_get_int64(max) < 0) {
        co_field_errors_add(errs, CO_FIELD_INVALID, "spec.rules.dependencies.maxCount", max,
                            "must be greater than or equal to 0");
    }
    const char *grace = co_json_str(spec, "defaults", "gracePeriod", NULL);
    int64_t grace_ns = 0;
    if (grace && co_schema__duration(grace, &grace_ns) && grace_ns == 0) {
        co_field_errors_add_str(errs, CO_FIELD_INVALID, "spec.defaults.gracePeriod", grace,
                                "must be a positive duration");
    }
    json_object *lc = co_json__member(co_json__member(spec, "rules"), "lifecycle");
    json_object *allow = co_json__member(lc, "allowDisabled");
    json_object *require = co_json__member(lc, "requireDisabled");
    if (allow && require && json_object_is_type(allow, json_type_boolean) &&
        json_object_is_type(require, json_type_boolean) && !json_object_get_boolean(allow) &&
        json_object_get_boolean(require)) {
        co_field_errors_add(errs, CO_FIELD_INVALID, "spec.rules.lifecycle.requireDisabled", require,
                            "may not be true when allowDisabled is false");
    }
    const char *sa = co_json_str(spec, "defaults", "serviceAccountName", NULL);
    if (sa && !co_name__is_dns_subdomain(sa)) {
        co_field_errors_add_str(errs, CO_FIELD_INVALID, "spec.defaults.serviceAccountName", sa,
                                "%s", co_name__dns_subdomain_msg);
    }
}

int co_policy_validate(co_field_errors *errs, const struct json_object *obj, unsigned flags)
{
    co_field_errors mine = CO_FIELD_ERRORS_INIT;
    unsigned mode = (flags & CO_POLICY_ALLOW_UNKNOWN_FIELDS) ? CO_SCHEMA_NO_UNKNOWN : 0;
    if (!obj || !json_object_is_type((json_object *)obj, json_type_object)) {
        co_field_errors_add(errs, CO_FIELD_INVALID, "<root>", obj, "must be a JSON object");
        return CO_EINVALID;
    }
    const char *kind = co_json_str(obj, "kind", NULL);
    const char *api = co_json_str(obj, "apiVersion", NULL);
    if (!kind || strcmp(kind, CO_POLICY_KIND) != 0) {
        static const char *const kinds[] = {CO_POLICY_KIND};
        co_field_errors_unsupported(&mine, "kind", kind, kinds, 1);
    }
    if (!api || strcmp(api, CO_POLICY_API_VERSION) != 0) {
        static const char *const versions[] = {CO_POLICY_API_VERSION};
        co_field_errors_unsupported(&mine, "apiVersion", api, versions, 1);
    }
    const char *name = co_json_meta_name(obj);
    if (!name || !name[0]) {
        co_field_errors_add_novalue(&mine, CO_FIELD_REQUIRED, "metadata.name", NULL);
    }
    for (const co_schema *f = policy_root.fields; f->name; f++) {
        json_object *child = co_json__member(obj, f->name);
        if (!child && (f->flags & CO_SCHEMA_REQUIRED)) {
            co_field_errors_add_novalue(&mine, CO_FIELD_REQUIRED, f->name, NULL);
        } else {
            co_schema__check(&mine, child, f, f->name, mode);
        }
    }
    if (!(mode & CO_SCHEMA_NO_UNKNOWN)) {
        json_object_object_foreach ((json_object *)obj, key, val) {
            if (!json_object_is_type(val, json_type_null) && strcmp(key, "status") != 0 &&
                !co_schema__field(&policy_root, key)) {
                char *p = co_schema__join("", key);
                co_field_errors_add_novalue(&mine, CO_FIELD_FORBIDDEN, p, "unknown field");
                free(p);
            }
        }
    }
    json_object *spec = co_json__member(obj, "spec");
    if (spec && json_object_is_type(spec, json_type_object)) {
        validate_semantics(&mine, spec);
    }
    int bad = !co_field_errors_empty(&mine);
    co_field_errors_move(errs, &mine);
    return bad ? CO_EINVALID : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------------------------- */

static rule_hdr rule_of(const json_object *rules, const char *name, json_object **out)
{
    rule_hdr h = {0, CO_POLICY_NONE};
    *out = co_json__member(rules, name);
    if (*out) {
        co_policy_action a = action_parse(co_json_str(*out, "action", NULL));
        h.present = 1;
        h.action = a ? a : CO_POLICY_DENY;
    }
    return h;
}

static int64_t duration_at(const json_object *o, const char *key)
{
    const char *s = co_json_str(o, key, NULL);
    int64_t ns = 0;
    return s && co_schema__duration(s, &ns) && ns > 0 ? ns : 0;
}

static unsigned enum_bits(const json_object *o, const char *key, int (*parse)(const char *))
{
    json_object *arr = co_json__member(o, key);
    unsigned bits = 0;
    size_t n = arr ? json_object_array_length(arr) : 0;
    for (size_t i = 0; i < n; i++) {
        bits |= 1u << parse(json_object_get_string(json_object_array_get_idx(arr, i)));
    }
    return bits;
}

static int parse_adoption(const char *s)
{
    return (int)co_adoption_policy_parse(s);
}
static int parse_update(const char *s)
{
    return (int)co_update_policy_parse(s);
}
static int parse_delete(const char *s)
{
    return (int)co_delete_policy_parse(s);
}
static int parse_missing(const char *s)
{
    return (int)co_missing_namespaces_policy_parse(s);
}
static int parse_suspend_mode(const char *s)
{
    return (int)co_suspend_mode_parse(s);
}

/* A boolean rule field: its value, @p dflt when absent. */
static int bool_at(const json_object *o, const char *key, int dflt)
{
    json_object *b = co_json__member(o, key);
    return b ? json_object_get_boolean(b) : dflt;
}

static co_opt_bool opt_bool_at(const json_object *o, const char *key)
{
    json_object *b = co_json__member(o, key);
    return !b ? CO_OPT_UNSET : json_object_get_boolean(b) ? CO_OPT_TRUE : CO_OPT_FALSE;
}

int co_policy_parse(co_policy **out, const struct json_object *obj)
{
    co_field_errors errs = CO_FIELD_ERRORS_INIT;
    if (co_policy_validate(&errs, obj, CO_POLICY_ALLOW_UNKNOWN_FIELDS) < 0) {
        co_buf msg = CO_BUF_INIT(CO_MAX_ERROR_MESSAGE);
        int rc = co_field_errors_format(&msg, &errs);
        co_error_set(CO_EINVALID, "invalid ComponentPolicy: %s",
                     rc == 0 ? co_buf_cstr(&msg) : "(too many errors)");
        co_buf_dispose(&msg);
        co_field_errors_dispose(&errs);
        return CO_EINVALID;
    }
    json_object *spec = co_json__member(obj, "spec");
    json_object *sel = co_json__member(spec, "namespaceSelector");
    json_object *rules = co_json__member(spec, "rules");
    json_object *defs = co_json__member(spec, "defaults");
    json_object *r;
    co_policy *p = co_xcalloc(1, sizeof(*p));
    p->name = co_xstrdup(co_json_meta_name(obj));

    json_object *labels = co_json__member(sel, "matchLabels");
    size_t nl = labels ? (size_t)json_object_object_length(labels) : 0;
    p->match_keys.v = co_xcalloc(nl ? nl : 1, sizeof(char *));
    p->match_values.v = co_xcalloc(nl ? nl : 1, sizeof(char *));
    if (labels) {
        json_object_object_foreach (labels, key, val) {
            p->match_keys.v[p->match_keys.n++] = co_xstrdup(key);
            p->match_values.v[p->match_values.n++] = co_xstrdup(json_object_get_string(val));
        }
    }
    json_object *exprs = co_json__member(sel, "matchExpressions");
    size_t ne = exprs ? json_object_array_length(exprs) : 0;
    p->exprs = co_xcalloc(ne ? ne : 1, sizeof(sel_expr));
    for (size_t i = 0; i < ne; i++) {
        json_object *e = json_object_array_get_idx(exprs, i);
        static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist"};
        sel_expr *x = &p->exprs[p->nexprs++];
        const char *op = co_json_str(e, "operator", NULL);
        x->key = co_xstrdup(co_json_str(e, "key", NULL));
        for (int k = 0; k < 4; k++) {
            if (strcmp(ops[k], op) == 0) {
                x->op = (sel_op)k;
            }
        }
        x->values = strv_of(co_json__member(e, "values"));
    }
    p->exempt_ns = strv_of(co_json__member(spec, "exemptNamespaces"));
    p->exempt_users = strv_of(co_json__member(spec, "exemptUsers"));
    p->exempt_groups = strv_of(co_json__member(spec, "exemptGroups"));

    p->source_kinds = rule_of(rules, "sourceKinds", &r);
    strv kinds = strv_of(co_json__member(r, "allowed"));
    for (size_t i = 0; i < kinds.n; i++) {
        p->kind_allowed[co_source_kind_parse(kinds.v[i])] = 1;
    }
    strv_free(&kinds);
    p->http_urls = rule_of(rules, "httpUrls", &r);
    p->prefixes = strv_of(co_json__member(r, "allowedPrefixes"));
    p->kubeconfig = rule_of(rules, "remoteKubeConfig", &r);
    json_object *b = co_json__member(r, "allowed");
    p->kubeconfig_allowed = b && json_object_get_boolean(b);
    p->impersonation = rule_of(rules, "impersonation", &r);
    b = co_json__member(r, "required");
    p->sa_required = !b || json_object_get_boolean(b);
    p->sa_patterns = strv_of(co_json__member(r, "allowedServiceAccounts"));
    p->xns = rule_of(rules, "crossNamespaceReferences", &r);
    p->allow_sources = (b = co_json__member(r, "allowSources")) && json_object_get_boolean(b);
    p->allow_deps = (b = co_json__member(r, "allowDependencies")) && json_object_get_boolean(b);
    p->allow_target =
        (b = co_json__member(r, "allowTargetNamespace")) && json_object_get_boolean(b);
    p->intervals = rule_of(rules, "intervals", &r);
    p->min_requeue = duration_at(r, "minRequeueInterval");
    p->min_retry = duration_at(r, "minRetryInterval");
    p->min_reapply = duration_at(r, "minReapplyInterval");
    p->max_timeout = duration_at(r, "maxTimeout");
    p->policies = rule_of(rules, "policies", &r);
    p->adoption_ok = enum_bits(r, "adoption", parse_adoption);
    p->update_ok = enum_bits(r, "update", parse_update);
    p->delete_ok = enum_bits(r, "delete", parse_delete);
    p->missing_ok = enum_bits(r, "missingNamespaces", parse_missing);
    p->deps = rule_of(rules, "dependencies", &r);
    json_object *max = co_json__member(r, "maxCount");
    p->max_deps = max ? json_object_get_int64(max) : -1;
    p->cycles = action_parse(co_json_str(r, "cycles", NULL));
    p->missing_targets = action_parse(co_json_str(r, "missingTargets", NULL));
    p->lifecycle = rule_of(rules, "lifecycle", &r);
    p->allow_disabled = bool_at(r, "allowDisabled", 1);
    p->require_disabled = bool_at(r, "requireDisabled", 0);
    p->allow_unmanaged = bool_at(r, "allowUnmanaged", 1);
    p->allow_prerequisites = bool_at(r, "allowPrerequisites", 1);
    p->allow_skip = bool_at(r, "allowSkipReconciliation", 1);
    p->suspend_ok = enum_bits(r, "suspendModes", parse_suspend_mode);
    const char *mg = co_json_str(r, "maxGracePeriod", NULL);
    int64_t mg_ns = 0;
    p->max_grace = mg && co_schema__duration(mg, &mg_ns) && mg_ns >= 0 ? mg_ns : -1;

    json_object *grants = co_json__member(spec, "grants");
    static const struct {
        const char *field;
        unsigned bit;
    } grant_fields[] = {{"lookupsOutsideNamespace", CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE},
                        {"nestedComponents", CO_GRANT_NESTED_COMPONENTS},
                        {"insecureKubeConfigServers", CO_GRANT_INSECURE_KUBECONFIG_SERVERS}};
    for (size_t i = 0; i < CO_ARRAY_SIZE(grant_fields); i++) {
        if ((b = co_json__member(grants, grant_fields[i].field))) {
            if (json_object_get_boolean(b)) {
                p->grants_true |= grant_fields[i].bit;
            } else {
                p->grants_false |= grant_fields[i].bit;
            }
        }
    }

    p->d_requeue = co_xstrdup(co_json_str(defs, "requeueInterval", NULL));
    p->d_retry = co_xstrdup(co_json_str(defs, "retryInterval", NULL));
    p->d_timeout = co_xstrdup(co_json_str(defs, "timeout", NULL));
    p->d_reapply = co_xstrdup(co_json_str(defs, "reapplyInterval", NULL));
    p->d_sa = co_xstrdup(co_json_str(defs, "serviceAccountName", NULL));
    p->d_adoption = co_adoption_policy_parse(co_json_str(defs, "adoptionPolicy", NULL));
    p->d_update = co_update_policy_parse(co_json_str(defs, "updatePolicy", NULL));
    p->d_delete = co_delete_policy_parse(co_json_str(defs, "deletePolicy", NULL));
    p->d_missing =
        co_missing_namespaces_policy_parse(co_json_str(defs, "missingNamespacesPolicy", NULL));
    p->d_enabled = opt_bool_at(defs, "enabled");
    p->d_managed = opt_bool_at(defs, "managed");
    p->d_grace = co_xstrdup(co_json_str(defs, "gracePeriod", NULL));
    p->d_suspend = co_suspend_mode_parse(co_json_str(defs, "suspendMode", NULL));
    *out = p;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Selection
 * ------------------------------------------------------------------------------------------- */

static int glob_any(const strv *patterns, const char *s)
{
    for (size_t i = 0; s && i < patterns->n; i++) {
        if (fnmatch(patterns->v[i], s, 0) == 0) {
            return 1;
        }
    }
    return 0;
}

static int in_list(const strv *list, const char *s)
{
    for (size_t i = 0; s && i < list->n; i++) {
        if (strcmp(list->v[i], s) == 0) {
            return 1;
        }
    }
    return 0;
}

static int selector_matches(const co_policy *p, const json_object *labels)
{
    for (size_t i = 0; i < p->match_keys.n; i++) {
        const char *v = co_json_str(labels, p->match_keys.v[i], NULL);
        if (!v || strcmp(v, p->match_values.v[i]) != 0) {
            return 0;
        }
    }
    for (size_t i = 0; i < p->nexprs; i++) {
        const sel_expr *x = &p->exprs[i];
        const char *v = co_json_str(labels, x->key, NULL);
        int ok;
        switch (x->op) {
        case SEL_IN:
            ok = v && in_list(&x->values, v);
            break;
        case SEL_NOT_IN:
            ok = !v || !in_list(&x->values, v);
            break;
        case SEL_EXISTS:
            ok = v != NULL;
            break;
        case SEL_DOES_NOT_EXIST:
        default:
            ok = v == NULL;
            break;
        }
        if (!ok) {
            return 0;
        }
    }
    return 1;
}

/* Whether the requester of @p req (at reconcile time: the recorded one, if any) is exempt. */
static int requester_exempt(const co_policy *p, const co_policy_request *req)
{
    if (glob_any(&p->exempt_users, req->username)) {
        return 1;
    }
    for (size_t i = 0; i < req->ngroups; i++) {
        if (glob_any(&p->exempt_groups, req->groups[i])) {
            return 1;
        }
    }
    return 0;
}

/*
 * A user or group exemption holds only for a requester that matches it; a request without one
 * (a reconcile of a Component whose spec no exempt user wrote) is judged by the policy. Skipping
 * such policies instead would leave their rules unchecked for every Component that bypassed the
 * webhook, the case the reconcile-time check exists for.
 */
static int applies(const co_policy *p, const co_policy_request *req, const char *ns)
{
    if (ns && glob_any(&p->exempt_ns, ns)) {
        return 0;
    }
    if (requester_exempt(p, req)) {
        return 0;
    }
    return selector_matches(p, req->namespace_labels);
}

bool co_policy_applies(const co_policy *p, const co_policy_request *req)
{
    return applies(p, req, req->ns);
}

/* ---------------------------------------------------------------------------------------------
 * Sets
 * ------------------------------------------------------------------------------------------- */

struct co_policy_set {
    co_policy **items; /* sorted by name */
    size_t len;
};

co_policy_set *co_policy_set_new(void)
{
    return co_xcalloc(1, sizeof(co_policy_set));
}

void co_policy_set_free(co_policy_set *set)
{
    if (!set) {
        return;
    }
    for (size_t i = 0; i < set->len; i++) {
        co_policy_free(set->items[i]);
    }
    free(set->items);
    free(set);
}

size_t co_policy_set_size(const co_policy_set *set)
{
    return set ? set->len : 0;
}

void co_policy_set_remove(co_policy_set *set, const char *name)
{
    for (size_t i = 0; name && i < set->len; i++) {
        if (strcmp(set->items[i]->name, name) == 0) {
            co_policy_free(set->items[i]);
            memmove(&set->items[i], &set->items[i + 1], (set->len - i - 1) * sizeof(co_policy *));
            set->len--;
            return;
        }
    }
}

int co_policy_set_put(co_policy_set *set, const struct json_object *obj)
{
    co_policy *p = NULL;
    int rc = co_policy_parse(&p, obj);
    if (rc < 0) {
        return rc;
    }
    co_policy_set_remove(set, p->name);
    size_t pos = 0;
    while (pos < set->len && strcmp(set->items[pos]->name, p->name) < 0) {
        pos++;
    }
    set->items = co_xreallocarray(set->items, set->len + 1, sizeof(co_policy *));
    memmove(&set->items[pos + 1], &set->items[pos], (set->len - pos) * sizeof(co_policy *));
    set->items[pos] = p;
    set->len++;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Evaluation
 * ------------------------------------------------------------------------------------------- */

typedef struct slot {
    co_policy_action action;
    const char *policy; /* borrowed from the set; NULL = built-in */
    char *message;
} slot;

/* Starts another part of a rule's message: parts are joined with "; ". */
static void msg_next(co_buf *b)
{
    if (b->len) {
        CO_ASSERT(co_buf_puts(b, "; ") == 0);
    }
}

static void msg_add(co_buf *b, const char *fmt, ...) CO_PRINTF(2, 3);
static void msg_add(co_buf *b, const char *fmt, ...)
{
    va_list ap;
    msg_next(b);
    va_start(ap, fmt);
    CO_ASSERT(co_buf_vprintf(b, fmt, ap) == 0);
    va_end(ap);
}

/* msg_add() of the strings given (up to a NULL) as they are, without printf: for a message
 * that comes with many admissions. */
static void msg_add_strs(co_buf *b, ...)
{
    va_list ap;
    msg_next(b);
    va_start(ap, b);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;) {
        CO_ASSERT(co_buf_puts(b, s) == 0);
    }
    va_end(ap);
}

static void quoted_list(co_buf *b, const strv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        if (i) {
            CO_ASSERT(co_buf_puts(b, ", ") == 0);
        }
        CO_ASSERT(co_field_quote(b, v->v[i]) == 0);
    }
}

/* Offers one policy's verdict on a rule; the strictest (then the first by name) stays. */
static void offer(slot *s, co_policy_action action, const char *policy, co_buf *msg)
{
    if (msg->len && action > s->action) {
        free(s->message);
        s->action = action;
        s->policy = policy;
        s->message = co_buf_take(msg, NULL);
    }
    co_buf_dispose(msg);
}

static const char *const *enum_names_of(int which, size_t *n)
{
    static const char *const adoption[] = {NULL, "Never", "IfUnowned", "Always"};
    static const char *const update[] = {NULL, "Recreate", "Replace", "SsaMerge", "SsaOverride"};
    static const char *const del[] = {NULL, "Delete", "Orphan"};
    static const char *const missing[] = {NULL, "DoNotCreate", "Create"};
    switch (which) {
    case 0:
        *n = CO_ARRAY_SIZE(adoption);
        return adoption;
    case 1:
        *n = CO_ARRAY_SIZE(update);
        return update;
    case 2:
        *n = CO_ARRAY_SIZE(del);
        return del;
    default:
        *n = CO_ARRAY_SIZE(missing);
        return missing;
    }
}

static void check_enum(co_buf *b, const char *field, int which, unsigned allowed, int value)
{
    size_t n;
    const char *const *names = enum_names_of(which, &n);
    if (!allowed || (allowed & (1u << value))) {
        return;
    }
    msg_add(b, "%s \"%s\" is not allowed; allowed: ", field, names[value]);
    int first = 1;
    for (size_t i = 1; i < n; i++) {
        if (allowed & (1u << i)) {
            CO_ASSERT(co_buf_printf(b, "%s\"%s\"", first ? "" : ", ", names[i]) == 0);
            first = 0;
        }
    }
}

static void check_interval(co_buf *b, const char *what, int64_t value, int64_t bound, int max)
{
    if (!bound || (max ? value <= bound : value >= bound)) {
        return;
    }
    char v[CO_DURATION_STR_MAX];
    char l[CO_DURATION_STR_MAX];
    co_duration_format(v, value);
    co_duration_format(l, bound);
    msg_add(b, "%s %s is %s the %s of %s", what, v, max ? "above" : "below",
            max ? "maximum" : "minimum", l);
}

/* rules.lifecycle; each message names the field in the Component's own version. */
static void check_lifecycle(co_buf *b, const co_policy *p, const co_component *c)
{
    const co_component_spec *s = &c->spec;
    if (!co_component_enabled(c) && !p->allow_disabled) {
        msg_add(b, "spec.enabled: false (Disabled) is not allowed");
    } else if (co_component_enabled(c) && p->require_disabled) {
        msg_add(b, "spec.enabled must be false");
    }
    if (!co_component_managed(c) && !p->allow_unmanaged) {
        msg_add(b, "spec.managed: false (Unmanaged) is not allowed");
    }
    co_suspend_mode mode = co_component_suspend_mode(c);
    if (p->suspend_ok && !(p->suspend_ok & (1u << mode))) {
        msg_add(b, "spec.suspendMode \"%s\" is not allowed; allowed: ", co_suspend_mode_name(mode));
        int first = 1;
        for (int m = CO_SUSPEND_MODE_PAUSE; m <= CO_SUSPEND_MODE_SCALE_DOWN; m++) {
            if (p->suspend_ok & (1u << m)) {
                CO_ASSERT(co_buf_printf(b, "%s\"%s\"", first ? "" : ", ",
                                        co_suspend_mode_name((co_suspend_mode)m)) == 0);
                first = 0;
            }
        }
    }
    int64_t grace = co_component_grace_ns(c);
    if (p->max_grace >= 0 && grace > p->max_grace) {
        char v[CO_DURATION_STR_MAX];
        char l[CO_DURATION_STR_MAX];
        co_duration_format(v, grace);
        co_duration_format(l, p->max_grace);
        msg_add(b, "%s %s is above the maximum of %s",
                c->version == CO_API_V1BETA1 ? "spec.intervals.grace" : "spec.gracePeriod", v, l);
    }
    if (s->n_prerequisites && !p->allow_prerequisites) {
        msg_add(b, "spec.prerequisites is not allowed");
    }
    const char *label = co_component_skip_label(c);
    if (label && !p->allow_skip) {
        msg_add(b, "metadata.labels[%s]: skipping reconciliation is not allowed", label);
    }
}

/* Evaluates the rules of one policy against the Component, filling the slots. */
static void evaluate_policy(slot *slots, const co_policy *p, const co_component *c, const char *ns)
{
    const co_component_spec *s = &c->spec;
    co_buf b = CO_BUF_INIT(SIZE_MAX);

    if (p->source_kinds.present && s->source.kind != CO_SOURCE_NONE &&
        !p->kind_allowed[s->source.kind]) {
        msg_add(&b, "source kind \"%s\" is not allowed; allowed: ",
                co_source_kind_name(s->source.kind));
        int first = 1;
        for (int k = 1; k < CO_SOURCE_KIND_COUNT; k++) {
            if (p->kind_allowed[k]) {
                CO_ASSERT(co_buf_printf(&b, "%s\"%s\"", first ? "" : ", ",
                                        co_source_kind_name((co_source_kind)k)) == 0);
                first = 0;
            }
        }
        if (first) {
            CO_ASSERT(co_buf_puts(&b, "none") == 0);
        }
    }
    offer(&slots[CO_RULE_SOURCE_KINDS], p->source_kinds.action, p->name, &b);

    if (p->http_urls.present) {
        const char *url = s->source.kind == CO_SOURCE_HTTP_REPOSITORY ? s->source.http.url
                          : s->source.kind == CO_SOURCE_GIT           ? s->source.git.url
                                                                      : NULL;
        int ok = !url;
        for (size_t i = 0; url && i < p->prefixes.n; i++) {
            ok = ok || strncmp(url, p->prefixes.v[i], strlen(p->prefixes.v[i])) == 0;
        }
        if (!ok) {
            msg_add(&b, "URL \"%s\" does not start with an allowed prefix (", url);
            quoted_list(&b, &p->prefixes);
            CO_ASSERT(co_buf_putc(&b, ')') == 0);
        }
    }
    offer(&slots[CO_RULE_HTTP_URLS], p->http_urls.action, p->name, &b);

    if (p->kubeconfig.present && s->has_kube_config && !p->kubeconfig_allowed) {
        msg_add(&b, "deploying to another cluster with spec.kubeConfig is not allowed");
    }
    offer(&slots[CO_RULE_REMOTE_KUBECONFIG], p->kubeconfig.action, p->name, &b);

    if (p->impersonation.present) {
        const char *sa = s->service_account_name;
        if ((!sa || !sa[0]) && p->sa_required) {
            msg_add(&b, "spec.serviceAccountName must be set");
        } else if (sa && sa[0] && p->sa_patterns.n && !glob_any(&p->sa_patterns, sa)) {
            msg_add(&b, "service account \"%s\" is not allowed; allowed: ", sa);
            quoted_list(&b, &p->sa_patterns);
        }
    }
    offer(&slots[CO_RULE_IMPERSONATION], p->impersonation.action, p->name, &b);

    if (p->xns.present && ns) {
        const co_object_ref *flux = &s->source.flux;
        int in_cluster = (s->source.kind >= CO_SOURCE_FLUX_GIT_REPOSITORY &&
                          s->source.kind <= CO_SOURCE_FLUX_HELM_CHART) ||
                         s->source.kind == CO_SOURCE_BLUEPRINT;
        if (!p->allow_sources && in_cluster && flux->ns && flux->ns[0] &&
            strcmp(flux->ns, ns) != 0) {
            msg_add(&b, "the source in namespace \"%s\" is outside the Component's namespace",
                    flux->ns);
        }
        for (size_t i = 0; !p->allow_deps && i < s->n_dependencies; i++) {
            const co_object_ref *d = &s->dependencies[i];
            if (d->ns && d->ns[0] && d->name && strcmp(d->ns, ns) != 0) {
                msg_add(&b, "the dependency \"%s/%s\" is outside the Component's namespace", d->ns,
                        d->name);
            }
        }
        if (!p->allow_target && s->ns && s->ns[0] && strcmp(s->ns, ns) != 0) {
            msg_add(&b, "the target namespace \"%s\" differs from the Component's namespace",
                    s->ns);
        }
    }
    offer(&slots[CO_RULE_CROSS_NAMESPACE], p->xns.action, p->name, &b);

    if (p->intervals.present) {
        check_interval(&b, "requeue interval", co_component_requeue_ns(c), p->min_requeue, 0);
        check_interval(&b, "retry interval", co_component_retry_ns(c), p->min_retry, 0);
        check_interval(&b, "reapply interval", co_component_reapply_ns(c), p->min_reapply, 0);
        check_interval(&b, "timeout", co_component_timeout_ns(c), p->max_timeout, 1);
    }
    offer(&slots[CO_RULE_INTERVALS], p->intervals.action, p->name, &b);

    if (p->policies.present) {
        check_enum(&b, "adoptionPolicy", 0, p->adoption_ok, co_component_adoption_policy(c));
        check_enum(&b, "updatePolicy", 1, p->update_ok, co_component_update_policy(c));
        check_enum(&b, "deletePolicy", 2, p->delete_ok, co_component_delete_policy(c));
        check_enum(&b, "missingNamespacesPolicy", 3, p->missing_ok,
                   co_component_missing_namespaces_policy(c));
    }
    offer(&slots[CO_RULE_POLICIES], p->policies.action, p->name, &b);

    if (p->deps.present && p->max_deps >= 0 && (int64_t)s->n_dependencies > p->max_deps) {
        msg_add(&b, "%zu dependencies exceed the maximum of %lld", s->n_dependencies,
                (long long)p->max_deps);
    }
    offer(&slots[CO_RULE_DEPENDENCIES], p->deps.action, p->name, &b);

    if (p->lifecycle.present) {
        check_lifecycle(&b, p, c);
    }
    offer(&slots[CO_RULE_LIFECYCLE], p->lifecycle.action, p->name, &b);
}

/* The dependency keys of @p c, namespace-defaulted and without duplicates. */
static co_depgraph_list dep_keys(const co_component *c, const char *ns)
{
    co_depgraph_list l = {co_xcalloc(c->spec.n_dependencies + 1, sizeof(char *)), 0};
    for (size_t i = 0; i < c->spec.n_dependencies; i++) {
        const co_object_ref *d = &c->spec.dependencies[i];
        if (!d->name || !d->name[0]) {
            continue;
        }
        char *key = co_xjoin(d->ns && d->ns[0] ? d->ns : ns, '/', d->name);
        int dup = 0;
        for (size_t k = 0; k < l.len; k++) {
            dup = dup || strcmp(l.items[k], key) == 0;
        }
        if (dup) {
            free(key);
        } else {
            l.items[l.len++] = key;
        }
    }
    return l;
}

/* The strictest action of the applying policies on the two graph rules, and who set it. */
typedef struct graph_actions {
    co_policy_action cycles, missing;
    const char *cycles_by, *missing_by;
} graph_actions;

/* The built-in rules on the cluster's dependency graph for Component @p key with dependency
 * keys @p deps: a cycle it would close (Deny unless a policy says otherwise) and dependencies
 * that do not exist (Warn unless a policy says otherwise). */
static void graph_rules(slot *slots,
                        const co_depgraph *graph,
                        const char *key,
                        const char *const *deps,
                        size_t n,
                        const graph_actions *ga)
{
    char *cycle = NULL;
    if (co_depgraph_check(&cycle, graph, key, deps, n) == CO_ECONFLICT) {
        slot *s = &slots[CO_RULE_DEPENDENCY_CYCLES];
        s->action = ga->cycles ? ga->cycles : CO_POLICY_DENY;
        s->policy = ga->cycles ? ga->cycles_by : NULL;
        /* the requester may not read the namespaces the cycle passes through */
        char *shown = co_depgraph_redact_path(cycle, key, deps, n);
        s->message = co_xasprintf("dependency cycle: %s", shown);
        free(shown);
        free(cycle);
    }
    co_error_clear();
    co_depgraph_list absent = {NULL, 0};
    CO_ASSERT(co_depgraph_missing(&absent, graph, deps, n) == 0);
    if (absent.len) {
        /* a new Component's dependencies often do not exist yet */
        co_buf b = CO_BUF_INIT(SIZE_MAX);
        for (size_t i = 0; i < absent.len; i++) {
            msg_add_strs(&b, "dependency \"", absent.items[i], "\" does not exist (yet)",
                         (const char *)NULL);
        }
        slot *s = &slots[CO_RULE_MISSING_DEPENDENCIES];
        s->action = ga->missing ? ga->missing : CO_POLICY_WARN;
        s->policy = ga->missing ? ga->missing_by : NULL;
        s->message = co_buf_take(&b, NULL);
    }
    co_depgraph_list_dispose(&absent);
}

/* The result of the rules that have a message, in rule order. */
static co_policy_result collect(slot *slots)
{
    co_policy_result res = {co_xcalloc(CO_POLICY_RULE_COUNT, sizeof(co_policy_violation)), 0,
                            CO_POLICY_NONE};
    for (int r = 0; r < CO_POLICY_RULE_COUNT; r++) {
        if (!slots[r].message) {
            continue;
        }
        co_policy_violation *v = &res.items[res.len++];
        v->rule = (co_policy_rule)r;
        v->action = slots[r].action;
        v->policy = co_xstrdup(slots[r].policy);
        v->message = slots[r].message;
        if (v->action > res.verdict) {
            res.verdict = v->action;
        }
    }
    return res;
}

int co_policy_evaluate(co_policy_result *out,
                       const co_policy_set *set,
                       const co_component *c,
                       const co_policy_request *req)
{
    slot slots[CO_POLICY_RULE_COUNT];
    const char *ns = req->ns ? req->ns : c->ns;
    graph_actions ga = {CO_POLICY_NONE, CO_POLICY_NONE, NULL, NULL};
    memset(slots, 0, sizeof(slots));

    for (size_t i = 0; set && i < set->len; i++) {
        const co_policy *p = set->items[i];
        if (!applies(p, req, ns)) {
            continue;
        }
        evaluate_policy(slots, p, c, ns);
        if (p->cycles > ga.cycles) {
            ga.cycles = p->cycles;
            ga.cycles_by = p->name;
        }
        if (p->missing_targets > ga.missing) {
            ga.missing = p->missing_targets;
            ga.missing_by = p->name;
        }
    }

    if (req->graph && ns && ns[0] && c->name) {
        co_depgraph_list deps = dep_keys(c, ns);
        char *key = co_xjoin(ns, '/', c->name);
        graph_rules(slots, req->graph, key, (const char *const *)deps.items, deps.len, &ga);
        co_depgraph_list_dispose(&deps);
        free(key);
    }
    *out = collect(slots);
    return 0;
}

bool co_policy_set_applies(const co_policy_set *set, const co_policy_request *req)
{
    for (size_t i = 0; set && i < set->len; i++) {
        if (applies(set->items[i], req, req->ns)) {
            return true;
        }
    }
    return false;
}

int co_policy_permissions_of(co_policy_permissions *out,
                             const co_policy_set *set,
                             const co_policy_request *req)
{
    unsigned granted = 0, refused = 0;
    const co_policy *denier = NULL;
    for (size_t i = 0; set && i < set->len; i++) {
        const co_policy *p = set->items[i];
        if (!applies(p, req, req->ns)) {
            continue;
        }
        granted |= p->grants_true;
        refused |= p->grants_false;
        /* the same test evaluate_policy() applies to spec.kubeConfig, for kubeconfigs that
         * templates bring; the first policy by name is the one named */
        if (!denier && p->kubeconfig.present && p->kubeconfig.action == CO_POLICY_DENY &&
            !p->kubeconfig_allowed) {
            denier = p;
        }
    }
    memset(out, 0, sizeof(*out));
    out->grants = granted & ~refused;
    if (denier) {
        out->kubeconfig_denied_by = co_xstrdup(denier->name);
    }
    return 0;
}

void co_policy_permissions_dispose(co_policy_permissions *perm)
{
    if (!perm) {
        return;
    }
    free(perm->kubeconfig_denied_by);
    memset(perm, 0, sizeof(*perm));
}

const char *co_policy_grant_name(co_policy_grant g)
{
    switch (g) {
    case CO_GRANT_LOOKUPS_OUTSIDE_NAMESPACE:
        return "grants.lookupsOutsideNamespace";
    case CO_GRANT_NESTED_COMPONENTS:
        return "grants.nestedComponents";
    case CO_GRANT_INSECURE_KUBECONFIG_SERVERS:
        return "grants.insecureKubeConfigServers";
    }
    return "unknown";
}

int co_policy_evaluate_graph(co_policy_result *out,
                             const co_policy_request *req,
                             const char *key,
                             const char *const *deps,
                             size_t n)
{
    slot slots[CO_POLICY_RULE_COUNT];
    const graph_actions ga = {CO_POLICY_NONE, CO_POLICY_NONE, NULL, NULL};
    memset(slots, 0, sizeof(slots));
    if (req->graph && key) {
        graph_rules(slots, req->graph, key, deps, n, &ga);
    }
    *out = collect(slots);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Exemption records
 * ------------------------------------------------------------------------------------------- */

/* Whether some policy of @p set exempts @p s by its exemptGroups (@p group) or exemptUsers. */
static int exempt_by_any(const co_policy_set *set, int group, const char *s)
{
    for (size_t i = 0; set && i < set->len; i++) {
        const co_policy *p = set->items[i];
        if (glob_any(group ? &p->exempt_groups : &p->exempt_users, s)) {
            return 1;
        }
    }
    return 0;
}

int co_policy_requester_record(char **out, const co_policy_set *set, const co_policy_request *req)
{
    json_object *groups = json_object_new_array();
    for (size_t i = 0; i < req->ngroups; i++) {
        const char *g = req->groups[i];
        int seen = !g;
        for (size_t k = 0; !seen && k < json_object_array_length(groups); k++) {
            seen = !strcmp(json_object_get_string(json_object_array_get_idx(groups, k)), g);
        }
        if (!seen && exempt_by_any(set, 1, g)) {
            json_object_array_add(groups, json_object_new_string(g));
        }
    }
    int user = exempt_by_any(set, 0, req->username);
    size_t ngroups = json_object_array_length(groups);
    if (!user && ngroups == 0) {
        json_object_put(groups);
        *out = NULL;
        return 0;
    }
    if (ngroups > CO_MAX_EXEMPTION_RECORD_GROUPS) {
        json_object_put(groups);
        return co_error_set(CO_ETOOBIG, "annotation %s: %zu exempt groups, more than %d",
                            CO_POLICY_REQUESTER_ANNOTATION, ngroups,
                            CO_MAX_EXEMPTION_RECORD_GROUPS);
    }
    json_object *rec = json_object_new_object();
    if (ngroups) {
        json_object_object_add(rec, "groups", groups);
    } else {
        json_object_put(groups);
    }
    if (user) {
        json_object_object_add(rec, "user", json_object_new_string(req->username));
    }
    co_buf b = CO_BUF_INIT(CO_MAX_EXEMPTION_RECORD);
    int rc = co_json_encode(&b, rec, CO_JSON_CANONICAL);
    json_object_put(rec);
    if (rc < 0) {
        return co_error_wrap("annotation %s", CO_POLICY_REQUESTER_ANNOTATION);
    }
    *out = co_buf_take(&b, NULL);
    return 0;
}

int co_policy_requester_parse(co_policy_requester *out, const char *value)
{
    static const char *const key = CO_POLICY_REQUESTER_ANNOTATION;
    size_t len = strlen(value);
    if (len > CO_MAX_EXEMPTION_RECORD) {
        return co_error_set(CO_ETOOBIG, "annotation %s: longer than %zu bytes", key,
                            CO_MAX_EXEMPTION_RECORD);
    }
    json_object *rec = NULL;
    int rc = co_json_parse(&rec, value, len);
    if (rc < 0) {
        return co_error_wrap("annotation %s", key);
    }
    co_policy_requester r = {NULL, NULL, 0};
    if (!json_object_is_type(rec, json_type_object)) {
        rc = co_error_set(CO_EINVALID, "annotation %s: not a JSON object", key);
        goto done;
    }
    json_object_object_foreach (rec, name, v) {
        if (!strcmp(name, "user") && json_object_is_type(v, json_type_string)) {
            free(r.username);
            r.username = co_xstrdup(json_object_get_string(v));
        } else if (!strcmp(name, "groups") && json_object_is_type(v, json_type_array)) {
            size_t n = json_object_array_length(v);
            if (n > CO_MAX_EXEMPTION_RECORD_GROUPS) {
                rc = co_error_set(CO_ETOOBIG, "annotation %s: groups: more than %d", key,
                                  CO_MAX_EXEMPTION_RECORD_GROUPS);
                goto done;
            }
            for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_array_get_idx(v, i);
                if (!json_object_is_type(g, json_type_string)) {
                    rc = co_error_set(CO_EINVALID, "annotation %s: groups[%zu]: not a string", key,
                                      i);
                    goto done;
                }
            }
            for (size_t i = 0; i < r.ngroups; i++) {
                free(r.groups[i]);
            }
            free(r.groups);
            r.groups = co_xcalloc(n ? n : 1, sizeof(char *));
            for (r.ngroups = 0; r.ngroups < n; r.ngroups++) {
                r.groups[r.ngroups] =
                    co_xstrdup(json_object_get_string(json_object_array_get_idx(v, r.ngroups)));
            }
        } else {
            rc = co_error_set(CO_EINVALID, "annotation %s: unexpected member \"%s\" (%s)", key,
                              name, co_json_type_name(v));
            goto done;
        }
    }
done:
    json_object_put(rec);
    if (rc < 0) {
        co_policy_requester_dispose(&r);
        return rc;
    }
    *out = r;
    return 0;
}

int co_policy_requester_of(co_policy_requester *out, const struct json_object *component)
{
    const char *value = co_json_meta_annotation(component, CO_POLICY_REQUESTER_ANNOTATION);
    if (!value) {
        memset(out, 0, sizeof(*out));
        return 0;
    }
    return co_policy_requester_parse(out, value);
}

void co_policy_request_set_requester(co_policy_request *req, const co_policy_requester *r)
{
    req->username = r->username;
    req->groups = (const char *const *)r->groups;
    req->ngroups = r->ngroups;
}

void co_policy_requester_dispose(co_policy_requester *r)
{
    if (!r) {
        return;
    }
    free(r->username);
    for (size_t i = 0; i < r->ngroups; i++) {
        free(r->groups[i]);
    }
    free(r->groups);
    memset(r, 0, sizeof(*r));
}

void co_policy_result_dispose(co_policy_result *res)
{
    if (!res) {
        return;
    }
    for (size_t i = 0; i < res->len; i++) {
        free(res->items[i].policy);
        free(res->items[i].message);
    }
    free(res->items);
    memset(res, 0, sizeof(*res));
}

/* Without printf: the built-in rules format a warning for nearly every admission. */
int co_policy_violation_format(co_buf *out, const co_policy_violation *v)
{
    const char *parts[] = {
        "ComponentPolicy \"", v->policy, "\": ", co_policy_rule_name(v->rule), ": ", v->message};
    int rc = 0;
    for (size_t i = v->policy ? 0 : 3; i < CO_ARRAY_SIZE(parts) && rc == 0; i++) {
        rc = co_buf_puts(out, parts[i]);
    }
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Defaults
 * ------------------------------------------------------------------------------------------- */

static void warn(co_policy_defaults *d, const char *fmt, ...) CO_PRINTF(2, 3);
static void warn(co_policy_defaults *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *w = co_xvasprintf(fmt, ap);
    va_end(ap);
    d->warnings = co_xreallocarray(d->warnings, d->nwarnings + 1, sizeof(char *));
    d->warnings[d->nwarnings++] = w;
}

static void merge_str(co_policy_defaults *d,
                      const char **dst,
                      const char **owner,
                      const char *value,
                      const co_policy *p,
                      const char *field)
{
    if (!value) {
        return;
    }
    if (!*dst) {
        *dst = value;
        *owner = p->name;
    } else if (strcmp(*dst, value) != 0) {
        warn(d,
             "ComponentPolicy \"%s\": default %s \"%s\" ignored; ComponentPolicy \"%s\" sets "
             "\"%s\"",
             p->name, field, value, *owner, *dst);
    }
}

static const char *opt_bool_name(co_opt_bool v)
{
    return v == CO_OPT_TRUE ? "true" : v == CO_OPT_FALSE ? "false" : NULL;
}

static co_opt_bool opt_bool_parse(const char *s)
{
    return !s ? CO_OPT_UNSET : strcmp(s, "true") == 0 ? CO_OPT_TRUE : CO_OPT_FALSE;
}

int co_policy_defaults_merge(co_policy_defaults *out,
                             const co_policy_set *set,
                             const co_policy_request *req)
{
    co_policy_defaults d;
    const char *owners[13] = {NULL};
    const char *enums[7] = {NULL};
    memset(&d, 0, sizeof(d));
    for (size_t i = 0; set && i < set->len; i++) {
        const co_policy *p = set->items[i];
        if (!applies(p, req, req->ns)) {
            continue;
        }
        merge_str(&d, &d.defaults.requeue_interval, &owners[0], p->d_requeue, p, "requeueInterval");
        merge_str(&d, &d.defaults.retry_interval, &owners[1], p->d_retry, p, "retryInterval");
        merge_str(&d, &d.defaults.timeout, &owners[2], p->d_timeout, p, "timeout");
        merge_str(&d, &d.defaults.reapply_interval, &owners[3], p->d_reapply, p, "reapplyInterval");
        merge_str(&d, &d.defaults.service_account_name, &owners[4], p->d_sa, p,
                  "serviceAccountName");
        merge_str(&d, &enums[0], &owners[5], co_adoption_policy_name(p->d_adoption), p,
                  "adoptionPolicy");
        merge_str(&d, &enums[1], &owners[6], co_update_policy_name(p->d_update), p, "updatePolicy");
        merge_str(&d, &enums[2], &owners[7], co_delete_policy_name(p->d_delete), p, "deletePolicy");
        merge_str(&d, &enums[3], &owners[8], co_missing_namespaces_policy_name(p->d_missing), p,
                  "missingNamespacesPolicy");
        merge_str(&d, &enums[4], &owners[9], opt_bool_name(p->d_enabled), p, "enabled");
        merge_str(&d, &enums[5], &owners[10], opt_bool_name(p->d_managed), p, "managed");
        merge_str(&d, &d.defaults.grace_period, &owners[11], p->d_grace, p, "gracePeriod");
        merge_str(&d, &enums[6], &owners[12], co_suspend_mode_name(p->d_suspend), p, "suspendMode");
    }
    d.defaults.adoption_policy = co_adoption_policy_parse(enums[0]);
    d.defaults.update_policy = co_update_policy_parse(enums[1]);
    d.defaults.delete_policy = co_delete_policy_parse(enums[2]);
    d.defaults.missing_namespaces_policy = co_missing_namespaces_policy_parse(enums[3]);
    d.defaults.enabled = opt_bool_parse(enums[4]);
    d.defaults.managed = opt_bool_parse(enums[5]);
    d.defaults.suspend_mode = co_suspend_mode_parse(enums[6]);
    *out = d;
    return 0;
}

void co_policy_defaults_dispose(co_policy_defaults *d)
{
    if (!d) {
        return;
    }
    for (size_t i = 0; i < d->nwarnings; i++) {
        free(d->warnings[i]);
    }
    free(d->warnings);
    d->warnings = NULL;
    d->nwarnings = 0;
}

/* ---------------------------------------------------------------------------------------------
 * The CRD
 * ------------------------------------------------------------------------------------------- */

static json_object *policy_crd(void)
{
    json_object *crd = json_object_new_object();
    json_object_object_add(crd, "apiVersion", json_object_new_string("apiextensions.k8s.io/v1"));
    json_object_object_add(crd, "kind", json_object_new_string("CustomResourceDefinition"));
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "name", json_object_new_string(CO_POLICY_CRD_NAME));
    json_object_object_add(crd, "metadata", meta);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "group", json_object_new_string(CO_COMPONENT_GROUP));
    json_object *names = json_object_new_object();
    json_object_object_add(names, "kind", json_object_new_string(CO_POLICY_KIND));
    json_object_object_add(names, "listKind", json_object_new_string("ComponentPolicyList"));
    json_object_object_add(names, "plural", json_object_new_string("componentpolicies"));
    json_object *shorts = json_object_new_array();
    json_object_array_add(shorts, json_object_new_string("comppol"));
    json_object_object_add(names, "shortNames", shorts);
    json_object_object_add(names, "singular", json_object_new_string("componentpolicy"));
    json_object_object_add(spec, "names", names);
    json_object_object_add(spec, "scope", json_object_new_string("Cluster"));
    json_object *versions = json_object_new_array();
    json_object *v = json_object_new_object();
    json_object *cols = json_object_new_array();
    json_object *age = json_object_new_object();
    json_object_object_add(age, "description",
                           json_object_new_string("Time since the policy was created"));
    json_object_object_add(age, "jsonPath", json_object_new_string(".metadata.creationTimestamp"));
    json_object_object_add(age, "name", json_object_new_string("Age"));
    json_object_object_add(age, "type", json_object_new_string("date"));
    const char *const counts[][3] = {
        {"Deny", ".status.violations.deny", "Components a Deny rule rejects (last audit)"},
        {"Warn", ".status.violations.warn", "Components a Warn rule warns about (last audit)"},
    };
    for (size_t i = 0; i < CO_ARRAY_SIZE(counts); i++) {
        json_object *col = json_object_new_object();
        json_object_object_add(col, "description", json_object_new_string(counts[i][2]));
        json_object_object_add(col, "jsonPath", json_object_new_string(counts[i][1]));
        json_object_object_add(col, "name", json_object_new_string(counts[i][0]));
        json_object_object_add(col, "type", json_object_new_string("integer"));
        json_object_array_add(cols, col);
    }
    json_object_array_add(cols, age);
    json_object_object_add(v, "additionalPrinterColumns", cols);
    json_object_object_add(v, "name", json_object_new_string("v1alpha1"));
    json_object *schema = json_object_new_object();
    json_object_object_add(schema, "openAPIV3Schema", co_schema__openapi(&policy_root));
    json_object_object_add(v, "schema", schema);
    json_object_object_add(v, "served", json_object_new_boolean(1));
    json_object_object_add(v, "storage", json_object_new_boolean(1));
    json_object *sub = json_object_new_object();
    json_object_object_add(sub, "status", json_object_new_object());
    json_object_object_add(v, "subresources", sub);
    json_object_array_add(versions, v);
    json_object_object_add(spec, "versions", versions);
    json_object_object_add(crd, "spec", spec);
    return crd;
}

int co_policy_crd(struct json_object **out)
{
    *out = policy_crd();
    return 0;
}

int co_policy_crd_yaml(co_buf *out)
{
    json_object *crd = policy_crd();
    int rc = co_schema__yaml(out, crd);
    json_object_put(crd);
    return rc;
}
