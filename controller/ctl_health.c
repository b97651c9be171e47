/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readiness of dependent objects (see ctl_health.h). The evaluation order follows the Go
 * framework: status hints rewrite a copy of the object, kstatus' generic checks run (deletion,
 * observed generation, Reconciling/Stalled), then the per-kind rules or the Ready condition,
 * then the extra conditions and the Job override. Field readers mirror kstatus' GetIntField and
 * GetStringField: a field of the wrong type reads as the default, while a malformed conditions
 * list is an error, as the Go converters make it.
 */
#include "controller/ctl_health.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "co/util/error.h"
#include "co/json/json.h"
#include "co/util/time.h"

#define CRD_GROUP        "apiextensions.k8s.io"
#define APISERVICE_GROUP "apiregistration.k8s.io"

const char *ctl_health_name(ctl_health h)
{
    static const char *const names[] = {"InProgress",  "Current",  "Failed",
                                        "Terminating", "NotFound", "Unknown"};
    return (unsigned)h < CO_ARRAY_SIZE(names) ? names[h] : "Unknown";
}

/* ---- kebab case (strcase.ToKebab) --------------------------------------------------------- */

char *ctl_to_kebab(const char *in)
{
    while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r' || *in == '\v' || *in == '\f') {
        in++;
    }
    size_t len = strlen(in);
    while (len && strchr(" \t\n\r\v\f", in[len - 1])) {
        len--;
    }
    char *out = co_xmalloc(2 * len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char v = in[i];
        int is_cap = v >= 'A' && v <= 'Z';
        int is_low = v >= 'a' && v <= 'z';
        if (is_cap) {
            v = (char)(v - 'A' + 'a');
        }
        if (i + 1 < len) {
            char next = in[i + 1];
            int is_num = v >= '0' && v <= '9';
            int next_cap = next >= 'A' && next <= 'Z';
            int next_low = next >= 'a' && next <= 'z';
            int next_num = next >= '0' && next <= '9';
            if ((is_cap && (next_low || next_num)) || (is_low && (next_cap || next_num)) ||
                (is_num && (next_cap || next_low))) {
                if (is_cap && next_low && i > 0 && in[i - 1] >= 'A' && in[i - 1] <= 'Z') {
                    out[n++] = '-';
                }
                out[n++] = v;
                if (is_low || is_num || next_num) {
                    out[n++] = '-';
                }
                continue;
            }
        }
        out[n++] = (v == ' ' || v == '_' || v == '-' || v == '.') ? '-' : v;
    }
    out[n] = '\0';
    return out;
}

/* ---- field readers ------------------------------------------------------------------------- */

/* kstatus GetIntField: integer fields only, anything else reads as the default. */
static int64_t
int_field(const struct json_object *obj, const char *a, const char *b, const char *c, int64_t dflt)
{
    const struct json_object *v = co_json_get(obj, a, b, c, NULL);
    if (!v || !json_object_is_type((struct json_object *)v, json_type_int)) {
        return dflt;
    }
    return json_object_get_int64(v);
}

typedef struct condition {
    const char *type;
    const char *status;
    const char *reason;
    const char *message;
    int has_observed_generation;
    int64_t observed_generation;
} condition;

typedef struct conditions {
    condition *items;
    size_t len;
} conditions;

static int
string_member(const char **out, const struct json_object *item, const char *key, size_t index)
{
    const struct json_object *v = co_json_get(item, key, NULL);
    *out = "";
    if (!v) {
        return 0;
    }
    if (!json_object_is_type((struct json_object *)v, json_type_string)) {
        return co_error_set(CO_EINVALID, "status.conditions[%zu].%s: expected string, got %s",
                            index, key, co_json_type_name(v));
    }
    *out = json_object_get_string((struct json_object *)v);
    return 0;
}

