/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure half of the apply engine (see ctl_inventory.h): validation and normalisation of the
 * rendered objects, object digests, the inventory as C structs and back, the inventory merge
 * with its adoption and consistency checks, and the two stable orders (docs/behaviour.md, "Apply
 * waves" and "Deletion waves"). Messages follow the Go framework's wording so that operators
 * reading a Component's status see the same sentences; object keys are written
 * "apiVersion Kind namespace/name".
 */
#include "controller/ctl_inventory.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/digest.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/time.h"
#include "controller/ctl_health.h"

#define CRD_GROUP        "apiextensions.k8s.io"
#define APISERVICE_GROUP "apiregistration.k8s.io"

/* ---- names ---------------------------------------------------------------------------------- */

static const char *const reconcile_names[] = {"OnObjectChange", "OnObjectOrComponentChange",
                                              "Once"};
static const char *const phase_names[] = {"",
                                          "ScheduledForApplication",
                                          "Creating",
                                          "Updating",
                                          "Ready",
                                          "ScheduledForCompletion",
                                          "Completing",
                                          "Completed",
                                          "ScheduledForDeletion",
                                          "Deleting"};

const char *ctl_reconcile_policy_name(ctl_reconcile_policy v)
{
    return (unsigned)v < CO_ARRAY_SIZE(reconcile_names) ? reconcile_names[v] : "";
}

const char *ctl_phase_name(ctl_phase v)
{
    return (unsigned)v < CO_ARRAY_SIZE(phase_names) ? phase_names[v] : "";
}

/* A policy enum's names: the API module's for the Component's policies (co/api/component.h),
 * this module's for the reconcile policy, which only objects carry. */
typedef const char *(*name_fn)(int v);

static const char *adoption_name(int v)
{
    return co_adoption_policy_name((co_adoption_policy)v);
}

static const char *update_name(int v)
{
    return co_update_policy_name((co_update_policy)v);
}

static const char *delete_name(int v)
{
    return co_delete_policy_name((co_delete_policy)v);
}

static const char *reconcile_name(int v)
{
    return ctl_reconcile_policy_name((ctl_reconcile_policy)v);
}

/* The value in @p first..@p last whose name matches @p value in any case style, or -1; ""
 * yields -2. A "default" entry is accepted when @p allow_default and yields -2 as well. */
static int lookup_policy(const char *value, name_fn name, int first, int last, bool allow_default)
{
    char *k = ctl_to_kebab(value);
    int r = -1;
    if (!*k || (allow_default && !strcmp(k, "default"))) {
        r = -2;
    }
    for (int v = first; r == -1 && v <= last; v++) {
        char *n = ctl_to_kebab(name(v));
        if (!strcmp(k, n)) {
            r = v;
        }
        free(n);
    }
    free(k);
    return r;
}

/* ---- kinds ---------------------------------------------------------------------------------- */

int ctl_participation_parse(bool *auxiliary, const char *value)
{
    char *k = ctl_to_kebab(value);
    bool aux = !strcmp(k, "auxiliary");
    bool ok = aux || !*k || !strcmp(k, "required");
    free(k);
    if (!ok) {
        return co_error_set(CO_EINVALID, "invalid value for annotation %s: %s",
                            CTL_ANN_PARTICIPATION, value);
    }
    *auxiliary = aux;
    return 0;
}

bool ctl_is_namespace(const char *group, const char *kind)
{
    return !*group && !strcmp(kind, "Namespace");
}

bool ctl_is_crd(const char *group, const char *kind)
{
    return !strcmp(group, CRD_GROUP) && !strcmp(kind, "CustomResourceDefinition");
}

bool ctl_is_apiservice(const char *group, const char *kind)
{
    return !strcmp(group, APISERVICE_GROUP) && !strcmp(kind, "APIService");
}

typedef struct prio {
    const char *group;
    const char *kind;
    int prio;
} prio;

static const prio apply_prios[] = {
    {"", "Namespace", -4},
    {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", -3},
    {"admissionregistration.k8s.io", "MutatingWebhookConfiguration", -3},
    {CRD_GROUP, "CustomResourceDefinition", -2},
    {"networking.k8s.io", "IngressClass", -2},
    {"node.k8s.io", "RuntimeClass", -2},
    {"scheduling.k8s.io", "PriorityClass", -2},
    {"storage.k8s.io", "StorageClass", -2},
    {"rbac.authorization.k8s.io", "ClusterRole", -2},
    {"rbac.authorization.k8s.io", "Role", -2},
    {"", "ConfigMap", -1},
    {"", "Secret", -1},
    {"rbac.authorization.k8s.io", "ClusterRoleBinding", -1},
    {"rbac.authorization.k8s.io", "RoleBinding", -1},
    {APISERVICE_GROUP, "APIService", 1},
};

static const prio delete_prios[] = {
    {CRD_GROUP, "CustomResourceDefinition", -1},
    {APISERVICE_GROUP, "APIService", -1},
    {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", 1},
    {"admissionregistration.k8s.io", "MutatingWebhookConfiguration", 1},
    {"", "Service", 2},
    {"", "ConfigMap", 2},
    {"", "Secret", 2},
    {"", "Namespace", 3},
    {"networking.k8s.io", "IngressClass", 4},
    {"node.k8s.io", "RuntimeClass", 4},
    {"scheduling.k8s.io", "PriorityClass", 4},
    {"storage.k8s.io", "StorageClass", 4},
};

static int lookup_prio(const prio *table, size_t n, const char *group, const char *kind)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(table[i].group, group) && !strcmp(table[i].kind, kind)) {
            return table[i].prio;
        }
    }
    return 0;
}

int ctl_apply_priority(const char *group, const char *kind)
{
    return lookup_prio(apply_prios, CO_ARRAY_SIZE(apply_prios), group, kind);
}

int ctl_delete_priority(const char *group, const char *kind)
{
    return lookup_prio(delete_prios, CO_ARRAY_SIZE(delete_prios), group, kind);
}

/* ---- keys ----------------------------------------------------------------------------------- */

char *ctl_key_string(const char *group,
                     const char *version,
                     const char *kind,
                     const char *namespace,
                     const char *name)
{
    return co_xasprintf("%s%s%s %s %s%s%s", group, *group ? "/" : "", version, kind,
                        namespace ? namespace : "", namespace && *namespace ? "/" : "", name);
}

char *ctl_api_version(const char *group, const char *version)
{
    return *group ? co_xasprintf("%s/%s", group, version) : co_xstrdup(version);
}

char *ctl_item_key(const ctl_item *it)
{
    return ctl_key_string(it->group, it->version, it->kind, it->namespace, it->name);
}

char *ctl_obj_key(const ctl_obj *o)
{
    return ctl_key_string(o->group, o->version, o->kind, o->namespace, o->name);
}

char *ctl_hash_owner_id(const char *owner_id)
{
    unsigned char sum[CO_SHA256_LEN];
    co_sha256(sum, owner_id, strlen(owner_id));
    return co_base32_lower(sum, sizeof(sum));
}

