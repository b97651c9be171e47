/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ComponentPolicy audit reports (docs/policy-audit.md): one thread, active while the manager
 * leads, that evaluates every cached ComponentPolicy against every cached Component and writes
 * each policy's summary to its status. It runs a debounce interval after a policy changed, when
 * leadership is won, and every --policy-audit-interval. A Component is judged with the
 * functions the webhook and the reconciler judge it with (co/api/policy.h), each policy on its
 * own, so that the report names what this policy says whatever the others say. The work is
 * bounded: policies x Components evaluations on the informer caches, one namespace read per
 * namespace holding Components, and at most one status write per policy whose report changed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "co/api/policy.h"
#include "co/json/json.h"
#include "co/util/duration.h"
#include "co/util/error.h"
#include "co/util/log.h"
#include "co/util/strmap.h"
#include "co/util/thread.h"
#include "co/util/time.h"
#include "controller/ctl_manager_int.h"

#define AUDIT_DEBOUNCE_NS (2LL * CO_SECOND)
/* changes that keep coming still get a report this long after the first one */
#define AUDIT_DEBOUNCE_MAX_FACTOR 5
#define AUDIT_WAIT_NS             (1LL * CO_SECOND) /* a follower looks again this often */

static const char *const action_label[] = {NULL, "Audit", "Warn", "Deny"};

struct ctl_audit {
    ctl_manager *m;
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    unsigned long changes; /* policy changes seen (mu) */
    int64_t first_change;  /* monotonic ns of the oldest unaudited change; 0 = none (mu) */
    int64_t last_change;   /* monotonic ns of the newest one (mu) */
    co_strmap reported;    /* policy names with metric series (audit thread only) */
    int64_t interval_ns;   /* --policy-audit-interval */
    int64_t debounce_ns;
};

/* ---- one policy's report ------------------------------------------------------------------ */

typedef struct violator {
    char *ns;
    char *name;
    co_policy_action action;
    char *message;
} violator;

typedef struct report {
    co_policy_set *set; /* this policy alone; NULL when it does not parse */
    const struct json_object *obj;
    const char *name;
    int64_t counts[CO_POLICY_DENY + 1];
    violator list[CTL_AUDIT_MAX_VIOLATORS];
    size_t n;
} report;

/* Whether @p a is listed before @p b: stricter first, then by namespace and name. */
static bool before(const violator *a, const violator *b)
{
    if (a->action != b->action) {
        return a->action > b->action;
    }
    int c = strcmp(a->ns, b->ns);
    return c < 0 || (c == 0 && strcmp(a->name, b->name) < 0);
}

/* Keeps the first CTL_AUDIT_MAX_VIOLATORS violators in order; takes the strings of @p v. */
static void keep(report *r, violator v)
{
    size_t at = r->n;
    while (at > 0 && before(&v, &r->list[at - 1])) {
        at--;
    }
    if (at == CTL_AUDIT_MAX_VIOLATORS) {
        free(v.ns);
        free(v.name);
        free(v.message);
        return;
    }
    if (r->n == CTL_AUDIT_MAX_VIOLATORS) {
        violator *last = &r->list[r->n - 1];
        free(last->ns);
        free(last->name);
        free(last->message);
        r->n--;
    }
    memmove(&r->list[at + 1], &r->list[at], (r->n - at) * sizeof(violator));
    r->list[at] = v;
    r->n++;
}

static void report_dispose(report *r)
{
    co_policy_set_free(r->set);
    for (size_t i = 0; i < r->n; i++) {
        free(r->list[i].ns);
        free(r->list[i].name);
        free(r->list[i].message);
    }
    r->n = 0;
}

/* Cuts @p s to at most CTL_AUDIT_MAX_MESSAGE bytes, on a character boundary, marking the cut. */
static char *capped(char *s)
{
    size_t len = strlen(s);
    if (len <= CTL_AUDIT_MAX_MESSAGE) {
        return s;
    }
    static const char mark[] = "...";
    size_t cut = CTL_AUDIT_MAX_MESSAGE - (sizeof(mark) - 1);
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) {
        cut--;
    }
    memcpy(s + cut, mark, sizeof(mark));
    return s;
}

