/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhook metrics on the shared registry. The latency histogram adds buckets below
 * controller-runtime's 5 ms floor: our handlers answer in microseconds, and a histogram whose
 * first bucket holds everything says nothing. Process figures come from /proc at scrape time.
 */
#include "webhook/wh_metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "co/util/buf.h"
#include "co/util/common.h"

static const double latency_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                         0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Set up on first use (under lock), read without it: published after the handles below. */
static _Atomic(co_metrics *) registry;
static co_metric *requests_total;
static co_metric *latency;
static co_metric *in_flight;
static co_metric *panics;
static co_metric *conversion_panics;
static co_metric *cert_reads;
static co_metric *cert_read_errors;

/* Each route's series that every request updates, looked up once. */
static struct {
    co_series *ok; /* requests_total with code 200 */
    co_series *latency;
    co_series *in_flight;
} by_route[WH_ROUTE_COUNT];

static void setup(void)
{
    static const char *const route_labels[] = {"webhook"};
    static const char *const code_labels[] = {"webhook", "code"};
    co_metrics *reg = co_metrics_new();
    requests_total = co_metrics_counter(reg, "controller_runtime_webhook_requests_total",
                                        "Total number of admission requests by HTTP status code.",
                                        code_labels, 2);
    latency =
        co_metrics_histogram(reg, "controller_runtime_webhook_latency_seconds",
                             "Histogram of the latency of processing admission requests",
                             route_labels, 1, latency_buckets, CO_ARRAY_SIZE(latency_buckets));
    in_flight =
        co_metrics_gauge(reg, "controller_runtime_webhook_requests_in_flight",
                         "Current number of admission requests being served.", route_labels, 1);
    panics = co_metrics_counter(reg, "controller_runtime_webhook_panics_total",
                                "Total number of webhook panics (internal errors)", NULL, 0);
    conversion_panics =
        co_metrics_counter(reg, "controller_runtime_conversion_webhook_panics_total",
                           "Total number of conversion webhook panics (internal errors)", NULL, 0);
    cert_reads = co_metrics_counter(reg, "certwatcher_read_certificate_total",
                                    "Total number of certificate reads", NULL, 0);
    cert_read_errors = co_metrics_counter(reg, "certwatcher_read_certificate_errors_total",
                                          "Total number of certificate read errors", NULL, 0);
    /* Every series exists from the start, so rate() and absent() behave from the first scrape. */
    for (int r = WH_ROUTE_NONE + 1; r < WH_ROUTE_COUNT; r++) {
        const char *path = wh_route_get((wh_route)r)->path;
        const char *v[] = {path, "200"};
        by_route[r].ok = co_metric_series(requests_total, v);
        by_route[r].latency = co_metric_series(latency, v);
        by_route[r].in_flight = co_metric_series(in_flight, v);
    }
    co_metric_add(panics, NULL, 0);
    co_metric_add(conversion_panics, NULL, 0);
    co_metric_add(cert_reads, NULL, 0);
    co_metric_add(cert_read_errors, NULL, 0);
    co_metrics_process(reg);
    atomic_store_explicit(&registry, reg, memory_order_release);
}

co_metrics *wh_metrics_registry(void)
{
    co_metrics *reg = atomic_load_explicit(&registry, memory_order_acquire);
    if (reg) {
        return reg;
    }
    pthread_mutex_lock(&lock);
    if (!atomic_load_explicit(&registry, memory_order_relaxed)) {
        setup();
    }
    reg = atomic_load_explicit(&registry, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    return reg;
}

/* Whether @p route has series (every route but WH_ROUTE_NONE), the registry set up. */
static int routed(wh_route route)
{
    if (route <= WH_ROUTE_NONE || route >= WH_ROUTE_COUNT) {
        return 0;
    }
    (void)wh_metrics_registry();
    return 1;
}

void wh_metrics_request_started(wh_route route)
{
    if (routed(route)) {
        co_series_add(by_route[route].in_flight, 1);
    }
}

void wh_metrics_request_finished(wh_route route)
{
    if (routed(route)) {
        co_series_add(by_route[route].in_flight, -1);
    }
}

void wh_metrics_request_answered(wh_route route, int code, double seconds)
{
    if (!routed(route)) {
        return;
    }
    if (code == 200) {
        co_series_add(by_route[route].ok, 1);
    } else {
        char codestr[16];
        snprintf(codestr, sizeof(codestr), "%d", code);
        const char *v[] = {wh_route_get(route)->path, codestr};
        co_metric_inc(requests_total, v);
    }
    co_series_observe(by_route[route].latency, seconds >= 0 ? seconds : 0);
}

void wh_metrics_internal_error(wh_route route)
{
    (void)wh_metrics_registry();
    co_metric_inc(route == WH_ROUTE_CONVERT ? conversion_panics : panics, NULL);
}

void wh_metrics_certificate_read(int ok)
{
    (void)wh_metrics_registry();
    co_metric_inc(cert_reads, NULL);
    if (!ok) {
        co_metric_inc(cert_read_errors, NULL);
    }
}

void wh_metrics_render(char **out, size_t *len_out)
{
    co_buf b = CO_BUF_INIT(SIZE_MAX);
    /* An uncapped buffer can only fail by aborting on OOM. */
    int rc = co_metrics_render(&b, wh_metrics_registry());
    CO_ASSERT(rc == 0);
    *out = co_buf_take(&b, len_out);
}

void wh_metrics_reset(void)
{
    pthread_mutex_lock(&lock);
    co_metrics_free(atomic_exchange_explicit(&registry, NULL, memory_order_acq_rel));
    memset(by_route, 0, sizeof(by_route));
    pthread_mutex_unlock(&lock);
}