/* Splits an apiVersion into group and version (new strings). */
static int split_api_version(char **group, char **version, const char *api_version)
{
    const char *slash = strchr(api_version, '/');
    if (!slash) {
        *group = co_xstrdup("");
        *version = co_xstrdup(api_version);
        return 0;
    }
    if (slash == api_version || !slash[1] || strchr(slash + 1, '/')) {
        return co_error_set(CO_EINVALID, "malformed apiVersion %s", api_version);
    }
    *group = co_xstrndup(api_version, (size_t)(slash - api_version));
    *version = co_xstrdup(slash + 1);
    return 0;
}

/* ---- object set ----------------------------------------------------------------------------- */

static void types_free(ctl_type *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].group);
        free(t[i].version);
        free(t[i].kind);
    }
    free(t);
}

static ctl_type *types_copy(const ctl_type *t, size_t n)
{
    if (!n) {
        return NULL;
    }
    ctl_type *c = co_xcalloc(n, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        c[i].group = co_xstrdup(t[i].group);
        c[i].version = co_xstrdup(t[i].version);
        c[i].kind = co_xstrdup(t[i].kind);
    }
    return c;
}

static void obj_dispose(ctl_obj *o)
{
    free(o->group);
    free(o->version);
    free(o->kind);
    free(o->namespace);
    free(o->name);
    free(o->digest);
    types_free(o->managed_types, o->nmanaged_types);
    co_prerequisite_dispose(&o->guard);
    co_drift_ignore_dispose(&o->ignore);
    memset(o, 0, sizeof(*o));
}

void ctl_objset_dispose(ctl_objset *set)
{
    if (!set) {
        return;
    }
    for (size_t i = 0; i < set->len; i++) {
        obj_dispose(&set->objs[i]);
    }
    free(set->objs);
    set->objs = NULL;
    set->len = 0;
}

/* A map that must hold strings only (labels, annotations). */
static int check_string_map(const struct json_object *obj, const char *field, const char *key)
{
    struct json_object *m = co_json_get(obj, "metadata", field, NULL);
    if (!m) {
        return 0;
    }
    if (!json_object_is_type(m, json_type_object)) {
        return co_error_set(CO_EINVALID, "object %s: metadata.%s: expected object, got %s", key,
                            field, co_json_type_name(m));
    }
    json_object_object_foreach (m, k, v) {
        if (!json_object_is_type(v, json_type_string)) {
            return co_error_set(CO_EINVALID, "object %s: metadata.%s.%s: expected string, got %s",
                                key, field, k, co_json_type_name(v));
        }
    }
    return 0;
}

static void remove_meta_field(struct json_object *obj, const char *field)
{
    struct json_object *m = co_json_get(obj, "metadata", NULL);
    if (m && json_object_is_type(m, json_type_object)) {
        json_object_object_del(m, field);
    }
}

static void remove_meta_key(struct json_object *obj, const char *field, const char *key)
{
    struct json_object *m = co_json_get(obj, "metadata", field, NULL);
    if (m && json_object_is_type(m, json_type_object)) {
        json_object_object_del(m, key);
    }
}

static int fold_string_data(struct json_object *obj, const char *key)
{
    struct json_object *sd = co_json_get(obj, "stringData", NULL);
    if (!sd) {
        json_object_object_del(obj, "stringData");
        return 0;
    }
    if (!json_object_is_type(sd, json_type_object)) {
        return co_error_set(CO_EINVALID, "object %s: stringData: expected object, got %s", key,
                            co_json_type_name(sd));
    }
    struct json_object *data = co_json_get(obj, "data", NULL);
    if (data && !json_object_is_type(data, json_type_object)) {
        return co_error_set(CO_EINVALID, "object %s: data: expected object, got %s", key,
                            co_json_type_name(data));
    }
    json_object_object_foreach (sd, k, v) {
        if (!json_object_is_type(v, json_type_string)) {
            return co_error_set(CO_EINVALID, "object %s: stringData.%s: expected string, got %s",
                                key, k, co_json_type_name(v));
        }
    }
    if (!data) {
        data = json_object_new_object();
        json_object_object_add(obj, "data", data);
    }
    json_object_object_foreach (sd, k2, v2) {
        char *b64 =
            co_base64_encode(json_object_get_string(v2), co_json_string_len(v2), CO_BASE64_STD);
        json_object_object_add(data, k2, json_object_new_string(b64));
        free(b64);
    }
    json_object_object_del(obj, "stringData");
    return 0;
}

/* Go's strconv.Atoi then the int16 range check. */
static int parse_order(int *out, const char *value, const char *ann_key)
{
    const char *p = value;
    if (*p == '+' || *p == '-') {
        p++;
    }
    bool ok = *p != '\0';
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9') {
            ok = false;
        }
    }
    if (!ok) {
        return co_error_set(CO_EINVALID,
                            "invalid value for annotation %s: %s: strconv.Atoi: parsing \"%s\": "
                            "invalid syntax",
                            ann_key, value, value);
    }
    errno = 0;
    long long v = strtoll(value, NULL, 10);
    if (errno == ERANGE || v < CTL_ORDER_MIN || v > CTL_ORDER_MAX) {
        return co_error_set(CO_EINVALID,
                            "invalid value for annotation %s: %s: value %s not in allowed range "
                            "[%d,%d]",
                            ann_key, value, value, CTL_ORDER_MIN, CTL_ORDER_MAX);
    }
    *out = (int)v;
    return 0;
}

