/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The manager's observer of reconciles (see ctl_manager_int.h): the state, dependents and
 * error metrics of every Component, and its events, de-duplicated for 5 minutes per object as
 * upstream does, to the local recorder and the --events-address forwarder; and the Components
 * skipped for their skip-reconciliation label (a gauge, and one event when one starts being
 * skipped).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/log.h"
#include "co/util/time.h"
#include "co/api/lifecycle.h"
#include "controller/ctl_manager_int.h"

#define EVENT_DEDUP_NS ((int64_t)5 * 60 * 1000000000)

/* The event of a Component that starts being skipped. */
#define REASON_SKIPPED "ReconciliationSkipped"
#define MSG_SKIPPED                                                                                \
    "Reconciliation is skipped while the Component carries the skip-reconciliation label"

/* Drops the entries older than the de-duplication window, at most once a minute: the map stays
 * bounded by the Components that had events within the last few minutes, and no event or
 * deletion pays for a walk over all of them. Called with ev_mu held. */
static void prune_events(ctl_manager *m, int64_t now)
{
    if (now - m->events_pruned_at < 60 * (int64_t)1000000000) {
        return;
    }
    m->events_pruned_at = now;
    co_strmap kept = CO_STRMAP_INIT;
    size_t iter = 0;
    const char *uid = NULL;
    void *v = NULL;
    while (co_strmap_next(&m->events, &iter, &uid, &v)) {
        last_event *e = v;
        if (now - e->at < EVENT_DEDUP_NS) {
            co_strmap_put(&kept, uid, e);
        } else {
            free(e->text);
            free(e);
        }
    }
    co_strmap_dispose(&m->events);
    m->events = kept;
}

static bool event_is_duplicate(ctl_manager *m, const char *uid, const char *text)
{
    int64_t now = co_time_monotonic();
    bool dup = false;
    pthread_mutex_lock(&m->ev_mu);
    last_event *e = co_strmap_get(&m->events, uid);
    if (e) {
        if (strcmp(e->text, text) == 0 && now - e->at < EVENT_DEDUP_NS) {
            dup = true;
        } else {
            free(e->text);
            e->text = co_xstrdup(text);
            e->at = now;
        }
    } else {
        e = co_xcalloc(1, sizeof(*e));
        e->text = co_xstrdup(text);
        e->at = now;
        co_strmap_put(&m->events, uid, e);
    }
    prune_events(m, now);
    pthread_mutex_unlock(&m->ev_mu);
    return dup;
}

/* ---- skip reconciliation (docs/lifecycle.md, "Skip reconciliation") ---------------------- */

/* Sets the gauge to the number of skipped Components. Called with ev_mu held. */
static void count_skipped(ctl_manager *m)
{
    const char *lv[] = {CONTROLLER};
    co_metric_set(m->m_skipped, lv, (double)co_strmap_len(&m->skipped));
}

static void forget_skipped(ctl_manager *m, const char *ns, const char *name)
{
    char *key = co_xasprintf("%s/%s", ns, name);
    pthread_mutex_lock(&m->ev_mu);
    if (co_strmap_remove(&m->skipped, key)) {
        count_skipped(m);
    }
    pthread_mutex_unlock(&m->ev_mu);
    free(key);
}

/* Keeps the set of skipped Components; a Component entering it gets one event (a later pass
 * while it stays skipped sends none). */
static void
observe_skipped(void *ctx, const co_component *c, const struct json_object *object, bool skip)
{
    ctl_manager *m = ctx;
    if (!c->ns || !c->name) {
        return;
    }
    if (!skip) {
        forget_skipped(m, c->ns, c->name);
        return;
    }
    char *key = co_xasprintf("%s/%s", c->ns, c->name);
    pthread_mutex_lock(&m->ev_mu);
    bool added = co_strmap_get(&m->skipped, key) == NULL;
    if (added) {
        co_strmap_put(&m->skipped, key, m);
        count_skipped(m);
    }
    pthread_mutex_unlock(&m->ev_mu);
    free(key);
    if (!added) {
        return;
    }
    co_log(CO_LOG_INFO, "reconciliation skipped", "component", c->ns, "name", c->name, "label",
           CO_LIFECYCLE_SKIP_LABEL, NULL);
    if (m->recorder && c->uid) {
        co_kube_event(m->recorder, object, "Normal", REASON_SKIPPED, "%s", MSG_SKIPPED);
    }
    if (m->notify) {
        ctl_notify_event(m->notify, object, "Normal", REASON_SKIPPED, MSG_SKIPPED, NULL);
    }
}

/* ---- drift (docs/drift.md, "Reporting") ---------------------------------------------------- */

/* The gauge has a series only while a Component has drifted objects, so that the metrics of
 * Components that never drift stay as they were; a change of the drifted set is one event. */