/* Decodes status.conditions the way the Go converter would, failing on wrong shapes. */
static int read_conditions(conditions *out, const struct json_object *obj)
{
    out->items = NULL;
    out->len = 0;
    const struct json_object *status = co_json_get(obj, "status", NULL);
    if (!status || json_object_is_type((struct json_object *)status, json_type_null)) {
        return 0;
    }
    if (!json_object_is_type((struct json_object *)status, json_type_object)) {
        return co_error_set(CO_EINVALID, "status: expected object, got %s",
                            co_json_type_name(status));
    }
    const struct json_object *list = co_json_get(status, "conditions", NULL);
    if (!list || json_object_is_type((struct json_object *)list, json_type_null)) {
        return 0;
    }
    if (!json_object_is_type((struct json_object *)list, json_type_array)) {
        return co_error_set(CO_EINVALID, "status.conditions: expected array, got %s",
                            co_json_type_name(list));
    }
    size_t n = json_object_array_length(list);
    out->items = co_xcalloc(n ? n : 1, sizeof(condition));
    for (size_t i = 0; i < n; i++) {
        const struct json_object *item = json_object_array_get_idx(list, i);
        condition *c = &out->items[i];
        if (!item || !json_object_is_type((struct json_object *)item, json_type_object)) {
            free(out->items);
            out->items = NULL;
            return co_error_set(CO_EINVALID, "status.conditions[%zu]: expected object, got %s", i,
                                co_json_type_name(item));
        }
        int rc = string_member(&c->type, item, "type", i);
        if (rc == 0) {
            rc = string_member(&c->status, item, "status", i);
        }
        if (rc == 0) {
            rc = string_member(&c->reason, item, "reason", i);
        }
        if (rc == 0) {
            rc = string_member(&c->message, item, "message", i);
        }
        const struct json_object *og = co_json_get(item, "observedGeneration", NULL);
        if (rc == 0 && og && !json_object_is_type((struct json_object *)og, json_type_null)) {
            if (!json_object_is_type((struct json_object *)og, json_type_int)) {
                rc = co_error_set(CO_EINVALID,
                                  "status.conditions[%zu].observedGeneration: expected integer, "
                                  "got %s",
                                  i, co_json_type_name(og));
            } else {
                c->has_observed_generation = 1;
                c->observed_generation = json_object_get_int64(og);
            }
        }
        if (rc < 0) {
            free(out->items);
            out->items = NULL;
            return rc;
        }
    }
    out->len = n;
    return 0;
}

/* Whether conditions of @p type exist and every one of them is True. */
static int all_true(const conditions *cs, const char *type)
{
    int found = 0;
    for (size_t i = 0; i < cs->len; i++) {
        if (strcmp(cs->items[i].type, type) == 0) {
            if (strcmp(cs->items[i].status, "True") != 0) {
                return 0;
            }
            found = 1;
        }
    }
    return found;
}

static const condition *find_condition(const conditions *cs, const char *type)
{
    const condition *found = NULL;
    for (size_t i = 0; i < cs->len; i++) {
        if (strcmp(cs->items[i].type, type) == 0) {
            found = &cs->items[i]; /* the Go framework keeps the last match */
        }
    }
    return found;
}

static bool condition_is(const conditions *cs, const char *type, const char *status)
{
    for (size_t i = 0; i < cs->len; i++) {
        if (strcmp(cs->items[i].type, type) == 0 && strcmp(cs->items[i].status, status) == 0) {
            return true;
        }
    }
    return false;
}

/* ---- per-kind rules (kstatus legacy types) -------------------------------------------------- */

typedef struct result {
    ctl_health health;
    const char *message;
} result;

static result in_progress(const char *msg)
{
    return (result){CTL_HEALTH_IN_PROGRESS, msg};
}

static result current(const char *msg)
{
    return (result){CTL_HEALTH_CURRENT, msg};
}

static result failed(const char *msg)
{
    return (result){CTL_HEALTH_FAILED, msg};
}