static int read_policies(ctl_obj *o, const ctl_defaults *d)
{
    const struct json_object *m = o->manifest;
    const char *v;
    int r;

    o->adoption = d->adoption;
    if ((v = co_json_meta_annotation(m, CTL_ANN_ADOPTION_POLICY))) {
        r = lookup_policy(v, adoption_name, CO_ADOPTION_NEVER, CO_ADOPTION_ALWAYS, false);
        if (r == -1) {
            goto bad;
        }
        if (r >= 0) {
            o->adoption = (co_adoption_policy)r;
        }
    }
    o->reconcile = CTL_RECONCILE_ON_OBJECT_CHANGE;
    if ((v = co_json_meta_annotation(m, CTL_ANN_RECONCILE_POLICY))) {
        r = lookup_policy(v, reconcile_name, CTL_RECONCILE_ON_OBJECT_CHANGE, CTL_RECONCILE_ONCE,
                          false);
        if (r == -1) {
            goto bad_reconcile;
        }
        if (r >= 0) {
            o->reconcile = (ctl_reconcile_policy)r;
        }
    }
    o->update = d->update;
    if ((v = co_json_meta_annotation(m, CTL_ANN_UPDATE_POLICY))) {
        r = lookup_policy(v, update_name, CO_UPDATE_RECREATE, CO_UPDATE_SSA_OVERRIDE, true);
        if (r == -1) {
            goto bad_update;
        }
        if (r >= 0) {
            o->update = (co_update_policy)r;
        }
    }
    o->delete_policy = d->delete_policy;
    if ((v = co_json_meta_annotation(m, CTL_ANN_DELETE_POLICY))) {
        r = lookup_policy(v, delete_name, CO_DELETE_DELETE, CO_DELETE_ORPHAN_ON_DELETE, true);
        if (r == -1) {
            goto bad_delete;
        }
        if (r >= 0) {
            o->delete_policy = (co_delete_policy)r;
        }
    }
    o->reapply_ns = d->reapply_ns;
    if ((v = co_json_meta_annotation(m, CTL_ANN_REAPPLY_INTERVAL))) {
        int64_t ns;
        if (co_duration_parse(&ns, v) < 0) {
            return co_error_wrap("invalid value for annotation %s: %s", CTL_ANN_REAPPLY_INTERVAL,
                                 v);
        }
        if (ns > 0) {
            o->reapply_ns = ns;
        }
    }
    o->apply_order = 0;
    if ((v = co_json_meta_annotation(m, CTL_ANN_APPLY_ORDER)) &&
        parse_order(&o->apply_order, v, CTL_ANN_APPLY_ORDER) < 0) {
        return CO_EINVALID;
    }
    o->delete_order = 0;
    if ((v = co_json_meta_annotation(m, CTL_ANN_DELETE_ORDER)) &&
        parse_order(&o->delete_order, v, CTL_ANN_DELETE_ORDER) < 0) {
        return CO_EINVALID;
    }
    o->purge_order = CTL_NO_PURGE;
    if ((v = co_json_meta_annotation(m, CTL_ANN_PURGE_ORDER)) &&
        parse_order(&o->purge_order, v, CTL_ANN_PURGE_ORDER) < 0) {
        return CO_EINVALID;
    }
    o->auxiliary = false;
    if ((v = co_json_meta_annotation(m, CTL_ANN_PARTICIPATION)) &&
        ctl_participation_parse(&o->auxiliary, v) < 0) {
        return CO_EINVALID;
    }
    o->mode = CO_MODE_MANAGED;
    if ((v = co_json_meta_annotation(m, CO_LIFECYCLE_MODE_ANNOTATION)) &&
        co_object_mode_parse(&o->mode, v) < 0) {
        return co_error_wrap("invalid value for annotation %s", CO_LIFECYCLE_MODE_ANNOTATION);
    }
    if ((v = co_json_meta_annotation(m, CO_LIFECYCLE_GUARD_ANNOTATION))) {
        if (co_guard_parse(&o->guard, v) < 0) {
            return co_error_wrap("invalid value for annotation %s", CO_LIFECYCLE_GUARD_ANNOTATION);
        }
        if (!o->guard.ns && *o->namespace) {
            o->guard.ns = co_xstrdup(o->namespace);
        }
    }
    o->drift = CO_DRIFT_CORRECT;
    if ((v = co_json_meta_annotation(m, CO_DRIFT_POLICY_ANNOTATION)) &&
        co_drift_policy_parse(&o->drift, v) < 0) {
        return co_error_wrap("invalid value for annotation %s", CO_DRIFT_POLICY_ANNOTATION);
    }
    if ((v = co_json_meta_annotation(m, CO_DRIFT_IGNORE_FIELDS_ANNOTATION)) &&
        co_drift_ignore_parse(&o->ignore, v) < 0) {
        return co_error_wrap("invalid value for annotation %s", CO_DRIFT_IGNORE_FIELDS_ANNOTATION);
    }
    return 0;
bad:
    return co_error_set(CO_EINVALID, "invalid value for annotation %s: %s", CTL_ANN_ADOPTION_POLICY,
                        v);
bad_reconcile:
    return co_error_set(CO_EINVALID, "invalid value for annotation %s: %s",
                        CTL_ANN_RECONCILE_POLICY, v);
bad_update:
    return co_error_set(CO_EINVALID, "invalid value for annotation %s: %s", CTL_ANN_UPDATE_POLICY,
                        v);
bad_delete:
    return co_error_set(CO_EINVALID, "invalid value for annotation %s: %s", CTL_ANN_DELETE_POLICY,
                        v);
}

static int read_managed_types(ctl_obj *o)
{
    const char *g, *v, *k;
    if (ctl_is_crd(o->group, o->kind)) {
        g = co_json_str(o->manifest, "spec", "group", NULL);
        k = co_json_get(o->manifest, "spec", "names", "kind", NULL)
                ? json_object_get_string(co_json_get(o->manifest, "spec", "names", "kind", NULL))
                : NULL;
        v = "*";
        if (!g || !*g || !k || !*k) {
            return co_error_set(CO_EINVALID, "custom resource definition needs spec.group and "
                                             "spec.names.kind");
        }
    } else if (ctl_is_apiservice(o->group, o->kind)) {
        g = co_json_str(o->manifest, "spec", "group", NULL);
        v = co_json_str(o->manifest, "spec", "version", NULL);
        k = "*";
        if (!g || !v || !*v) {
            return co_error_set(CO_EINVALID, "api service needs spec.group and spec.version");
        }
    } else {
        return 0;
    }
    o->managed_types = co_xcalloc(1, sizeof(ctl_type));
    o->managed_types[0].group = co_xstrdup(g);
    o->managed_types[0].version = co_xstrdup(v);
    o->managed_types[0].kind = co_xstrdup(k);
    o->nmanaged_types = 1;
    return 0;
}

/* ---- defaults the server-side apply of the API server needs ---------------------------------
 *
 * The Go original converts built-in objects to their typed form before applying them. Server-side
 * apply (1.20) refuses an element of an associative list that lacks one of the list's keys, even
 * when the API server would default it: the keys of the built-in OpenAPI (/openapi/v2,
 * x-kubernetes-list-map-keys) that are optional are `protocol` of Service ports ([port,
 * protocol]) and of container ports ([containerPort, protocol]); both default to TCP. Other
 * optional merge keys (hostAliases ip, imagePullSecrets name, ServiceAccount secrets name) have
 * no default. Elements of an unexpected type are left for the API server to reject. */

static void default_protocols(struct json_object *ports)
{
    if (!ports || !json_object_is_type(ports, json_type_array)) {
        return;
    }
    for (size_t i = 0; i < json_object_array_length(ports); i++) {
        struct json_object *p = json_object_array_get_idx(ports, i);
        if (p && json_object_is_type(p, json_type_object) &&
            !json_object_object_get_ex(p, "protocol", NULL)) {
            json_object_object_add(p, "protocol", json_object_new_string("TCP"));
        }
    }
}

static void default_pod_spec(struct json_object *spec)
{
    static const char *const lists[] = {"containers", "initContainers"};
    if (!spec || !json_object_is_type(spec, json_type_object)) {
        return;
    }
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        struct json_object *cs = co_json_get(spec, lists[l], NULL);
        if (!cs || !json_object_is_type(cs, json_type_array)) {
            continue;
        }
        for (size_t i = 0; i < json_object_array_length(cs); i++) {
            struct json_object *c = json_object_array_get_idx(cs, i);
            if (c && json_object_is_type(c, json_type_object)) {
                default_protocols(co_json_get(c, "ports", NULL));
            }
        }
    }
}

