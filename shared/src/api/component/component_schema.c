/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Component schema: one static tree for v1alpha1 with a description on every field, the
 * table of fields v1beta1 regroups, the v1beta1 tree derived from both at first use, and the
 * CustomResourceDefinition built from them. Validation, parsing and crds/ all read these, so a
 * field cannot exist in one and not in the others.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/caps.h"
#include "co/util/common.h"
#include "co/util/error.h"
#include "component_int.h"

#define FIELDS(...) ((const co_schema[]){__VA_ARGS__, {NULL}})
#define NAMES(...)  ((const char *const[]){__VA_ARGS__, NULL})
#define ITEMS(...)  (&(const co_schema){__VA_ARGS__})

#define STR(n, d)                                                                                  \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_STRING, .description = (d)                                  \
    }
#define STR_REQ(n, d)                                                                              \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_STRING, .flags = CO_SCHEMA_REQUIRED, .description = (d),    \
        .min_length = 1                                                                            \
    }
#define STR_NONEMPTY(n, d)                                                                         \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_STRING, .description = (d), .min_length = 1                 \
    }
#define DUR(n, d)                                                                                  \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_STRING, .flags = CO_SCHEMA_DURATION, .description = (d)     \
    }
#define TIME(n, d)                                                                                 \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_STRING, .flags = CO_SCHEMA_DATE_TIME, .description = (d)    \
    }
#define BOOL(n, d)                                                                                 \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_BOOLEAN, .description = (d)                                 \
    }
#define INT64(n, d)                                                                                \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_INTEGER, .flags = CO_SCHEMA_INT64, .description = (d)       \
    }

/* ---------------------------------------------------------------------------------------------
 * Shared pieces
 * ------------------------------------------------------------------------------------------- */

static const co_schema secret_name_fields[] = {
    STR_REQ("name", "Name of the Secret, in the Component's namespace."),
    {NULL},
};

#define FLUX_REF(n, what)                                                                          \
    {                                                                                              \
        .name = (n), .type = CO_SCHEMA_OBJECT,                                                     \
        .description = "A Flux " what " (source.toolkit.fluxcd.io/v1) whose artifact holds the "   \
                       "manifests.",                                                               \
        .fields = FIELDS(STR("namespace", "Namespace of the " what "; defaults to the "            \
                                          "Component's namespace."),                               \
                         STR_REQ("name", "Name of the " what "."))                                 \
    }

static const co_schema source_ref_fields[] = {
    FLUX_REF("fluxGitRepository", "GitRepository"),
    FLUX_REF("fluxOciRepository", "OCIRepository"),
    FLUX_REF("fluxBucket", "Bucket"),
    FLUX_REF("fluxHelmChart", "HelmChart"),
    {.name = "httpRepository",
     .type = CO_SCHEMA_OBJECT,
     .description = "A plain HTTP(S) endpoint serving a .tar.gz archive of the manifests.",
     .fields = FIELDS(
         STR_REQ("url",
                 "URL of the archive (http or https, without credentials). HEAD requests read the "
                 "digest and revision headers; redirects are followed until a response carries "
                 "the digest header."),
         STR_NONEMPTY("digestHeader",
                      "Response header whose value identifies the content of the "
                      "archive. Default ETag."),
         STR_NONEMPTY("revisionHeader",
                      "Response header whose value is shown as the revision. "
                      "Defaults to the digest header."))},
    {.name = "git",
     .type = CO_SCHEMA_OBJECT,
     .description = "A git repository that the controller fetches itself, so that no Flux "
                    "installation is needed.",
     .fields = FIELDS(
         STR_REQ("url",
                 "Repository URL: https, http or ssh, or the scp-like form "
                 "user@host:path."),
         {.name = "ref",
          .type = CO_SCHEMA_OBJECT,
          .flags = CO_SCHEMA_REQUIRED,
          .description = "What to check out; exactly one of the fields must be set.",
          .one_of = NAMES("branch", "tag", "semver", "commit"),
          .fields =
              FIELDS(STR_NONEMPTY("branch", "The latest commit of this branch."),
                     STR_NONEMPTY("tag", "This tag."),
                     STR_NONEMPTY("semver",
                                  "The highest tag that is a semantic version satisfying this "
                                  "constraint, for example >=1.2.0 <2.0.0."),
                     STR_NONEMPTY("commit", "This commit, as a full hexadecimal id."))},
         {.name = "secretRef",
          .type = CO_SCHEMA_OBJECT,
          .description = "Secret with the credentials for the repository: username and password "
                         "for http(s), identity and known_hosts for ssh.",
          .fields = secret_name_fields},
         DUR("interval",
             "How often the repository is checked for new commits, as a Go duration. "
             "Defaults to the requeue interval."))},
    {.name = "blueprint",
     .type = CO_SCHEMA_OBJECT,
     .description = "A Blueprint (core.cs.sap.com/v1alpha1) whose files are the manifests; "
                    "each content is snapshotted as an immutable BlueprintVersion.",
     .fields = FIELDS(STR("namespace",
                          "Namespace of the Blueprint; defaults to the "
                          "Component's namespace."),
                      STR_REQ("name", "Name of the Blueprint."))},
    {NULL},
};