static result deployment(const struct json_object *o, const conditions *cs)
{
    /* without progressDeadlineSeconds the controller never sets Progressing */
    int progressing =
        int_field(o, "spec", "progressDeadlineSeconds", NULL, 2147483647) == 2147483647;
    int available = 0;
    for (size_t i = 0; i < cs->len; i++) {
        const condition *c = &cs->items[i];
        if (strcmp(c->type, "Progressing") == 0) {
            if (strcmp(c->reason, "ProgressDeadlineExceeded") == 0) {
                return failed("Progress deadline exceeded");
            }
            if (strcmp(c->status, "True") == 0 &&
                strcmp(c->reason, "NewReplicaSetAvailable") == 0) {
                progressing = 1;
            }
        } else if (strcmp(c->type, "Available") == 0 && strcmp(c->status, "True") == 0) {
            available = 1;
        }
    }
    int64_t spec = int_field(o, "spec", "replicas", NULL, 1);
    int64_t replicas = int_field(o, "status", "replicas", NULL, 0);
    int64_t updated = int_field(o, "status", "updatedReplicas", NULL, 0);
    int64_t ready = int_field(o, "status", "readyReplicas", NULL, 0);
    int64_t avail = int_field(o, "status", "availableReplicas", NULL, 0);
    if (spec > replicas) {
        return in_progress("Too few replicas");
    }
    if (spec > updated) {
        return in_progress("Too few updated replicas");
    }
    if (replicas > spec) {
        return in_progress("Pending termination of extra replicas");
    }
    if (updated > avail) {
        return in_progress("Too few available replicas");
    }
    if (spec > ready) {
        return in_progress("Too few ready replicas");
    }
    if (!progressing) {
        return in_progress("ReplicaSet not Available");
    }
    if (!available) {
        return in_progress("Deployment not Available");
    }
    return current("Deployment is available");
}

static result statefulset(const struct json_object *o)
{
    const char *strategy = co_json_str(o, "spec", "updateStrategy", "type", NULL);
    if (strategy && strcmp(strategy, "OnDelete") == 0) {
        return current("StatefulSet is using the OnDelete update strategy");
    }
    int64_t spec = int_field(o, "spec", "replicas", NULL, 1);
    int64_t ready = int_field(o, "status", "readyReplicas", NULL, 0);
    int64_t cur = int_field(o, "status", "currentReplicas", NULL, 0);
    int64_t updated = int_field(o, "status", "updatedReplicas", NULL, 0);
    int64_t replicas = int_field(o, "status", "replicas", NULL, 0);
    const struct json_object *ru = co_json_get(o, "spec", "updateStrategy", "rollingUpdate", NULL);
    int64_t partition = ru ? int_field(ru, "partition", NULL, NULL, -1) : -1;
    if (spec > replicas) {
        return in_progress("Too few replicas");
    }
    if (spec > ready) {
        return in_progress("Too few ready replicas");
    }
    if (replicas > spec) {
        return in_progress("Pending termination of extra replicas");
    }
    if (partition != -1) {
        if (updated < spec - partition) {
            return in_progress("Partition rollout in progress");
        }
        return current("Partition rollout complete");
    }
    if (spec > cur) {
        return in_progress("Too few current replicas");
    }
    const char *current_rev = co_json_str(o, "status", "currentRevision", NULL);
    const char *update_rev = co_json_str(o, "status", "updateRevision", NULL);
    if (strcmp(current_rev ? current_rev : "", update_rev ? update_rev : "") != 0) {
        return in_progress("Waiting for updated revision to match current");
    }
    return current("All replicas scheduled as expected");
}

static result daemonset(const struct json_object *o)
{
    const struct json_object *gen = co_json_get(o, "metadata", "generation", NULL);
    if (!gen) {
        return in_progress("DaemonSet metadata.generation not found");
    }
    const struct json_object *og = co_json_get(o, "status", "observedGeneration", NULL);
    if (!og) {
        return in_progress("DaemonSet status.observedGeneration not found");
    }
    int64_t desired = int_field(o, "status", "desiredNumberScheduled", NULL, -1);
    if (desired == -1) {
        return in_progress("Missing .status.desiredNumberScheduled");
    }
    if (desired > int_field(o, "status", "currentNumberScheduled", NULL, 0)) {
        return in_progress("Too few current pods");
    }
    if (desired > int_field(o, "status", "updatedNumberScheduled", NULL, 0)) {
        return in_progress("Too few updated pods");
    }
    if (desired > int_field(o, "status", "numberAvailable", NULL, 0)) {
        return in_progress("Too few available pods");
    }
    if (desired > int_field(o, "status", "numberReady", NULL, 0)) {
        return in_progress("Too few ready pods");
    }
    return current("All replicas scheduled as expected");
}