/* Built-in kinds carrying a pod spec or Service ports, by group; versions do not matter. */
static void apply_builtin_defaults(const ctl_obj *o, struct json_object *m)
{
    const char *g = o->group, *k = o->kind;
    bool apps = !strcmp(g, "apps") || !strcmp(g, "extensions");
    if (!*g && !strcmp(k, "Service")) {
        default_protocols(co_json_get(m, "spec", "ports", NULL));
    } else if (!*g && !strcmp(k, "Pod")) {
        default_pod_spec(co_json_get(m, "spec", NULL));
    } else if (!*g && !strcmp(k, "PodTemplate")) {
        default_pod_spec(co_json_get(m, "template", "spec", NULL));
    } else if ((!*g && !strcmp(k, "ReplicationController")) ||
               (apps && (!strcmp(k, "Deployment") || !strcmp(k, "StatefulSet") ||
                         !strcmp(k, "DaemonSet") || !strcmp(k, "ReplicaSet"))) ||
               (!strcmp(g, "batch") && !strcmp(k, "Job"))) {
        default_pod_spec(co_json_get(m, "spec", "template", "spec", NULL));
    } else if (!strcmp(g, "batch") && !strcmp(k, "CronJob")) {
        default_pod_spec(co_json_get(m, "spec", "jobTemplate", "spec", "template", "spec", NULL));
    }
}

/* Step 1 of docs/behaviour.md, "Apply pass", for one object: identity, type checks, stringData,
 * owner marks removed, server-set metadata dropped, defaults of built-in kinds applied. */
static int normalise(ctl_obj *o, struct json_object *m, size_t index)
{
    o->manifest = m;
    if (!m || !json_object_is_type(m, json_type_object)) {
        return co_error_set(CO_EINVALID, "object [%zu]: expected object, got %s", index,
                            co_json_type_name(m));
    }
    const char *av = co_json_str(m, "apiVersion", NULL);
    const char *kind = co_json_str(m, "kind", NULL);
    const char *name = co_json_meta_name(m);
    const char *ns = co_json_meta_namespace(m);
    const char *gen = co_json_str(m, "metadata", "generateName", NULL);
    char *key = NULL;
    int rc = 0;

    if (gen && *gen) {
        key = co_xasprintf("%s %s %s%s%s", av ? av : "", kind ? kind : "", ns ? ns : "",
                           ns && *ns ? "/" : "", name ? name : "");
        rc = co_error_set(CO_EINVALID,
                          "object %s specifies metadata.generateName (but dependent objects are "
                          "not allowed to do so)",
                          key);
        goto done;
    }
    if (!av || !*av || !kind || !*kind) {
        rc = co_error_set(CO_EINVALID, "object [%zu] (%s) is missing type information", index,
                          name ? name : "without name");
        goto done;
    }
    if (!name || !*name) {
        rc =
            co_error_set(CO_EINVALID, "object [%zu] (%s %s) has no metadata.name", index, av, kind);
        goto done;
    }
    if (split_api_version(&o->group, &o->version, av) < 0) {
        rc = co_error_wrap("object [%zu]", index);
        goto done;
    }
    o->kind = co_xstrdup(kind);
    o->name = co_xstrdup(name);
    o->namespace = co_xstrdup(ns ? ns : "");
    key = ctl_obj_key(o);
    if ((ctl_is_crd(o->group, o->kind) && strcmp(o->version, "v1")) ||
        (ctl_is_apiservice(o->group, o->kind) && strcmp(o->version, "v1"))) {
        rc = co_error_set(CO_EINVALID, "scheme does not recognize type of object %s", key);
        goto done;
    }
    if ((rc = check_string_map(m, "labels", key)) < 0 ||
        (rc = check_string_map(m, "annotations", key)) < 0) {
        goto done;
    }
    if (!*o->group && !strcmp(o->kind, "Secret") && (rc = fold_string_data(m, key)) < 0) {
        goto done;
    }
    remove_meta_key(m, "labels", CTL_LABEL_OWNER_ID);
    remove_meta_key(m, "annotations", CTL_ANN_OWNER_ID);
    remove_meta_key(m, "annotations", CTL_ANN_DIGEST);
    /* What an object copied from the API server carries: a resourceVersion makes a create fail
     * (and would pin updates to a stale version), a uid makes server-side apply look for an
     * object that is gone. The live resourceVersion is used for updates instead
     * (docs/behaviour.md, "Create, update and delete"). */
    remove_meta_field(m, "resourceVersion");
    remove_meta_field(m, "uid");
    remove_meta_field(m, "selfLink");
    remove_meta_field(m, "creationTimestamp");
    remove_meta_field(m, "managedFields");
    apply_builtin_defaults(o, m);
done:
    free(key);
    return rc;
}

/* Step 2 (docs/behaviour.md, "Apply pass"): namespace by scope. */
static int
fix_scope(int *namespaced_out, ctl_objset *set, size_t i, ctl_scope_fn scope, void *payload)
{
    ctl_obj *o = &set->objs[i];
    int namespaced = -1;
    char *av = *o->group ? co_xasprintf("%s/%s", o->group, o->version) : co_xstrdup(o->version);
    int rc = scope(&namespaced, av, o->kind, payload);
    free(av);
    if (rc < 0 && rc != CO_ENOMATCH) {
        char *key = ctl_obj_key(o);
        co_error_wrap("error getting rest mapping for object %s", key);
        free(key);
        return rc;
    }
    bool known = rc == 0;
    for (size_t j = 0; j < set->len; j++) {
        const ctl_obj *t = &set->objs[j];
        if (ctl_is_crd(t->group, t->kind)) {
            const char *g = co_json_str(t->manifest, "spec", "group", NULL);
            struct json_object *k = co_json_get(t->manifest, "spec", "names", "kind", NULL);
            if (g && k && !strcmp(g, o->group) && !strcmp(json_object_get_string(k), o->kind)) {
                const char *s = co_json_str(t->manifest, "spec", "scope", NULL);
                namespaced = s && !strcmp(s, "Cluster") ? 0 : 1;
                known = true;
                break;
            }
        }
    }
    for (size_t j = 0; !known && j < set->len; j++) {
        const ctl_obj *t = &set->objs[j];
        if (ctl_is_apiservice(t->group, t->kind)) {
            const char *g = co_json_str(t->manifest, "spec", "group", NULL);
            const char *v = co_json_str(t->manifest, "spec", "version", NULL);
            if (g && v && !strcmp(g, o->group) && !strcmp(v, o->version)) {
                known = true;
            }
        }
    }
    if (!known) {
        char *key = ctl_obj_key(o);
        co_error_wrap("error getting rest mapping for object %s", key);
        free(key);
        return CO_ENOMATCH;
    }
    *namespaced_out = namespaced;
    return 0;
}