/* What @p res says of the policy of @p r: the strictest action of its own rules (the built-in
 * dependency rules, without a policy, are not its) and their messages. */
static void record(report *r, const co_policy_result *res, const char *ns, const char *name)
{
    co_policy_action worst = CO_POLICY_NONE;
    co_buf msg = CO_BUF_INIT(SIZE_MAX);
    for (size_t i = 0; i < res->len; i++) {
        const co_policy_violation *v = &res->items[i];
        if (v->action == CO_POLICY_NONE || !v->policy || strcmp(v->policy, r->name) != 0) {
            continue;
        }
        worst = v->action > worst ? v->action : worst;
        /* the report is the policy's own: "<rule>: <message>" without its name */
        if ((msg.len > 0 && co_buf_puts(&msg, "; ") < 0) ||
            co_buf_printf(&msg, "%s: %s", co_policy_rule_name(v->rule), v->message) < 0) {
            co_error_clear();
        }
        if (msg.len > CTL_AUDIT_MAX_MESSAGE) {
            break; /* enough to fill the capped message */
        }
    }
    if (worst == CO_POLICY_NONE) {
        co_buf_dispose(&msg);
        return;
    }
    r->counts[worst]++;
    char *text = co_buf_take(&msg, NULL);
    violator v = {co_xstrdup(ns), co_xstrdup(name), worst, capped(text ? text : co_xstrdup(""))};
    keep(r, v);
}

static struct json_object *report_json(const report *r, int64_t generation, int64_t evaluated)
{
    struct json_object *st = json_object_new_object();
    json_object_object_add(st, "observedGeneration", json_object_new_int64(generation));
    json_object_object_add(st, "componentsEvaluated", json_object_new_int64(evaluated));
    struct json_object *counts = json_object_new_object();
    json_object_object_add(counts, "deny", json_object_new_int64(r->counts[CO_POLICY_DENY]));
    json_object_object_add(counts, "warn", json_object_new_int64(r->counts[CO_POLICY_WARN]));
    json_object_object_add(counts, "audit", json_object_new_int64(r->counts[CO_POLICY_AUDIT]));
    json_object_object_add(st, "violations", counts);
    if (r->n > 0) {
        struct json_object *list = json_object_new_array();
        for (size_t i = 0; i < r->n; i++) {
            struct json_object *v = json_object_new_object();
            json_object_object_add(v, "namespace", json_object_new_string(r->list[i].ns));
            json_object_object_add(v, "name", json_object_new_string(r->list[i].name));
            json_object_object_add(v, "action",
                                   json_object_new_string(action_label[r->list[i].action]));
            json_object_object_add(v, "message", json_object_new_string(r->list[i].message));
            json_object_array_add(list, v);
        }
        json_object_object_add(st, "violators", list);
    }
    return st;
}

/* Whether the stored status says what @p fresh says, the time left aside. */
static bool same_report(const struct json_object *stored, const struct json_object *fresh)
{
    if (!stored || !json_object_is_type(stored, json_type_object)) {
        return false;
    }
    struct json_object *a = co_json_copy(stored);
    json_object_object_del(a, "lastReportTime");
    bool same = co_json_equal(a, fresh);
    json_object_put(a);
    return same;
}

/* Writes @p fresh as the status of the cached policy @p obj unless it says what is stored.
 * @return 1 when written, 0 when not needed (or the policy is gone); CO_ECONFLICT when the
 * policy changed meanwhile; API errors. */
static int write_report(ctl_manager *m, const struct json_object *obj, struct json_object *fresh)
{
    if (same_report(co_json_get(obj, "status", NULL), fresh)) {
        return 0;
    }
    char now[CO_TIME_STR_MAX];
    co_time_format(now, co_time_now());
    json_object_object_add(fresh, "lastReportTime", json_object_new_string(now));
    struct json_object *upd = co_json_copy(obj);
    json_object_object_add(upd, "status", json_object_get(fresh));
    co_kube_write_options wo = {0};
    wo.field_manager = CTL_RECONCILER_NAME;
    int rc = co_kube_update_status(NULL, m->client, upd, &wo);
    json_object_put(upd);
    return rc == CO_ENOTFOUND ? 0 : rc == 0 ? 1 : rc;
}

