/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the manager reports (see ctl_manager_int.h): the local client sends through a counting
 * transport, so that requests per method (component_operator_runtime_requests_total,
 * rest_client_requests_total) and status and event writes are counted; the metric families
 * carry the names, types, labels and help of component-operator-runtime and controller-runtime;
 * the listeners answer /metrics, /healthz and /readyz.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl_manager_int.h"

typedef struct counting_transport {
    co_kube_transport base;
    co_kube_transport *inner;
    struct ctl_manager *m;
} counting_transport;

static int
counting_send(co_kube_transport *self, const co_kube_request *req, co_kube_response *resp)
{
    counting_transport *t = (counting_transport *)self;
    ctl_manager *m = t->m;
    atomic_fetch_add(&m->n_requests, 1);
    if (strcmp(req->method, "GET") != 0) {
        atomic_fetch_add(&m->n_writes, 1);
        const char *st = strstr(req->path, "/status");
        if (strcmp(req->method, "PUT") == 0 && strstr(req->path, "/components/") && st &&
            (st[7] == '\0' || st[7] == '?')) {
            atomic_fetch_add(&m->n_status_writes, 1);
        } else if (strstr(req->path, "/events")) {
            atomic_fetch_add(&m->n_event_writes, 1);
        }
        /* ComponentPolicy audit reports (ctl_audit.c), counted before they can be seen */
        if (strcmp(req->method, "PUT") == 0 && strstr(req->path, "/componentpolicies/") && st &&
            (st[7] == '\0' || st[7] == '?')) {
            atomic_fetch_add(&m->n_policy_status_writes, 1);
        }
    }
    if (m->m_requests) {
        const char *lv[] = {CONTROLLER, req->method};
        co_metric_inc(m->m_requests, lv);
    }
    int rc = t->inner->send(t->inner, req, resp);
    if (m->m_rest_requests) {
        /* client-go's rest_client_requests_total: "<error>" when no answer came */
        char code[16] = "<error>";
        if (resp->status > 0) {
            snprintf(code, sizeof(code), "%d", resp->status);
        }
        const char *lv[] = {code, m->rest_host ? m->rest_host : "", req->method};
        co_metric_inc(m->m_rest_requests, lv);
    }
    return rc;
}

static void counting_free(co_kube_transport *self)
{
    counting_transport *t = (counting_transport *)self;
    t->inner->free(t->inner);
    free(t);
}

co_kube_transport *ctl_manager__counting(ctl_manager *m, co_kube_transport *inner)
{
    counting_transport *ct = co_xcalloc(1, sizeof(*ct));
    ct->base.send = counting_send;
    ct->base.free = counting_free;
    ct->inner = inner;
    ct->m = m;
    return &ct->base;
}

int ctl_manager__http(co_buf *body, const char *path, void *payload)
{
    ctl_manager *m = payload;
    if (strcmp(path, "/metrics") == 0) {
        ctl_queue_stats qs;
        ctl_queue_get_stats(m->queue, &qs);
        const char *wl[] = {CONTROLLER, CONTROLLER};
        const char *dl[] = {CONTROLLER, CONTROLLER, "0"};
        co_metric_set(m->m_wq_depth, dl, (double)qs.depth);
        co_metric_set(m->m_wq_adds, wl, (double)qs.adds_total);
        co_metric_set(m->m_wq_retries, wl, (double)qs.retries_total);
        co_metric_set(m->m_wq_unfinished, wl, (double)qs.processing_total_ns / 1e9);
        co_metric_set(m->m_wq_longest, wl, (double)qs.oldest_processing_ns / 1e9);
        const char *cl[] = {CONTROLLER};
        co_metric_set(m->m_cr_workers, cl, (double)(m->opts.workers > 0 ? m->opts.workers : 5));
        co_metric_set(m->m_cr_active, cl, (double)qs.processing);
        if (m->opts.leader_elect) {
            const char *ll[] = {m->opts.leader_name ? m->opts.leader_name : CTL_RECONCILER_NAME};
            co_metric_set(m->m_leader, ll, atomic_load(&m->leading) ? 1 : 0);
        }
        ctl_targets_sweep(m->targets);
        co_metric_set(m->m_active_clients, cl, (double)ctl_targets_active(m->targets));
        co_metric_set(m->m_created_clients, cl, (double)ctl_targets_created(m->targets));
        return co_metrics_render(body, m->metrics) < 0 ? 500 : 200;
    }
    if (strcmp(path, "/healthz") == 0) {
        return co_buf_puts(body, "ok") < 0 ? 500 : 200;
    }
    if (strcmp(path, "/readyz") == 0) {
        bool ok = atomic_load(&m->synced);
        return co_buf_puts(body, ok ? "ok" : "informers not synced") < 0 ? 500 : ok ? 200 : 500;
    }
    return 404;
}