int ctl_objset_prepare(ctl_objset *out,
                       struct json_object *objects,
                       const ctl_defaults *defaults,
                       ctl_scope_fn scope,
                       void *payload)
{
    ctl_objset set = {NULL, 0};
    int rc = 0;
    char *key = NULL;
    size_t n = 0;

    if (objects && !json_object_is_type(objects, json_type_array)) {
        return co_error_set(CO_EINVALID, "objects: expected array, got %s",
                            co_json_type_name(objects));
    }
    n = objects ? json_object_array_length(objects) : 0;
    if (n > CTL_MAX_OBJECTS) {
        return co_error_set(CO_ETOOBIG, "%zu objects rendered; at most %d are supported", n,
                            CTL_MAX_OBJECTS);
    }
    set.objs = co_xcalloc(n ? n : 1, sizeof(ctl_obj));
    for (size_t i = 0; i < n; i++) {
        set.len = i + 1;
        if ((rc = normalise(&set.objs[i], json_object_array_get_idx(objects, i), i)) < 0) {
            goto done;
        }
    }
    /* Step 2: scope fix-up. */
    for (size_t i = 0; i < set.len; i++) {
        ctl_obj *o = &set.objs[i];
        int namespaced = -1;
        if ((rc = fix_scope(&namespaced, &set, i, scope, payload)) < 0) {
            goto done;
        }
        const char *ns = NULL;
        if (namespaced == 1 && !*o->namespace) {
            ns = defaults->namespace ? defaults->namespace : "";
        } else if (namespaced == 0 && *o->namespace) {
            ns = "";
        }
        if (ns) {
            free(o->namespace);
            o->namespace = co_xstrdup(ns);
            if (*ns) {
                if (co_json_set(o->manifest, json_object_new_string(ns), "metadata", "namespace",
                                NULL) < 0) {
                    rc = CO_EINVALID;
                    goto done;
                }
            } else {
                remove_meta_field(o->manifest, "namespace");
            }
        }
    }
    /* Step 3: duplicates. */
    for (size_t i = 0; i < set.len; i++) {
        const ctl_obj *a = &set.objs[i];
        for (size_t j = 0; j < i; j++) {
            const ctl_obj *b = &set.objs[j];
            if (!strcmp(a->name, b->name) && !strcmp(a->kind, b->kind) &&
                !strcmp(a->group, b->group) && !strcmp(a->namespace, b->namespace)) {
                key = ctl_obj_key(a);
                rc = co_error_set(CO_EINVALID, "duplicate object %s", key);
                goto done;
            }
        }
    }
    /* Step 3: annotations, purge orders; then managed types and digests. */
    for (size_t i = 0; i < set.len; i++) {
        ctl_obj *o = &set.objs[i];
        free(key);
        key = ctl_obj_key(o);
        if ((rc = read_policies(o, defaults)) < 0) {
            co_error_wrap("error validating object %s", key);
            goto done;
        }
        if (o->purge_order != CTL_NO_PURGE) {
            const char *what = ctl_is_namespace(o->group, o->kind) ? "namespaces"
                               : ctl_is_crd(o->group, o->kind)     ? "custom resource definitions"
                               : ctl_is_apiservice(o->group, o->kind) ? "api services"
                                                                      : NULL;
            if (what) {
                rc = co_error_set(CO_EINVALID,
                                  "error validating object %s: %s must not define a purge order",
                                  key, what);
                goto done;
            }
        }
        if ((rc = read_managed_types(o)) < 0) {
            co_error_wrap("error validating object %s", key);
            goto done;
        }
        o->digest = ctl_object_digest(o->manifest, o->reconcile, defaults->component_digest);
        if (!o->digest) {
            rc = co_error_wrap("error calculating digest for object %s", key);
            goto done;
        }
    }
done:
    free(key);
    if (rc < 0) {
        ctl_objset_dispose(&set);
        return rc;
    }
    *out = set;
    return 0;
}

char *ctl_object_digest(const struct json_object *manifest,
                        ctl_reconcile_policy policy,
                        const char *component_digest)
{
    if (policy == CTL_RECONCILE_ONCE) {
        return co_xstrdup(CTL_DIGEST_ONCE);
    }
    struct json_object *c = co_json_copy(manifest);
    remove_meta_field(c, "resourceVersion");
    remove_meta_field(c, "generation");
    remove_meta_field(c, "managedFields");
    char *text = co_json_dumps(c, CO_JSON_CANONICAL);
    json_object_put(c);
    if (!text) {
        return NULL;
    }
    char hex[CO_SHA256_HEX_LEN + 1];
    co_sha256_hex(hex, text, strlen(text));
    free(text);
    if (policy == CTL_RECONCILE_ON_OBJECT_OR_COMPONENT_CHANGE) {
        return co_xasprintf("%s@%s", hex, component_digest ? component_digest : "");
    }
    return co_xstrdup(hex);
}

/* ---- inventory ------------------------------------------------------------------------------ */

void ctl_item_dispose(ctl_item *it)
{
    free(it->group);
    free(it->version);
    free(it->kind);
    free(it->namespace);
    free(it->name);
    free(it->digest);
    free(it->status);
    free(it->drift);
    types_free(it->managed_types, it->nmanaged_types);
    memset(it, 0, sizeof(*it));
}

static void item_copy(ctl_item *dst, const ctl_item *src)
{
    *dst = *src;
    dst->group = co_xstrdup(src->group);
    dst->version = co_xstrdup(src->version);
    dst->kind = co_xstrdup(src->kind);
    dst->namespace = co_xstrdup(src->namespace);
    dst->name = co_xstrdup(src->name);
    dst->drift = src->drift ? co_xstrdup(src->drift) : NULL;
    dst->digest = co_xstrdup(src->digest);
    dst->status = co_xstrdup(src->status);
    dst->managed_types = types_copy(src->managed_types, src->nmanaged_types);
}

void ctl_inventory_dispose(ctl_inventory *inv)
{
    if (!inv) {
        return;
    }
    for (size_t i = 0; i < inv->len; i++) {
        ctl_item_dispose(&inv->items[i]);
    }
    free(inv->items);
    memset(inv, 0, sizeof(*inv));
}

static ctl_item *inventory_append(ctl_inventory *inv)
{
    if (inv->len == inv->cap) {
        inv->cap = inv->cap ? 2 * inv->cap : 16;
        inv->items = co_xreallocarray(inv->items, inv->cap, sizeof(ctl_item));
    }
    ctl_item *it = &inv->items[inv->len++];
    memset(it, 0, sizeof(*it));
    return it;
}