static result replicaset(const struct json_object *o, const conditions *cs)
{
    if (condition_is(cs, "ReplicaFailure", "True")) {
        return in_progress("Replica Failure condition. Check Pods");
    }
    int64_t spec = int_field(o, "spec", "replicas", NULL, 1);
    if (spec > int_field(o, "status", "fullyLabeledReplicas", NULL, 0)) {
        return in_progress("Too few labelled replicas");
    }
    if (spec > int_field(o, "status", "availableReplicas", NULL, 0)) {
        return in_progress("Too few available replicas");
    }
    if (spec > int_field(o, "status", "readyReplicas", NULL, 0)) {
        return in_progress("Too few ready replicas");
    }
    if (int_field(o, "status", "replicas", NULL, 0) > spec) {
        return in_progress("Pending termination of extra replicas");
    }
    return current("ReplicaSet is available");
}

/* The seconds of an RFC 3339 timestamp; -1 if absent or malformed. */
static int64_t parse_time(const char *s)
{
    int64_t ns = 0;
    if (!s) {
        return -1;
    }
    if (co_time_parse(&ns, s) < 0) {
        co_error_clear();
        return -1;
    }
    return ns / 1000000000LL;
}

static bool crash_looping(const struct json_object *o)
{
    const struct json_object *css = co_json_get(o, "status", "containerStatuses", NULL);
    if (!css || !json_object_is_type((struct json_object *)css, json_type_array)) {
        return false;
    }
    for (size_t i = 0; i < json_object_array_length(css); i++) {
        const struct json_object *cs = json_object_array_get_idx(css, i);
        const char *reason = co_json_str(cs, "state", "waiting", "reason", NULL);
        if (reason && strcmp(reason, "CrashLoopBackOff") == 0 && co_json_get(cs, "name", NULL)) {
            return true;
        }
    }
    return false;
}

static int pod(result *out, const struct json_object *o, const conditions *cs, int64_t now)
{
    const char *phase = co_json_str(o, "status", "phase", NULL);
    if (!phase) {
        phase = "";
    }
    if (strcmp(phase, "Succeeded") == 0) {
        *out = current("Pod has completed successfully");
    } else if (strcmp(phase, "Failed") == 0) {
        /* the Go original reports Current here; a failed Pod is not ready */
        *out = failed("Pod has completed, but not successfully");
    } else if (strcmp(phase, "Running") == 0) {
        if (condition_is(cs, "Ready", "True")) {
            *out = current("Pod is Ready");
        } else if (crash_looping(o)) {
            *out = failed("Containers in CrashLoop state");
        } else {
            *out = in_progress("Pod is running but is not Ready");
        }
    } else if (strcmp(phase, "Pending") == 0) {
        const condition *sched = NULL;
        for (size_t i = 0; i < cs->len; i++) {
            if (strcmp(cs->items[i].type, "PodScheduled") == 0 &&
                strcmp(cs->items[i].status, "False") == 0) {
                sched = &cs->items[i];
                break;
            }
        }
        if (sched && strcmp(sched->reason, "Unschedulable") == 0) {
            int64_t created = parse_time(co_json_str(o, "metadata", "creationTimestamp", NULL));
            /* 15 seconds to get scheduled before reporting the Pod as unschedulable */
            if (created >= 0 && now - 15 < created) {
                *out = in_progress("Pod has not been scheduled");
            } else {
                *out = failed("Pod could not be scheduled");
            }
        } else {
            *out = in_progress("Pod is in the Pending phase");
        }
    } else if (phase[0] == '\0') {
        *out = in_progress("Pod phase not available");
    } else {
        return co_error_set(CO_EINVALID, "unknown pod phase %s", phase);
    }
    return 0;
}

static result job(const struct json_object *o, const conditions *cs)
{
    for (size_t i = 0; i < cs->len; i++) {
        if (strcmp(cs->items[i].type, "Complete") == 0 &&
            strcmp(cs->items[i].status, "True") == 0) {
            return current("Job Completed");
        }
        if (strcmp(cs->items[i].type, "Failed") == 0 && strcmp(cs->items[i].status, "True") == 0) {
            return failed("Job Failed");
        }
    }
    const char *started = co_json_str(o, "status", "startTime", NULL);
    if (!started || !*started) {
        return in_progress("Job not started");
    }
    return current("Job in progress");
}

