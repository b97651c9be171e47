/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The webhook's metrics, named like controller-runtime's
 * (controller_runtime_webhook_requests_total{webhook,code}, ..._latency_seconds,
 * ..._requests_in_flight, the panic counters, certwatcher_*) so that existing dashboards and
 * alerts work unchanged, kept in one process-wide co_metrics registry together with the
 * standard process_* figures. Safe from any thread.
 */
#ifndef WH_METRICS_H
#define WH_METRICS_H

#include <stddef.h>

#include "co/util/metrics.h"
#include "webhook/wh_http.h"

/** The process-wide registry (created on first use) for other webhook parts to add to. */
co_metrics *wh_metrics_registry(void);

/** A request on @p route started (in-flight gauge up). */
void wh_metrics_request_started(wh_route route);

/** A request on @p route was answered with HTTP @p code after @p seconds. */
void wh_metrics_request_answered(wh_route route, int code, double seconds);

/** A request on @p route ended, answered or not (in-flight gauge down). */
void wh_metrics_request_finished(wh_route route);

/** A handler of @p route failed internally (the C counterpart of a recovered panic). */
void wh_metrics_internal_error(wh_route route);

/** A certificate reload was attempted; @p ok is 0 when it failed. */
void wh_metrics_certificate_read(int ok);

/**
 * Renders every metric, with process metrics from /proc.
 * @param[out] out the text (free with free()); @param[out] len_out its length
 */
void wh_metrics_render(char **out, size_t *len_out);

/** Starts over with an empty registry (tests; no other thread may use metrics meanwhile). */
void wh_metrics_reset(void);

#endif