static int item_str(char **out, const struct json_object *o, const char *f, size_t i, bool need)
{
    struct json_object *v = co_json_get(o, f, NULL);
    if (!v) {
        if (need) {
            return co_error_set(CO_EINVALID, "status.inventory[%zu].%s: not found", i, f);
        }
        *out = co_xstrdup("");
        return 0;
    }
    if (!json_object_is_type(v, json_type_string)) {
        return co_error_set(CO_EINVALID, "status.inventory[%zu].%s: expected string, got %s", i, f,
                            co_json_type_name(v));
    }
    *out = co_xstrdup(json_object_get_string(v));
    return 0;
}

static const char *phase_name(int v)
{
    return ctl_phase_name((ctl_phase)v);
}

/* Field @p f of item @p i: the value in @p first..@p last named exactly so (the Go spelling), or
 * @p dflt when empty. */
static int item_enum(int *out,
                     const struct json_object *o,
                     const char *f,
                     size_t i,
                     name_fn name,
                     int first,
                     int last,
                     int dflt)
{
    const char *s = co_json_str(o, f, NULL);
    if (!s || !*s) {
        *out = dflt;
        return 0;
    }
    for (int k = first; k <= last; k++) {
        if (!strcmp(s, name(k))) {
            *out = k;
            return 0;
        }
    }
    return co_error_set(CO_EINVALID, "status.inventory[%zu].%s: unknown value %s", i, f, s);
}

static int item_read(ctl_item *it, const struct json_object *o, size_t i)
{
    int rc, v = 0;
    int64_t n;
    if (!o || !json_object_is_type(o, json_type_object)) {
        return co_error_set(CO_EINVALID, "status.inventory[%zu]: expected object", i);
    }
    if ((rc = item_str(&it->group, o, "group", i, false)) < 0 ||
        (rc = item_str(&it->version, o, "version", i, true)) < 0 ||
        (rc = item_str(&it->kind, o, "kind", i, true)) < 0 ||
        (rc = item_str(&it->namespace, o, "namespace", i, false)) < 0 ||
        (rc = item_str(&it->name, o, "name", i, true)) < 0 ||
        (rc = item_str(&it->digest, o, "digest", i, false)) < 0 ||
        (rc = item_str(&it->status, o, "status", i, false)) < 0) {
        return rc;
    }
    /* an item without a policy has the Component's default (the Go framework's zero value) */
    if ((rc = item_enum(&v, o, "adoptionPolicy", i, adoption_name, CO_ADOPTION_NEVER,
                        CO_ADOPTION_ALWAYS, CO_COMPONENT_DEFAULT_ADOPTION)) < 0) {
        return rc;
    }
    it->adoption = (co_adoption_policy)v;
    if ((rc = item_enum(&v, o, "reconcilePolicy", i, reconcile_name, CTL_RECONCILE_ON_OBJECT_CHANGE,
                        CTL_RECONCILE_ONCE, CTL_RECONCILE_ON_OBJECT_CHANGE)) < 0) {
        return rc;
    }
    it->reconcile = (ctl_reconcile_policy)v;
    if ((rc = item_enum(&v, o, "updatePolicy", i, update_name, CO_UPDATE_RECREATE,
                        CO_UPDATE_SSA_OVERRIDE, CO_COMPONENT_DEFAULT_UPDATE)) < 0) {
        return rc;
    }
    it->update = (co_update_policy)v;
    if ((rc = item_enum(&v, o, "deletePolicy", i, delete_name, CO_DELETE_DELETE,
                        CO_DELETE_ORPHAN_ON_DELETE, CO_COMPONENT_DEFAULT_DELETE)) < 0) {
        return rc;
    }
    it->delete_policy = (co_delete_policy)v;
    /* an item without a phase is one the Go framework would still process: read it as
     * scheduled, never as "leaving the inventory" */
    if ((rc = item_enum(&v, o, "phase", i, phase_name, CTL_PHASE_NONE, CTL_PHASE_DELETING,
                        CTL_PHASE_SCHEDULED_FOR_APPLICATION)) < 0) {
        return rc;
    }
    it->phase = (ctl_phase)v;
    it->mode = CO_MODE_MANAGED;
    const char *mode = co_json_str(o, "mode", NULL);
    if (mode && *mode && co_object_mode_parse(&it->mode, mode) < 0) {
        return co_error_wrap("status.inventory[%zu].mode", i);
    }
    const char *drift = co_json_str(o, "drift", NULL);
    it->drift = drift && *drift ? co_xstrndup(drift, CTL_DRIFT_TEXT_MAX) : NULL;
    if (co_json_get(o, "applyOrder", NULL)) {
        if (co_json_get_int64(&n, o, "applyOrder", NULL) < 0 || n < CTL_ORDER_MIN ||
            n > CTL_ORDER_MAX) {
            return co_error_set(CO_EINVALID, "status.inventory[%zu].applyOrder: invalid", i);
        }
        it->apply_order = (int)n;
    }
    if (co_json_get(o, "deleteOrder", NULL)) {
        if (co_json_get_int64(&n, o, "deleteOrder", NULL) < 0 || n < CTL_ORDER_MIN ||
            n > CTL_ORDER_MAX) {
            return co_error_set(CO_EINVALID, "status.inventory[%zu].deleteOrder: invalid", i);
        }
        it->delete_order = (int)n;
    }
    struct json_object *ts = co_json_get(o, "lastAppliedAt", NULL);
    if (ts) {
        if (!json_object_is_type(ts, json_type_string) ||
            co_time_parse(&it->last_applied_at, json_object_get_string(ts)) < 0) {
            return co_error_set(CO_EINVALID, "status.inventory[%zu].lastAppliedAt: invalid", i);
        }
    }
    struct json_object *mt = co_json_get(o, "managedTypes", NULL);
    if (mt) {
        if (!json_object_is_type(mt, json_type_array)) {
            return co_error_set(CO_EINVALID, "status.inventory[%zu].managedTypes: expected array",
                                i);
        }
        size_t m = json_object_array_length(mt);
        it->managed_types = m ? co_xcalloc(m, sizeof(ctl_type)) : NULL;
        for (size_t k = 0; k < m; k++) {
            struct json_object *t = json_object_array_get_idx(mt, k);
            it->nmanaged_types = k + 1;
            if (item_str(&it->managed_types[k].group, t, "group", i, false) < 0 ||
                item_str(&it->managed_types[k].version, t, "version", i, false) < 0 ||
                item_str(&it->managed_types[k].kind, t, "kind", i, false) < 0) {
                return co_error_wrap("managedTypes[%zu]", k);
            }
        }
    }
    return 0;
}