static const co_schema secret_key_fields[] = {
    STR_REQ("name", "Name of the Secret, in the Component's namespace."),
    STR_NONEMPTY("key", "Key in the Secret."),
    {NULL},
};

/* ---------------------------------------------------------------------------------------------
 * v1alpha1 spec
 * ------------------------------------------------------------------------------------------- */

static const co_schema spec_fields[] = {
    STR("namespace",
        "Namespace the dependent objects are deployed to; namespaced objects without "
        "a namespace are placed there. Defaults to the Component's namespace."),
    STR("name",
        "Name of the deployment as seen by the generators (for example the Helm release "
        "name). Defaults to the Component's name."),
    {.name = "kubeConfig",
     .type = CO_SCHEMA_OBJECT,
     .description = "Deploy into another cluster with the kubeconfig stored in a Secret. "
                    "A service account to impersonate applies there too.",
     .fields = FIELDS({.name = "secretRef",
                       .type = CO_SCHEMA_OBJECT,
                       .flags = CO_SCHEMA_REQUIRED,
                       .description = "The Secret holding the kubeconfig. Without key, the keys "
                                      "value, value.yaml and value.yml are tried in this order.",
                       .fields = secret_key_fields})},
    STR("serviceAccountName",
        "Service account in the Component's namespace that the controller "
        "impersonates when deploying (also in a kubeConfig target cluster)."),
    BOOL("suspend",
         "Suspend reconciliation; the Component stays Pending with reason Suspended. "
         "Deletion is not suspended."),
    DUR("requeueInterval",
        "How often a Ready Component is reconciled again, as a Go duration "
        "such as 10m or 1h30m. Default 10m."),
    DUR("retryInterval",
        "Delay before trying again after a retriable error, as a Go duration. "
        "Defaults to the requeue interval."),
    DUR("timeout",
        "How long the dependent objects may take to become ready before the state "
        "turns to Error, as a Go duration. Defaults to the requeue interval."),
    DUR("reapplyInterval",
        "Dependent objects are applied again after this Go duration even when "
        "nothing changed, which corrects drift. Default 60m."),
    {.name = "adoptionPolicy",
     .type = CO_SCHEMA_STRING,
     .description = "What to do with an existing object that this Component does not own yet. "
                    "Never fails, IfUnowned adopts it unless another owner is recorded (default), "
                    "Always adopts it.",
     .enums = NAMES("Never", "IfUnowned", "Always")},
    {.name = "updatePolicy",
     .type = CO_SCHEMA_STRING,
     .description = "How dependent objects are updated. Recreate deletes and creates them, "
                    "Replace uses PUT, SsaMerge uses server-side apply, SsaOverride uses "
                    "server-side apply and takes over fields set with kubectl (default).",
     .enums = NAMES("Recreate", "Replace", "SsaMerge", "SsaOverride")},
    {.name = "deletePolicy",
     .type = CO_SCHEMA_STRING,
     .description = "What happens to the dependent objects when the Component is deleted. Delete "
                    "removes them (default), Orphan leaves them in place.",
     .enums = NAMES("Delete", "Orphan")},
    {.name = "missingNamespacesPolicy",
     .type = CO_SCHEMA_STRING,
     .description = "Whether namespaces needed by dependent objects are created when they do "
                    "not exist. Create (default) or DoNotCreate.",
     .enums = NAMES("DoNotCreate", "Create")},
    {.name = "additionalManagedTypes",
     .type = CO_SCHEMA_ARRAY,
     .description = "Further types whose instances are treated like instances of CRDs in the "
                    "manifests: applied last, deleted first, and foreign instances block the "
                    "deletion of the Component.",
     .max_items = CO_MAX_SPEC_LIST_ITEMS,
     .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "An API type; both fields accept * for any.",
                    .fields = FIELDS({.name = "group",
                                      .type = CO_SCHEMA_STRING,
                                      .flags = CO_SCHEMA_REQUIRED,
                                      .description = "API group (empty for the core group); * "
                                                     "matches any group and *.example.com every "
                                                     "group ending in .example.com."},
                                     STR_REQ("kind", "Kind; * matches any kind.")))},
    {.name = "sourceRef",
     .type = CO_SCHEMA_OBJECT,
     .flags = CO_SCHEMA_REQUIRED,
     .description = "Where the manifests come from; exactly one of the fields must be set.",
     .one_of = NAMES("fluxGitRepository",
                     "fluxOciRepository",
                     "fluxBucket",
                     "fluxHelmChart",
                     "httpRepository",
                     "git",
                     "blueprint"),
     .fields = source_ref_fields},
    STR("digest",
        "Pin the source: the Component stays Pending until the source offers an "
        "artifact with this digest."),
    STR("revision",
        "Pin the source: the Component stays Pending until the source offers an "
        "artifact with this revision."),
    BOOL("sticky",
         "While a change is rolled out (until Ready or timeout), keep the artifact it "
         "started with and ignore newer ones."),
    STR("path",
        "Directory inside the artifact holding the kustomization or Helm chart; "
        "relative and without '..'. Default: the root of the artifact."),
    {.name = "values",
     .type = CO_SCHEMA_ANY_OBJECT,
     .description = "Parameters for the templates (Helm .Values, kustomize template data), "
                    "deep-merged over the values from valuesFrom."},
    {.name = "valuesFrom",
     .type = CO_SCHEMA_ARRAY,
     .description = "Secrets holding further values as YAML or JSON maps, deep-merged in order "
                    "before values.",
     .max_items = CO_MAX_SPEC_LIST_ITEMS,
     .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "A key of a Secret. Without key, the keys values, values.yaml "
                                   "and values.yml are tried in this order.",
                    .fields = secret_key_fields)},
    {.name = "decryption",
     .type = CO_SCHEMA_OBJECT,
     .description = "Decrypt SOPS-encrypted files of the source before they are used.",
     .fields = FIELDS(STR("provider",
                          "Decryption provider; sops is the only one and the "
                          "default."),
                      {.name = "secretRef",
                       .type = CO_SCHEMA_OBJECT,
                       .flags = CO_SCHEMA_REQUIRED,
                       .description = "Secret with the private keys: *.agekey entries for age, "
                                      "*.asc entries for PGP.",
                       .fields = secret_name_fields})},
    {.name = "postBuild",
     .type = CO_SCHEMA_OBJECT,
     .description = "Steps applied to the rendered objects: variable substitution first, then "
                    "kustomize patches and image overrides.",
     .fields = FIELDS(
         {.name = "substitute",
          .type = CO_SCHEMA_STRING_MAP,
          .description = "Variables replacing ${NAME} references in the rendered objects; they "
                         "take precedence over substituteFrom.",
          .max_items = CO_MAX_SPEC_LIST_ITEMS},
         {.name = "substituteFrom",
          .type = CO_SCHEMA_ARRAY,
          .description = "Secrets whose keys are substitution variables; later Secrets take "
                         "precedence.",
          .max_items = CO_MAX_SPEC_LIST_ITEMS,
          .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                         .description = "A Secret.",
                         .fields = secret_name_fields)},
         {.name = "patches",
          .type = CO_SCHEMA_ARRAY,
          .description = "Kustomize patches (strategic merge or JSON 6902) applied to the "
                         "rendered objects.",
          .max_items = CO_MAX_SPEC_LIST_ITEMS,
          .items =
              ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "A patch and the objects it applies to.",
                    .fields = FIELDS(
                        STR_REQ("patch", "The patch, as YAML or JSON text."),
                        {.name = "target",
                         .type = CO_SCHEMA_OBJECT,
                         .flags = CO_SCHEMA_REQUIRED,
                         .description =
                             "Selects the objects to patch; every field that is set must "
                             "match.",
                         .fields = FIELDS(STR("group", "API group."),
                                          STR("version", "API version."),
                                          STR("kind", "Kind."),
                                          STR("name", "Name, as a regular expression."),
                                          STR("namespace", "Namespace, as a regular expression."),
                                          STR("labelSelector",
                                              "Label selector, for example app=web,tier!=cache."),
                                          STR("annotationSelector",
                                              "Annotation selector, in the syntax of label "
                                              "selectors."))}))},
         {.name = "images",
          .type = CO_SCHEMA_ARRAY,
          .description = "Image overrides, as in the images field of a kustomization.",
          .max_items = CO_MAX_SPEC_LIST_ITEMS,
          .items =
              ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "An image override.",
                    .fields = FIELDS(STR_REQ("name", "Image name to match, without tag or digest."),
                                     STR("newName", "Replacement image name."),
                                     STR("newTag", "Replacement tag."),
                                     STR("digest",
                                         "Replacement digest such as sha256:<hex>; takes "
                                         "precedence over newTag.")))})},
    {.name = "dependencies",
     .type = CO_SCHEMA_ARRAY,
     .description = "Components that must be Ready before this one is applied, and that are "
                    "only deleted after this one is gone. Cycles are rejected.",
     .max_items = CO_MAX_SPEC_LIST_ITEMS,
     .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "Another Component.",
                    .fields = FIELDS(STR("namespace",
                                         "Namespace of that Component; defaults to "
                                         "this Component's namespace."),
                                     STR_REQ("name", "Name of that Component.")))},
    BOOL("enabled",
         "Whether the component is installed. false deletes every dependent object (delete "
         "policies and waves honoured) and keeps the Component, Ready with reason Disabled; "
         "true again reinstalls. Default true."),
    BOOL("managed",
         "Whether the controller manages the dependent objects. false releases them: they stay "
         "as they are, without this Component's owner marks, the inventory is cleared and the "
         "state is Unmanaged; deleting an unmanaged Component deletes nothing else. Default "
         "true."),
    DUR("gracePeriod",
        "Once Ready, how long dependents may be unready before the Component reports Degraded "
        "(state Warning) or Down (state Error), as a Go duration. Unset: at once, as before."),
    {.name = "suspendMode",
     .type = CO_SCHEMA_STRING,
     .description = "What suspend does. Pause stops reconciling (default); ScaleDown also scales "
                    "Deployments and StatefulSets to 0 replicas and suspends CronJobs, restoring "
                    "them on resume.",
     .enums = NAMES("Pause", "ScaleDown")},
    {.name = "prerequisites",
     .type = CO_SCHEMA_ARRAY,
     .description = "Conditions of other objects that must hold before the first install; "
                    "checked in order until the Component first proceeds, never again.",
     .max_items = CO_MAX_SPEC_LIST_ITEMS,
     .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "A condition of an object.",
                    .fields = FIELDS(STR_REQ("apiVersion",
                                             "API version of the object, for "
                                             "example apps/v1."),
                                     STR_REQ("kind", "Kind of the object."),
                                     STR("namespace",
                                         "Namespace of the object; defaults to the Component's "
                                         "namespace (ignored for cluster-scoped kinds)."),
                                     STR_REQ("name", "Name of the object."),
                                     STR_NONEMPTY("conditionType",
                                                  "Condition that must be True. Default "
                                                  "Ready.")))},
    {NULL},
};