/* ---- one audit ------------------------------------------------------------------------------ */

/* Labels of the namespace @p ns (borrowed from @p cache, which keeps every namespace read this
 * audit; JSON null for one that is gone). */
static int namespace_labels(const struct json_object **out,
                            ctl_manager *m,
                            struct json_object *cache,
                            const char *ns)
{
    struct json_object *seen = NULL;
    if (!json_object_object_get_ex(cache, ns, &seen)) {
        co_kube_ref ref = {"v1", "Namespace", NULL, ns};
        struct json_object *obj = NULL;
        int rc = co_kube_get(&obj, m->client, &ref, NULL);
        if (rc == CO_ENOTFOUND) {
            co_error_clear();
        } else if (rc < 0) {
            return co_error_wrap("reading namespace %s for its labels", ns);
        }
        struct json_object *labels = co_json_get(obj, "metadata", "labels", NULL);
        seen = obj ? (labels ? json_object_get(labels) : json_object_new_object()) : NULL;
        json_object_object_add(cache, ns, seen);
        json_object_put(obj);
    }
    *out = seen;
    return 0;
}

/* Judges @p component by every policy of @p reports. Returns whether it was judged: one that
 * does not parse or whose namespace is gone is left out (its reconcile reports it). */
static int audit_component(bool *judged,
                           ctl_manager *m,
                           report *reports,
                           size_t n,
                           struct json_object *ns_cache,
                           const struct json_object *component)
{
    *judged = false;
    const char *ns = co_json_meta_namespace(component);
    const char *name = co_json_meta_name(component);
    if (!ns || !name) {
        return 0;
    }
    const struct json_object *labels = NULL;
    int rc = namespace_labels(&labels, m, ns_cache, ns);
    if (rc < 0 || !labels) {
        return rc;
    }
    struct json_object *defaulted = NULL;
    co_component *c = NULL;
    if (co_component_default(&defaulted, component, ns, NULL) < 0 ||
        co_component_parse(&c, defaulted) < 0) {
        co_error_clear();
        json_object_put(defaulted);
        return 0;
    }
    /* as the reconciler judges it: the requester the webhook recorded, none when unreadable */
    co_policy_requester requester = {NULL, NULL, 0};
    if (co_policy_requester_of(&requester, component) < 0) {
        co_error_clear();
    }
    co_policy_request req = {0};
    req.ns = ns;
    req.namespace_labels = labels;
    co_policy_request_set_requester(&req, &requester);
    pthread_mutex_lock(&m->graph_mu);
    req.graph = m->graph;
    for (size_t i = 0; i < n; i++) {
        if (!reports[i].set) {
            continue;
        }
        co_policy_result res = {0};
        if (co_policy_evaluate(&res, reports[i].set, c, &req) == 0) {
            record(&reports[i], &res, ns, name);
        }
        co_policy_result_dispose(&res);
    }
    pthread_mutex_unlock(&m->graph_mu);
    co_policy_requester_dispose(&requester);
    co_component_free(c);
    json_object_put(defaulted);
    *judged = true;
    return 0;
}

/* Sets the violation gauges of the policies audited and drops those of policies gone. */
static void publish_metrics(ctl_audit *a, const report *reports, size_t n)
{
    co_strmap now = CO_STRMAP_INIT;
    for (size_t i = 0; i < n; i++) {
        if (!reports[i].set) {
            continue;
        }
        for (co_policy_action act = CO_POLICY_AUDIT; act <= CO_POLICY_DENY; act++) {
            const char *lv[] = {reports[i].name, action_label[act]};
            co_metric_set(a->m->m_policy_violations, lv, (double)reports[i].counts[act]);
        }
        (void)co_strmap_put(&now, reports[i].name, (void *)1);
    }
    size_t it = 0;
    const char *key = NULL;
    void *val = NULL;
    while (co_strmap_next(&a->reported, &it, &key, &val)) {
        if (!co_strmap_get(&now, key)) {
            for (co_policy_action act = CO_POLICY_AUDIT; act <= CO_POLICY_DENY; act++) {
                const char *lv[] = {key, action_label[act]};
                co_metric_remove(a->m->m_policy_violations, lv);
            }
        }
    }
    co_strmap_dispose(&a->reported);
    a->reported = now;
}