int ctl_inventory_read(ctl_inventory *out, const struct json_object *array)
{
    ctl_inventory inv = {NULL, 0, 0};
    if (array && !json_object_is_type(array, json_type_array)) {
        return co_error_set(CO_EINVALID, "status.inventory: expected array, got %s",
                            co_json_type_name(array));
    }
    size_t n = array ? json_object_array_length(array) : 0;
    if (n > CTL_MAX_OBJECTS) {
        return co_error_set(CO_ETOOBIG, "status.inventory: %zu items; at most %d are supported", n,
                            CTL_MAX_OBJECTS);
    }
    for (size_t i = 0; i < n; i++) {
        ctl_item *it = inventory_append(&inv);
        int rc = item_read(it, json_object_array_get_idx(array, i), i);
        if (rc < 0) {
            ctl_inventory_dispose(&inv);
            return rc;
        }
    }
    *out = inv;
    return 0;
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

void ctl_inventory_write(const ctl_inventory *inv, struct json_object *array)
{
    size_t n = json_object_array_length(array);
    if (n) {
        json_object_array_del_idx(array, 0, n);
    }
    for (size_t i = 0; i < inv->len; i++) {
        const ctl_item *it = &inv->items[i];
        struct json_object *o = json_object_new_object();
        add_str(o, "group", it->group);
        add_str(o, "version", it->version);
        add_str(o, "kind", it->kind);
        if (*it->namespace) {
            add_str(o, "namespace", it->namespace);
        }
        add_str(o, "name", it->name);
        add_str(o, "adoptionPolicy", co_adoption_policy_name(it->adoption));
        add_str(o, "reconcilePolicy", ctl_reconcile_policy_name(it->reconcile));
        add_str(o, "updatePolicy", co_update_policy_name(it->update));
        add_str(o, "deletePolicy", co_delete_policy_name(it->delete_policy));
        json_object_object_add(o, "applyOrder", json_object_new_int64(it->apply_order));
        json_object_object_add(o, "deleteOrder", json_object_new_int64(it->delete_order));
        if (it->nmanaged_types) {
            struct json_object *mt = json_object_new_array();
            for (size_t k = 0; k < it->nmanaged_types; k++) {
                struct json_object *t = json_object_new_object();
                add_str(t, "group", it->managed_types[k].group);
                add_str(t, "version", it->managed_types[k].version);
                add_str(t, "kind", it->managed_types[k].kind);
                json_object_array_add(mt, t);
            }
            json_object_object_add(o, "managedTypes", mt);
        }
        add_str(o, "digest", it->digest);
        if (it->phase != CTL_PHASE_NONE) {
            add_str(o, "phase", ctl_phase_name(it->phase));
        }
        if (*it->status) {
            add_str(o, "status", it->status);
        }
        if (it->last_applied_at) {
            char ts[CO_TIME_STR_MAX];
            co_time_format(ts, it->last_applied_at);
            add_str(o, "lastAppliedAt", ts);
        }
        if (it->mode != CO_MODE_MANAGED) {
            add_str(o, "mode", co_object_mode_name(it->mode));
        }
        if (it->drift) {
            add_str(o, "drift", it->drift);
        }
        json_object_array_add(array, o);
    }
}

static bool item_matches(const ctl_item *it, const ctl_obj *o)
{
    return !strcmp(it->name, o->name) && !strcmp(it->kind, o->kind) &&
           !strcmp(it->group, o->group) && !strcmp(it->namespace, o->namespace);
}

ctl_item *ctl_inventory_find(const ctl_inventory *inv, const ctl_obj *o)
{
    for (size_t i = 0; i < inv->len; i++) {
        if (item_matches(&inv->items[i], o)) {
            return &inv->items[i];
        }
    }
    return NULL;
}

int ctl_adoption_check(const ctl_obj *o, const struct json_object *live, const char *hashed)
{
    if (!live) {
        return 0;
    }
    const char *owner = co_json_meta_label(live, CTL_LABEL_OWNER_ID);
    int rc = 0;
    char *key = NULL;
    if (!owner || !*owner) {
        if (o->adoption != CO_ADOPTION_IF_UNOWNED && o->adoption != CO_ADOPTION_ALWAYS) {
            key = ctl_obj_key(o);
            rc = co_error_set(CO_ECONFLICT, "found existing object %s without owner", key);
        }
    } else if (strcmp(owner, hashed) != 0 && o->adoption != CO_ADOPTION_ALWAYS) {
        const char *clear = co_json_meta_annotation(live, CTL_ANN_OWNER_ID);
        key = ctl_obj_key(o);
        rc = co_error_set(CO_ECONFLICT, "owner conflict; object %s is owned by %s", key,
                          clear ? clear : "");
    }
    free(key);
    return rc;
}

static bool has_owner_label(const struct json_object *live)
{
    const char *owner = co_json_meta_label(live, CTL_LABEL_OWNER_ID);
    return owner && *owner;
}

static int claim_check(const ctl_obj *o, ctl_claim_fn claimed, void *payload)
{
    char *owner = NULL;
    if (claimed(&owner, o, payload) != 1) {
        return 0;
    }
    char *key = ctl_obj_key(o);
    int rc =
        co_error_set(CO_ECONFLICT, "owner conflict; object %s is in the inventory of component %s",
                     key, owner ? owner : "");
    free(key);
    free(owner);
    return rc;
}

static bool
type_matches(const ctl_type *t, const char *group, const char *version, const char *kind)
{
    return (!strcmp(t->group, "*") || !strcmp(t->group, group)) &&
           (!strcmp(t->version, "*") || !strcmp(t->version, version)) &&
           (!strcmp(t->kind, "*") || !strcmp(t->kind, kind));
}

static bool managed_by(const ctl_item *owner, const ctl_item *it)
{
    for (size_t k = 0; k < owner->nmanaged_types; k++) {
        if (type_matches(&owner->managed_types[k], it->group, it->version, it->kind)) {
            return true;
        }
    }
    return false;
}

/* The consistency check of docs/behaviour.md, "Apply pass", step 4. */
static int check_consistency(const ctl_inventory *inv)
{
    for (size_t i = 0; i < inv->len; i++) {
        const ctl_item *t = &inv->items[i];
        bool is_type = ctl_is_crd(t->group, t->kind) || ctl_is_apiservice(t->group, t->kind);
        bool is_ns = ctl_is_namespace(t->group, t->kind);
        if (!is_type && !is_ns) {
            continue;
        }
        for (size_t j = 0; j < inv->len; j++) {
            const ctl_item *x = &inv->items[j];
            bool related = is_type ? managed_by(t, x) : !strcmp(x->namespace, t->name);
            if (!related) {
                continue;
            }
            const char *what = is_type ? "managed instance" : "namespaced object";
            const char *owner = is_type ? "its type" : "its namespace";
            const char *problem = NULL;
            if (x->apply_order < t->apply_order) {
                problem = "must not have an apply order lesser than the one of";
            } else if (x->delete_order > t->delete_order) {
                problem = "must not have a delete order greater than the one of";
            }
            if (problem || (*x->digest && !*t->digest)) {
                char *key = ctl_item_key(x);
                int rc;
                if (problem) {
                    rc = co_error_set(CO_EINVALID, "error validating object set (%s): %s %s %s",
                                      key, what, problem, owner);
                } else {
                    rc = co_error_set(CO_EINVALID,
                                      "error validating object set (%s): %s is not being "
                                      "deleted, but %s is",
                                      key, what, is_type ? "the managing type" : "the namespace");
                }
                free(key);
                return rc;
            }
        }
    }
    return 0;
}

int ctl_inventory_update(size_t *added_out,
                         ctl_inventory *inv,
                         const ctl_objset *set,
                         const char *hashed_owner_id,
                         ctl_live_fn live,
                         ctl_claim_fn claimed,
                         void *payload)
{
    ctl_inventory next = {NULL, 0, 0};
    size_t added = 0;
    int rc = 0;

    for (size_t i = 0; i < inv->len; i++) {
        item_copy(inventory_append(&next), &inv->items[i]);
    }
    for (size_t i = 0; i < set->len; i++) {
        const ctl_obj *o = &set->objs[i];
        ctl_item *it = ctl_inventory_find(&next, o);
        if (!it) {
            struct json_object *obj = NULL;
            if (live && (rc = live(&obj, o, payload)) < 0) {
                char *key = ctl_obj_key(o);
                co_error_wrap("error reading object %s", key);
                free(key);
                goto done;
            }
            /* a read-only object is never written: it may be anyone's */
            rc = o->mode == CO_MODE_READ_ONLY ? 0 : ctl_adoption_check(o, obj, hashed_owner_id);
            if (rc == 0 && claimed && o->mode != CO_MODE_READ_ONLY &&
                o->adoption != CO_ADOPTION_ALWAYS && !has_owner_label(obj)) {
                rc = claim_check(o, claimed, payload);
            }
            json_object_put(obj);
            if (rc < 0) {
                goto done;
            }
            it = inventory_append(&next);
            it->digest = co_xstrdup("");
            it->status = co_xstrdup("");
            added++;
        } else {
            free(it->group);
            free(it->version);
            free(it->kind);
            free(it->namespace);
            free(it->name);
            types_free(it->managed_types, it->nmanaged_types);
        }
        it->group = co_xstrdup(o->group);
        it->version = co_xstrdup(o->version);
        it->kind = co_xstrdup(o->kind);
        it->namespace = co_xstrdup(o->namespace);
        it->name = co_xstrdup(o->name);
        it->adoption = o->adoption;
        it->reconcile = o->reconcile;
        it->update = o->update;
        it->delete_policy = o->delete_policy;
        it->apply_order = o->apply_order;
        it->delete_order = o->delete_order;
        it->managed_types = types_copy(o->managed_types, o->nmanaged_types);
        it->nmanaged_types = o->nmanaged_types;
        it->mode = o->mode;
        if (strcmp(it->digest, o->digest) != 0) {
            free(it->digest);
            it->digest = co_xstrdup(o->digest);
            it->phase = CTL_PHASE_SCHEDULED_FOR_APPLICATION;
            free(it->status);
            it->status = co_xstrdup("InProgress");
            free(it->drift); /* a new manifest: compared afresh */
            it->drift = NULL;
        }
    }
    for (size_t i = 0; i < next.len; i++) {
        ctl_item *it = &next.items[i];
        bool found = false;
        for (size_t j = 0; !found && j < set->len; j++) {
            found = item_matches(it, &set->objs[j]);
        }
        if (!found && *it->digest) {
            free(it->digest);
            it->digest = co_xstrdup("");
            it->phase = CTL_PHASE_SCHEDULED_FOR_DELETION;
            free(it->status);
            it->status = co_xstrdup("Terminating");
        }
    }
    if ((rc = check_consistency(&next)) < 0) {
        goto done;
    }
    ctl_inventory_sort_for_delete(&next);
done:
    if (rc < 0) {
        ctl_inventory_dispose(&next);
        return rc;
    }
    ctl_inventory_dispose(inv);
    *inv = next;
    *added_out = added;
    return 0;
}

/* ---- ordering ------------------------------------------------------------------------------- */

/* Stable merge sort of @p n elements of @p size bytes. */
static void merge_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n < 2) {
        return;
    }
    char *a = base;
    char *tmp = co_xmalloc(n * size);
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (cmp(a + j * size, a + i * size) < 0) {
                    memcpy(tmp + k++ * size, a + j++ * size, size);
                } else {
                    memcpy(tmp + k++ * size, a + i++ * size, size);
                }
            }
            while (i < mid) {
                memcpy(tmp + k++ * size, a + i++ * size, size);
            }
            while (j < hi) {
                memcpy(tmp + k++ * size, a + j++ * size, size);
            }
        }
        memcpy(a, tmp, n * size);
    }
    free(tmp);
}