void ctl_manager__register_metrics(ctl_manager *m)
{
    m->metrics = co_metrics_new();
    const char *c[] = {"controller"};
    const char *ct[] = {"controller", "type"};
    const char *cm[] = {"controller", "method"};
    const char *obj[] = {"controller", "group", "kind", "namespace", "name"};
    const char *objs[] = {"controller", "group", "kind", "namespace", "name", "state"};
    const char *cr[] = {"controller", "result"};
    /* names, types, labels and help as component-operator-runtime's internal/metrics and
     * controller-runtime's pkg/internal/controller/metrics register them;
     * controller-runtime's workqueue metrics (pkg/internal/metrics/workqueue.go of v0.24) */
    const char *wq[] = {"name", "controller"};
    const char *wqp[] = {"name", "controller", "priority"};
    m->m_reconcile_total =
        co_metrics_counter(m->metrics, "component_operator_runtime_reconcile_total",
                           "Total number of reconciliations per controller", c, 1);
    const char *ca[] = {"controller", "action"};
    m->m_operations = co_metrics_counter(m->metrics, "component_operator_runtime_operations_total",
                                         "Dependent operations per controller and action", ca, 2);
    m->m_reconcile_errors =
        co_metrics_counter(m->metrics, "component_operator_runtime_reconcile_errors_total",
                           "Total number of reconciliation errors per controller and type", ct, 2);
    m->m_requests =
        co_metrics_counter(m->metrics, "component_operator_runtime_requests_total",
                           "Kubernetes API server requests per controller and method", cm, 2);
    m->m_created_clients =
        co_metrics_counter(m->metrics, "component_operator_runtime_created_clients_total",
                           "Kubernetes API clients created since the controller was started", c, 1);
    m->m_active_clients =
        co_metrics_gauge(m->metrics, "component_operator_runtime_active_clients_total",
                         "Currently active Kubernetes API clients", c, 1);
    /* a sample per state, 1 for the current one; the lifecycle states (docs/lifecycle.md)
     * only while a Component is in one, so that the metrics of Components using no lifecycle
     * control stay as they were */
    static const char *const states[] = {
        CTL_STATE_READY,    CTL_STATE_PENDING, CTL_STATE_PROCESSING, CTL_STATE_DELETION_PENDING,
        CTL_STATE_DELETING, CTL_STATE_ERROR,   CTL_STATE_WARNING,    CTL_STATE_UNMANAGED};
    m->m_state = co_metrics_state_gauge(m->metrics, "component_operator_runtime_component_state",
                                        "Current state of a component", objs, 6, states,
                                        CO_ARRAY_SIZE(states), CO_ARRAY_SIZE(states) - 1);
    m->m_dependents = co_metrics_gauge(m->metrics, "component_operator_runtime_dependents_total",
                                       "Number of dependent objects", obj, 5);
    m->m_unready =
        co_metrics_gauge(m->metrics, "component_operator_runtime_unready_dependents_total",
                         "Number of unready dependent objects", obj, 5);
    /* ours (docs/lifecycle.md, "Skip reconciliation") */
    m->m_skipped =
        co_metrics_gauge(m->metrics, "component_operator_skipped_components",
                         "Components not reconciled for their skip-reconciliation label", c, 1);
    /* ComponentPolicy audit reports (docs/policy-audit.md) */
    const char *pa[] = {"policy", "action"};
    m->m_policy_violations = co_metrics_gauge(
        m->metrics, "component_policy_violations",
        "Components violating a ComponentPolicy at its last audit, by the strictest action of "
        "the policy's rules they break",
        pa, 2);
    /* ours (docs/refwatch.md) */
    m->m_reference_requeues = co_metrics_counter(
        m->metrics, "component_operator_reference_requeues_total",
        "Components queued because a Secret they reference was created, changed or deleted", c, 1);
    /* drift detection (docs/drift.md, "Reporting") */
    m->m_drifted =
        co_metrics_gauge(m->metrics, "component_operator_drifted_objects",
                         "Dependent objects drifted from their manifests and kept so", obj, 5);
    m->m_cr_total = co_metrics_counter(m->metrics, "controller_runtime_reconcile_total",
                                       "Total number of reconciliations per controller", cr, 2);
    m->m_cr_errors =
        co_metrics_counter(m->metrics, "controller_runtime_reconcile_errors_total",
                           "Total number of reconciliation errors per controller", c, 1);
    const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3,  0.35,
                              0.4,   0.45, 0.5,   0.6,  0.7, 0.8,  0.9, 1,    1.25, 1.5,
                              1.75,  2,    2.5,   3,    3.5, 4,    4.5, 5,    6,    7,
                              8,     9,    10,    15,   20,  25,   30,  40,   50,   60};
    m->m_cr_time = co_metrics_histogram(m->metrics, "controller_runtime_reconcile_time_seconds",
                                        "Length of time per reconciliation per controller", c, 1,
                                        buckets, CO_ARRAY_SIZE(buckets));
    m->m_cr_workers =
        co_metrics_gauge(m->metrics, "controller_runtime_max_concurrent_reconciles",
                         "Maximum number of concurrent reconciles per controller.", c, 1);
    m->m_cr_active = co_metrics_gauge(m->metrics, "controller_runtime_active_workers",
                                      "Number of currently used workers per controller.", c, 1);
    m->m_wq_depth =
        co_metrics_gauge(m->metrics, "workqueue_depth",
                         "Current depth of workqueue by workqueue and priority", wqp, 3);
    m->m_wq_adds = co_metrics_counter(m->metrics, "workqueue_adds_total",
                                      "Total number of adds handled by workqueue", wq, 2);
    m->m_wq_retries = co_metrics_counter(
        m->metrics, "workqueue_retries_total",
        "Total number of items added to the workqueue with a non-zero delay", wq, 2);
    m->m_wq_unfinished = co_metrics_gauge(
        m->metrics, "workqueue_unfinished_work_seconds",
        "How many seconds of work has been done that is in progress and hasn't been observed by "
        "work_duration.",
        wq, 2);
    m->m_wq_longest = co_metrics_gauge(
        m->metrics, "workqueue_longest_running_processor_seconds",
        "How many seconds has the longest running processor for workqueue been running.", wq, 2);
    const char *rest[] = {"code", "host", "method"};
    m->m_rest_requests = co_metrics_counter(
        m->metrics, "rest_client_requests_total",
        "Number of HTTP requests, partitioned by status code, method, and host.", rest, 3);
    const char *lease[] = {"name"};
    m->m_leader = co_metrics_gauge(
        m->metrics, "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
        "indicates master. 'name' is the string used to identify the lease. Please make sure to "
        "group by name.",
        lease, 1);
    co_metrics_process(m->metrics);
    /* ExponentialBuckets(10e-9, 10, 12) */
    const double wq_buckets[] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000};
    const char *wv[] = {CONTROLLER, CONTROLLER};
    m->wq_queue_duration = co_metric_series(
        co_metrics_histogram(m->metrics, "workqueue_queue_duration_seconds",
                             "How long in seconds an item stays in workqueue before being "
                             "requested",
                             wq, 2, wq_buckets, CO_ARRAY_SIZE(wq_buckets)),
        wv);
    m->wq_work_duration = co_metric_series(
        co_metrics_histogram(m->metrics, "workqueue_work_duration_seconds",
                             "How long in seconds processing an item from workqueue takes.", wq, 2,
                             wq_buckets, CO_ARRAY_SIZE(wq_buckets)),
        wv);
}