static result service(const struct json_object *o)
{
    const char *type = co_json_str(o, "spec", "type", NULL);
    const char *cluster_ip = co_json_str(o, "spec", "clusterIP", NULL);
    if (type && strcmp(type, "LoadBalancer") == 0 && (!cluster_ip || !*cluster_ip)) {
        return in_progress("ClusterIP not set. Service type: LoadBalancer");
    }
    return current("Service is ready");
}

static result crd(const conditions *cs)
{
    for (size_t i = 0; i < cs->len; i++) {
        const condition *c = &cs->items[i];
        if (strcmp(c->type, "NamesAccepted") == 0 && strcmp(c->status, "False") == 0) {
            return failed("CRD names not accepted");
        }
        if (strcmp(c->type, "Established") == 0) {
            if (strcmp(c->status, "False") == 0 && strcmp(c->reason, "Installing") != 0) {
                return failed("CRD not established");
            }
            if (strcmp(c->status, "True") == 0) {
                return current("CRD is established");
            }
        }
    }
    return in_progress("Install in progress");
}

/* Splits apiVersion into group (borrowed copy into buf) and tells whether the kind matches. */
static bool
is_kind(const char *group, const char *kind, const char *want_group, const char *want_kind)
{
    return strcmp(group, want_group) == 0 && strcmp(kind, want_kind) == 0;
}

/* Kinds kstatus always considers ready. */
static bool always_ready(const char *group, const char *kind)
{
    return is_kind(group, kind, "", "Secret") || is_kind(group, kind, "", "ConfigMap") ||
           is_kind(group, kind, "policy", "PodDisruptionBudget") ||
           is_kind(group, kind, "batch", "CronJob");
}

/* kstatus.Compute on an object whose conditions were decoded into @p cs. */
static int kstatus_compute(result *out,
                           const struct json_object *o,
                           const conditions *cs,
                           const char *group,
                           const char *kind,
                           int64_t now)
{
    const char *deleted_at = co_json_str(o, "metadata", "deletionTimestamp", NULL);
    if (deleted_at && *deleted_at) {
        *out = (result){CTL_HEALTH_TERMINATING, "Resource scheduled for deletion"};
        return 0;
    }
    const struct json_object *gen = co_json_get(o, "metadata", "generation", NULL);
    const struct json_object *og = co_json_get(o, "status", "observedGeneration", NULL);
    if (gen && og && json_object_is_type((struct json_object *)gen, json_type_int) &&
        json_object_is_type((struct json_object *)og, json_type_int) &&
        json_object_get_int64(gen) != json_object_get_int64(og)) {
        *out = in_progress("Latest generation not observed");
        return 0;
    }
    for (size_t i = 0; i < cs->len; i++) {
        const condition *c = &cs->items[i];
        if (strcmp(c->type, "Reconciling") == 0 && strcmp(c->status, "True") == 0) {
            *out = in_progress("Reconciling");
            return 0;
        }
        if (strcmp(c->type, "Stalled") == 0 && strcmp(c->status, "True") == 0) {
            *out = failed("Stalled");
            return 0;
        }
    }

    int apps = strcmp(group, "apps") == 0 || strcmp(group, "extensions") == 0;
    if (group[0] == '\0' && strcmp(kind, "Service") == 0) {
        *out = service(o);
    } else if (group[0] == '\0' && strcmp(kind, "Pod") == 0) {
        return pod(out, o, cs, now);
    } else if (always_ready(group, kind)) {
        *out = current("Resource is always ready");
    } else if (group[0] == '\0' && strcmp(kind, "PersistentVolumeClaim") == 0) {
        const char *phase = co_json_str(o, "status", "phase", NULL);
        if (phase && strcmp(phase, "Bound") == 0) {
            *out = current("PVC is Bound");
        } else {
            *out = in_progress("PVC is not Bound");
        }
    } else if (is_kind(group, kind, "apps", "StatefulSet")) {
        *out = statefulset(o);
    } else if (apps && strcmp(kind, "DaemonSet") == 0) {
        *out = daemonset(o);
    } else if (apps && strcmp(kind, "Deployment") == 0) {
        *out = deployment(o, cs);
    } else if (apps && strcmp(kind, "ReplicaSet") == 0) {
        *out = replicaset(o, cs);
    } else if (is_kind(group, kind, "batch", "Job")) {
        *out = job(o, cs);
    } else if (is_kind(group, kind, CRD_GROUP, "CustomResourceDefinition")) {
        *out = crd(cs);
    } else {
        const condition *ready = NULL;
        for (size_t i = 0; i < cs->len && !ready; i++) {
            if (strcmp(cs->items[i].type, "Ready") == 0) {
                ready = &cs->items[i];
            }
        }
        if (!ready) {
            *out = current("Resource is current");
        } else if (strcmp(ready->status, "True") == 0) {
            *out = current("Resource is Ready");
        } else {
            *out = in_progress("Resource not Ready");
        }
    }
    return 0;
}