static void observe_drift(ctl_manager *m, const ctl_outcome *o)
{
    const co_component *c = o->component;
    const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", c->ns, c->name};
    if (o->drifted) {
        co_metric_set(m->m_drifted, lv, (double)o->drifted);
    } else {
        co_metric_remove(m->m_drifted, lv);
    }
    if (!o->drift_change || !c->uid) {
        return;
    }
    bool resolved = !*o->drift_change;
    const char *type = resolved ? "Normal" : "Warning";
    const char *reason = resolved ? CTL_REASON_DRIFT_RESOLVED : CTL_REASON_DRIFTED;
    char *msg = resolved ? co_xstrdup("No dependent object is drifted any more")
                         : co_xasprintf("Dependent objects drifted: %s", o->drift_change);
    co_log(CO_LOG_INFO, resolved ? "drift resolved" : "dependents drifted", "component", c->ns,
           "name", c->name, "objects", o->drift_change, NULL);
    if (m->recorder) {
        co_kube_event(m->recorder, o->object, type, reason, "%s", msg);
    }
    if (m->notify) {
        ctl_notify_event(m->notify, o->object, type, reason, msg, NULL);
    }
    free(msg);
}

static void observe_outcome(void *ctx, const ctl_outcome *o)
{
    ctl_manager *m = ctx;
    const co_component *c = o->component;
    const char *ns = c->ns, *name = c->name, *uid = c->uid;
    const char *state = o->state, *reason = o->reason, *message = o->message;
    if (!ns || !name) {
        return;
    }
    const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", ns, name};
    co_metric_set_state(m->m_state, lv, state);
    co_metric_set(m->m_dependents, lv, (double)o->dependents);
    co_metric_set(m->m_unready, lv, (double)o->unready);
    observe_drift(m, o);
    if (o->error_code < 0) {
        co_log(CO_LOG_WARN, "reconcile failed", "component", ns, "name", name, "reason", reason,
               "message", message, NULL);
        const co_kube_status *ks = co_kube_status_last();
        char code[16] = "other";
        if (ks && ks->code > 0) {
            snprintf(code, sizeof(code), "%d", ks->code);
        }
        const char *ev[] = {CONTROLLER, code};
        co_metric_inc(m->m_reconcile_errors, ev);
    }
    co_log(CO_LOG_DEBUG, "reconciled", "namespace", ns, "name", name, "state", state, "reason",
           reason, NULL);
    if (!m->recorder || !uid || !*state || o->held) {
        return; /* (a held status: the pass that writes it reports it) */
    }
    /* a Component in state Warning works but needs attention (docs/lifecycle.md) */
    const char *type = strcmp(state, CTL_STATE_ERROR) == 0 || strcmp(state, CTL_STATE_WARNING) == 0
                           ? "Warning"
                           : "Normal";
    /* the Go operator's event annotations (api/v1alpha1 GetEventAnnotations): keys prefixed
     * with the group, as Flux's notification-controller expects of the involved object */
    const char *revision = c->status.last_attempted_revision;
    char *token = co_xasprintf("%s:%s", uid, o->component_digest);
    const char *annotations[] = {"core.cs.sap.com/revision", revision ? revision : "",
                                 "core.cs.sap.com/token", token, NULL};
    /* as upstream's de-duplication, the annotations count: a new digest is a new event */
    char *text = co_xasprintf("%s\n%s\n%s\n%s\n%s", type, reason, message, annotations[1], token);
    bool dup = event_is_duplicate(m, uid, text);
    free(text);
    if (dup) {
        atomic_fetch_add(&m->n_events_suppressed, 1);
        free(token);
        return;
    }
    co_kube_event_annotated(m->recorder, o->object, annotations, type, reason, "%s", message);
    if (m->notify) {
        ctl_notify_event(m->notify, o->object, type, reason, message, annotations);
    }
    free(token);
}

static void observe_gone(void *ctx, const char *ns, const char *name)
{
    ctl_manager *m = ctx;
    forget_skipped(m, ns, name);
    const char *lv[] = {CONTROLLER, "core.cs.sap.com", "Component", ns, name};
    co_metric_remove(m->m_state, lv);
    co_metric_remove(m->m_dependents, lv);
    co_metric_remove(m->m_unready, lv);
    co_metric_remove(m->m_drifted, lv);
    /* its last event, keyed by UID, goes with the next pruning */
    /* the informer's delete may have come while a reconcile was still resolving the source and
     * watching it again; this pass ran after that one */
    if (m->release) {
        m->release(m->release_ctx, ns, name);
    }
}

/* component_operator_runtime_operations_total: what the apply engine did to dependents */
static void observe_operations(void *ctx, const ctl_apply_stats *s)
{
    ctl_manager *m = ctx;
    const char *r[] = {CONTROLLER, "read"}, *c[] = {CONTROLLER, "create"},
               *u[] = {CONTROLLER, "update"}, *d[] = {CONTROLLER, "delete"};
    co_metric_add(m->m_operations, r, (double)s->reads);
    co_metric_add(m->m_operations, c, (double)s->creates);
    co_metric_add(m->m_operations, u, (double)s->updates);
    co_metric_add(m->m_operations, d, (double)s->deletes);
}

void ctl_manager__forget_all_events(ctl_manager *m)
{
    size_t iter = 0;
    const char *uid = NULL;
    void *v = NULL;
    while (co_strmap_next(&m->events, &iter, &uid, &v)) {
        last_event *e = v;
        free(e->text);
        free(e);
    }
    co_strmap_dispose(&m->events);
    co_strmap_dispose(&m->skipped);
}

ctl_observer ctl_manager__observer(ctl_manager *m)
{
    ctl_observer o = {observe_outcome, observe_gone, observe_operations, m};
    o.skipped = observe_skipped;
    return o;
}