/* ---------------------------------------------------------------------------------------------
 * status (identical in both versions)
 * ------------------------------------------------------------------------------------------- */

static const co_schema status_fields[] = {

    {.name = "observedGeneration",
     .type = CO_SCHEMA_INTEGER,
     .flags = CO_SCHEMA_INT64 | CO_SCHEMA_REQUIRED,
     .description = "Generation seen by the last reconcile; -1 until the first one."},
    INT64("appliedGeneration", "Generation of the last transition to Ready."),
    TIME("lastObservedAt", "Time of the last status update."),
    TIME("lastAppliedAt", "Time of the last transition to Ready."),
    STR("processingDigest",
        "Digest of the Component (spec, annotations, referenced Secrets "
        "and source) currently being worked on."),
    TIME("processingSince",
         "Start of the current processing cycle; the timeout counts from "
         "here."),
    STR("lastProcessingDigest", "Digest for which revision was last incremented."),
    INT64("revision",
          "Incremented for every new digest of the Component (Helm "
          ".Release.Revision)."),
    {.name = "conditions",
     .type = CO_SCHEMA_ARRAY,
     .description = "Conditions; only Ready is used.",
     .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                    .description = "A condition.",
                    .fields = FIELDS(
                        {.name = "type",
                         .type = CO_SCHEMA_STRING,
                         .flags = CO_SCHEMA_REQUIRED,
                         .description = "Condition type (Ready)."},
                        {.name = "status",
                         .type = CO_SCHEMA_STRING,
                         .flags = CO_SCHEMA_REQUIRED,
                         .description = "Condition status.",
                         .enums = NAMES("True", "False", "Unknown")},
                        TIME("lastTransitionTime", "When the status last changed."),
                        STR("reason", "Reason in one word, for example Processing or Timeout."),
                        STR("message", "Human-readable detail.")))},
    {.name = "state",
     .type = CO_SCHEMA_STRING,
     .description = "State of the Component.",
     .enums = NAMES("Ready",
                    "Pending",
                    "Processing",
                    "DeletionPending",
                    "Deleting",
                    "Error",
                    "Warning",
                    "Unmanaged")},
    {.name = "inventory",
     .type = CO_SCHEMA_ARRAY,
     .description = "The dependent objects managed by this Component.",
     .items =
         ITEMS(.type = CO_SCHEMA_OBJECT,
               .description = "A dependent object.",
               .fields = FIELDS(
                   {.name = "group",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "API group."},
                   {.name = "version",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "API version."},
                   {.name = "kind",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Kind."},
                   STR("namespace", "Namespace; empty for cluster-scoped objects."),
                   {.name = "name",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Name."},
                   {.name = "adoptionPolicy",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Effective adoption policy."},
                   {.name = "reconcilePolicy",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Effective reconcile policy."},
                   {.name = "updatePolicy",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Effective update policy."},
                   {.name = "deletePolicy",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Effective delete policy."},
                   {.name = "applyOrder",
                    .type = CO_SCHEMA_INTEGER,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Apply wave."},
                   {.name = "deleteOrder",
                    .type = CO_SCHEMA_INTEGER,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Delete wave."},
                   {.name = "managedTypes",
                    .type = CO_SCHEMA_ARRAY,
                    .description = "Types this object defines (for a CRD or an APIService).",
                    .items = ITEMS(.type = CO_SCHEMA_OBJECT,
                                   .description = "A type.",
                                   .fields = FIELDS({.name = "group",
                                                     .type = CO_SCHEMA_STRING,
                                                     .flags = CO_SCHEMA_REQUIRED,
                                                     .description = "API group."},
                                                    {.name = "version",
                                                     .type = CO_SCHEMA_STRING,
                                                     .flags = CO_SCHEMA_REQUIRED,
                                                     .description = "API version or *."},
                                                    {.name = "kind",
                                                     .type = CO_SCHEMA_STRING,
                                                     .flags = CO_SCHEMA_REQUIRED,
                                                     .description = "Kind or *."}))},
                   {.name = "digest",
                    .type = CO_SCHEMA_STRING,
                    .flags = CO_SCHEMA_REQUIRED,
                    .description = "Digest of the last applied manifest; empty once obsolete."},
                   STR("phase", "Lifecycle phase, for example Ready or Deleting."),
                   STR("status", "Last observed readiness (kstatus), for example Current."),
                   TIME("lastAppliedAt", "When the object was last created or updated."),
                   STR("mode",
                       "read-only or delete-only when the object's mode annotation says so; "
                       "unset for managed objects."),
                   STR("drift",
                       "The fields found drifted from the manifest and kept so (drift policy "
                       "Warn), as JSON pointers; unset when none.")))},
    {.name = "packedInventory",
     .type = CO_SCHEMA_OBJECT,
     .description = "The inventory of a Component whose list would be too large to store as it "
                    "is (status.inventory is then unset): the list as compact JSON, "
                    "gzip-compressed and base64-encoded.",
     .fields = FIELDS({.name = "encoding",
                       .type = CO_SCHEMA_STRING,
                       .flags = CO_SCHEMA_REQUIRED,
                       .description = "Encoding of data.",
                       .enums = NAMES("gzip")},
                      {.name = "items",
                       .type = CO_SCHEMA_INTEGER,
                       .flags = CO_SCHEMA_REQUIRED,
                       .description = "Number of items in the list."},
                      {.name = "data",
                       .type = CO_SCHEMA_STRING,
                       .flags = CO_SCHEMA_REQUIRED,
                       .description = "The list: base64 of its gzip-compressed JSON."})},
    {.name = "sourceRef",
     .type = CO_SCHEMA_OBJECT,
     .description = "The source artifact resolved by the last reconcile.",
     .fields =
         FIELDS({.name = "artifact",
                 .type = CO_SCHEMA_OBJECT,
                 .description = "The artifact.",
                 .fields = FIELDS({.name = "url",
                                   .type = CO_SCHEMA_STRING,
                                   .flags = CO_SCHEMA_REQUIRED,
                                   .description = "Where the artifact was downloaded from."},
                                  {.name = "digest",
                                   .type = CO_SCHEMA_STRING,
                                   .flags = CO_SCHEMA_REQUIRED,
                                   .description = "Digest of the artifact."},
                                  {.name = "revision",
                                   .type = CO_SCHEMA_STRING,
                                   .flags = CO_SCHEMA_REQUIRED,
                                   .description = "Revision of the artifact."})},
                STR("digest", "Digest over the identity of the source object and its artifact."))},
    STR("lastAttemptedDigest", "Artifact digest of the last apply attempt."),
    STR("lastAttemptedRevision", "Artifact revision of the last apply attempt."),
    STR("lastAppliedDigest", "Artifact digest of the last successful apply."),
    STR("lastAppliedRevision", "Artifact revision of the last successful apply."),
    TIME("unreadySince",
         "Since when gating dependents of a Ready Component have been unready (the grace "
         "period counts from here)."),
    {.name = "lastOperation",
     .type = CO_SCHEMA_OBJECT,
     .description = "The last thing the controller did, and when.",
     .fields =
         FIELDS(STR("operation", "What was done or is awaited."), TIME("lastUpdateTime", "When."))},
    {NULL},
};

static const co_schema root_fields_v1alpha1[] = {
    STR("apiVersion", "Version of the schema the object is written in."),
    STR("kind", "Kind of the object: Component."),
    {.name = "metadata", .type = CO_SCHEMA_METADATA},
    {.name = "spec",
     .type = CO_SCHEMA_OBJECT,
     .flags = CO_SCHEMA_REQUIRED,
     .description = "Desired state: where the manifests come from, how they are parameterised "
                    "and how the dependent objects are deployed.",
     .fields = spec_fields},
    {.name = "status",
     .type = CO_SCHEMA_OBJECT,
     .description = "Observed state, written by the controller.",
     .default_json = "{\"observedGeneration\":-1}",
     .fields = status_fields},
    {NULL},
};

static const co_schema root_v1alpha1 = {
    .name = "",
    .type = CO_SCHEMA_OBJECT,
    .description = "A Component deploys and lifecycles a set of Kubernetes objects rendered from "
                   "a source (a Flux source, an HTTP archive or a git repository).",
    .fields = root_fields_v1alpha1,
};

/* ---------------------------------------------------------------------------------------------
 * v1beta1: the same fields, regrouped
 * ------------------------------------------------------------------------------------------- */

const co_component_move co_component__moves[] = {
    {"path", "source", "path"},
    {"revision", "source", "revision"},
    {"digest", "source", "digest"},
    {"sticky", "source", "sticky"},
    {"namespace", "target", "namespace"},
    {"name", "target", "name"},
    {"kubeConfig", "target", "kubeConfig"},
    {"serviceAccountName", "target", "serviceAccountName"},
    {"adoptionPolicy", "policies", "adoption"},
    {"updatePolicy", "policies", "update"},
    {"deletePolicy", "policies", "delete"},
    {"missingNamespacesPolicy", "policies", "missingNamespaces"},
    {"requeueInterval", "intervals", "requeue"},
    {"retryInterval", "intervals", "retry"},
    {"timeout", "intervals", "timeout"},
    {"reapplyInterval", "intervals", "reapply"},
    {"gracePeriod", "intervals", "grace"},
};
const size_t co_component__nmoves = CO_ARRAY_SIZE(co_component__moves);

const char *const co_component__groups[] = {"source", "target", "policies", "intervals", NULL};

static const char *const group_descriptions[] = {
    "Where the manifests come from (exactly one of the source fields must be set) and which "
    "artifact and directory are used.",
    "Where and as whom the dependent objects are deployed.",
    "How dependent objects are adopted, updated and deleted, and whether missing namespaces are "
    "created.",
    "Timing of reconciliation, retries, the processing timeout and forced re-applies.",
};

static co_schema root_v1beta1;
static pthread_once_t v1beta1_once = PTHREAD_ONCE_INIT;

static const char *beta_source_name(const char *alpha)
{
    return strcmp(alpha, "httpRepository") == 0 ? "http" : alpha;
}

/* Builds the v1beta1 tree from the v1alpha1 one and the move table. The nodes are allocated
 * once and live as long as the process; leaf nodes are shared with v1alpha1. */
static void build_v1beta1(void)
{
    const co_schema *spec = co_schema__field(&root_v1alpha1, "spec");
    const co_schema *source_ref = co_schema__field(spec, "sourceRef");
    size_t nspec = 0;
    while (spec->fields[nspec].name) {
        nspec++;
    }
    size_t ngroups = CO_ARRAY_SIZE(group_descriptions);
    co_schema *fields = co_xcalloc(nspec + ngroups + 1, sizeof(*fields));
    size_t n = 0;
    for (size_t i = 0; i < nspec; i++) {
        const co_schema *f = &spec->fields[i];
        int moved = strcmp(f->name, "sourceRef") == 0;
        for (size_t m = 0; !moved && m < co_component__nmoves; m++) {
            moved = strcmp(co_component__moves[m].alpha, f->name) == 0;
        }
        if (!moved) {
            fields[n++] = *f;
        }
    }
    for (size_t g = 0; g < ngroups; g++) {
        const char *group = co_component__groups[g];
        size_t cap = co_component__nmoves + 8;
        co_schema *members = co_xcalloc(cap + 1, sizeof(*members));
        size_t k = 0;
        co_schema *node = &fields[n++];
        node->name = group;
        node->type = CO_SCHEMA_OBJECT;
        node->description = group_descriptions[g];
        if (strcmp(group, "source") == 0) {
            const char **one_of = co_xcalloc(CO_SOURCE_KIND_COUNT, sizeof(*one_of));
            for (size_t s = 0; source_ref->fields[s].name; s++) {
                members[k] = source_ref->fields[s];
                members[k].name = beta_source_name(source_ref->fields[s].name);
                one_of[s] = members[k].name;
                k++;
            }
            node->flags = CO_SCHEMA_REQUIRED;
            node->one_of = one_of;
        } else {
            node->min_properties = 1;
        }
        for (size_t m = 0; m < co_component__nmoves; m++) {
            if (strcmp(co_component__moves[m].group, group) == 0) {
                CO_ASSERT(k < cap);
                members[k] = *co_schema__field(spec, co_component__moves[m].alpha);
                members[k].name = co_component__moves[m].beta;
                k++;
            }
        }
        node->fields = members;
    }
    co_schema *spec_beta = co_xcalloc(1, sizeof(*spec_beta));
    *spec_beta = *spec;
    spec_beta->fields = fields;

    size_t nroot = 0;
    while (root_v1alpha1.fields[nroot].name) {
        nroot++;
    }
    co_schema *root_fields = co_xcalloc(nroot + 1, sizeof(*root_fields));
    for (size_t i = 0; i < nroot; i++) {
        root_fields[i] = root_v1alpha1.fields[i];
        if (strcmp(root_fields[i].name, "spec") == 0) {
            root_fields[i] = *spec_beta;
        }
    }
    free(spec_beta);
    root_v1beta1 = root_v1alpha1;
    root_v1beta1.fields = root_fields;
}

const co_schema *co_component__schema(co_api_version v)
{
    if (v == CO_API_V1BETA1) {
        CO_ASSERT(pthread_once(&v1beta1_once, build_v1beta1) == 0);
        return &root_v1beta1;
    }
    return &root_v1alpha1;
}

/* ---------------------------------------------------------------------------------------------
 * The CRD
 * ------------------------------------------------------------------------------------------- */

/* The conversion webhook is the component-webhook Service in the operator's namespace. The
 * caBundle is injected by the webhook's certificate manager at run time. */
#define WEBHOOK_NAMESPACE "component-operator"
#define WEBHOOK_SERVICE   "component-webhook"

/* The chart's template takes the conversion webhook's namespace from the release. */
#define CHART_NAMESPACE "{{ .Release.Namespace }}"

static json_object *jstr(const char *s)
{
    return json_object_new_string(s);
}

static json_object *
printer_column(const char *name, const char *type, const char *path, const char *description)
{
    json_object *c = json_object_new_object();
    json_object_object_add(c, "description", jstr(description));
    json_object_object_add(c, "jsonPath", jstr(path));
    json_object_object_add(c, "name", jstr(name));
    json_object_object_add(c, "type", jstr(type));
    return c;
}

static json_object *crd_version(const char *name, int storage, const co_schema *root)
{
    json_object *v = json_object_new_object();
    json_object *cols = json_object_new_array();
    json_object_array_add(
        cols, printer_column("State", "string", ".status.state", "State of the Component"));
    json_object_array_add(cols, printer_column("Reason", "string",
                                               ".status.conditions[?(@.type=='Ready')].reason",
                                               "Reason of the Ready condition"));
    json_object_array_add(cols, printer_column("Age", "date", ".metadata.creationTimestamp",
                                               "Time since the Component was created"));
    json_object_object_add(v, "additionalPrinterColumns", cols);
    json_object_object_add(v, "name", jstr(name));
    json_object *schema = json_object_new_object();
    json_object_object_add(schema, "openAPIV3Schema", co_schema__openapi(root));
    json_object_object_add(v, "schema", schema);
    json_object_object_add(v, "served", json_object_new_boolean(1));
    json_object_object_add(v, "storage", json_object_new_boolean(storage));
    json_object *sub = json_object_new_object();
    json_object_object_add(sub, "status", json_object_new_object());
    json_object_object_add(v, "subresources", sub);
    return v;
}

/*
 * spec.conversion: strategy None (v1alpha1 alone needs no conversion), or the webhook in @p ns.
 * None names the webhook explicitly as null: over a CRD that served v1beta1 (the opt-in, or an
 * earlier version of this operator), the merge patches of Helm (also with --take-ownership,
 * where no earlier manifest says the stanza was the chart's) and of client-side kubectl apply
 * then remove the whole stanza, with the CA bundle component-webhook injected, which the API
 * server refuses to keep next to strategy None. A server-side apply keeps the fields of other
 * managers whatever it says, hence README.md's patch to None first.
 */
static json_object *conversion(int webhook, const char *ns)
{
    json_object *conv = json_object_new_object();
    if (!webhook) {
        json_object_object_add(conv, "strategy", jstr("None"));
        json_object_object_add(conv, "webhook", NULL);
        return conv;
    }
    json_object_object_add(conv, "strategy", jstr("Webhook"));
    json_object *wh = json_object_new_object();
    json_object *cc = json_object_new_object();
    json_object *svc = json_object_new_object();
    json_object_object_add(svc, "name", jstr(WEBHOOK_SERVICE));
    json_object_object_add(svc, "namespace", jstr(ns));
    json_object_object_add(svc, "path", jstr("/convert"));
    json_object_object_add(svc, "port", json_object_new_int(443));
    json_object_object_add(cc, "service", svc);
    json_object_object_add(wh, "clientConfig", cc);
    json_object *crv = json_object_new_array();
    json_object_array_add(crv, jstr("v1"));
    json_object_object_add(wh, "conversionReviewVersions", crv);
    json_object_object_add(conv, "webhook", wh);
    return conv;
}

/* spec.group, names and scope. */
static void add_names(json_object *spec)
{
    json_object_object_add(spec, "group", jstr(CO_COMPONENT_GROUP));
    json_object *names = json_object_new_object();
    json_object_object_add(names, "kind", jstr(CO_COMPONENT_KIND));
    json_object_object_add(names, "listKind", jstr("ComponentList"));
    json_object_object_add(names, "plural", jstr("components"));
    json_object *shorts = json_object_new_array();
    json_object_array_add(shorts, jstr("comp"));
    json_object_object_add(names, "shortNames", shorts);
    json_object_object_add(names, "singular", jstr("component"));
    json_object_object_add(spec, "names", names);
    json_object_object_add(spec, "scope", jstr("Namespaced"));
}

static json_object *crd_head(int helm_keep)
{
    json_object *crd = json_object_new_object();
    json_object_object_add(crd, "apiVersion", jstr("apiextensions.k8s.io/v1"));
    json_object_object_add(crd, "kind", jstr("CustomResourceDefinition"));
    json_object *meta = json_object_new_object();
    if (helm_keep) {
        json_object *ann = json_object_new_object();
        json_object_object_add(ann, "helm.sh/resource-policy", jstr("keep"));
        json_object_object_add(meta, "annotations", ann);
    }
    json_object_object_add(meta, "name", jstr(CO_COMPONENT_CRD_NAME));
    json_object_object_add(crd, "metadata", meta);
    return crd;
}

/*
 * Not in the category "all": `kubectl delete all --all` would otherwise delete Components and
 * with them everything they deployed, and the Go original does not list it there either.
 *
 * v1beta1 is served only on request: served, it is the preferred version (Kubernetes ranks
 * beta above alpha), so every read of a client that takes the preferred version (`kubectl get
 * comp`) would go through the conversion webhook and fail while the webhook is down.
 */
static json_object *component_crd(unsigned flags)
{
    int beta = (flags & CO_COMPONENT_CRD_V1BETA1) != 0;
    json_object *crd = crd_head(0);
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "conversion", conversion(beta, WEBHOOK_NAMESPACE));
    add_names(spec);
    json_object *versions = json_object_new_array();
    json_object_array_add(versions,
                          crd_version("v1alpha1", 1, co_component__schema(CO_API_V1ALPHA1)));
    if (beta) {
        json_object_array_add(versions,
                              crd_version("v1beta1", 0, co_component__schema(CO_API_V1BETA1)));
    }
    json_object_object_add(spec, "versions", versions);
    json_object_object_add(crd, "spec", spec);
    return crd;
}

int co_component_crd(struct json_object **out, unsigned flags)
{
    *out = component_crd(flags);
    return 0;
}

int co_component_crd_yaml(co_buf *out, unsigned flags)
{
    json_object *crd = component_crd(flags);
    int rc = co_schema__yaml(out, crd);
    json_object_put(crd);
    return rc;
}

/* Appends the YAML of the mapping @p doc with every line indented by @p indent; with @p item
 * as an item of a block sequence ("- " before its first line). */
static int put_indented(co_buf *out, const json_object *doc, int indent, int item)
{
    co_buf yaml = CO_BUF_INIT(SIZE_MAX);
    int rc = co_schema__yaml(&yaml, doc);
    const char *p = co_buf_cstr(&yaml);
    if (strncmp(p, "---\n", 4) == 0) {
        p += 4;
    }
    for (int first = 1; rc == 0 && *p; first = 0) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        rc = co_buf_printf(out, "%*s%s", indent, "", item ? (first ? "- " : "  ") : "");
        if (rc == 0) {
            rc = co_buf_put(out, p, n);
        }
        p += n;
    }
    co_buf_dispose(&yaml);
    return rc;
}

/*
 * The chart's template: the CRD of crds/ by default, that of crds/v1beta1/ with
 * .Values.crds.v1beta1 (the webhook then in the release's namespace). Text the schema holds is
 * not escaped for Go templates: tests/unit/test_deploy_chart.c renders both variants and
 * compares them with crds/, so a description Helm would read as an action cannot slip through.
 */
int co_component_crd_chart_template(co_buf *out)
{
    static const char header[] =
        "# SPDX-License-Identifier: Apache-2.0\n"
        "#\n"
        "# Generated by `make crds` from shared/src/api/component/component_schema.c; do not\n"
        "# edit. The Component CRD of crds/, serving v1alpha1 only, or with crds.v1beta1 that of\n"
        "# crds/v1beta1/: v1beta1 served too, converted by component-webhook in the release\n"
        "# namespace. A template, because Helm neither templates nor upgrades the files of crds/;\n"
        "# kept on `helm uninstall`, since deleting the CRD deletes every Component.\n"
        "---\n";
    static const char if_beta[] = "{{- if .Values.crds.v1beta1 }}\n";
    json_object *head = crd_head(1);
    json_object *webhook = conversion(1, CHART_NAMESPACE);
    json_object *none = conversion(0, NULL);
    json_object *names = json_object_new_object();
    add_names(names);
    json_object *alpha = crd_version("v1alpha1", 1, co_component__schema(CO_API_V1ALPHA1));
    json_object *beta = crd_version("v1beta1", 0, co_component__schema(CO_API_V1BETA1));
    int rc = co_buf_puts(out, header);
    if (rc == 0) {
        rc = put_indented(out, head, 0, 0);
    }
    if (rc == 0) {
        rc = co_buf_printf(out, "spec:\n  conversion:\n%s", if_beta);
    }
    if (rc == 0) {
        rc = put_indented(out, webhook, 4, 0);
    }
    if (rc == 0) {
        rc = co_buf_puts(out, "{{- else }}\n");
    }
    if (rc == 0) {
        rc = put_indented(out, none, 4, 0);
    }
    if (rc == 0) {
        rc = co_buf_puts(out, "{{- end }}\n");
    }
    if (rc == 0) {
        rc = put_indented(out, names, 2, 0);
    }
    if (rc == 0) {
        rc = co_buf_puts(out, "  versions:\n");
    }
    if (rc == 0) {
        rc = put_indented(out, alpha, 2, 1);
    }
    if (rc == 0) {
        rc = co_buf_puts(out, if_beta);
    }
    if (rc == 0) {
        rc = put_indented(out, beta, 2, 1);
    }
    if (rc == 0) {
        rc = co_buf_puts(out, "{{- end }}\n");
    }
    json_object_put(head);
    json_object_put(webhook);
    json_object_put(none);
    json_object_put(names);
    json_object_put(alpha);
    json_object_put(beta);
    return rc;
}