/* ---- the framework's analyzer ---------------------------------------------------------------- */

typedef struct hints {
    int observed_generation;
    int ready_condition;
    char **extra;
    size_t nextra;
} hints;

static void hints_dispose(hints *h)
{
    for (size_t i = 0; i < h->nextra; i++) {
        free(h->extra[i]);
    }
    free(h->extra);
}

static void add_extra(hints *h, const char *s, size_t len)
{
    h->extra = co_xreallocarray(h->extra, h->nextra + 1, sizeof(char *));
    h->extra[h->nextra++] = co_xstrndup(s, len);
}

static int parse_hints(hints *out, const char *value)
{
    const char *p = value;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *item = co_xstrndup(p, len);
        char *eq = strchr(item, '=');
        /* "^([^=]+)=(.*)$": a value needs a non-empty key before the first '=' */
        int has_value = eq && eq != item;
        if (has_value) {
            *eq = '\0';
        }
        char *key = ctl_to_kebab(item);
        int rc = 0;
        if (strcmp(key, "has-observed-generation") == 0 ||
            strcmp(key, "has-ready-condition") == 0) {
            if (has_value) {
                rc = co_error_set(CO_EINVALID, "status hint %s does not take a value", key);
            } else if (key[4] == 'o') {
                out->observed_generation = 1;
            } else {
                out->ready_condition = 1;
            }
        } else if (strcmp(key, "conditions") == 0) {
            if (!has_value) {
                rc = co_error_set(CO_EINVALID, "status hint conditions requires a value");
            } else {
                const char *v = eq + 1;
                for (;;) {
                    const char *semi = strchr(v, ';');
                    add_extra(out, v, semi ? (size_t)(semi - v) : strlen(v));
                    if (!semi) {
                        break;
                    }
                    v = semi + 1;
                }
            }
        } else {
            rc = co_error_set(CO_EINVALID, "unknown status hint %s", item);
        }
        free(key);
        free(item);
        if (rc < 0) {
            return rc;
        }
        if (!end) {
            return 0;
        }
        p = end + 1;
    }
}

/* Applies the hints to a copy of the object, as the Go framework does before kstatus runs. */
static struct json_object *
apply_hints(const struct json_object *obj, const hints *h, const conditions *cs)
{
    struct json_object *copy = co_json_copy(obj);
    const condition *ready = find_condition(cs, "Ready");
    if (h->observed_generation && !co_json_get(copy, "status", "observedGeneration", NULL)) {
        int64_t og = ready && ready->has_observed_generation ? ready->observed_generation : -1;
        if (co_json_set(copy, json_object_new_int64(og), "status", "observedGeneration", NULL) <
            0) {
            co_error_clear(); /* status is an object here: read_conditions checked it */
        }
    }
    if (h->ready_condition && !ready) {
        struct json_object *list = co_json_get(copy, "status", "conditions", NULL);
        if (!list || !json_object_is_type(list, json_type_array)) {
            list = json_object_new_array();
            if (co_json_set(copy, list, "status", "conditions", NULL) < 0) {
                co_error_clear();
            }
        }
        struct json_object *c = json_object_new_object();
        json_object_object_add(c, "type", json_object_new_string("Ready"));
        json_object_object_add(c, "status", json_object_new_string("Unknown"));
        json_object_array_add(list, c);
    }
    return copy;
}