static int cmp_int(int a, int b)
{
    return a < b ? -1 : a > b;
}

static int cmp_item_delete(const void *pa, const void *pb)
{
    const ctl_item *a = pa, *b = pb;
    int c = cmp_int(a->delete_order, b->delete_order);
    return c ? c
             : cmp_int(ctl_delete_priority(a->group, a->kind),
                       ctl_delete_priority(b->group, b->kind));
}

static int cmp_obj_apply(const void *pa, const void *pb)
{
    const ctl_obj *a = pa, *b = pb;
    int c = cmp_int(a->apply_order, b->apply_order);
    return c ? c
             : cmp_int(ctl_apply_priority(a->group, a->kind),
                       ctl_apply_priority(b->group, b->kind));
}

void ctl_inventory_sort_for_delete(ctl_inventory *inv)
{
    merge_sort(inv->items, inv->len, sizeof(ctl_item), cmp_item_delete);
}

void ctl_objset_sort_for_apply(ctl_objset *set)
{
    merge_sort(set->objs, set->len, sizeof(ctl_obj), cmp_obj_apply);
}

/* ---- managed types -------------------------------------------------------------------------- */

bool ctl_group_matches(const char *pattern, const char *group)
{
    if (!strcmp(pattern, "*")) {
        return true;
    }
    if (!strncmp(pattern, "*.", 2)) {
        size_t pl = strlen(pattern + 1), gl = strlen(group);
        return gl >= pl && !strcmp(group + gl - pl, pattern + 1);
    }
    return !strcmp(pattern, group);
}

bool ctl_is_managed_instance(const co_type_info *extra,
                             size_t nextra,
                             const ctl_inventory *inv,
                             const char *group,
                             const char *version,
                             const char *kind)
{
    for (size_t i = 0; i < nextra; i++) {
        const char *g = extra[i].group ? extra[i].group : "";
        const char *k = extra[i].kind ? extra[i].kind : "";
        if (ctl_group_matches(g, group) && (!strcmp(k, "*") || !strcmp(k, kind))) {
            return true;
        }
    }
    for (size_t i = 0; i < inv->len; i++) {
        const ctl_item *t = &inv->items[i];
        for (size_t k = 0; k < t->nmanaged_types; k++) {
            if (type_matches(&t->managed_types[k], group, version, kind)) {
                return true;
            }
        }
    }
    return false;
}

bool ctl_namespace_used(const ctl_inventory *inv, const char *ns)
{
    for (size_t i = 0; i < inv->len; i++) {
        if (!strcmp(inv->items[i].namespace, ns)) {
            return true;
        }
    }
    return false;
}