/* One audit of every policy. @return 0; an error when it must be tried again soon (a namespace
 * that could not be read, a conflicting or failed status write). */
static int run_audit(ctl_audit *a)
{
    ctl_manager *m = a->m;
    co_kube_informer *pinf = ctl_manager__policy_informer(m);
    if (!pinf) {
        return 0;
    }
    struct json_object *policies = NULL;
    int rc = co_kube_informer_list(&policies, pinf, NULL);
    if (rc < 0) {
        return co_error_wrap("reading the cached ComponentPolicies");
    }
    size_t n = json_object_array_length(policies);
    report *reports = co_xcalloc(n ? n : 1, sizeof(report));
    for (size_t i = 0; i < n; i++) {
        struct json_object *p = json_object_array_get_idx(policies, i);
        reports[i].obj = p;
        reports[i].name = co_json_meta_name(p);
        reports[i].set = co_policy_set_new();
        /* an invalid policy gets no report: the webhook rejects it, its validation says why */
        if (!reports[i].name || co_policy_set_put(reports[i].set, p) < 0) {
            co_error_clear();
            co_policy_set_free(reports[i].set);
            reports[i].set = NULL;
        }
    }
    struct json_object *ns_cache = json_object_new_object();
    int64_t evaluated = 0;
    for (size_t k = 0; rc == 0 && n > 0 && k < m->ncomp_inf; k++) {
        struct json_object *all = NULL;
        if ((rc = co_kube_informer_list(&all, m->comp_inf[k], NULL)) < 0) {
            rc = co_error_wrap("reading the cached Components");
            break;
        }
        size_t nc = json_object_array_length(all);
        for (size_t j = 0; rc == 0 && j < nc; j++) {
            bool judged = false;
            rc = audit_component(&judged, m, reports, n, ns_cache,
                                 json_object_array_get_idx(all, j));
            evaluated += judged;
        }
        json_object_put(all);
    }
    /* the gauges first: whoever sees a report sees its metrics */
    if (rc == 0) {
        publish_metrics(a, reports, n);
    }
    size_t written = 0;
    size_t failed = 0;
    for (size_t i = 0; rc == 0 && i < n && atomic_load(&m->leading); i++) {
        if (!reports[i].set) {
            continue;
        }
        int64_t gen = 0;
        if (co_json_get_int64(&gen, reports[i].obj, "metadata", "generation", NULL) < 0) {
            co_error_clear();
        }
        struct json_object *fresh = report_json(&reports[i], gen, evaluated);
        int one = write_report(m, reports[i].obj, fresh);
        json_object_put(fresh);
        written += one > 0;
        if (one < 0) {
            co_log(CO_LOG_WARN, "writing a ComponentPolicy's audit report failed", "policy",
                   reports[i].name, "error", co_error_last(), NULL);
            co_error_clear();
            failed++;
        }
    }
    if (rc == 0) {
        char np[24], nc[24], nw[24];
        (void)snprintf(np, sizeof(np), "%zu", n);
        (void)snprintf(nc, sizeof(nc), "%lld", (long long)evaluated);
        (void)snprintf(nw, sizeof(nw), "%zu", written);
        co_log(CO_LOG_DEBUG, "ComponentPolicies audited", "policies", np, "components", nc,
               "reports_written", nw, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        report_dispose(&reports[i]);
    }
    free(reports);
    json_object_put(ns_cache);
    json_object_put(policies);
    if (rc == 0 && failed > 0) {
        rc = co_error_set(CO_ECONFLICT, "%zu audit reports not written", failed);
    }
    return rc;
}

/* ---- the thread ----------------------------------------------------------------------------- */

void ctl_manager__audit_trigger(ctl_manager *m)
{
    ctl_audit *a = m->audit;
    if (!a) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    int64_t now = co_time_monotonic();
    if (a->first_change == 0) {
        a->first_change = now;
    }
    a->last_change = now;
    a->changes++;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* When the next audit is due (mu held): a debounce interval after the last change (at most a
 * few after the first), the periodic one, whichever comes first. */
static int64_t due_locked(const ctl_audit *a, int64_t periodic)
{
    int64_t due = periodic;
    if (a->first_change != 0) {
        int64_t quiet = a->last_change + a->debounce_ns;
        int64_t cap = a->first_change + AUDIT_DEBOUNCE_MAX_FACTOR * a->debounce_ns;
        int64_t d = quiet < cap ? quiet : cap;
        due = d < due ? d : due;
    }
    return due;
}

static void *audit_main(void *arg)
{
    ctl_audit *a = arg;
    ctl_manager *m = a->m;
    bool led = false; /* leading at the last look: winning the lease audits at once */
    int64_t periodic = 0;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        int64_t now = co_time_monotonic();
        bool leading = atomic_load(&m->leading);
        if (!leading) {
            led = false;
            struct timespec ts = co_monotonic_deadline_ns(AUDIT_WAIT_NS);
            pthread_cond_timedwait(&a->cv, &a->mu, &ts);
            continue;
        }
        if (!led) {
            led = true;
            periodic = now; /* the new leader reports what it finds */
        }
        int64_t due = due_locked(a, periodic);
        if (due > now) {
            struct timespec ts = co_monotonic_deadline_ns(due - now);
            pthread_cond_timedwait(&a->cv, &a->mu, &ts);
            continue;
        }
        unsigned long seen = a->changes;
        pthread_mutex_unlock(&a->mu);
        int rc = run_audit(a);
        if (rc < 0) {
            co_log(CO_LOG_WARN, "ComponentPolicy audit incomplete; trying again", "error",
                   co_error_last(), NULL);
            co_error_clear();
        }
        pthread_mutex_lock(&a->mu);
        int64_t done = co_time_monotonic();
        periodic = done + a->interval_ns;
        if (rc < 0) {
            /* again after a debounce interval, as after a change */
            a->first_change = a->first_change ? a->first_change : done;
            a->last_change = done;
        } else if (a->changes == seen) {
            a->first_change = 0;
        } else {
            a->first_change = a->last_change; /* changed during the audit: once more */
        }
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int ctl_manager__start_audit(ctl_manager *m)
{
    if (m->opts.policy_audit_interval_ns <= 0) {
        return 0;
    }
    ctl_audit *a = co_xcalloc(1, sizeof(*a));
    a->m = m;
    a->interval_ns = m->opts.policy_audit_interval_ns;
    a->debounce_ns =
        m->opts.policy_audit_debounce_ns > 0 ? m->opts.policy_audit_debounce_ns : AUDIT_DEBOUNCE_NS;
    a->reported = (co_strmap)CO_STRMAP_INIT;
    pthread_mutex_init(&a->mu, NULL);
    co_cond_init_monotonic(&a->cv);
    m->audit = a; /* before the thread: triggers from the informers find it */
    if (pthread_create(&a->thread, NULL, audit_main, a) != 0) {
        return co_error_set(CO_ERROR, "cannot start the ComponentPolicy audit");
    }
    a->running = true;
    return 0;
}

void ctl_manager__stop_audit(ctl_manager *m)
{
    ctl_audit *a = m->audit;
    if (!a || !a->running) {
        return;
    }
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    a->running = false;
}

void ctl_manager__free_audit(ctl_manager *m)
{
    ctl_audit *a = m->audit;
    if (!a) {
        return;
    }
    ctl_manager__stop_audit(m);
    co_strmap_dispose(&a->reported);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a);
    m->audit = NULL;
}