int ctl_health_compute(ctl_health *out,
                       const char **message_out,
                       const struct json_object *obj,
                       const char *hint_key,
                       int64_t now_unix)
{
    conditions cs = {NULL, 0};
    hints h = {0, 0, NULL, 0};
    struct json_object *hinted = NULL;
    int rc = read_conditions(&cs, obj);
    if (rc < 0) {
        goto done;
    }

    const char *hint = co_json_meta_annotation(obj, hint_key);
    if (hint) {
        rc = parse_hints(&h, hint);
        if (rc < 0) {
            goto done;
        }
        hinted = apply_hints(obj, &h, &cs);
        free(cs.items);
        rc = read_conditions(&cs, hinted);
        if (rc < 0) {
            goto done;
        }
        obj = hinted;
    }

    const char *api_version = co_json_str(obj, "apiVersion", NULL);
    const char *kind = co_json_str(obj, "kind", NULL);
    if (!api_version) {
        api_version = "";
    }
    if (!kind) {
        kind = "";
    }
    const char *slash = strchr(api_version, '/');
    char group[256] = "";
    if (slash) {
        snprintf(group, sizeof(group), "%.*s", (int)(slash - api_version), api_version);
    }
    const char *version = slash ? slash + 1 : api_version;

    result res = {CTL_HEALTH_UNKNOWN, "Unknown"};
    rc = kstatus_compute(&res, obj, &cs, group, kind, now_unix);
    if (rc < 0) {
        goto done;
    }

    /* the extra conditions of the hints and of CRDs/APIServices must exist and be True */
    if (strcmp(version, "v1") == 0 && is_kind(group, kind, CRD_GROUP, "CustomResourceDefinition")) {
        add_extra(&h, "Established", 11);
        add_extra(&h, "NamesAccepted", 13);
    } else if (strcmp(version, "v1") == 0 && is_kind(group, kind, APISERVICE_GROUP, "APIService")) {
        add_extra(&h, "Available", 9);
    }
    if (res.health == CTL_HEALTH_CURRENT) {
        for (size_t i = 0; i < h.nextra; i++) {
            if (!all_true(&cs, h.extra[i])) {
                res = in_progress("Waiting for a required condition");
                break;
            }
        }
    }
    /* a Job is ready only once it has finished */
    if (res.health == CTL_HEALTH_CURRENT && strcmp(version, "v1") == 0 &&
        is_kind(group, kind, "batch", "Job") && !condition_is(&cs, "Complete", "True") &&
        !condition_is(&cs, "Failed", "True")) {
        res = in_progress("Job has not finished");
    }
    *out = res.health;
    if (message_out) {
        *message_out = res.message;
    }

done:
    free(cs.items);
    hints_dispose(&h);
    json_object_put(hinted);
    return rc;
}

/* A condition message as shown in "(currently False: ...)": at most 256 bytes. */
static char *short_message(const char *status, const char *message)
{
    if (!message || !*message) {
        return co_xstrdup(status);
    }
    return co_xasprintf("%s: %.256s", status, message);
}

void ctl_condition_met(bool *met,
                       char **currently,
                       const struct json_object *obj,
                       const char *type,
                       const char *hint_key,
                       int64_t now_unix)
{
    *met = false;
    *currently = NULL;
    if (!obj) {
        *currently = co_xstrdup("not found");
        return;
    }
    struct json_object *conds = co_json_get(obj, "status", "conditions", NULL);
    size_t n =
        conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds) : 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        const char *t = co_json_str(c, "type", NULL);
        if (!t || strcmp(t, type) != 0) {
            continue;
        }
        const char *st = co_json_str(c, "status", NULL);
        if (st && strcmp(st, "True") == 0) {
            *met = true;
            return;
        }
        *currently = short_message(st ? st : "Unknown", co_json_str(c, "message", NULL));
        return;
    }
    if (strcmp(type, "Ready") != 0) {
        *currently = co_xstrdup("absent");
        return;
    }
    ctl_health h = CTL_HEALTH_UNKNOWN;
    const char *msg = NULL;
    if (ctl_health_compute(&h, &msg, obj, hint_key, now_unix) < 0) {
        *currently = short_message("Unknown", co_error_last());
        co_error_clear();
        return;
    }
    if (h == CTL_HEALTH_CURRENT) {
        *met = true;
        return;
    }
    *currently = short_message(ctl_health_name(h), msg);
}
